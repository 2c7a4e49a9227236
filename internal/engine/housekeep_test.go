package engine

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// checkDueIndex checks the housekeeping index: every queue with something
// due some day is in it, no earlier than the index says, and it holds no
// queue that is gone.
func checkDueIndex(t *testing.T, e *Engine) {
	t.Helper()
	for _, q := range e.due.items {
		if e.queues[q.key] != q {
			t.Errorf("housekeeping index holds %s, which is not a queue of the engine", q.key)
		}
	}
	exact, any := int64(0), false
	if e.deletedLog.Len() > 0 {
		exact, any = e.deletedLog.Front().until, true
	}
	for k, q := range e.queues {
		at, ok := q.nextDue()
		if ok && (!any || at < exact) {
			exact, any = at, true
		}
		switch {
		case !ok:
		case q.duePos == 0 || q.due != e.due:
			t.Errorf("queue %s has work due at %d but is not in the housekeeping index", k, at)
		case q.dueAt > at:
			t.Errorf("queue %s has work due at %d, the housekeeping index says %d (late)", k, at, q.dueAt)
		}
	}
	if got, ok := e.NextHousekeeping(); any && (!ok || got > exact) {
		t.Errorf("NextHousekeeping = %d %v, work is due at %d", got, ok, exact)
	}
}

// housekeep applies a HousekeepRequest with the given limit.
func (h *harness) housekeep(limit int) *HousekeepResult {
	h.t.Helper()
	res, err := h.raw(api.QueueKey{}, &HousekeepRequest{Limit: limit})
	if err != nil {
		h.t.Fatalf("housekeep: %v", err)
	}
	return res.(*HousekeepResult)
}

// stored returns the number of messages queue q holds in memory, expired
// ones not yet removed included.
func (h *harness) stored(q api.QueueKey) int { return h.e.queues[q].stored() }

// TestHousekeepRetentionUntouchedQueue: messages past the retention period
// of a queue no command names are removed by housekeeping, at most Limit
// per command, in retention order, and the rest of the queue is untouched.
func TestHousekeepRetentionUntouchedQueue(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("idle", map[string]string{api.AttrMessageRetentionPeriod: "60"})
	other := h.createQueue("busy", nil)
	for i := range 25 {
		h.send(q, &api.SendMessageRequest{MessageBody: "old-" + strconv.Itoa(i)})
	}
	h.advance(30 * time.Second)
	for i := range 5 {
		h.send(q, &api.SendMessageRequest{MessageBody: "new-" + strconv.Itoa(i)})
	}
	h.send(other, &api.SendMessageRequest{MessageBody: "keep"})
	checkDueIndex(t, h.e)

	// Nothing is due yet: the engine says when, and a command finds nothing.
	at, ok := h.e.NextHousekeeping()
	if want := t0 + int64(60*time.Second); !ok || at != want {
		t.Fatalf("NextHousekeeping = %d %v, want %d (the first message's retention end)", at, ok, want)
	}
	if res := h.housekeep(10); res.Steps != 0 || res.More {
		t.Fatalf("housekeeping before anything is due = %+v", res)
	}

	// Past the 25 old messages' retention, before the 5 new ones'.
	h.advance(45 * time.Second)
	if at, ok := h.e.NextHousekeeping(); !ok || at > h.now {
		t.Fatalf("NextHousekeeping = %d %v, want a time by now", at, ok)
	}
	if got := h.stored(q); got != 30 {
		t.Fatalf("stored before housekeeping = %d, want 30", got)
	}
	for i, want := range []int{20, 10, 5} {
		res := h.housekeep(10)
		wantSteps, wantMore := 10, i < 2
		if i == 2 {
			wantSteps = 5
		}
		if res.Steps != wantSteps || res.More != wantMore {
			t.Fatalf("housekeeping %d = %+v, want %d steps, more %v", i, res, wantSteps, wantMore)
		}
		if got := h.stored(q); got != want {
			t.Fatalf("stored after housekeeping %d = %d, want %d", i, got, want)
		}
		checkDueIndex(t, h.e)
	}
	// The oldest went first: what is left is the new messages.
	peek, _ := h.e.Peek(q, h.now, PeekOptions{Limit: 10})
	for _, m := range peek {
		if m.Body[:4] != "new-" {
			t.Fatalf("housekeeping left %q", m.Body)
		}
	}
	if got := h.stored(other); got != 1 {
		t.Fatalf("the other queue holds %d messages, want 1", got)
	}
	if res := h.housekeep(10); res.Steps != 0 || res.More {
		t.Fatalf("housekeeping with nothing due = %+v", res)
	}
	if at, ok := h.e.NextHousekeeping(); !ok || at != t0+int64(90*time.Second) {
		t.Fatalf("NextHousekeeping = %d %v, want the new messages' retention end", at, ok)
	}
	if c := h.counts(q); c != [3]int{5, 0, 0} {
		t.Fatalf("counts = %v, want 5 visible", c)
	}

	// Once everything is gone nothing is due: an idle engine asks for no
	// command.
	h.advance(time.Hour)
	h.housekeep(100)
	h.must(other, &api.PurgeQueueRequest{QueueUrl: other.Path()})
	if at, ok := h.e.NextHousekeeping(); ok {
		t.Fatalf("NextHousekeeping = %d on an empty engine", at)
	}
	if h.e.due.Len() != 0 {
		t.Fatalf("housekeeping index holds %d queues on an empty engine", h.e.due.Len())
	}
}

// TestHousekeepTimersAndRecords: housekeeping makes messages whose delay or
// visibility timeout ran out visible (waking the queue), drops expired
// deduplication and receive attempt records of a FIFO queue nobody sends
// to, and forgets the arrays a burst of them left, and prunes deletion
// records.
func TestHousekeepTimersAndRecords(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("f.fifo", nil)
	for i := range 2000 {
		h.sendFIFO(q, "m", "g"+strconv.Itoa(i%3), "d"+strconv.Itoa(i))
	}
	req := &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: intp(3), VisibilityTimeout: intp(30), ReceiveRequestAttemptId: "a1"}
	if n := len(h.must(q, req).(*api.ReceiveMessageResult).Messages); n != 3 {
		t.Fatalf("received %d, want 3", n)
	}
	gone := h.createQueue("gone", nil)
	h.must(gone, &api.DeleteQueueRequest{QueueUrl: gone.Path()})
	checkDueIndex(t, h.e)
	qu := h.e.queues[q]
	if qu.nInflight != 3 || qu.dedup.Len() != 2000 || len(qu.attempts) != 1 || len(h.e.deleted) != 1 {
		t.Fatalf("before: %d in flight, %d dedup, %d attempts, %d deletions", qu.nInflight, qu.dedup.Len(), len(qu.attempts), len(h.e.deleted))
	}

	h.advance(31 * time.Second)
	h.takeWoken()
	res := h.housekeep(100)
	if res.Steps != 3 || res.More {
		t.Fatalf("housekeeping after the visibility timeout = %+v, want 3 steps", res)
	}
	if qu.nInflight != 0 || qu.nVisible != 2000 {
		t.Fatalf("after: %d in flight, %d visible", qu.nInflight, qu.nVisible)
	}
	if w := h.takeWoken(); len(w) != 1 || w[0] != q {
		t.Fatalf("woken %v, want %s", w, q)
	}

	h.advance(5 * time.Minute)
	for {
		res := h.housekeep(500)
		checkDueIndex(t, h.e)
		if !res.More {
			break
		}
	}
	if qu.dedup.Len() != 0 || len(qu.attempts) != 0 || len(h.e.deleted) != 0 || h.e.deletedLog.Len() != 0 {
		t.Fatalf("records left: %d dedup, %d attempts, %d deletions", qu.dedup.Len(), len(qu.attempts), len(h.e.deleted))
	}
	if cap(qu.dedup.recs) != 0 || cap(qu.dedup.index) != 0 {
		t.Fatalf("the emptied deduplication table keeps arrays of %d and %d", cap(qu.dedup.recs), cap(qu.dedup.index))
	}
	// Deduplication still works on the fresh map.
	first := h.sendFIFO(q, "m", "g", "again")
	if dup := h.sendFIFO(q, "m", "g", "again"); dup.MessageId != first.MessageId {
		t.Fatalf("a resend within the interval was not deduplicated")
	}
}

// TestHousekeepDeterministicAcrossRestore: an engine restored from a
// snapshot, whose housekeeping index is exact, does what the engine that
// wrote it does, whose index holds early times: same results, same state.
func TestHousekeepDeterministicAcrossRestore(t *testing.T) {
	h := newHarness(t)
	var keys []api.QueueKey
	for i := range 6 {
		k := h.createQueue(fmt.Sprintf("q%d", i), map[string]string{api.AttrMessageRetentionPeriod: strconv.Itoa(60 + 10*i)})
		keys = append(keys, k)
		for j := range 8 {
			h.send(k, &api.SendMessageRequest{MessageBody: "b"})
			if j%3 == 0 {
				h.advance(time.Second)
			}
		}
		h.receive(k, 2, 5)
	}
	// A tick applies time to every queue but leaves their places in the
	// housekeeping index early: the timers it ran are gone.
	h.advance(6 * time.Second)
	if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, k := range keys {
		q := h.e.queues[k]
		if at, _ := q.nextDue(); q.dueAt < at {
			stale++
		}
	}
	if stale == 0 {
		t.Fatal("no queue has an early place in the index: the test proves nothing")
	}
	var snap bytes.Buffer
	if err := h.e.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	y := New(Config{Region: testRegion})
	if err := y.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	checkDueIndex(t, y)
	now := h.now
	for step := range 40 {
		now += int64(7 * time.Second)
		cmd := &Command{Time: now, Request: &HousekeepRequest{Limit: 3}}
		ra, ea := h.e.Apply(cmd)
		ry, ey := y.Apply(cmd)
		if fmt.Sprint(ra, ea) != fmt.Sprint(ry, ey) {
			t.Fatalf("step %d: results differ: %v %v / %v %v", step, ra, ea, ry, ey)
		}
		checkDueIndex(t, h.e)
		checkDueIndex(t, y)
	}
	var sa, sy bytes.Buffer
	if err := h.e.Snapshot(&sa); err != nil {
		t.Fatal(err)
	}
	if err := y.Snapshot(&sy); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sa.Bytes(), sy.Bytes()) {
		t.Fatal("snapshots differ after the same housekeeping")
	}
	for _, k := range keys {
		if n := h.e.queues[k].stored(); n != 0 {
			t.Fatalf("%s keeps %d messages past retention", k, n)
		}
	}
}
