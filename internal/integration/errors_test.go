package integration

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestErrorCodes checks that invalid requests get SQS's error code and a
// 4xx status through both protocols.
func TestErrorCodes(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "errs", map[string]string{"MaximumMessageSize": "1024"})
		nowhere := env.URL + "/" + Account + "/no-such-queue"
		entries := func(n int, id func(i int) string) []BatchSend {
			var out []BatchSend
			for i := 0; i < n; i++ {
				out = append(out, BatchSend{ID: id(i), SendIn: SendIn{Body: "x"}})
			}
			return out
		}
		seqID := func(i int) string { return fmt.Sprintf("e%d", i) }
		sameID := func(int) string { return "same" }
		sendBatch := func(e []BatchSend) error { _, _, err := c.SendBatch(ctx, q, e); return err }
		deleteBatch := func(e []BatchHandle) error { _, _, err := c.DeleteBatch(ctx, q, e); return err }
		changeBatch := func(e []BatchHandle) error { _, _, err := c.ChangeVisibilityBatch(ctx, q, e, 10); return err }
		handlesN := func(n int, id func(i int) string) []BatchHandle {
			var out []BatchHandle
			for i := 0; i < n; i++ {
				out = append(out, BatchHandle{ID: id(i), Handle: "h"})
			}
			return out
		}

		cases := []struct {
			name string
			call func() error
			code string
		}{
			{"unknown queue", func() error { _, err := c.Send(ctx, nowhere, SendIn{Body: "x"}); return err }, "AWS.SimpleQueueService.NonExistentQueue"},
			{"unknown queue receive", func() error { _, err := c.Receive(ctx, nowhere, RecvIn{Wait: i32(0)}); return err }, "AWS.SimpleQueueService.NonExistentQueue"},
			{"MaxNumberOfMessages 11", func() error { _, err := c.Receive(ctx, q, RecvIn{Max: 11, Wait: i32(0)}); return err }, "InvalidParameterValue"},
			{"WaitTimeSeconds 21", func() error { _, err := c.Receive(ctx, q, RecvIn{Wait: i32(21)}); return err }, "InvalidParameterValue"},
			{"invalid body character", func() error { _, err := c.Send(ctx, q, SendIn{Body: "nul \x00 here"}); return err }, "InvalidMessageContents"},
			{"forbidden character U+FFFE", func() error { _, err := c.Send(ctx, q, SendIn{Body: "x\uFFFEy"}); return err }, "InvalidMessageContents"},
			{"unknown attribute name", func() error { _, err := c.GetAttrs(ctx, q, "NoSuchAttribute"); return err }, "InvalidAttributeName"},
			{"message over MaximumMessageSize", func() error { _, err := c.Send(ctx, q, SendIn{Body: strings.Repeat("x", 1025)}); return err }, "InvalidParameterValue"},
			{"DelaySeconds 901", func() error { _, err := c.Send(ctx, q, SendIn{Body: "x", Delay: i32(901)}); return err }, "InvalidParameterValue"},
			{"invalid queue name", func() error { _, err := c.CreateQueue(ctx, "bad name!", nil, nil); return err }, "InvalidParameterValue"},
			{"invalid receipt handle", func() error { return c.Delete(ctx, q, "garbage") }, "ReceiptHandleIsInvalid"},
			{"send batch empty", func() error { return sendBatch(nil) }, "AWS.SimpleQueueService.EmptyBatchRequest"},
			{"send batch of 11", func() error { return sendBatch(entries(11, seqID)) }, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"},
			{"send batch duplicate ids", func() error { return sendBatch(entries(2, sameID)) }, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"},
			{"send batch invalid id", func() error { return sendBatch(entries(1, func(int) string { return "bad id!" })) }, "AWS.SimpleQueueService.InvalidBatchEntryId"},
			{"delete batch empty", func() error { return deleteBatch(nil) }, "AWS.SimpleQueueService.EmptyBatchRequest"},
			{"delete batch of 11", func() error { return deleteBatch(handlesN(11, seqID)) }, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"},
			{"delete batch duplicate ids", func() error { return deleteBatch(handlesN(2, sameID)) }, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"},
			{"visibility batch empty", func() error { return changeBatch(nil) }, "AWS.SimpleQueueService.EmptyBatchRequest"},
			{"visibility batch of 11", func() error { return changeBatch(handlesN(11, seqID)) }, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"},
			{"visibility batch duplicate ids", func() error { return changeBatch(handlesN(2, sameID)) }, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.call(), tc.code) })
		}
		// None of the refused sends left a message behind.
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("refused requests left messages %q", bodies(msgs))
		}
	})
}

// rawResponse is an HTTP answer read whole.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

func rawPost(t *testing.T, env *Env, header map[string]string, body string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, env.URL+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return rawDo(t, env, req)
}

func rawDo(t *testing.T, env *Env, req *http.Request) rawResponse {
	t.Helper()
	resp, err := env.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return rawResponse{resp.StatusCode, resp.Header, b}
}

// jsonErrorType returns the code of an AWS JSON error body: its __type
// without the namespace ("com.amazonaws.sqs#QueueDoesNotExist").
func jsonErrorType(t *testing.T, r rawResponse) string {
	t.Helper()
	var body struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("JSON error body does not parse: %v: %q", err, r.body)
	}
	if body.Message == "" {
		t.Errorf("JSON error %s has no message", body.Type)
	}
	if i := strings.LastIndexByte(body.Type, '#'); i >= 0 {
		return body.Type[i+1:]
	}
	return body.Type
}

// queryErrorCode returns the code of an AWS Query XML error body. A bare
// <UnknownOperationException/>, SQS's answer to a request without an
// action, counts as the code of that name.
func queryErrorCode(t *testing.T, r rawResponse) string {
	t.Helper()
	if string(r.body) == "<UnknownOperationException/>" {
		return "UnknownOperationException"
	}
	var body struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		Error   struct {
			Type, Code, Message string
		}
		RequestId string
	}
	if err := xml.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("Query error body does not parse: %v: %q", err, r.body)
	}
	if body.Error.Type != "Sender" {
		t.Errorf("Query error %s has Type %q, want Sender", body.Error.Code, body.Error.Type)
	}
	if body.RequestId == "" {
		t.Errorf("Query error %s has no RequestId", body.Error.Code)
	}
	return body.Error.Code
}

// TestRawHTTPErrors sends requests no SDK would send and checks that each
// gets a 4xx answer with the right code in the right format, never a 500.
func TestRawHTTPErrors(t *testing.T) {
	t.Parallel()
	env := Start(t)
	jsonHeader := func(action string) map[string]string {
		return map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS." + action}
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}

	jsonCases := []struct {
		name   string
		action string
		body   string
		codes  []string
	}{
		{"unknown action", "Frobnicate", "{}", []string{"UnknownOperationException"}},
		{"malformed JSON", "ListQueues", "{not json", []string{"SerializationException"}},
		{"member of the wrong type", "ReceiveMessage", `{"QueueUrl":"http://x/000000000000/q","MaxNumberOfMessages":"ten"}`, []string{"SerializationException"}},
		// MissingParameter is MissingRequiredParameterException in AWS
		// JSON (LocalStack's AWS-validated
		// test_posting_to_fifo_requires_deduplicationid_group_id).
		{"missing required member", "SendMessage", `{"MessageBody":"x"}`, []string{"MissingRequiredParameterException"}},
		{"unknown queue", "GetQueueAttributes", `{"QueueUrl":"` + env.URL + `/000000000000/nope"}`, []string{"QueueDoesNotExist"}},
	}
	for _, tc := range jsonCases {
		t.Run("json/"+tc.name, func(t *testing.T) {
			r := rawPost(t, env, jsonHeader(tc.action), tc.body)
			if r.status < 400 || r.status > 499 {
				t.Fatalf("HTTP %d, want 4xx: %s", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-amz-json-1.0") {
				t.Errorf("Content-Type %q, want application/x-amz-json-1.0", ct)
			}
			if code := jsonErrorType(t, r); !slices.Contains(tc.codes, code) {
				t.Fatalf("__type %q, want one of %v: %s", code, tc.codes, r.body)
			}
		})
	}
	t.Run("json/x-amzn-query-error", func(t *testing.T) {
		r := rawPost(t, env, jsonHeader("GetQueueUrl"), `{"QueueName":"nope"}`)
		if got := r.header.Get("X-Amzn-Query-Error"); got != "AWS.SimpleQueueService.NonExistentQueue;Sender" {
			t.Fatalf("x-amzn-query-error = %q, want AWS.SimpleQueueService.NonExistentQueue;Sender", got)
		}
		if r.header.Get("X-Amzn-Requestid") == "" {
			t.Error("no x-amzn-RequestId header")
		}
	})

	queryCases := []struct {
		name  string
		body  string
		codes []string
	}{
		{"unknown action", "Action=Frobnicate&Version=2012-11-05", []string{"InvalidAction"}},
		{"malformed form", "Action=ListQueues&Version=2012-11-05&bad=%zz", []string{"MalformedQueryString"}},
		{"no Action", "Version=2012-11-05&QueueName=x", []string{"UnknownOperationException"}},
		{"unknown queue", "Action=GetQueueUrl&Version=2012-11-05&QueueName=nope", []string{"AWS.SimpleQueueService.NonExistentQueue"}},
		{"bad integer", "Action=ReceiveMessage&Version=2012-11-05&QueueUrl=" + env.URL + "/000000000000/nope&MaxNumberOfMessages=ten", []string{"InvalidParameterValue", "MalformedQueryString", "InvalidQueryParameter"}},
	}
	for _, tc := range queryCases {
		t.Run("query/"+tc.name, func(t *testing.T) {
			r := rawPost(t, env, form, tc.body)
			if r.status < 400 || r.status > 499 {
				t.Fatalf("HTTP %d, want 4xx: %s", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/xml") && !strings.HasPrefix(ct, "application/xml") {
				t.Errorf("Content-Type %q, want XML", ct)
			}
			if code := queryErrorCode(t, r); !slices.Contains(tc.codes, code) {
				t.Fatalf("Code %q, want one of %v: %s", code, tc.codes, r.body)
			}
		})
	}

	t.Run("GET with query string", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, env.URL+"/?Action=ListQueues&Version=2012-11-05", nil)
		r := rawDo(t, env, req)
		if r.status != http.StatusOK {
			t.Fatalf("GET ListQueues: HTTP %d: %s", r.status, r.body)
		}
	})
	t.Run("GET without a query string", func(t *testing.T) {
		// SQS answers a queue's URL so (TestRecordedQueryAtQueueURL);
		// the endpoint itself is answered alike.
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, env.URL+"/", nil)
		r := rawDo(t, env, req)
		if r.status != http.StatusNotFound || queryErrorCode(t, r) != "UnknownOperationException" {
			t.Fatalf("GET /: HTTP %d %s, want 404 <UnknownOperationException/>", r.status, r.body)
		}
	})
	t.Run("empty POST", func(t *testing.T) {
		r := rawPost(t, env, nil, "")
		if r.status < 400 || r.status > 499 {
			t.Fatalf("HTTP %d, want 4xx: %s", r.status, r.body)
		}
	})
	t.Run("server still healthy", func(t *testing.T) {
		c := v2Client{env.V2}
		if _, _, err := c.ListQueues(context.Background(), "", 0, ""); err != nil {
			t.Fatalf("ListQueues after bad requests: %v", err)
		}
	})
}
