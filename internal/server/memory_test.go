package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
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

// bigSend is a SendMessage of a 100,000-byte body: over smallRequestBytes,
// so the bound on bytes in flight may refuse it.
func bigSend(queue string) string {
	return `{"QueueUrl":"` + queue + `","MessageBody":"` + strings.Repeat("b", 100_000) + `"}`
}

// waitAccepted retries a request until it is answered 200, for up to 10 s:
// the bytes of a request that ended come back once its handler has noticed.
func waitAccepted(t *testing.T, base, action, body string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out := call(t, base, action, body)
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still answered %d %s after 10 s", action, code, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// boundedServer serves a server whose bytes in flight are bounded at the
// least the bound can be, MaxRequestBodyBytes, with a queue q.
func boundedServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	srv, err := New(Config{Logger: quietLogger(), MaxBodyBytesInFlight: 1}) // raised to MaxRequestBodyBytes
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	if code, body := call(t, ts.URL, "CreateQueue", `{"QueueName":"q"}`); code != 200 {
		t.Fatalf("CreateQueue: %d %s", code, body)
	}
	return srv, ts
}

// TestBodyBytesInFlightBounded checks MaxBodyBytesInFlight: while one
// client holds a request of the largest size open, without sending its
// body, another large request is answered at once with a retryable 503
// (its body never read) while a small one goes through, and once the
// first ends, large requests are taken again.
func TestBodyBytesInFlightBounded(t *testing.T) {
	srv, ts := boundedServer(t)

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
	// Should the test fail, the held request must end before ts.Close,
	// which waits for it.
	defer pw.CloseWithError(errors.New("test ended"))
	if _, err := pw.Write([]byte(`{"QueueUrl":"q",`)); err != nil {
		t.Fatal(err)
	}
	// The write above returns once the client has taken the bytes, which
	// may be before the server's handler has reserved them: wait for that.
	deadline := time.Now().Add(10 * time.Second)
	for srv.bodyBytes.Load() < MaxRequestBodyBytes {
		if time.Now().After(deadline) {
			t.Fatalf("the held request is not counted: %d bytes in flight", srv.bodyBytes.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, body := call(t, ts.URL, "SendMessage", bigSend("q"))
	if code != 503 || !strings.Contains(body, "ServiceUnavailable") {
		t.Fatalf("a large send while the bound is taken: %d %.200s, want 503 ServiceUnavailable", code, body)
	}
	if code, body := call(t, ts.URL, "SendMessage", `{"QueueUrl":"q","MessageBody":"small"}`); code != 200 {
		t.Fatalf("a small send while the bound is taken: %d %s, want 200", code, body)
	}
	// Counted now: the retries below may be refused too, until the held
	// request's handler has noticed that its client went.
	_, metricsText := get(t, ts.URL, "/metrics")
	if !strings.Contains(metricsText, `fifoq_writes_refused_total{reason="memory"} 1`+"\n") {
		t.Error(`/metrics: want fifoq_writes_refused_total{reason="memory"} 1`)
	}
	pw.CloseWithError(errors.New("client gave up"))
	<-held
	waitAccepted(t, ts.URL, "SendMessage", bigSend("q"))
}

// TestLargeAnswersCountInFlight checks that a receive's answer counts
// against MaxBodyBytesInFlight while it is written: with ten messages of
// 1 MB being written to a consumer that does not read them, a large send
// is refused, a small request goes through, and once the consumer is gone
// large sends are taken again.
func TestLargeAnswersCountInFlight(t *testing.T) {
	srv, ts := boundedServer(t)
	for i := range 10 {
		body := `{"QueueUrl":"q","MessageBody":"` + strings.Repeat(string(rune('a'+i)), 1_000_000) + `"}`
		if code, out := call(t, ts.URL, "SendMessage", body); code != 200 {
			t.Fatalf("send %d: %d %.200s", i, code, out)
		}
	}

	// A consumer whose socket takes almost nothing: the server's write of
	// the 10 MB answer blocks once the kernel's buffers are full.
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	recv := `{"QueueUrl":"q","MaxNumberOfMessages":10}`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS.ReceiveMessage\r\nContent-Length: %d\r\n\r\n%s", len(recv), recv)

	// The answer is counted once the receive has taken the messages.
	deadline := time.Now().Add(10 * time.Second)
	for srv.bodyBytes.Load() < 10_000_000 {
		if time.Now().After(deadline) {
			t.Fatalf("the receive's answer is not counted: %d bytes in flight", srv.bodyBytes.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := call(t, ts.URL, "SendMessage", bigSend("q")); code != 503 || !strings.Contains(body, "ServiceUnavailable") {
		t.Fatalf("a large send while a 10 MB answer is written: %d %.200s, want 503 ServiceUnavailable", code, body)
	}
	if code, body := call(t, ts.URL, "GetQueueAttributes", `{"QueueUrl":"q"}`); code != 200 {
		t.Fatalf("a small request while a 10 MB answer is written: %d %s, want 200", code, body)
	}
	conn.Close()
	waitAccepted(t, ts.URL, "SendMessage", bigSend("q"))
}
