package engine

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// stats reads QueueStats at the harness's time and checks that its counts
// agree with GetQueueAttributes, and that reading changed nothing: a second
// read gives the same figures.
func (h *harness) stats(q api.QueueKey) QueueStats {
	h.t.Helper()
	s, ok := h.e.QueueStats(q, h.now)
	if !ok {
		h.t.Fatalf("QueueStats(%v): no such queue", q)
	}
	if again, _ := h.e.QueueStats(q, h.now); again != s {
		h.t.Fatalf("QueueStats changed between two reads: %+v, then %+v", s, again)
	}
	if c := h.counts(q); c != [3]int{s.Visible, s.NotVisible, s.Delayed} {
		h.t.Fatalf("QueueStats counts %v, GetQueueAttributes %v", [3]int{s.Visible, s.NotVisible, s.Delayed}, c)
	}
	return s
}

func TestQueueStats(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrMessageRetentionPeriod: "60"})
	if s := h.stats(q); s != (QueueStats{Queue: q}) {
		t.Fatalf("empty queue: %+v", s)
	}

	h.send(q, &api.SendMessageRequest{MessageBody: "a"})
	h.advance(time.Second)
	h.send(q, &api.SendMessageRequest{MessageBody: "delayed", DelaySeconds: intp(10)})
	h.advance(time.Second)
	h.send(q, &api.SendMessageRequest{MessageBody: "c"})
	if got := h.receive(q, 1, 5); len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	want := QueueStats{Queue: q, Visible: 1, NotVisible: 1, Delayed: 1, OldestAt: t0}
	if s := h.stats(q); s != want {
		t.Fatalf("after sends and a receive: %+v, want %+v", s, want)
	}

	// No command touches the queue: the delay and the visibility timeout
	// run out all the same.
	h.advance(10 * time.Second)
	want = QueueStats{Queue: q, Visible: 3, OldestAt: t0}
	if s := h.stats(q); s != want {
		t.Fatalf("after the timers ran out: %+v, want %+v", s, want)
	}

	// The first two messages outlive the 60 s retention period, still
	// unprocessed: the oldest is the third.
	h.advance(49 * time.Second)
	want = QueueStats{Queue: q, Visible: 1, OldestAt: t0 + 2*int64(time.Second)}
	if s := h.stats(q); s != want {
		t.Fatalf("after retention ran out: %+v, want %+v", s, want)
	}

	h.advance(time.Minute)
	if s := h.stats(q); s != (QueueStats{Queue: q}) {
		t.Fatalf("after every message expired: %+v", s)
	}
	if _, ok := h.e.QueueStats(api.QueueKey{Account: testAccount, Name: "none"}, h.now); ok {
		t.Errorf("QueueStats of a missing queue reported one")
	}
}

// TestQueueStatsAgedMessage covers a message moved into a standard
// dead-letter queue: it keeps its original enqueue time, older than what
// arrived there before it, so the oldest is found outside the arrival list.
func TestQueueStatsAgedMessage(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", map[string]string{api.AttrMessageRetentionPeriod: "120"})
	src := h.createQueue("src", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	h.send(src, &api.SendMessageRequest{MessageBody: "poison"})
	h.receive(src, 1, 0)
	h.advance(time.Second)
	h.send(dlq, &api.SendMessageRequest{MessageBody: "direct"})
	h.advance(time.Second)
	if got := h.receive(src, 1, -1); len(got) != 0 {
		t.Fatalf("message returned past maxReceiveCount")
	}
	want := QueueStats{Queue: dlq, Visible: 2, OldestAt: t0}
	if s := h.stats(dlq); s != want {
		t.Fatalf("dead-letter queue: %+v, want %+v", s, want)
	}
	if s := h.stats(src); s != (QueueStats{Queue: src}) {
		t.Fatalf("source queue: %+v", s)
	}
	// The moved message outlives its original retention period first.
	h.advance(118*time.Second + 500*time.Millisecond)
	want = QueueStats{Queue: dlq, Visible: 1, OldestAt: t0 + int64(time.Second)}
	if s := h.stats(dlq); s != want {
		t.Fatalf("after the moved message expired: %+v, want %+v", s, want)
	}
}

func TestAppendQueueStats(t *testing.T) {
	h := newHarness(t)
	f := h.fifoQueue("f.fifo", map[string]string{api.AttrDelaySeconds: "30"})
	s := h.createQueue("s", nil)
	h.sendFIFO(f, "x", "g", "d1")
	h.send(s, &api.SendMessageRequest{MessageBody: "y"})
	h.send(s, &api.SendMessageRequest{MessageBody: "z"})

	got := map[api.QueueKey]QueueStats{}
	for _, st := range h.e.AppendQueueStats(nil, h.now) {
		got[st.Queue] = st
	}
	want := map[api.QueueKey]QueueStats{
		f: {Queue: f, FIFO: true, Delayed: 1, OldestAt: t0},
		s: {Queue: s, Visible: 2, OldestAt: t0},
	}
	if len(got) != len(want) {
		t.Fatalf("AppendQueueStats gave %d queues, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v: %+v, want %+v", k, got[k], w)
		}
	}

	h.must(s, &api.DeleteQueueRequest{QueueUrl: s.Path()})
	if all := h.e.AppendQueueStats(nil, h.now); len(all) != 1 || all[0].Queue != f {
		t.Errorf("after deleting %v: %+v", s, all)
	}
}

// TestCommandsApplied counts the commands applied on each queue (not the
// reads), and starts again from 0 in a restored engine.
func TestCommandsApplied(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("busy", nil)
	idle := h.createQueue("idle", nil)
	for range 3 {
		h.must(q, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "m"})
	}
	h.must(idle, &api.SendMessageRequest{QueueUrl: idle.Path(), MessageBody: "m"})
	h.receive(q, 10, 30)
	h.attrs(q) // a read: not applied
	applied := h.e.CommandsApplied()
	if got := applied[q]; got != 4 {
		t.Fatalf("CommandsApplied(busy) = %d after three sends and a receive; want 4", got)
	}
	if got := applied[idle]; got != 1 {
		t.Fatalf("CommandsApplied(idle) = %d after one send; want 1", got)
	}
	if got, ok := applied[api.QueueKey{Account: testAccount, Name: "none"}]; ok {
		t.Fatalf("CommandsApplied names a missing queue, with %d", got)
	}
	restoreHarness(t, h)
	if got := h.e.CommandsApplied()[q]; got != 0 {
		t.Fatalf("CommandsApplied(busy) = %d in a restored engine; want 0", got)
	}
}

// TestQueueLoadsSayWhichQueuesAreHighThroughput: only a FIFO queue whose
// throughput limit is per message group is high-throughput, from its
// creation or from a SetQueueAttributes that switches it on, and no
// longer once switched off.
func TestQueueLoadsSayWhichQueuesAreHighThroughput(t *testing.T) {
	h := newHarness(t)
	ht := h.createQueue("ht.fifo", map[string]string{api.AttrFifoQueue: "true",
		api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId"})
	plain := h.createQueue("plain.fifo", map[string]string{api.AttrFifoQueue: "true"})
	std := h.createQueue("std", nil)
	h.must(ht, &api.SendMessageRequest{QueueUrl: ht.Path(), MessageBody: "m", MessageGroupId: "g", MessageDeduplicationId: "d"})
	loads := h.e.QueueLoads(h.now)
	if l := loads[ht]; !l.HighThroughput || l.Applied != 1 {
		t.Errorf("QueueLoads()[ht.fifo] = %+v; want high-throughput, 1 applied", l)
	}
	if loads[plain].HighThroughput || loads[std].HighThroughput {
		t.Errorf("QueueLoads() calls a plain FIFO or a standard queue high-throughput: %+v %+v", loads[plain], loads[std])
	}
	h.must(plain, &api.SetQueueAttributesRequest{QueueUrl: plain.Path(), Attributes: map[string]string{
		api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId"}})
	h.must(ht, &api.SetQueueAttributesRequest{QueueUrl: ht.Path(), Attributes: map[string]string{
		api.AttrFifoThroughputLimit: "perQueue"}})
	loads = h.e.QueueLoads(h.now)
	if !loads[plain].HighThroughput || loads[ht].HighThroughput {
		t.Errorf("after switching: plain.fifo %+v, ht.fifo %+v; want the other way round", loads[plain], loads[ht])
	}
}

// TestQueueLoadsSayWhereToSplit: a high-throughput queue is splittable
// until it is a dead-letter queue, and its SplitAt halves the groups
// holding messages, none while one group holds them all.
func TestQueueLoadsSayWhereToSplit(t *testing.T) {
	h := newHarness(t)
	ht := h.createQueue("ht.fifo", map[string]string{api.AttrFifoQueue: "true",
		api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId"})
	for i := range 3 {
		h.sendFIFO(ht, "m", "only", "d"+strconv.Itoa(i))
	}
	if l := h.e.QueueLoads(h.now)[ht]; !l.Splittable || l.SplitAt != 0 {
		t.Fatalf("one group's queue: %+v; want splittable, no SplitAt (one group cannot be parted)", l)
	}
	var hashes []uint32
	for i := range 41 {
		g := "g" + strconv.Itoa(i)
		h.sendFIFO(ht, "m", g, g)
		hashes = append(hashes, api.GroupHash(g))
	}
	hashes = append(hashes, api.GroupHash("only"))
	at := h.e.QueueLoads(h.now)[ht].SplitAt
	below := 0
	for _, x := range hashes {
		if x < at {
			below++
		}
	}
	if below != len(hashes)/2 {
		t.Fatalf("SplitAt %d leaves %d of %d groups below it; want half", at, below, len(hashes))
	}
	h.createQueue("src.fifo", map[string]string{api.AttrFifoQueue: "true",
		api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, ht.ARN(testRegion))})
	if l := h.e.QueueLoads(h.now)[ht]; l.Splittable {
		t.Fatalf("a dead-letter queue: %+v; want not splittable", l)
	}
}
