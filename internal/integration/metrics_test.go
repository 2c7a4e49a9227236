package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one reading of /metrics.
type scrape map[string]*dto.MetricFamily

// readMetrics GETs /metrics, unsigned, and parses the text format.
func readMetrics(t *testing.T, env *Env) scrape {
	t.Helper()
	s, err := scrapeMetrics(env)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scrapeMetrics is readMetrics for a goroutine that is not the test's:
// it returns its error instead of failing the test.
func scrapeMetrics(env *Env) (scrape, error) {
	resp, err := env.HTTP.Get(env.URL + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// value returns the value of the series of family name whose labels
// include the given name/value pairs, and whether there is one. For a
// histogram it returns the sample count.
func (s scrape) value(name string, labels ...string) (float64, bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
series:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue series
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// want fails the test unless the series exists with exactly v.
func (s scrape) want(t *testing.T, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := s.value(name, labels...)
	if !ok {
		t.Errorf("%s%v: no such series", name, labels)
		return
	}
	if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// TestMetricsQueueFigures drives known traffic through both wire
// protocols and checks the exact value of every per-queue figure and of
// the request counters.
func TestMetricsQueueFigures(t *testing.T) {
	t.Parallel()
	env := Start(t)
	ctx := ctxT(t)
	fifoC, stdC := v2Client{env.V2}, v1Client{env.V1} // AWS JSON, AWS Query

	fifoBytes := fifoTraffic(t, fifoC)
	std, stdBytes := standardTraffic(t, stdC)

	// A queue that is deleted must leave no series behind.
	gone := mustCreate(t, fifoC, "gone", nil)
	mustSend(t, fifoC, gone, SendIn{Body: "bye"})
	ok(t, fifoC.DeleteQueue(ctx, gone))

	// Errors: a missing queue, and an action that does not exist.
	if _, err := fifoC.GetAttrs(ctx, strings.Replace(std, "events", "missing", 1), "All"); err == nil {
		t.Fatal("GetQueueAttributes of a missing queue succeeded")
	}
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.NoSuchAction")
	resp, err := env.HTTP.Do(req)
	if err != nil {
		t.Fatalf("unknown action: %v", err)
	}
	resp.Body.Close()

	const skew = 90 * time.Second
	env.Clock.Advance(skew)
	m := readMetrics(t, env)

	q := func(name string) []string { return []string{"queue", name, "account", Account} }
	for _, c := range []struct {
		metric string
		queue  string
		want   float64
	}{
		{"fifoq_queue_messages_visible", "orders.fifo", 4},
		{"fifoq_queue_messages_not_visible", "orders.fifo", 1},
		{"fifoq_queue_messages_delayed", "orders.fifo", 0},
		{"fifoq_queue_messages_sent_total", "orders.fifo", 7},
		{"fifoq_queue_sent_bytes_total", "orders.fifo", float64(fifoBytes)},
		{"fifoq_queue_messages_received_total", "orders.fifo", 3},
		{"fifoq_queue_messages_deleted_total", "orders.fifo", 2},
		{"fifoq_queue_empty_receives_total", "orders.fifo", 0},

		{"fifoq_queue_messages_visible", "events", 0},
		{"fifoq_queue_messages_not_visible", "events", 1},
		{"fifoq_queue_messages_delayed", "events", 2},
		{"fifoq_queue_messages_sent_total", "events", 4},
		{"fifoq_queue_sent_bytes_total", "events", float64(stdBytes)},
		{"fifoq_queue_messages_received_total", "events", 2},
		{"fifoq_queue_messages_deleted_total", "events", 1},
		{"fifoq_queue_empty_receives_total", "events", 1},
	} {
		m.want(t, c.want, c.metric, q(c.queue)...)
	}
	// Every message was sent at the clock's first time, which then moved
	// 90 s on: that is the oldest message's age.
	for _, name := range []string{"orders.fifo", "events"} {
		age, found := m.value("fifoq_queue_oldest_message_age_seconds", q(name)...)
		if !found || age != skew.Seconds() {
			t.Errorf("oldest message age of %s = %v (found %v), want %v", name, age, found, skew.Seconds())
		}
	}
	if _, found := m.value("fifoq_queue_messages_visible", q("gone")...); found {
		t.Errorf("a deleted queue still has series")
	}
	// Its value is the engine's, tested there (and 0 under the race
	// detector, which keeps records on the heap); here, that it is served.
	if _, found := m.value("fifoq_memory_outside_heap_bytes"); !found {
		t.Errorf("no fifoq_memory_outside_heap_bytes")
	}

	for _, c := range []struct {
		action, outcome string
		want            float64
	}{
		{"CreateQueue", "ok", 3},
		{"SendMessage", "ok", 5},
		{"SendMessageBatch", "ok", 2},
		{"ReceiveMessage", "ok", 3},
		{"DeleteMessage", "ok", 2},
		{"DeleteMessageBatch", "ok", 1},
		{"DeleteQueue", "ok", 1},
		{"GetQueueAttributes", "QueueDoesNotExist", 1},
		// AWS JSON answers a target that names no operation so.
		{"unknown", "UnknownOperationException", 1},
	} {
		m.want(t, c.want, "fifoq_requests_total", "action", c.action, "outcome", c.outcome)
		if c.outcome == "ok" {
			// Each request is timed once, whatever its outcome.
			m.want(t, c.want, "fifoq_request_duration_seconds", "action", c.action)
		}
	}
	// The in-memory log has no log metrics; the durable one times every
	// group commit.
	if _, found := m["fifoq_log_commit_duration_seconds"]; found != env.Durable {
		t.Errorf("log metrics served: %v, for a server on the durable log: %v", found, env.Durable)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, found := m[name]; !found {
			t.Errorf("%s missing: the Go and process collectors are not registered", name)
		}
	}
}

// TestMetricsLongPollWaiters checks that the waiter gauge counts a receive
// while it waits, and no longer once it is answered.
func TestMetricsLongPollWaiters(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	url := mustCreate(t, c, "poll", nil)
	waiters := func() float64 {
		v, found := readMetrics(t, env).value("fifoq_long_poll_waiters")
		if !found {
			t.Fatal("fifoq_long_poll_waiters missing")
		}
		return v
	}
	if n := waiters(); n != 0 {
		t.Fatalf("waiters before any receive = %v", n)
	}
	done := make(chan []Msg, 1)
	go func() {
		msgs, err := c.Receive(context.Background(), url, RecvIn{Max: 1, Wait: i32(20)})
		if err != nil {
			t.Errorf("long poll: %v", err)
		}
		done <- msgs
	}()
	eventually(t, 10*time.Second, "the long poll counted as a waiter", func() bool { return waiters() == 1 })
	mustSend(t, c, url, SendIn{Body: "wake"})
	select {
	case msgs := <-done:
		wantBodies(t, msgs, "wake")
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was not answered after a send")
	}
	if n := waiters(); n != 0 {
		t.Fatalf("waiters after the poll was answered = %v, want 0", n)
	}
	readMetrics(t, env).want(t, 1, "fifoq_queue_messages_received_total", "queue", "poll", "account", Account)
}

// TestHealthEndpoints checks the probes of a running server, unsigned.
func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	env := Start(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := env.HTTP.Get(env.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s = %d %q (%s), want 200 \"ok\" in plain text", path, resp.StatusCode, body, resp.Header.Get("Content-Type"))
		}
	}
}

// fifoTraffic creates the FIFO queue orders.fifo and drives its known
// traffic over fifoC, and returns the bytes of its messages as SQS counts them.
func fifoTraffic(t *testing.T, fifoC Client) (fifoBytes int) {
	ctx := ctxT(t)
	// FIFO queue, over AWS JSON: 3 single sends (one with an attribute)
	// and a batch of 4, each message in a group of its own.
	fifo := mustCreate(t, fifoC, "orders.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
	attr := map[string]Attr{"kind": {DataType: "String", String: "vv"}} // 4 + 6 + 2 bytes
	for i, body := range []string{"a1", "bb2", "ccc3"} {
		in := SendIn{Body: body, Group: fmt.Sprintf("g%d", i)}
		fifoBytes += len(body)
		if i == 0 {
			in.Attrs = attr
			fifoBytes += len("kind") + len("String") + len("vv")
		}
		mustSend(t, fifoC, fifo, in)
	}
	var batch []BatchSend
	for i := range 4 {
		body := fmt.Sprintf("batch-%d", i)
		fifoBytes += len(body)
		batch = append(batch, BatchSend{ID: fmt.Sprintf("e%d", i), SendIn: SendIn{Body: body, Group: fmt.Sprintf("b%d", i)}})
	}
	if okd, fails, err := fifoC.SendBatch(ctx, fifo, batch); err != nil || len(fails) > 0 || len(okd) != 4 {
		t.Fatalf("SendMessageBatch: %v, %d ok, failed %v", err, len(okd), fails)
	}
	// Receive 3 (kept in flight for 10 minutes), delete 2 of them.
	got := must(fifoC.Receive(ctx, fifo, RecvIn{Max: 3, Wait: i32(0), Visibility: i32(600)}))(t)
	if len(got) != 3 {
		t.Fatalf("FIFO receive returned %d messages, want 3", len(got))
	}
	mustDelete(t, fifoC, fifo, got[0], got[1])
	return fifoBytes
}

// standardTraffic creates the standard queue events and drives its known
// traffic over stdC, and returns its URL and the bytes of its messages.
func standardTraffic(t *testing.T, stdC Client) (std string, stdBytes int) {
	ctx := ctxT(t)
	// Standard queue, over AWS Query: a delayed single send, a batch of 3
	// with one delayed; the 2 visible received, one deleted by batch; then
	// an empty receive.
	std = mustCreate(t, stdC, "events", nil)
	mustSend(t, stdC, std, SendIn{Body: "later", Delay: i32(600)})
	stdBytes = len("later")
	var sbatch []BatchSend
	for i, body := range []string{"x", "yy", "zzz"} {
		e := BatchSend{ID: fmt.Sprintf("s%d", i), SendIn: SendIn{Body: body}}
		if i == 2 {
			e.Delay = i32(600)
		}
		stdBytes += len(body)
		sbatch = append(sbatch, e)
	}
	if okd, fails, err := stdC.SendBatch(ctx, std, sbatch); err != nil || len(fails) > 0 || len(okd) != 3 {
		t.Fatalf("SendMessageBatch: %v, %d ok, failed %v", err, len(okd), fails)
	}
	sgot := must(stdC.Receive(ctx, std, RecvIn{Max: 10, Wait: i32(0), Visibility: i32(600)}))(t)
	if len(sgot) != 2 {
		t.Fatalf("standard receive returned %q, want the 2 visible messages", bodies(sgot))
	}
	if okd, fails, err := stdC.DeleteBatch(ctx, std, handles(sgot[:1])); err != nil || len(fails) > 0 || len(okd) != 1 {
		t.Fatalf("DeleteMessageBatch: %v %v %v", okd, fails, err)
	}
	if empty := mustReceive(t, stdC, std, 10); len(empty) != 0 {
		t.Fatalf("receive with nothing visible returned %q", bodies(empty))
	}
	return std, stdBytes
}
