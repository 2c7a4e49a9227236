package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fifoAttrs are the attributes of a FIFO queue, plus extra ones.
func fifoAttrs(extra ...string) map[string]string {
	a := map[string]string{"FifoQueue": "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return a
}

// mustCreate creates a queue and returns its URL.
func mustCreate(t *testing.T, c Client, name string, attrs map[string]string) string {
	t.Helper()
	url, err := c.CreateQueue(ctxT(t), name, attrs, nil)
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	if !strings.HasSuffix(url, "/"+Account+"/"+name) {
		t.Fatalf("CreateQueue %s: URL %q does not end in /%s/%s", name, url, Account, name)
	}
	return url
}

// queueARN returns a queue's QueueArn attribute.
func queueARN(t *testing.T, c Client, url string) string {
	t.Helper()
	attrs := must(c.GetAttrs(ctxT(t), url, "QueueArn"))(t)
	arn := attrs["QueueArn"]
	if arn == "" {
		t.Fatalf("queue %s has no QueueArn", url)
	}
	return arn
}

// mustSend sends a message and returns what the send returned.
func mustSend(t *testing.T, c Client, url string, in SendIn) SendOut {
	t.Helper()
	out, err := c.Send(ctxT(t), url, in)
	if err != nil {
		t.Fatalf("SendMessage %q: %v", in.Body, err)
	}
	if out.ID == "" {
		t.Fatalf("SendMessage %q returned no MessageId", in.Body)
	}
	return out
}

// mustReceive receives once without waiting.
func mustReceive(t *testing.T, c Client, url string, max int32) []Msg {
	t.Helper()
	msgs, err := c.Receive(ctxT(t), url, RecvIn{Max: max, Wait: i32(0)})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return msgs
}

// mustDelete deletes the messages.
func mustDelete(t *testing.T, c Client, url string, msgs ...Msg) {
	t.Helper()
	for _, m := range msgs {
		if err := c.Delete(ctxT(t), url, m.Handle); err != nil {
			t.Fatalf("DeleteMessage %q: %v", m.Body, err)
		}
	}
}

// bodies lists the bodies of msgs.
func bodies(msgs []Msg) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Body
	}
	return out
}

// wantBodies fails the test unless msgs carry exactly the bodies, in order.
func wantBodies(t *testing.T, msgs []Msg, want ...string) {
	t.Helper()
	got := bodies(msgs)
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("received bodies %q, want %q", got, want)
	}
}

// drain receives and deletes every message until a receive returns none,
// and returns the bodies in the order received.
func drain(t *testing.T, c Client, url string) []string {
	t.Helper()
	var out []string
	for i := 0; i < 10000; i++ {
		msgs := mustReceive(t, c, url, 10)
		if len(msgs) == 0 {
			return out
		}
		out = append(out, bodies(msgs)...)
		_, fails, err := c.DeleteBatch(ctxT(t), url, handles(msgs))
		if err != nil || len(fails) > 0 {
			t.Fatalf("DeleteMessageBatch: %v %v", err, fails)
		}
	}
	t.Fatal("drain: queue never emptied")
	return nil
}

// handles turns messages into batch entries.
func handles(msgs []Msg) []BatchHandle {
	out := make([]BatchHandle, len(msgs))
	for i, m := range msgs {
		out[i] = BatchHandle{ID: fmt.Sprintf("e%d", i), Handle: m.Handle}
	}
	return out
}

// sendMany sends n messages "prefix-0".."prefix-(n-1)" to one group in
// batches of 10, each with its body as deduplication id.
func sendMany(t *testing.T, c Client, url, group, prefix string, n int) {
	t.Helper()
	for start := 0; start < n; start += 10 {
		var entries []BatchSend
		for i := start; i < n && i < start+10; i++ {
			body := fmt.Sprintf("%s-%d", prefix, i)
			e := BatchSend{ID: fmt.Sprintf("m%d", i), SendIn: SendIn{Body: body}}
			if group != "" {
				e.Group, e.Dedup = group, body
			}
			entries = append(entries, e)
		}
		ok, fails, err := c.SendBatch(ctxT(t), url, entries)
		if err != nil || len(fails) > 0 || len(ok) != len(entries) {
			t.Fatalf("SendMessageBatch at %d: %v, %d ok, failed %v", start, err, len(ok), fails)
		}
	}
}

// numAttr returns a numeric queue attribute.
func numAttr(t *testing.T, c Client, url, name string) int {
	t.Helper()
	v := must(c.GetAttrs(ctxT(t), url, name))(t)[name]
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil {
		t.Fatalf("attribute %s = %q is not a number", name, v)
	}
	return n
}

// eventually retries cond every 50 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// redrivePolicy is a RedrivePolicy attribute value.
func redrivePolicy(dlqARN string, maxReceiveCount int) string {
	b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": maxReceiveCount})
	return string(b)
}

// advanceWhenWaiting advances the Env's clock by d once the server counts
// n long polls waiting, from a goroutine of its own, so that a test can
// make a long poll on an empty queue in the test's goroutine and see it
// end. It gives up after 10 s of real time; the test's own receive then
// fails for want of an answer.
func advanceWhenWaiting(t *testing.T, env *Env, n int, d time.Duration) {
	t.Helper()
	stop, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if s, err := scrapeMetrics(env); err == nil {
				if v, found := s.value("fifoq_long_poll_waiters"); found && int(v) == n {
					env.Clock.Advance(d)
					return
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-finished
	})
}

// waitForWaiters waits until the server has exactly n receives waiting
// for messages (its fifoq_long_poll_waiters gauge), so that a test acts
// once its long polls are in place rather than after a guessed sleep.
func waitForWaiters(t *testing.T, env *Env, n int) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("%d long polls waiting", n), func() bool {
		v, found := readMetrics(t, env).value("fifoq_long_poll_waiters")
		return found && int(v) == n
	})
}
