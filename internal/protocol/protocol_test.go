package protocol

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		target  string
		headers map[string]string
		want    Protocol
	}{
		{"target header", "POST", "/", map[string]string{"X-Amz-Target": "AmazonSQS.ListQueues"}, JSON},
		// A form is Query whatever X-Amz-Target says: Debian's Perl client
		// (libamazon-sqs-simple-perl) sends both on every request.
		{"target header with form content type", "POST", "/", map[string]string{"X-Amz-Target": "AmazonSQSv20121105.ListQueues", "Content-Type": "application/x-www-form-urlencoded;charset=utf-8"}, Query},
		{"json 1.0 content type", "POST", "/", map[string]string{"Content-Type": "application/x-amz-json-1.0"}, JSON},
		{"json 1.0 content type with charset", "POST", "/", map[string]string{"Content-Type": "application/x-amz-json-1.0; charset=utf-8"}, JSON},
		{"json 1.1 content type", "POST", "/", map[string]string{"Content-Type": "APPLICATION/X-AMZ-JSON-1.1"}, JSON},
		{"malformed json content type", "POST", "/", map[string]string{"Content-Type": "application/x-amz-json-1.0; ;;=="}, JSON},
		{"form post", "POST", "/", map[string]string{"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}, Query},
		{"get with query string", "GET", "/?Action=ListQueues", nil, Query},
		{"nothing", "POST", "/", nil, Query},
		{"plain json is not aws json", "POST", "/", map[string]string{"Content-Type": "application/json"}, Query},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			if got := Detect(r); got != tt.want {
				t.Errorf("Detect = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecodeUnknownProtocol(t *testing.T) {
	_, req, err := Decode(Protocol(0), httptest.NewRequest("POST", "/", nil), nil)
	if req != nil || err == nil || err.Status != http.StatusBadRequest {
		t.Fatalf("Decode(0) = %v, %v; want a client error", req, err)
	}
}

func TestWriteResponseAcceptsValuesAndPointers(t *testing.T) {
	url := "http://localhost:9324/000000000000/q"
	tests := []struct {
		name   string
		action api.Action
		resp   api.Response
		json   string
		query  string // a fragment the XML must contain
	}{
		{"value", api.ActionCreateQueue, api.CreateQueueResult{QueueUrl: url}, `{"QueueUrl":"` + url + `"}`, "<QueueUrl>" + url + "</QueueUrl>"},
		{"pointer", api.ActionCreateQueue, &api.CreateQueueResult{QueueUrl: url}, `{"QueueUrl":"` + url + `"}`, "<QueueUrl>" + url + "</QueueUrl>"},
		{"nil pointer", api.ActionReceiveMessage, (*api.ReceiveMessageResult)(nil), `{}`, "<ReceiveMessageResult/>"},
		{"nil for an action without result", api.ActionDeleteMessage, nil, `{}`, "<DeleteMessageResponse "},
		{"empty pointer", api.ActionDeleteQueue, &api.Empty{}, `{}`, "<DeleteQueueResponse "},
		{"batch without failures", api.ActionSendMessageBatch, &api.SendMessageBatchResult{}, `{}`, "<SendMessageBatchResult/>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteResponse(w, JSON, tt.action, tt.resp, "id")
			if w.Code != 200 || w.Body.String() != tt.json {
				t.Errorf("JSON: %d %s, want 200 %s", w.Code, w.Body, tt.json)
			}
			w = httptest.NewRecorder()
			WriteResponse(w, Query, tt.action, tt.resp, "id")
			if w.Code != 200 || !strings.Contains(w.Body.String(), tt.query) {
				t.Errorf("Query: %d %s, want 200 and %s", w.Code, w.Body, tt.query)
			}
		})
	}
}

func TestWriteResponseWrongTypeIsInternalFailure(t *testing.T) {
	tests := []struct {
		name   string
		action api.Action
		resp   api.Response
	}{
		{"result of another action", api.ActionCreateQueue, &api.GetQueueUrlResult{QueueUrl: "u"}},
		{"result for an action without result", api.ActionDeleteMessage, api.CreateQueueResult{}},
		{"nil for an action with a result", api.ActionCreateQueue, nil},
		{"unknown action", api.Action("Nope"), api.Empty{}},
		{"not a result", api.ActionCreateQueue, "QueueUrl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range []Protocol{JSON, Query} {
				w := httptest.NewRecorder()
				WriteResponse(w, p, tt.action, tt.resp, "id")
				if w.Code != 500 || !strings.Contains(w.Body.String(), "InternalFailure") {
					t.Errorf("%s: %d %s, want 500 InternalFailure", p, w.Code, w.Body)
				}
			}
		})
	}
}

func TestWriteErrorNil(t *testing.T) {
	w := httptest.NewRecorder()
	WriteError(w, JSON, nil, "id")
	if w.Code != 500 || w.Header().Get("X-Amzn-Query-Error") != "InternalFailure;Receiver" {
		t.Errorf("WriteError(nil) = %d %v %s", w.Code, w.Header(), w.Body)
	}
}
