package engine

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// outboxIDs returns the MessageIds of the messages in queue q's outbox,
// oldest first.
func outboxIDs(t *testing.T, e *Engine, q api.QueueKey) []string {
	t.Helper()
	return pendingIDs(t, e, q, nil, api.QueueKey{})
}

// pendingIDs returns the MessageIds of the messages in queue q's outbox
// that queue dest of engine de has not taken yet (all of them if de is
// nil), oldest first.
func pendingIDs(t *testing.T, e *Engine, q api.QueueKey, de *Engine, dest api.QueueKey) []string {
	t.Helper()
	qu := e.queues[q]
	if qu == nil {
		return nil
	}
	var taken uint64
	if de != nil && de.queues[dest] != nil {
		taken = de.queues[dest].taken[outboxSource{key: q, created: qu.createdAt}].through
	}
	var out []string
	for _, en := range qu.outbox.entries {
		if en.seq <= taken || en.m == nil {
			continue
		}
		p, err := readPayload(e.bodyStore(), e.ms, en.m)
		if err != nil {
			t.Fatalf("reading an outbox entry: %v", err)
		}
		out = append(out, e.ms.messageID(en.m, p.head).String())
	}
	return out
}

// allOutboxes returns OutboxBatch of every outbox OutboxHeads returns, as
// the server's relay reads them one after another.
func allOutboxes(e *Engine, maxBytes int) ([]OutboxBatch, error) {
	var out []OutboxBatch
	for _, h := range e.OutboxHeads() {
		b, ok, err := e.OutboxBatch(h.Source, h.Created, maxBytes)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// checkOutboxed checks the engine's count of outbox entries, which
// HasOutbox answers from, against the outboxes.
func checkOutboxed(t *testing.T, e *Engine) {
	t.Helper()
	n := 0
	for _, q := range e.queues {
		n += len(q.outbox.entries)
	}
	for _, o := range e.orphans {
		n += len(o.box.entries)
	}
	if n != e.outboxed {
		t.Fatalf("the engine counts %d outbox entries, its outboxes hold %d", e.outboxed, n)
	}
}

// moveBetween moves queue q from one harness's engine to another's, as a
// cluster moves a queue between shards, spanning redrives.
func moveBetween(t *testing.T, from, to *harness, q api.QueueKey, move string) {
	t.Helper()
	to.now = max(to.now, from.now)
	from.internal(q, &FenceQueueRequest{Move: move, Spanning: true})
	var image bytes.Buffer
	if err := from.e.ExportQueue(q, move, &image); err != nil {
		t.Fatalf("export: %v", err)
	}
	to.internal(q, &InstallQueueRequest{Move: move, Image: image.Bytes()})
	from.internal(q, &DropQueueRequest{Move: move})
}

// relayer carries outboxes between the engines of a set of harnesses, as
// the server's relay does, with the faults a relay meets: it may stop
// between the take and the settle (a kill), take twice (a retry after a
// lost answer), or run from two nodes at once.
type relayer struct {
	t     *testing.T
	hosts []*harness
	rng   *rand.Rand
	log   func(format string, args ...any)
}

// hostOf returns the harness whose engine holds q, or nil.
func (r *relayer) hostOf(q api.QueueKey) *harness {
	for _, h := range r.hosts {
		if h.e.queues[q] != nil {
			return h
		}
	}
	return nil
}

// run relays the outboxes of every engine once; faults says whether it
// may misbehave.
func (r *relayer) run(faults bool) {
	r.t.Helper()
	for _, h := range r.hosts {
		checkOutboxed(r.t, h.e)
	}
	for _, src := range r.hosts {
		batches, err := allOutboxes(src.e, 1<<20)
		if err != nil {
			r.t.Fatalf("Outboxes: %v", err)
		}
		for _, b := range batches {
			dst := r.hostOf(b.Dest)
			if dst == nil {
				r.log("relay %s: %s is nowhere: returned", b.Source.Name, b.Dest.Name)
				src.internal(b.Source, &SettleOutboxRequest{Created: b.Created, Through: b.Through, Returned: true})
				continue
			}
			dst.now = max(dst.now, src.now)
			takes := 1
			if faults && r.rng.IntN(5) == 0 {
				takes = 2
			}
			for range takes {
				dst.internal(b.Dest, b.Take)
			}
			if faults && r.rng.IntN(4) == 0 {
				r.log("relay %s: took %d through %d, not settled", b.Source.Name, len(b.Take.Messages), b.Through)
				continue
			}
			src.internal(b.Source, &SettleOutboxRequest{Created: b.Created, Through: b.Through})
			r.log("relay %s: took and settled %d through %d", b.Source.Name, len(b.Take.Messages), b.Through)
		}
	}
}

// TestRandomFIFOWithRemoteDeadLetterQueue runs the random FIFO sequences
// whose queue has a dead-letter queue with the two queues moved apart and
// together again between two engines, the relay's steps (and its faults)
// interleaved anywhere, and either engine restored from a snapshot now
// and then. Every answer matches the model, and the dead-letter queue,
// followed by the queue's outbox, holds exactly the messages the model
// moved there, in order: nothing lost or taken twice.
func TestRandomFIFOWithRemoteDeadLetterQueue(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 20
	}
	runRemoteDeadLetterQueue(t, seeds, true)
}

// TestRemoteDeadLetterQueueWithBodyStore is the same with the bodies in
// a BodyStore, which each engine's outbox and takes must keep and release
// (no restores: a restored harness has no store).
func TestRemoteDeadLetterQueueWithBodyStore(t *testing.T) {
	harnessBodies = true
	defer func() { harnessBodies = false }()
	runRemoteDeadLetterQueue(t, 20, false)
}

func runRemoteDeadLetterQueue(t *testing.T, seeds int, restores bool) {
	runs, relayed, parted := 0, 0, 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := newRandomRun(t, seed)
		if r.dlq == (api.QueueKey{}) {
			continue
		}
		runs++
		a := r.h
		b := newHarness(t)
		b.ids = 1_000_000 // message ids unique across both engines
		b.entropy = seed ^ 0xb
		rng := rand.New(rand.NewPCG(seed, 0x0b0))
		rel := &relayer{t: t, hosts: []*harness{a, b}, rng: rng, log: r.logf}
		other := func(h *harness) *harness {
			if h == a {
				return b
			}
			return a
		}
		moveBetween(t, a, b, r.dlq, "dlq-0")
		r.dlqHost = b
		for step := range 300 {
			switch p := rng.IntN(100); {
			case p < 15:
				rel.run(true)
				relayed++
			case p < 17:
				to := other(r.h)
				moveBetween(t, r.h, to, r.q, "q-"+strconv.Itoa(step))
				r.h = to
				r.logf("%d: queue moved", step)
			case p < 19:
				to := other(r.dlqHost)
				moveBetween(t, r.dlqHost, to, r.dlq, "dlq-"+strconv.Itoa(step))
				r.dlqHost = to
				r.logf("%d: dead-letter queue moved", step)
			case p < 21 && restores:
				h := a
				if rng.IntN(2) == 0 {
					h = b
				}
				restoreHarness(t, h)
				r.logf("%d: an engine restored", step)
			}
			if r.h != r.dlqHost {
				parted++
			}
			a.now = max(a.now, b.now)
			b.now = a.now
			r.step(step)
			if t.Failed() {
				t.Fatalf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
			}
		}
		// Relayed without faults, every message reaches the dead-letter
		// queue, and the outboxes empty.
		rel.run(false)
		rel.run(false)
		r.compareState()
		if left := outboxIDs(t, r.h.e, r.q); len(left) > 0 {
			t.Fatalf("seed %d: %d messages left in the outbox", seed, len(left))
		}
		if harnessBodies {
			// Each store holds the bodies of its engine's messages, no
			// more: a settled entry's body was released, a taken one's
			// kept.
			a.bodies.check(a.e)
			b.bodies.check(b.e)
		}
		if t.Failed() {
			t.Fatalf("seed %d failed at the end; log:\n%s", seed, r.tail())
		}
	}
	if runs == 0 || relayed == 0 || parted == 0 {
		t.Fatalf("%d runs with a dead-letter queue, %d relays, %d steps apart", runs, relayed, parted)
	}
}

// partedPair makes a FIFO queue with a dead-letter queue (maxReceiveCount
// 1) in engine a, then moves the dead-letter queue to engine b.
func partedPair(t *testing.T) (a, b *harness, q, dlq api.QueueKey) {
	a, b = newHarness(t), newHarness(t)
	b.ids = 1_000_000
	dlq = a.fifoQueue("dead.fifo", nil)
	q = a.fifoQueue("q.fifo", map[string]string{
		api.AttrContentBasedDeduplication: "true",
		api.AttrRedrivePolicy:             fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion)),
	})
	moveBetween(t, a, b, dlq, "m-dlq")
	return a, b, q, dlq
}

// deadLetterAll sends n messages to q and receives each once, with a
// visibility timeout of 0, then receives again: each goes to q's outbox.
func deadLetterAll(t *testing.T, h *harness, q api.QueueKey, n int) {
	t.Helper()
	for i := range n {
		h.sendFIFO(q, "m"+strconv.Itoa(i), "g", "")
		if got := h.receive(q, 1, 0); len(got) != 1 {
			t.Fatalf("receive %d: %d messages", i, len(got))
		}
	}
	if got := h.receive(q, 10, 30); len(got) != 0 {
		t.Fatalf("a receive past maxReceiveCount returned %d messages", len(got))
	}
}

// TestOutboxToAnotherEngine follows dead-lettered messages from a queue to
// its dead-letter queue in another engine: the outbox holds them, a take
// repeated changes nothing, the settle empties the outbox, and the
// messages arrive as a redrive leaves them (DeadLetterQueueSourceArn,
// receive count).
func TestOutboxToAnotherEngine(t *testing.T) {
	a, b, q, dlq := partedPair(t)
	deadLetterAll(t, a, q, 3)
	if got := outboxIDs(t, a.e, q); len(got) != 3 {
		t.Fatalf("outbox holds %v, want 3 messages", got)
	}
	// The outbox survives a snapshot.
	restoreHarness(t, a)
	batches, err := allOutboxes(a.e, 1<<20)
	if err != nil || len(batches) != 1 || batches[0].Dest != dlq || len(batches[0].Take.Messages) != 3 {
		t.Fatalf("Outboxes = %+v, %v", batches, err)
	}
	bt := batches[0]
	b.now = a.now
	for range 3 { // retries take nothing twice
		b.internal(dlq, bt.Take)
	}
	if c := b.counts(dlq); c != [3]int{3, 0, 0} {
		t.Fatalf("dead-letter queue counts %v after the take, want 3 visible", c)
	}
	a.internal(q, &SettleOutboxRequest{Created: bt.Created, Through: bt.Through})
	a.internal(q, &SettleOutboxRequest{Created: bt.Created, Through: bt.Through})
	if got := outboxIDs(t, a.e, q); len(got) != 0 {
		t.Fatalf("outbox holds %v after the settle", got)
	}
	if batches, _ := allOutboxes(a.e, 1<<20); len(batches) != 0 || a.e.HasOutbox() {
		t.Fatalf("Outboxes = %+v after the settle", batches)
	}
	got := b.must(dlq, &api.ReceiveMessageRequest{QueueUrl: dlq.Path(), MaxNumberOfMessages: intp(10),
		MessageSystemAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult).Messages
	if len(got) != 3 {
		t.Fatalf("received %d from the dead-letter queue", len(got))
	}
	for i, m := range got {
		if m.Body != "m"+strconv.Itoa(i) {
			t.Fatalf("message %d: body %q, want m%d (order kept)", i, m.Body, i)
		}
		if m.Attributes["DeadLetterQueueSourceArn"] != q.ARN(testRegion) || m.Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("message %d: attributes %v", i, m.Attributes)
		}
	}
	// The engine that took them remembers it across a snapshot: the
	// take of a relay that never heard the answer adds nothing.
	restoreHarness(t, b)
	b.internal(dlq, bt.Take)
	if c := b.counts(dlq); c != [3]int{0, 3, 0} {
		t.Fatalf("dead-letter queue counts %v after a late take, want 3 in flight", c)
	}
	// ListDeadLetterSourceQueues names the source in the other engine.
	res := b.must(dlq, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: dlq.Path()}).(*api.ListDeadLetterSourceQueuesResult)
	if !slices.Equal(res.QueueUrls, []string{q.Path()}) {
		t.Fatalf("ListDeadLetterSourceQueues = %v, want [%s]", res.QueueUrls, q.Path())
	}
}

// TestOutboxReturnedWhenDeadLetterQueueIsGone: messages bound for a
// dead-letter queue that was deleted come back to their queue, which then
// delivers them as a queue without a dead-letter queue does.
func TestOutboxReturnedWhenDeadLetterQueueIsGone(t *testing.T) {
	a, b, q, dlq := partedPair(t)
	deadLetterAll(t, a, q, 2)
	b.must(dlq, &api.DeleteQueueRequest{QueueUrl: dlq.Path()})
	rel := &relayer{t: t, hosts: []*harness{a, b}, log: t.Logf}
	rel.run(false)
	if got := outboxIDs(t, a.e, q); len(got) != 0 {
		t.Fatalf("outbox holds %v", got)
	}
	got := a.receive(q, 10, 30)
	if !slices.Equal(bodies(got), []string{"m0", "m1"}) {
		t.Fatalf("received %v, want m0 and m1 back, in order", bodies(got))
	}
	if a.e.queues[q].redriveRemote {
		t.Fatal("the queue still sends to a dead-letter queue that is gone")
	}
}

// TestOutboxOfDeletedQueue: a queue deleted while its outbox held
// messages does not take them along: they reach the dead-letter queue.
func TestOutboxOfDeletedQueue(t *testing.T) {
	a, b, q, dlq := partedPair(t)
	deadLetterAll(t, a, q, 2)
	a.must(q, &api.DeleteQueueRequest{QueueUrl: q.Path()})
	if !a.e.HasOutbox() {
		t.Fatal("the outbox went with its queue")
	}
	restoreHarness(t, a)
	rel := &relayer{t: t, hosts: []*harness{a, b}, log: t.Logf}
	rel.run(false)
	if a.e.HasOutbox() || len(a.e.orphans) != 0 {
		t.Fatal("the deleted queue's outbox is still there after the relay")
	}
	if c := b.counts(dlq); c != [3]int{2, 0, 0} {
		t.Fatalf("dead-letter queue counts %v, want 2 visible", c)
	}
}

// TestMoveTaskToRemoteSource: a message move task on a dead-letter queue
// returns each message to the queue it came from, in another engine,
// through the dead-letter queue's outbox.
func TestMoveTaskToRemoteSource(t *testing.T) {
	a, b, q, dlq := partedPair(t)
	deadLetterAll(t, a, q, 3)
	rel := &relayer{t: t, hosts: []*harness{a, b}, log: t.Logf}
	rel.run(false)
	b.now = a.now
	b.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion)})
	b.advance(10_000_000_000)
	b.internal(api.QueueKey{}, &TickRequest{Moves: DefaultTickMoves})
	if got := outboxIDs(t, b.e, dlq); len(got) != 3 {
		t.Fatalf("the dead-letter queue's outbox holds %v, want 3 messages", got)
	}
	a.now = b.now
	rel.run(false)
	got := a.receive(q, 10, 30)
	if !slices.Equal(bodies(got), []string{"m0", "m1", "m2"}) {
		t.Fatalf("received %v from the source after the move task", bodies(got))
	}
	for _, m := range got {
		if _, ok := m.Attributes["DeadLetterQueueSourceArn"]; ok {
			t.Fatalf("a message moved back keeps DeadLetterQueueSourceArn: %v", m.Attributes)
		}
	}
}

// TestSpanningFenceNeeded: a queue in a redrive is moved only by a fence
// that spans redrives.
func TestSpanningFenceNeeded(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dead.fifo", nil)
	q := h.fifoQueue("q.fifo", map[string]string{
		api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion)),
	})
	for _, k := range []api.QueueKey{q, dlq} {
		if _, err := h.raw(k, &FenceQueueRequest{Move: "m"}); errCode(err) != "UnsupportedOperation" {
			t.Fatalf("fence of %s without Spanning: %v, want UnsupportedOperation", k.Name, err)
		}
		h.internal(k, &FenceQueueRequest{Move: "m-" + k.Name, Spanning: true})
	}
}

// TestFenceOfEndedMoveTasks: a dead-letter queue whose move task is
// running is not moved, whatever the fence; once the task has ended, a
// fence that takes ended tasks (Ended) moves it, its task list with it.
// (The queues a task returns messages to may move meanwhile: the outbox
// reaches them, TestDeadLetterWhileTheDeadLetterQueueMoves.)
func TestFenceOfEndedMoveTasks(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dead.fifo", nil)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true",
		api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion)),
	})
	deadLetterAll(t, h, q, 3)
	one := 1
	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), MaxNumberOfMessagesPerSecond: &one})
	if _, err := h.raw(dlq, &FenceQueueRequest{Move: "m1", Spanning: true, Ended: true}); errCode(err) != "UnsupportedOperation" {
		t.Fatalf("fence of a queue with a running task: %v, want UnsupportedOperation", err)
	}
	h.advance(10_000_000_000)
	h.internal(api.QueueKey{}, &TickRequest{Moves: DefaultTickMoves})
	list := func() []api.ListMessageMoveTasksResultEntry {
		return h.must(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: dlq.ARN(testRegion)}).(*api.ListMessageMoveTasksResult).Results
	}
	if l := list(); len(l) != 1 || l[0].Status != api.MoveTaskCompleted {
		t.Fatalf("tasks after 10 s: %+v, want one completed", l)
	}
	if _, err := h.raw(dlq, &FenceQueueRequest{Move: "m2", Spanning: true}); errCode(err) != "UnsupportedOperation" {
		t.Fatalf("fence without Ended of a queue whose task ended: %v, want UnsupportedOperation", err)
	}
	h.internal(dlq, &FenceQueueRequest{Move: "m2", Spanning: true, Ended: true})
	h.internal(dlq, &UnfenceQueueRequest{Move: "m2"})
	before := list()
	moveQueueWith(t, h, &FenceQueueRequest{Move: "m3", Spanning: true, Ended: true}, dlq)
	if after := list(); !reflect.DeepEqual(after, before) {
		t.Fatalf("tasks after the move: %+v, want %+v", after, before)
	}
}

// TestSourceLeavingIsUnlinked: a queue of another engine that stops naming
// a dead-letter queue (its RedrivePolicy removed, or the queue deleted)
// tells it through its outbox, and the dead-letter queue lists it no more.
func TestSourceLeavingIsUnlinked(t *testing.T) {
	for _, how := range []string{"policy removed", "queue deleted"} {
		t.Run(how, func(t *testing.T) {
			a, b, q, dlq := partedPair(t)
			sources := func() []string {
				return b.must(dlq, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: dlq.Path()}).(*api.ListDeadLetterSourceQueuesResult).QueueUrls
			}
			if got := sources(); !slices.Equal(got, []string{q.Path()}) {
				t.Fatalf("sources before = %v", got)
			}
			if how == "policy removed" {
				a.must(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: map[string]string{api.AttrRedrivePolicy: ""}})
			} else {
				a.must(q, &api.DeleteQueueRequest{QueueUrl: q.Path()})
			}
			restoreHarness(t, a) // the notice survives a snapshot
			rel := &relayer{t: t, hosts: []*harness{a, b}, log: t.Logf}
			rel.run(false)
			if got := sources(); len(got) != 0 {
				t.Fatalf("sources after = %v, want none", got)
			}
			if a.e.HasOutbox() {
				t.Fatal("the outbox still holds the notice")
			}
		})
	}
}

// FuzzTakeMessages feeds fifoq:TakeMessages arbitrary entries: a record
// of any bytes, of any kind and number, to a FIFO and a standard queue. A
// take must never panic; a refused one leaves the engine as it was, and
// an accepted one leaves an engine that works, snapshots and restores.
func FuzzTakeMessages(f *testing.F) {
	seedT := &testing.T{}
	a, _, q, _ := partedPair(seedT)
	deadLetterAll(seedT, a, q, 2)
	batches, err := allOutboxes(a.e, 1<<20)
	if err != nil || len(batches) != 1 {
		f.Fatalf("Outboxes = %v, %v", batches, err)
	}
	for _, m := range batches[0].Take.Messages {
		f.Add(true, uint8(m.Kind), m.Seq, m.Record)
		f.Add(false, uint8(m.Kind), m.Seq, m.Record)
	}
	f.Add(true, uint8(OutboxUnlink), uint64(1), []byte{})
	f.Add(true, uint8(OutboxMoveBack), uint64(7), []byte("\x01\x02junk"))
	f.Fuzz(func(t *testing.T, fifo bool, kind uint8, seq uint64, record []byte) {
		h := newHarness(t)
		dest := h.fifoQueue("dead.fifo", nil)
		if !fifo {
			dest = h.createQueue("dead", nil)
		}
		before := snapshotBytes(t, h.e)
		src := api.QueueKey{Account: testAccount, Name: "src"}
		_, err := h.raw(dest, &TakeMessagesRequest{Source: src, SourceArn: src.ARN(testRegion), Created: 1, Fifo: fifo,
			Messages: []OutboxMessage{{Seq: seq, Kind: OutboxKind(kind), Record: record}}})
		if err != nil {
			if after := snapshotBytes(t, h.e); !bytes.Equal(before, after) {
				t.Fatalf("a refused take (%v) changed the engine", err)
			}
			return
		}
		got := snapshotBytes(t, h.e)
		e2 := New(Config{Region: testRegion})
		if err := e2.Restore(bytes.NewReader(got)); err != nil {
			t.Fatalf("the snapshot of an engine after a take does not restore: %v", err)
		}
		exercise(h.e)
	})
}

// TestDeadLetterWhileTheDeadLetterQueueMoves: a message dead-lettered to a
// dead-letter queue of the same engine that is fenced for a move (its
// image taken already) goes through the outbox, and reaches the queue
// where it went; one returned by a move task to a fenced queue alike.
func TestDeadLetterWhileTheDeadLetterQueueMoves(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	b.ids = 1_000_000
	dlq := a.fifoQueue("dead.fifo", nil)
	q := a.fifoQueue("q.fifo", map[string]string{
		api.AttrContentBasedDeduplication: "true",
		api.AttrRedrivePolicy:             fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion)),
	})
	a.internal(dlq, &FenceQueueRequest{Move: "m", Spanning: true})
	var image bytes.Buffer
	if err := a.e.ExportQueue(dlq, "m", &image); err != nil {
		t.Fatal(err)
	}
	deadLetterAll(t, a, q, 2)
	b.now = a.now
	b.internal(dlq, &InstallQueueRequest{Move: "m", Image: image.Bytes()})
	a.internal(dlq, &DropQueueRequest{Move: "m"})
	rel := &relayer{t: t, hosts: []*harness{a, b}, log: t.Logf}
	rel.run(false)
	if c := b.counts(dlq); c != [3]int{2, 0, 0} {
		t.Fatalf("dead-letter queue counts %v after its move, want the 2 messages dead-lettered during it", c)
	}

	// Back: q joins the dead-letter queue in b; a move task there returns
	// the messages to q while q is fenced for a move back to a.
	moveBetween(t, a, b, q, "m2")
	b.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion)})
	b.internal(q, &FenceQueueRequest{Move: "m3", Spanning: true})
	image.Reset()
	if err := b.e.ExportQueue(q, "m3", &image); err != nil {
		t.Fatal(err)
	}
	b.advance(10_000_000_000)
	b.internal(api.QueueKey{}, &TickRequest{Moves: DefaultTickMoves})
	a.now = b.now
	a.internal(q, &InstallQueueRequest{Move: "m3", Image: image.Bytes()})
	b.internal(q, &DropQueueRequest{Move: "m3"})
	rel.run(false)
	if got := a.receive(q, 10, 30); !slices.Equal(bodies(got), []string{"m0", "m1"}) {
		t.Fatalf("received %v from the queue after the move task, want m0 and m1", bodies(got))
	}
}

// TestMoveTaskToSplitSource: a message move task returns each message to
// the partition of its source that holds its group. A message of a group
// the partition in the dead-letter queue's engine does not hold goes into
// the outbox, bound for the queue, with its group's hash for the relay to
// route it by; so do all after it, which would otherwise overtake it. A
// partition refuses to take a group it does not hold, and takes it once
// the entries are given to the partition that does.
func TestMoveTaskToSplitSource(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dead.fifo", nil)
	attrs := maps.Clone(htAttrs)
	attrs[api.AttrRedrivePolicy] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion))
	q := h.fifoQueue("ht.fifo", attrs)
	var groups []string
	var hashes []uint32
	for i := range 10 {
		g := "g" + strconv.Itoa(i)
		groups = append(groups, g)
		hashes = append(hashes, api.GroupHash(g))
		h.sendFIFO(q, g, g, g)
	}
	if got := h.receive(q, 10, 0); len(got) != 10 {
		t.Fatalf("first receive: %d messages", len(got))
	}
	if got := h.receive(q, 10, 30); len(got) != 0 {
		t.Fatalf("a receive past maxReceiveCount returned %d messages", len(got))
	}
	slices.Sort(hashes)
	if _, err := h.raw(q, &SplitQueueRequest{At: hashes[len(hashes)/2], Part: 1}); err != nil {
		t.Fatal(err)
	}
	p1 := part(q, 1)
	parts := []api.QueueKey{q, p1}

	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion)})
	h.advance(10 * time.Second)
	h.internal(api.QueueKey{}, &TickRequest{Moves: DefaultTickMoves})
	boxed := outboxIDs(t, h.e, dlq)
	if len(boxed) == 0 {
		t.Fatal("no message of the other partition's groups went into the outbox")
	}
	direct := h.receive(q, 10, 30)
	if len(direct)+len(boxed) != 10 {
		t.Fatalf("%d messages moved straight to partition 0 and %d into the outbox, want 10 in all", len(direct), len(boxed))
	}
	for _, m := range direct {
		if partitionOf(t, h.e, parts, m.Body) != q {
			t.Fatalf("message of group %s moved straight into partition 0, which does not hold it", m.Body)
		}
	}

	// The relay's part: each run of entries of one partition's groups
	// taken there, then settled.
	taken := map[api.QueueKey][]string{}
	refused := 0
	for {
		batches, err := allOutboxes(h.e, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(batches) == 0 {
			break
		}
		b := batches[0]
		if b.Source != dlq || b.Dest != q {
			t.Fatalf("an outbox batch from %s to %s, want from %s to %s", b.Source, b.Dest, dlq, q)
		}
		owner := func(m OutboxMessage) api.QueueKey {
			for _, p := range parts {
				if r, _ := h.e.PartitionOf(p); uint64(m.GroupHash) >= r.Lo && uint64(m.GroupHash) < r.Hi {
					return p
				}
			}
			t.Fatalf("no partition holds hash %d", m.GroupHash)
			return api.QueueKey{}
		}
		to := owner(b.Take.Messages[0])
		n := 1
		for n < len(b.Take.Messages) && owner(b.Take.Messages[n]) == to {
			n++
		}
		if n < len(b.Take.Messages) {
			// The whole batch spans both partitions: whichever is asked
			// refuses it, as a relay whose map lags would be refused.
			if _, err := h.raw(to, b.Take); errCode(err) != "ServiceUnavailable" {
				t.Fatalf("a take of groups of two partitions at %s: %v, want ServiceUnavailable", to, err)
			}
			refused++
		}
		b.Take.Messages = b.Take.Messages[:n]
		h.internal(to, b.Take)
		h.internal(dlq, &SettleOutboxRequest{Created: b.Created, Through: b.Take.Messages[n-1].Seq})
		for _, m := range h.receive(to, 10, 30) {
			taken[to] = append(taken[to], m.Body)
		}
	}
	for p, bodies := range taken {
		for _, g := range bodies {
			if partitionOf(t, h.e, parts, g) != p {
				t.Fatalf("group %s taken by %s, which does not hold it", g, p)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no outbox batch held groups of both partitions: the refusal went untried")
	}
	if n := len(direct) + len(taken[q]) + len(taken[p1]); n != 10 || len(taken[p1]) == 0 {
		t.Fatalf("%d straight, %d taken by partition 0, %d by partition 1; want 10 in all, some in partition 1", len(direct), len(taken[q]), len(taken[p1]))
	}
}
