package engine

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// moveQueue moves queue q from h's engine to a new engine, through the
// four steps a cluster takes (fence, export, install, drop), and makes the
// new engine h's. The new engine already holds a queue with messages of
// its own, so that the serials the moved messages had are taken there.
func moveQueue(t *testing.T, h *harness, move string, qs ...api.QueueKey) {
	t.Helper()
	moveQueueWith(t, h, &FenceQueueRequest{Move: move}, qs...)
}

// moveQueueWith is moveQueue with the fence given.
func moveQueueWith(t *testing.T, h *harness, fence *FenceQueueRequest, qs ...api.QueueKey) {
	t.Helper()
	move := fence.Move
	target := New(Config{Region: testRegion})
	var targetBodies *testBodies
	if harnessBodies {
		targetBodies = newTestBodies(t)
		target.SetBodyStore(targetBodies)
	}
	th := &harness{t: t, e: target, now: h.now, caller: h.caller, entropy: h.entropy ^ 0xfeed}
	other := th.fifoQueue("other-"+strconv.Itoa(int(h.now%1000))+".fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	for i := range 7 {
		th.sendFIFO(other, "filler "+strconv.Itoa(i), "g", "")
	}

	for _, q := range qs {
		if _, err := h.raw(q, fence); err != nil {
			t.Fatalf("fence: %v", err)
		}
		// A second fence for the same move is a repeat, and changes nothing.
		if _, err := h.raw(q, fence); err != nil {
			t.Fatalf("fence again: %v", err)
		}
		var image bytes.Buffer
		if err := h.e.ExportQueue(q, move, &image); err != nil {
			t.Fatalf("export: %v", err)
		}
		for range 2 { // the second install is a repeat
			if _, err := th.raw(q, &InstallQueueRequest{Move: move, Image: image.Bytes()}); err != nil {
				t.Fatalf("install: %v", err)
			}
		}
		for range 2 {
			if _, err := h.raw(q, &DropQueueRequest{Move: move}); err != nil {
				t.Fatalf("drop: %v", err)
			}
		}
		// The source keeps the name for routers with an old map.
		if _, err := h.raw(q, &api.GetQueueAttributesRequest{QueueUrl: q.Path()}); !IsQueueMoving(err) {
			t.Fatalf("GetQueueAttributes on the source after the move: %v, want IsQueueMoving", err)
		}
	}
	if harnessBodies {
		// The source released every body of the queues that left, and
		// kept the others'.
		h.bodies.check(h.e)
		h.bodies = targetBodies
	}
	h.e = target
	h.e.SetAvailableHook(func(k api.QueueKey) { h.woken = append(h.woken, k) })
}

// internal applies an internal request, failing the test on error.
func (h *harness) internal(q api.QueueKey, req api.Request) api.Response {
	h.t.Helper()
	resp, err := h.raw(q, req)
	if err != nil {
		h.t.Fatalf("%s: %v", req.Action(), err)
	}
	return resp
}

// TestRandomFIFOWithMoves is TestRandomFIFO with the queue moved to
// another engine every few steps: every answer still matches the model,
// receipt handles handed out before a move included.
func TestRandomFIFOWithMoves(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 20
	}
	moved := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := newRandomRun(t, seed)
		if r.dlq != (api.QueueKey{}) {
			// A queue with a dead-letter queue is not moved.
			if _, err := r.h.raw(r.q, &FenceQueueRequest{Move: "m"}); errCode(err) != "UnsupportedOperation" {
				t.Fatalf("seed %d: fencing a queue with a RedrivePolicy: %v, want UnsupportedOperation", seed, err)
			}
			continue
		}
		mover := rand.New(rand.NewPCG(seed, 0x30e))
		for step := range 300 {
			if mover.IntN(30) == 0 {
				moveQueue(t, r.h, "move-"+strconv.Itoa(step), r.q)
				r.logf("%d: moved", step)
				moved++
			}
			r.step(step)
			if t.Failed() {
				t.Fatalf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
			}
		}
	}
	if moved == 0 {
		t.Fatal("no run moved its queue")
	}
}

// TestRandomMovesWithBodyStore runs the random sequences with moves with
// the bodies kept in a BodyStore, which the moves must carry over and
// release behind them.
func TestRandomMovesWithBodyStore(t *testing.T) {
	harnessBodies = true
	defer func() { harnessBodies = false }()
	for seed := uint64(1); seed <= 10; seed++ {
		r := newRandomRun(t, seed)
		if r.dlq != (api.QueueKey{}) {
			continue
		}
		mover := rand.New(rand.NewPCG(seed, 0x30e))
		for step := range 300 {
			if mover.IntN(30) == 0 {
				moveQueue(t, r.h, "move-"+strconv.Itoa(step), r.q)
			}
			r.step(step)
			if t.Failed() {
				t.Fatalf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
			}
		}
		r.h.bodies.check(r.h.e)
	}
}

// TestRandomStandardWithMoves is the same for standard queues, whose
// tenants' orders name messages by serial.
func TestRandomStandardWithMoves(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := newStdRun(t, seed)
		if r.model.maxReceives > 0 {
			continue // a queue with a dead-letter queue is not moved
		}
		mover := rand.New(rand.NewPCG(seed, 0x30e))
		for step := range 300 {
			if mover.IntN(30) == 0 {
				moveQueue(t, r.h, "move-"+strconv.Itoa(step), r.q, r.dlq)
				r.logf("%d: moved", step)
			}
			r.step(step)
			if t.Failed() {
				t.Fatalf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
			}
		}
	}
}

// TestMoveKeepsEverySQSPromise moves a FIFO queue with messages in every
// state and checks each promise across the move: in-flight messages stay
// in flight and their handles work, the group stays locked, deduplication
// ids and receive attempt ids are remembered, sequence numbers go on.
func TestMoveKeepsEverySQSPromise(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "30"})
	for i := range 4 {
		h.sendFIFO(q, "a"+strconv.Itoa(i), "A", "da"+strconv.Itoa(i))
		h.sendFIFO(q, "b"+strconv.Itoa(i), "B", "db"+strconv.Itoa(i))
	}
	max := 2
	attempt := &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max, ReceiveRequestAttemptId: "att-1"}
	got := h.must(q, attempt).(*api.ReceiveMessageResult).Messages
	if len(got) != 2 || got[0].Body != "a0" || got[1].Body != "a1" {
		t.Fatalf("first receive = %v, want a0 a1", bodies(got))
	}
	lastSeq := h.sendFIFO(q, "b4", "B", "db4").SequenceNumber

	moveQueue(t, h, "m1", q)

	// The same attempt id answers the same messages, with the same handles.
	again := h.must(q, attempt).(*api.ReceiveMessageResult).Messages
	if len(again) != 2 || again[0].ReceiptHandle != got[0].ReceiptHandle || again[1].ReceiptHandle != got[1].ReceiptHandle {
		t.Fatalf("attempt retried after the move = %+v, want the first receive's messages and handles", again)
	}
	// Group A is still locked by its messages in flight; B is served.
	if next := h.receive(q, 10, 30); len(next) != 5 || next[0].Body != "b0" {
		t.Fatalf("receive after the move = %v, want group B's five messages", bodies(next))
	}
	// A deduplication id sent before the move is still a duplicate.
	dup := h.sendFIFO(q, "a0 again", "A", "da0")
	if dup.MessageId != got[0].MessageId {
		t.Fatalf("duplicate send after the move got id %s, want %s", dup.MessageId, got[0].MessageId)
	}
	// Sequence numbers go on increasing.
	if next := h.sendFIFO(q, "a4", "A", "da4").SequenceNumber; !(len(next) > len(lastSeq) || (len(next) == len(lastSeq) && next > lastSeq)) {
		t.Fatalf("sequence number after the move %s, not above %s", next, lastSeq)
	}
	// Handles from before the move delete their messages; a second move
	// keeps them working.
	if err := h.deleteMsg(q, got[0].ReceiptHandle); err != nil {
		t.Fatalf("delete with a handle from before the move: %v", err)
	}
	moveQueue(t, h, "m2", q)
	if err := h.changeVis(q, got[1].ReceiptHandle, 0); err != nil {
		t.Fatalf("visibility change with a handle from before two moves: %v", err)
	}
	if next := h.receive(q, 1, 30); len(next) != 1 || next[0].Body != "a1" {
		t.Fatalf("receive after the handle released a1 = %v, want a1", bodies(next))
	}
	if c := h.counts(q); c != [3]int{3, 6, 0} {
		t.Fatalf("counts = %v, want 3 visible (a2-a4), 6 in flight (a1, b0-b4)", c)
	}
	// A handle of another queue, or a made-up tag, is still invalid.
	if err := h.deleteMsg(q, encodeHandle(12345, 1, 1)); errCode(err) != "ReceiptHandleIsInvalid" {
		t.Fatalf("delete with a made-up handle: %v", err)
	}
}

// TestFencedQueueAnswersRetryably checks what a client sees while its
// queue moves: every request on it is a retryable ServiceUnavailable, other
// queues are served, and an abandoned move leaves the queue as it was.
func TestFencedQueueAnswersRetryably(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	other := h.createQueue("other", nil)
	h.sendFIFO(q, "m", "g", "")
	h.internal(q, &FenceQueueRequest{Move: "m1"})
	if _, err := h.raw(q, &FenceQueueRequest{Move: "m2"}); errCode(err) != "ServiceUnavailable" {
		t.Fatalf("a second move's fence: %v, want ServiceUnavailable", err)
	} else if by, ok := FencedBy(err); !ok || by != "m1" {
		t.Fatalf("FencedBy(a second move's fence) = %q, %v; want m1", by, ok)
	}
	for _, req := range []api.Request{
		&api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "x", MessageGroupId: "g"},
		&api.ReceiveMessageRequest{QueueUrl: q.Path()},
		&api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: []string{"All"}},
		&api.PurgeQueueRequest{QueueUrl: q.Path()},
		&api.DeleteQueueRequest{QueueUrl: q.Path()},
		&api.TagQueueRequest{QueueUrl: q.Path(), Tags: map[string]string{"k": "v"}},
	} {
		_, err := h.do(q, req)
		ae := wantCode(t, err, "ServiceUnavailable")
		if ae.Status != 503 || !IsQueueMoving(err) {
			t.Fatalf("%s on a fenced queue: %+v", req.Action(), ae)
		}
	}
	if exists, take := h.e.ReceiveOutlook(q, h.now, ""); !exists || !take {
		t.Fatalf("ReceiveOutlook on a fenced queue = %v %v: the receive must reach the log to be told", exists, take)
	}
	h.must(other, &api.SendMessageRequest{QueueUrl: other.Path(), MessageBody: "still served"})
	h.internal(q, &UnfenceQueueRequest{Move: "m1"})
	if got := h.receive(q, 1, 30); len(got) != 1 || got[0].Body != "m" {
		t.Fatalf("receive after the move was abandoned = %v", bodies(got))
	}
}

// TestMoveRefusals covers what the move requests refuse.
func TestMoveRefusals(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dlq.fifo", nil)
	arn := "arn:aws:sqs:" + testRegion + ":" + testAccount + ":dlq.fifo"
	h.fifoQueue("src.fifo", map[string]string{api.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":2}`})
	if _, err := h.raw(dlq, &FenceQueueRequest{Move: "m"}); errCode(err) != "UnsupportedOperation" {
		t.Fatalf("fencing a dead-letter queue: %v", err)
	}
	q := h.fifoQueue("q.fifo", nil)
	if _, err := h.raw(q, &FenceQueueRequest{}); errCode(err) != "InvalidParameterValue" {
		t.Fatalf("fence without a move: %v", err)
	}
	var image bytes.Buffer
	if err := h.e.ExportQueue(q, "m", &image); err == nil {
		t.Fatal("an unfenced queue was exported")
	}
	if _, err := h.raw(q, &DropQueueRequest{Move: "m"}); errCode(err) != "InvalidParameterValue" {
		t.Fatalf("dropping an unfenced queue: %v", err)
	}
	h.internal(q, &FenceQueueRequest{Move: "m"})
	if err := h.e.ExportQueue(q, "an older move", &image); err == nil {
		t.Fatal("a queue fenced for one move was exported for another")
	}
	if err := h.e.ExportQueue(q, "m", &image); err != nil {
		t.Fatal(err)
	}
	// Installing over an existing queue, or a damaged image, is refused
	// and changes nothing.
	if _, err := h.raw(q, &InstallQueueRequest{Move: "m2", Image: image.Bytes()}); errCode(err) != "QueueNameExists" {
		t.Fatalf("install over an existing queue: %v", err)
	}
	target := newHarness(t)
	bad := bytes.Clone(image.Bytes())
	bad[len(bad)/2] ^= 1
	if _, err := target.raw(q, &InstallQueueRequest{Move: "m", Image: bad}); errCode(err) != "InvalidParameterValue" {
		t.Fatalf("install of a damaged image: %v", err)
	}
	other := api.QueueKey{Account: testAccount, Name: "elsewhere.fifo"}
	if _, err := target.raw(other, &InstallQueueRequest{Move: "m", Image: image.Bytes()}); errCode(err) != "InvalidParameterValue" {
		t.Fatalf("install under another name: %v", err)
	}
	if len(target.e.queues) != 0 {
		t.Fatalf("refused installs left %d queues", len(target.e.queues))
	}
	// A fenced queue cannot become a dead-letter queue meanwhile.
	redrive := `{"deadLetterTargetArn":"arn:aws:sqs:` + testRegion + ":" + testAccount + `:q.fifo","maxReceiveCount":2}`
	if _, err := h.do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "late.fifo", Attributes: map[string]string{api.AttrFifoQueue: "true", api.AttrRedrivePolicy: redrive}}); !IsQueueMoving(err) {
		t.Fatalf("a RedrivePolicy naming a fenced queue: %v", err)
	}
}

// TestMoveSurvivesSnapshots checks that each step's state is in the
// engine's snapshot: a fenced queue, an installed queue with its past
// handle tags, and a source's moved-away record.
func TestMoveSurvivesSnapshots(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	for i := range 3 {
		h.sendFIFO(q, "m"+strconv.Itoa(i), "g"+strconv.Itoa(i), "")
	}
	got := h.receive(q, 3, 60)
	h.internal(q, &FenceQueueRequest{Move: "m1"})
	restoreHarness(t, h)
	if _, err := h.raw(q, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "x", MessageGroupId: "g"}); !IsQueueMoving(err) {
		t.Fatalf("send to a fenced queue restored from a snapshot: %v", err)
	}
	var image bytes.Buffer
	if err := h.e.ExportQueue(q, "m1", &image); err != nil {
		t.Fatal(err)
	}
	target := newHarness(t)
	target.now = h.now
	target.internal(q, &InstallQueueRequest{Move: "m1", Image: image.Bytes()})
	h.internal(q, &DropQueueRequest{Move: "m1"})
	restoreHarness(t, target)
	restoreHarness(t, h)
	if _, err := h.raw(q, &api.GetQueueUrlRequest{QueueName: "q.fifo"}); !IsQueueMoving(err) {
		t.Fatalf("GetQueueUrl on the source restored after the move: %v", err)
	}
	if _, err := h.raw(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "q.fifo", Attributes: map[string]string{api.AttrFifoQueue: "true"}}); !IsQueueMoving(err) {
		t.Fatalf("CreateQueue of the moved name on the source: %v", err)
	}
	// The install is remembered: a repeat changes nothing.
	target.internal(q, &InstallQueueRequest{Move: "m1", Image: image.Bytes()})
	for _, m := range got {
		if err := target.deleteMsg(q, m.ReceiptHandle); err != nil {
			t.Fatalf("delete with a handle from before the move, after a restore: %v", err)
		}
	}
	if c := target.counts(q); c != [3]int{0, 0, 0} {
		t.Fatalf("counts = %v after deleting every message", c)
	}
	// The moved-away record runs out, and the name is free again.
	h.advance(time.Duration(movedMarkerLife) + 1)
	if _, err := h.raw(q, &api.GetQueueUrlRequest{QueueName: "q.fifo"}); errCode(err) != "QueueDoesNotExist" {
		t.Fatalf("GetQueueUrl on the source once its record ran out: %v", err)
	}
}

// FuzzInstallQueue feeds InstallQueueRequest arbitrary images, as they are
// and with a valid checksum in place of their last four bytes. An install
// must never panic; a refused one leaves the engine as it was, and an
// accepted one leaves an engine that works and snapshots and restores.
func FuzzInstallQueue(f *testing.F) {
	seedT := &testing.T{}
	h := newHarness(seedT)
	fq := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true", api.AttrDelaySeconds: "0"})
	sq := h.createQueue("std", nil)
	for i := range 6 {
		h.sendFIFO(fq, "f"+strconv.Itoa(i), "g"+strconv.Itoa(i%2), "")
		h.must(sq, &api.SendMessageRequest{QueueUrl: sq.Path(), MessageBody: "s" + strconv.Itoa(i), DelaySeconds: intp(i % 2 * 30)})
	}
	two := 2
	h.must(fq, &api.ReceiveMessageRequest{QueueUrl: fq.Path(), MaxNumberOfMessages: &two, ReceiveRequestAttemptId: "a"})
	h.receive(sq, 2, 30)
	// Moved once already, so that the image carries past tags and an
	// attempt record from before a move.
	moveQueue(seedT, h, "first", fq, sq)
	for _, k := range []api.QueueKey{fq, sq} {
		h.internal(k, &FenceQueueRequest{Move: "seed"})
		var image bytes.Buffer
		if err := h.e.ExportQueue(k, "seed", &image); err != nil {
			f.Fatal(err)
		}
		f.Add(k.Name, image.Bytes())
	}
	f.Add("q.fifo", []byte(snapMagic+"\x00\x00\x00\x02garbage"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		for _, in := range [][]byte{data, withChecksum(data)} {
			e := junkEngine(t, 42)
			before := snapshotBytes(t, e)
			cmd := &Command{Time: e.now, Queue: api.QueueKey{Account: testAccount, Name: name}, Request: &InstallQueueRequest{Move: "m", Image: in}}
			if _, err := e.Apply(cmd); err != nil {
				if after := snapshotBytes(t, e); !bytes.Equal(before, after) {
					t.Fatalf("a refused install (%v) changed the engine", err)
				}
				continue
			}
			got := snapshotBytes(t, e)
			e2 := New(Config{Region: testRegion})
			if err := e2.Restore(bytes.NewReader(got)); err != nil {
				t.Fatalf("the snapshot of an engine after an install does not restore: %v", err)
			}
			exercise(e)
		}
	})
}

// TestPastTagsAreBounded checks the bound on the handle tags a queue
// honours: a handle outlives maxPastTags moves of its queue, not more.
func TestPastTagsAreBounded(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	for i := range 2 {
		h.sendFIFO(q, "m"+strconv.Itoa(i), "g"+strconv.Itoa(i), "")
	}
	got := h.receive(q, 2, 600)
	for i := range maxPastTags {
		moveQueue(t, h, "m"+strconv.Itoa(i), q)
	}
	if err := h.changeVis(q, got[0].ReceiptHandle, 600); err != nil {
		t.Fatalf("a handle after %d moves: %v", maxPastTags, err)
	}
	moveQueue(t, h, "one-more", q)
	if err := h.changeVis(q, got[1].ReceiptHandle, 600); errCode(err) != "ReceiptHandleIsInvalid" {
		t.Fatalf("a handle after %d moves: %v, want ReceiptHandleIsInvalid", maxPastTags+1, err)
	}
}
