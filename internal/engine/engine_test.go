package engine

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

func TestApplyAndReadDispatch(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	// Apply answers read-only actions too.
	resp, err := h.e.Apply(h.command(api.QueueKey{}, &api.GetQueueUrlRequest{QueueName: "q"}))
	if err != nil || resp.(*api.GetQueueUrlResult).QueueUrl != q.Path() {
		t.Fatalf("Apply(GetQueueUrl) = %v, %v", resp, err)
	}
	// Read refuses state changes.
	_, err = h.e.Read(h.command(q, &api.PurgeQueueRequest{QueueUrl: q.Path()}))
	wantCode(t, err, "InternalFailure")
	_, err = h.e.Apply(&Command{Time: h.now})
	wantCode(t, err, "InternalFailure")
	for _, req := range []api.Request{
		&api.SendMessageRequest{QueueUrl: "/0/none", MessageBody: "x"},
		&api.ReceiveMessageRequest{QueueUrl: "/0/none"},
		&api.DeleteMessageRequest{QueueUrl: "/0/none", ReceiptHandle: "x"},
		&api.PurgeQueueRequest{QueueUrl: "/0/none"},
		&api.DeleteQueueRequest{QueueUrl: "/0/none"},
		&api.GetQueueAttributesRequest{QueueUrl: "/0/none"},
		&api.ListDeadLetterSourceQueuesRequest{QueueUrl: "/0/none"},
	} {
		_, err := h.raw(api.QueueKey{Account: "0", Name: "none"}, req)
		wantCode(t, err, "QueueDoesNotExist")
	}
}

func TestTimeNeverGoesBackwards(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	a := h.sendFIFO(q, "a", "g", "a")
	h.now -= int64(time.Hour) // a command stamped earlier than the last one
	b := h.sendFIFO(q, "b", "g", "b")
	if b.SequenceNumber <= a.SequenceNumber {
		t.Errorf("sequence numbers went backwards: %s then %s", a.SequenceNumber, b.SequenceNumber)
	}
	m := h.receive(q, 1, 30)
	// Applied at the later time: the visibility runs from there.
	h.now += int64(time.Hour) + int64(29*time.Second)
	if got := h.receive(q, 1, -1); len(got) != 0 {
		t.Errorf("visible again %v after the receive", 29*time.Second)
	}
	if err := h.deleteMsg(q, m[0].ReceiptHandle); err != nil {
		t.Errorf("delete within the visibility timeout: %v", err)
	}
}

func TestExpiredRecordsAreDropped(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	for i := range 100 {
		h.sendFIFO(q, "b", "g", string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	h.receiveAttempt(q, "attempt", 1)
	qu := h.e.queues[q]
	if qu.dedup.Len() != 100 || len(qu.attempts) != 1 {
		t.Fatalf("records: %d dedup, %d attempts", qu.dedup.Len(), len(qu.attempts))
	}
	other := h.createQueue("other", nil)
	h.must(other, &api.DeleteQueueRequest{QueueUrl: other.Path()})
	h.advance(api.DeduplicationInterval)
	if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
		t.Fatal(err)
	}
	if qu.dedup.Len() != 0 || !qu.dedup.empty() || len(qu.attempts) != 0 || qu.attemptLog.Len() != 0 {
		t.Errorf("records after the interval: %d dedup (%d held), %d attempts (%d logged)", qu.dedup.Len(), qu.dedup.n, len(qu.attempts), qu.attemptLog.Len())
	}
	if len(h.e.deleted) != 0 {
		t.Errorf("deletion records after the cooldown: %v", h.e.deleted)
	}
}

func TestReceiveWithoutVisibilityWakes(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	h.send(q, &api.SendMessageRequest{MessageBody: "a"})
	h.takeWoken()
	h.receive(q, 1, 0)
	if w := h.takeWoken(); len(w) != 1 || w[0] != q {
		t.Errorf("hook after a receive with visibility 0 = %v", w)
	}
	if !h.e.Receivable(q, h.now) {
		t.Errorf("not receivable after a receive with visibility 0")
	}
}

// TestConcurrentReads runs the read-only entry points in parallel; with
// -race it proves they write nothing.
func TestConcurrentReads(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "1", api.AttrMessageRetentionPeriod: "60"})
	s := h.createQueue("s", map[string]string{api.AttrDelaySeconds: "1"})
	for i := range 50 {
		h.sendFIFO(q, "m", "g"+string(rune('a'+i%5)), string(rune('a'+i%26))+string(rune('a'+i/26)))
		h.send(s, &api.SendMessageRequest{MessageBody: "m", MessageGroupId: "t" + string(rune('a'+i%3))})
	}
	h.receive(q, 10, -1)
	h.receive(s, 10, -1)
	later := h.now + int64(90*time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				at := h.now + int64(i)*int64(500*time.Millisecond)
				for _, k := range []api.QueueKey{q, s} {
					if _, err := h.e.Read(&Command{Time: at, Caller: testAccount, Queue: k, Request: &api.GetQueueAttributesRequest{AttributeNames: []string{"All"}}}); err != nil {
						t.Error(err)
						return
					}
					h.e.NextWake(k, at)
					h.e.Receivable(k, at)
				}
				h.e.Read(&Command{Time: later, Caller: testAccount, Request: &api.ListQueuesRequest{}})
			}
		}()
	}
	wg.Wait()
}

// TestConcurrentExports exports one fenced queue from two goroutines at
// once, as two members' requests for a move's image do on one replica,
// each under the log's read lock, beside a snapshot view being written (a
// Raft snapshot's Persist): readers of the message arena must write
// nothing they share (go test -race). The queue's records are spread over
// several of the arena's chunks, so that lookups go from one to another.
func TestConcurrentExports(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	other := h.fifoQueue("other.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	for i := range 600 {
		h.sendFIFO(q, "m"+strconv.Itoa(i), "g"+strconv.Itoa(i%4), "")
		h.sendFIFO(other, "o"+strconv.Itoa(i), "g", "")
	}
	if _, err := h.raw(q, &FenceQueueRequest{Move: "m1"}); err != nil {
		t.Fatal(err)
	}
	view, err := h.e.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Release()
	var mu sync.RWMutex // the log's lock: readers and the view share it
	images := make([][]byte, 2)
	var wg sync.WaitGroup
	for i := range images {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				var b bytes.Buffer
				mu.RLock()
				err := h.e.ExportQueue(q, "m1", &b)
				mu.RUnlock()
				if err != nil {
					t.Error(err)
					return
				}
				images[i] = b.Bytes()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := view.WriteTo(io.Discard, mu.RLocker()); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	if !bytes.Equal(images[0], images[1]) || len(images[0]) == 0 {
		t.Fatalf("two exports of one queue differ: %d and %d bytes", len(images[0]), len(images[1]))
	}
}
