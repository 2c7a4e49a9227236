package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/testenv"
)

// requireSignatures returns a verifier that knows one access key, so that
// every API request must be signed.
func requireSignatures(t *testing.T) *auth.Verifier {
	t.Helper()
	store, err := auth.NewStore([]auth.Credential{{AccessKeyID: "AKIDTESTONLY", SecretAccessKey: "secret-never-logged", Account: DefaultAccount}})
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Verifier{Store: store, DefaultAccount: DefaultAccount, Region: DefaultRegion, Now: time.Now}
}

// requestLines returns the JSON log lines whose msg is "request".
func requestLines(t *testing.T, logs *testenv.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// TestRequestLog checks that LogRequests writes exactly one line per API
// request with its id, action, account, queue, status, error code and
// duration, and never its body or signature; and that without it nothing
// is logged.
func TestRequestLog(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[enabled], func(t *testing.T) {
			var logs testenv.SyncBuffer
			srv, err := New(Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), LogRequests: enabled})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()

			const secretBody = "body-must-not-be-logged"
			const signature = "Signature=0123456789abcdef-must-not-be-logged"
			send := func(action, body string) *http.Response {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-amz-json-1.0")
				req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
				req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=123456789012/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, "+signature)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", action, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			send("CreateQueue", `{"QueueName":"logged"}`)
			ok := send("SendMessage", `{"QueueUrl":"/123456789012/logged","MessageBody":"`+secretBody+`"}`)
			bad := send("SendMessage", `{"QueueUrl":"/123456789012/missing","MessageBody":"`+secretBody+`"}`)
			send("NoSuchAction", `{}`)
			// The probes and metrics are not API requests: never logged.
			for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
				get(t, ts.URL, path)
			}

			lines := requestLines(t, &logs)
			if !enabled {
				if len(lines) != 0 {
					t.Fatalf("request lines logged with LogRequests off: %v", lines)
				}
				return
			}
			if len(lines) != 4 {
				t.Fatalf("%d request lines, want 4 (one per API request):\n%s", len(lines), logs.String())
			}
			want := []map[string]any{
				{"action": "CreateQueue", "account": "123456789012", "queue": "123456789012/logged", "status": 200.0},
				{"action": "SendMessage", "account": "123456789012", "queue": "123456789012/logged", "status": 200.0, "request_id": ok.Header.Get("x-amzn-RequestId")},
				{"action": "SendMessage", "account": "123456789012", "queue": "123456789012/missing", "status": 400.0, "error": "QueueDoesNotExist", "request_id": bad.Header.Get("x-amzn-RequestId")},
				{"action": "unknown", "account": "123456789012", "queue": "", "status": 400.0, "error": "UnknownOperationException"},
			}
			for i, w := range want {
				for k, v := range w {
					if lines[i][k] != v {
						t.Errorf("line %d: %s = %v, want %v (line %v)", i, k, lines[i][k], v, lines[i])
					}
				}
				if _, has := lines[i]["error"]; has != (w["error"] != nil) {
					t.Errorf("line %d: error field present = %v, want %v", i, has, w["error"] != nil)
				}
				if id, _ := lines[i]["request_id"].(string); len(id) != 36 {
					t.Errorf("line %d: request_id %q", i, id)
				}
				if _, has := lines[i]["duration"]; !has {
					t.Errorf("line %d has no duration", i)
				}
				if lines[i]["level"] != "INFO" {
					t.Errorf("line %d at level %v, want INFO", i, lines[i]["level"])
				}
			}
			all := logs.String()
			for _, secret := range []string{secretBody, signature, "AWS4-HMAC-SHA256"} {
				if strings.Contains(all, secret) {
					t.Errorf("the log contains %q:\n%s", secret, all)
				}
			}
		})
	}
}

// TestMadeUpActionsShareOneLabel checks that Query requests naming actions
// that do not exist are metered under the one "unknown" action label, not
// one series per name a client makes up.
func TestMadeUpActionsShareOneLabel(t *testing.T) {
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for i := range 20 {
		resp, err := http.Post(ts.URL+"/", "application/x-www-form-urlencoded", strings.NewReader(fmt.Sprintf("Action=MadeUp%d&Version=2012-11-05", i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "MadeUp") {
		t.Fatal("a made-up action name became a metric label")
	}
	if !strings.Contains(string(body), `action="unknown"`) {
		t.Fatal("made-up actions were not metered as unknown")
	}
}
