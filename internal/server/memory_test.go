package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// switchGuard is a MemoryGuard the test turns on and off. The guard's own
// decisions are memguard's tests; the real binary in a memory-limited
// cgroup is internal/crashtest's TestMemoryLimitRefusesInsteadOfOOM. This
// one checks which requests the server refuses, and what it reports.
type switchGuard struct{ on atomic.Bool }

func (g *switchGuard) Admit() error {
	if g.on.Load() {
		return api.ErrServiceUnavailable("The server is at its memory budget (test); retry later.")
	}
	return nil
}
func (g *switchGuard) Refusing() bool { return g.on.Load() }
func (g *switchGuard) Budget() int64  { return 1 << 30 }
func (g *switchGuard) Live() int64    { return 800 << 20 }

// TestMemoryBudgetRefusesSendsOnly checks that at the memory budget sends
// and queue creations get a retryable 503 ServiceUnavailable, while
// receives, deletes, visibility changes and reads go on; that the refusals
// are counted by reason in /metrics beside the budget; that /readyz stays
// 200 and says why sends are refused; and that sends work again once the
// guard lets them.
func TestMemoryBudgetRefusesSendsOnly(t *testing.T) {
	guard := &switchGuard{}
	srv, err := New(Config{Logger: quietLogger(), Memory: guard})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	q := ts.URL + "/000000000000/q"
	mustCall := func(action, body string) string {
		t.Helper()
		code, out := call(t, ts.URL, action, body)
		if code != 200 {
			t.Fatalf("%s: %d %s", action, code, out)
		}
		return out
	}
	mustCall("CreateQueue", `{"QueueName":"q"}`)
	mustCall("SendMessage", `{"QueueUrl":"`+q+`","MessageBody":"before"}`)

	guard.on.Store(true)
	for _, tc := range []struct{ action, body string }{
		{"SendMessage", `{"QueueUrl":"` + q + `","MessageBody":"refused"}`},
		{"SendMessageBatch", `{"QueueUrl":"` + q + `","Entries":[{"Id":"a","MessageBody":"refused"}]}`},
		{"CreateQueue", `{"QueueName":"another"}`},
	} {
		code, out := call(t, ts.URL, tc.action, tc.body)
		if code != 503 || !strings.Contains(out, "ServiceUnavailable") || !strings.Contains(out, "memory budget") {
			t.Errorf("%s at the budget: %d %s, want 503 ServiceUnavailable naming the memory budget", tc.action, code, out)
		}
	}
	// A request that is invalid anyway gets its own answer, not the refusal.
	if code, out := call(t, ts.URL, "SendMessage", `{"QueueUrl":"`+q+`"}`); code != 400 || !strings.Contains(out, "MissingRequiredParameterException") {
		t.Errorf("send without a body at the budget: %d %s, want 400 MissingRequiredParameterException", code, out)
	}

	// Consumers drain.
	var got struct {
		Messages []struct{ Body, ReceiptHandle string }
	}
	if err := json.Unmarshal([]byte(mustCall("ReceiveMessage", `{"QueueUrl":"`+q+`","MaxNumberOfMessages":10}`)), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || got.Messages[0].Body != "before" {
		t.Fatalf("received %+v, want the one message sent before the budget was reached", got.Messages)
	}
	handle := got.Messages[0].ReceiptHandle
	mustCall("ChangeMessageVisibility", `{"QueueUrl":"`+q+`","ReceiptHandle":"`+handle+`","VisibilityTimeout":60}`)
	mustCall("DeleteMessage", `{"QueueUrl":"`+q+`","ReceiptHandle":"`+handle+`"}`)
	mustCall("GetQueueAttributes", `{"QueueUrl":"`+q+`","AttributeNames":["All"]}`)
	mustCall("ListQueues", `{}`)

	if code, body := get(t, ts.URL, "/readyz"); code != 200 || !strings.Contains(body, "sends are refused") || !strings.Contains(body, "1.0 GiB") {
		t.Errorf("/readyz at the budget: %d %q, want 200 saying sends are refused and the budget", code, body)
	}
	_, metricsText := get(t, ts.URL, "/metrics")
	for _, want := range []string{
		`fifoq_writes_refused_total{reason="memory"} 3`,
		`fifoq_writes_refused_total{reason="disk"} 0`,
		"fifoq_memory_budget_bytes 1.073741824e+09",
		"fifoq_memory_live_bytes 8.388608e+08",
		"fifoq_memory_refusing_sends 1",
	} {
		if !strings.Contains(metricsText, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	guard.on.Store(false)
	mustCall("SendMessage", `{"QueueUrl":"`+q+`","MessageBody":"after"}`)
	if code, body := get(t, ts.URL, "/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz under the budget: %d %q, want 200 ok", code, body)
	}
}

// TestNoMemoryMetricsWithoutABudget checks that a server without a budget
// does not report one: a budget of 0 would read as "full".
func TestNoMemoryMetricsWithoutABudget(t *testing.T) {
	srv, err := New(Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	_, metricsText := get(t, ts.URL, "/metrics")
	if strings.Contains(metricsText, "fifoq_memory_budget_bytes") {
		t.Error("/metrics reports a memory budget on a server without one")
	}
	if !strings.Contains(metricsText, `fifoq_writes_refused_total{reason="memory"} 0`) {
		t.Error("/metrics lacks fifoq_writes_refused_total at 0")
	}
}

// TestBodyBytesInFlightBounded checks MaxBodyBytesInFlight: while one
// client holds a request of the largest size open, without sending its
// body, another request is answered at once with a retryable 503 (its
// body never read), and once the first ends, requests are taken again.
func TestBodyBytesInFlightBounded(t *testing.T) {
	srv, err := New(Config{Logger: quietLogger(), MaxBodyBytesInFlight: 1}) // raised to MaxRequestBodyBytes
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	if code, body := call(t, ts.URL, "CreateQueue", `{"QueueName":"q"}`); code != 200 {
		t.Fatalf("CreateQueue: %d %s", code, body)
	}

	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/", pr)
	req.ContentLength = MaxRequestBodyBytes
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	held := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	// The held request has reserved its bytes once the server reads its body.
	if _, err := pw.Write([]byte(`{"QueueUrl":"q",`)); err != nil {
		t.Fatal(err)
	}
	code, body := call(t, ts.URL, "SendMessage", `{"QueueUrl":"q","MessageBody":"x"}`)
	if code != 503 || !strings.Contains(body, "ServiceUnavailable") {
		t.Fatalf("send while the bound is taken: %d %s, want 503 ServiceUnavailable", code, body)
	}
	pw.CloseWithError(errors.New("client gave up"))
	<-held
	// The bytes come back when the held request ends; the test waits for
	// the handler to notice the broken body.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body = call(t, ts.URL, "SendMessage", `{"QueueUrl":"q","MessageBody":"x"}`)
		if code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code != 200 {
		t.Fatalf("send after the held request ended: %d %s", code, body)
	}
	_, metricsText := get(t, ts.URL, "/metrics")
	if !strings.Contains(metricsText, `fifoq_writes_refused_total{reason="memory"} 1`+"\n") {
		t.Error(`/metrics: want fifoq_writes_refused_total{reason="memory"} 1`)
	}
}
