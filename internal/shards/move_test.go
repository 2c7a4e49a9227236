package shards

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// localSteps carries a member's move steps out in the shards it holds,
// all of them here; failInstall, while above 0, makes an install fail
// after it was applied, as when the answer is lost. As the server's
// Steps, it refuses a driver's step whose driver no longer leads; and it
// refuses one that carries no driver (WithDriver), so that every test
// here that moves, splits or merges checks the steps carry theirs.
type localSteps struct {
	set         *Set
	failInstall atomic.Int32
}

// group returns group id's log: the first group's, or a shard's.
func (l *localSteps) group(id uint32) *replog.Raft {
	if id == 0 {
		return l.set.host
	}
	g, _ := l.set.Shard(id)
	return g
}

// asDriver is ctx carrying a step a test makes by hand as a driver that
// leads.
func asDriver(ctx context.Context) context.Context {
	return WithDriver(ctx, func() bool { return true })
}

func (l *localSteps) Step(ctx context.Context, id uint32, q api.QueueKey, req api.Request) error {
	switch req.(type) {
	case *engine.FenceQueueRequest, *engine.UnfenceQueueRequest, *engine.InstallQueueRequest, *engine.DropQueueRequest,
		*engine.SplitQueueRequest, *engine.MergeQueueRequest:
		// As the server's Steps: a driver's step carries the driver's
		// check, asked before each try.
		if _, ok := ctx.Value(driverKey{}).(func() bool); !ok {
			return fmt.Errorf("a %s step without its driver (WithDriver)", req.Action())
		}
		if !StillDriving(ctx) {
			return errNotLeading
		}
	}
	g := l.group(id)
	_, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Queue: q, Request: req})
	if _, ok := req.(*engine.InstallQueueRequest); ok && err == nil && l.failInstall.Add(-1) >= 0 {
		return errors.New("the answer was lost")
	}
	return err
}

func (l *localSteps) Export(ctx context.Context, id uint32, q api.QueueKey, move string) ([]byte, error) {
	g := l.group(id)
	var buf bytes.Buffer
	var err error
	g.Read(func(e *engine.Engine) { err = e.ExportQueue(q, move, &buf) })
	return buf.Bytes(), err
}

func (l *localSteps) Queues(ctx context.Context, id uint32) (map[api.QueueKey]engine.QueueLoad, error) {
	g := l.group(id)
	var out map[api.QueueKey]engine.QueueLoad
	now := time.Now().UnixNano()
	g.Read(func(e *engine.Engine) { out = e.QueueLoads(now) })
	return out, nil
}

func (l *localSteps) Fenced(ctx context.Context, id uint32) (map[api.QueueKey]string, error) {
	var out map[api.QueueKey]string
	l.group(id).Read(func(e *engine.Engine) { out = e.Fenced() })
	return out, nil
}

func (l *localSteps) Members(ctx context.Context, id uint32) ([]replog.Member, uint64, bool) {
	return l.group(id).CommittedMembersAt()
}

// queueIn reports whether shard id's engine holds q.
func queueIn(set *Set, id uint32, q api.QueueKey) (ok bool) {
	g, _ := set.Shard(id)
	g.Read(func(e *engine.Engine) { _, ok = e.QueuePolicy(q) })
	return ok
}

func send(t *testing.T, l replog.Log, q api.QueueKey, body string) {
	t.Helper()
	_, err := l.Apply(context.Background(), &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: q, MessageIDs: []string{"id-" + body},
		Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: body}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMoveDrivesEveryStep moves queues between the shards of a member:
// the map follows, the queue and its messages are in the target only; a
// move whose install's answer was lost is finished from its record; a
// queue that cannot move is left served where it was.
func TestMoveDrivesEveryStep(t *testing.T) {
	var mu sync.Mutex
	results := map[string]int{}
	host, set := openMember(t, t.TempDir(), 3, func(c *Config) {
		c.Moved = func(r string) { mu.Lock(); results[r]++; mu.Unlock() }
	})
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()

	q := queue("jobs")
	from, err := set.Place(ctx, q, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	create(t, host, set, from, q)
	g, _ := set.Shard(from)
	send(t, g, q, "one")
	to := from%3 + 1
	if got, err := set.Move(ctx, q, to); err != nil || got != from {
		t.Fatalf("Move = %d, %v; want %d, nil", got, err, from)
	}
	if set.Of(q) != to || queueIn(set, from, q) || !queueIn(set, to, q) {
		t.Fatalf("after the move: map says %d, in %d: %v, in %d: %v", set.Of(q), from, queueIn(set, from, q), to, queueIn(set, to, q))
	}
	g, _ = set.Shard(to)
	var n int
	g.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(q) })
	if n != 1 {
		t.Fatalf("the moved queue holds %d messages, want 1", n)
	}
	if got, err := set.Move(ctx, q, to); err != nil || got != to {
		t.Fatalf("a move to the queue's own shard = %d, %v", got, err)
	}

	// The install's answer is lost: the move stays recorded, and the
	// next drive (the leader's resumeMoves) finishes it, and tells the
	// balancer the queue just moved, as a move it drove from the start.
	set.movedMu.Lock()
	delete(set.moved, q)
	set.movedMu.Unlock()
	steps.failInstall.Store(1)
	back := to%3 + 1
	if _, err := set.Move(ctx, q, back); err == nil {
		t.Fatal("a move whose install failed answered no error")
	}
	// (The member's own loop may have finished it already.)
	if _, err := set.Move(ctx, q, back); err != nil && !errors.Is(err, ErrMoveUnderWay) {
		t.Fatalf("a second move while one is recorded: %v, want ErrMoveUnderWay", err)
	}
	set.resumeMoves()
	if set.Of(q) != back || queueIn(set, to, q) || !queueIn(set, back, q) {
		t.Fatalf("after the resumed move: map says %d, want %d", set.Of(q), back)
	}
	if !set.recentlyMoved(q, time.Now()) {
		t.Fatal("a resumed move left the queue to the balancer at once")
	}
	var left []string
	host.Read(func(e *engine.Engine) { left = e.MetaKeys(movePrefix) })
	if len(left) != 0 {
		t.Fatalf("move records left: %v", left)
	}

	// A fence a given-up move left (its driver deposed before it lifted
	// it) is lifted by the next move of the queue.
	if err := steps.Step(asDriver(ctx), back, q, &engine.FenceQueueRequest{Move: "given-up"}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Move(ctx, q, to); err != nil || set.Of(q) != to || !queueIn(set, to, q) {
		t.Fatalf("a move of a queue a given-up move fenced: %v (map says %d)", err, set.Of(q))
	}

	// A queue with a redrive policy moves, away from its dead-letter
	// queue (engine/outbox.go); a queue with a running message move task
	// is not moved, and stays served.
	dlq, src := queue("dlq"), queue("src")
	dlqShard, _ := set.Place(ctx, dlq, nil, "")
	create(t, host, set, dlqShard, dlq)
	srcShard, _ := set.Place(ctx, src, &dlq, "")
	gs, _ := set.Shard(srcShard)
	if _, err := gs.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: src.Account, Request: &api.CreateQueueRequest{QueueName: src.Name,
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"3"}`}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Move(ctx, src, srcShard%3+1); err != nil || set.Of(src) != srcShard%3+1 {
		t.Fatalf("moving a queue with a redrive policy: %v (map says %d)", err, set.Of(src))
	}
	if srcShard != dlqShard {
		t.Fatalf("a queue placed near its dead-letter queue went to shard %d, not %d", srcShard, dlqShard)
	}
	gd, _ := set.Shard(dlqShard)
	if _, err := gd.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: dlq.Account,
		Request: &api.StartMessageMoveTaskRequest{SourceArn: "arn:aws:sqs:us-east-1:000000000000:dlq"}}); err != nil {
		t.Fatalf("a move task on a dead-letter queue whose source is in another shard: %v", err)
	}
	// That task had nothing to move and has ended: its queue moves. One
	// still running, with messages left at one a second, keeps it.
	if _, err := set.Move(ctx, dlq, dlqShard%3+1); err != nil || set.Of(dlq) != dlqShard%3+1 {
		t.Fatalf("moving a queue whose move task ended: %v (map says %d)", err, set.Of(dlq))
	}
	dlqShard = dlqShard%3 + 1
	gd, _ = set.Shard(dlqShard)
	dest := queue("dest")
	create(t, host, set, dlqShard, dest)
	for i := range 5 {
		send(t, gd, dlq, "to move "+strconv.Itoa(i))
	}
	one := 1
	if _, err := gd.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: dlq.Account,
		Request: &api.StartMessageMoveTaskRequest{SourceArn: "arn:aws:sqs:us-east-1:000000000000:dlq",
			DestinationArn: "arn:aws:sqs:us-east-1:000000000000:dest", MaxNumberOfMessagesPerSecond: &one}}); err != nil {
		t.Fatalf("a move task to a queue of the same shard: %v", err)
	}
	if _, err := set.Move(ctx, dlq, dlqShard%3+1); err == nil || !strings.Contains(err.Error(), "move tasks") {
		t.Fatalf("moving a queue with a running message move task: %v", err)
	}
	send(t, gd, dlq, "still served")
	host.Read(func(e *engine.Engine) { left = e.MetaKeys(movePrefix) })
	if len(left) != 0 || set.Of(dlq) != dlqShard {
		t.Fatalf("an abandoned move left records %v, or moved the map to %d", left, set.Of(dlq))
	}
	mu.Lock()
	defer mu.Unlock()
	if results["moved"] != 5 || results["abandoned"] != 1 {
		t.Fatalf("moves told = %v, want 5 moved and 1 abandoned", results)
	}
}

// TestBalanceQueuesEvensOutShards puts six queues in one shard of three
// (as a cluster whose shards were added after its queues were placed),
// and one in the first group: the balancer moves them, one a round, until
// no shard holds two more than another and the first group holds none,
// and passes over a queue that cannot move.
func TestBalanceQueuesEvensOutShards(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 3)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	dlq := queue("q0-dlq")
	for i, q := range []api.QueueKey{dlq, queue("q1"), queue("q2"), queue("q3"), queue("q4"), queue("q5")} {
		if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
			t.Fatal(err)
		}
		create(t, host, set, 1, q)
		if i == 1 {
			// q1's dead-letter queue is q0-dlq: neither moves.
			g, _ := set.Shard(1)
			if _, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: q, Request: &api.SetQueueAttributesRequest{QueueUrl: q.Path(),
				Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:q0-dlq","maxReceiveCount":"3"}`}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A queue the first group kept from before the cluster had shards.
	old := queue("from-before-shards")
	create(t, host, set, 0, old)
	count := func() map[uint32]int {
		out := map[uint32]int{}
		for _, id := range set.Named() {
			qs, _ := steps.Queues(ctx, id)
			out[id] = len(qs)
		}
		return out
	}
	for round := 0; round < 10; round++ {
		set.balanceQueues(steps)
	}
	got := count()
	if got[1]+got[2]+got[3] != 7 || max(got[1], got[2], got[3])-min(got[1], got[2], got[3]) > 1 {
		t.Fatalf("queues per shard after balancing = %v, want 7 within one of each other", got)
	}
	var inFirst bool
	host.Read(func(e *engine.Engine) { _, inFirst = e.QueuePolicy(old) })
	if inFirst || set.Of(old) == 0 {
		t.Fatalf("the first group's queue is still there (map: shard %d)", set.Of(old))
	}
	for _, q := range []api.QueueKey{dlq, queue("q1")} {
		if set.Of(q) != 1 {
			t.Fatalf("%s moved to shard %d, though it is in a redrive", q.Name, set.Of(q))
		}
	}
}

// TestStaleFenceLifted fences a queue for a move that has no record (its
// driver deposed after it gave the move up, before it lifted the fence):
// the first group's leader lifts the fence, and the queue is served
// again.
func TestStaleFenceLifted(t *testing.T) {
	defer func(d, e time.Duration) { staleFenceAfter, fenceSweepEvery = d, e }(staleFenceAfter, fenceSweepEvery)
	staleFenceAfter, fenceSweepEvery = time.Second, 200*time.Millisecond
	host, set := openMember(t, t.TempDir(), 2)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	q := queue("fenced")
	id, err := set.Place(ctx, q, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	create(t, host, set, id, q)
	if err := steps.Step(asDriver(ctx), id, q, &engine.FenceQueueRequest{Move: "nobodys"}); err != nil {
		t.Fatal(err)
	}
	g, _ := set.Shard(id)
	deadline := time.Now().Add(10 * time.Second)
	for try := 0; ; try++ {
		_, err := g.Apply(ctx, &engine.Command{Time: time.Now().UnixNano(), Caller: q.Account, Queue: q, MessageIDs: []string{"m"},
			Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "x"}})
		if err == nil && try == 0 {
			t.Fatal("a send right after the fence succeeded")
		}
		if err == nil {
			break
		}
		if !engine.IsQueueMoving(err) || time.Now().After(deadline) {
			t.Fatalf("send to a queue with a stale fence: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMoveReadsTheRecordAfresh caches a queue's record on the first
// group's leader, then has the record change under it (as a move another
// leader drove does, before this node looks at the epoch again): a move
// asked of this leader must read the record as it is, not say the queue
// is where the cache remembers it.
func TestMoveReadsTheRecordAfresh(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 2)
	set.SetSteps(&localSteps{set: set})
	ctx := context.Background()
	q := queue("cached")
	if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
		t.Fatal(err)
	}
	create(t, host, set, 1, q)
	setRecord := func(v string) {
		t.Helper()
		if _, err := host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: queueKey(q), Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	setRecord("2")
	if set.Of(q) != 2 {
		t.Fatal("the record was not read")
	}
	setRecord("1") // the cache still says 2
	if from, err := set.Move(ctx, q, 2); err != nil || from != 1 {
		t.Fatalf("Move = %d, %v; want a move from 1", from, err)
	}
	if !queueIn(set, 2, q) || queueIn(set, 1, q) {
		t.Fatal("the queue did not move to shard 2")
	}
}

// TestMoveOfAStaleRecordTouchesNothing drives a move whose record names a
// shard the queue had left (its driver read the map before a later flip
// reached it), a shard that still holds a fenced copy of the queue from
// before: the 1000-move cluster test found such a move lifting that
// copy's fence and moving the stale copy over the live one, losing what
// was sent since and undoing deletes. The move is given up instead, the
// live copy left alone, and the stale copy dropped once its fence has
// stood without a record long enough.
func TestMoveOfAStaleRecordTouchesNothing(t *testing.T) {
	host, set, steps, q := sweptQueue(t, "live")
	ctx := context.Background()
	// A move from 1 to 2, carried out to the flip, whose copy in 1 is
	// left fenced (its drop and record are gone with its driver).
	flipByHand(t, host, steps, q, "m1", 1, 2)
	live, _ := set.Shard(2)
	send(t, live, q, "sent to the live copy")
	// A move recorded with the stale shard 1 as its source.
	if err := set.setOnce(ctx, moveKey(q), moveRecord{id: "m2", from: 1, to: 3}.String()); err != nil {
		t.Fatal(err)
	}
	set.resumeMoves()
	set.resumeMoves()
	if set.Of(q) != 2 || queueIn(set, 3, q) {
		t.Fatalf("the stale move went on: the map says %d, shard 3 holds the queue: %v", set.Of(q), queueIn(set, 3, q))
	}
	var n int
	live.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(q) })
	if n != 1 {
		t.Fatalf("the live copy holds %d messages, want 1", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for queueIn(set, 1, q) {
		if time.Now().After(deadline) {
			t.Fatal("the stale fenced copy in shard 1 was not dropped")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLateInstallLeftBehindIsDropped lands a move's install in its
// target after the move was finished and the queue moved on (a deposed
// driver's try, held up in the network): the target then holds a copy no
// map names, which the 1000-move cluster test found refusing the queue's
// every later move into that shard (QueueNameExists). The first group's
// leader drops the stray copy, and the queue moves there again with its
// messages.
func TestLateInstallLeftBehindIsDropped(t *testing.T) {
	host, set, steps, q := sweptQueue(t, "moved-on")
	ctx := context.Background()
	first, _ := set.Shard(1)
	send(t, first, q, "kept")
	// Move m1, from 1 to 2, carried out whole; its image kept for the
	// late try.
	image := flipByHand(t, host, steps, q, "m1", 1, 2)
	if err := steps.Step(asDriver(ctx), 1, q, &engine.DropQueueRequest{Move: "m1"}); err != nil {
		t.Fatal(err)
	}
	// The queue moves on to 3; then m1's late install lands in 2.
	if from, err := set.Move(ctx, q, 3); err != nil || from != 2 {
		t.Fatalf("Move to 3 = %d, %v", from, err)
	}
	if err := steps.Step(asDriver(ctx), 2, q, &engine.InstallQueueRequest{Move: "m1", Image: image}); err != nil {
		t.Fatalf("the late install: %v", err)
	}
	if !queueIn(set, 2, q) {
		t.Fatal("the late install left no copy in shard 2: the test shows nothing")
	}
	deadline := time.Now().Add(10 * time.Second)
	for queueIn(set, 2, q) {
		if time.Now().After(deadline) {
			t.Fatal("the stray copy in shard 2 was not dropped")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if from, err := set.Move(ctx, q, 2); err != nil || from != 3 {
		t.Fatalf("Move back to 2 = %d, %v", from, err)
	}
	live, _ := set.Shard(2)
	var n int
	live.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(q) })
	if n != 1 || set.Of(q) != 2 {
		t.Fatalf("shard 2 holds %d messages and the map says %d; want 1 and 2", n, set.Of(q))
	}
}

// sweptQueue opens a member with three shards whose leader sweeps for
// stale fences and stray copies every 200 ms, acting on what it has
// seen for a second, and creates queue name in shard 1.
func sweptQueue(t *testing.T, name string) (*replog.Raft, *Set, *localSteps, api.QueueKey) {
	t.Helper()
	d, e := staleFenceAfter, fenceSweepEvery
	t.Cleanup(func() { staleFenceAfter, fenceSweepEvery = d, e })
	staleFenceAfter, fenceSweepEvery = time.Second, 200*time.Millisecond
	host, set := openMember(t, t.TempDir(), 3)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	q := queue(name)
	if err := set.setOnce(context.Background(), queueKey(q), "1"); err != nil {
		t.Fatal(err)
	}
	create(t, host, set, 1, q)
	return host, set, steps, q
}

// flipByHand carries move out for queue q from shard from to shard to,
// as its driver would, up to the flip of the map (the copy in from is
// left fenced), and returns the move's image.
func flipByHand(t *testing.T, host *replog.Raft, steps *localSteps, q api.QueueKey, move string, from, to uint32) []byte {
	t.Helper()
	ctx := context.Background()
	if err := steps.Step(asDriver(ctx), from, q, &engine.FenceQueueRequest{Move: move}); err != nil {
		t.Fatal(err)
	}
	image, err := steps.Export(ctx, from, q, move)
	if err != nil {
		t.Fatal(err)
	}
	if err := steps.Step(asDriver(ctx), to, q, &engine.InstallQueueRequest{Move: move, Image: image}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: queueKey(q), Value: strconv.FormatUint(uint64(to), 10)}}); err != nil {
		t.Fatal(err)
	}
	return image
}

// TestBalancingMovesIdleQueuesFirst fills one shard with three idle
// queues and a busy one, named to be the first a balancer choosing by
// name would move: the balancer evens the shards out with the idle ones,
// and the busy queue's clients never see it fenced.
func TestBalancingMovesIdleQueuesFirst(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 3)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	busy := queue("zz-busy")
	for _, q := range []api.QueueKey{queue("idle-a"), queue("idle-b"), queue("idle-c"), busy} {
		if err := set.setOnce(ctx, queueKey(q), "1"); err != nil {
			t.Fatal(err)
		}
		create(t, host, set, 1, q)
	}
	g, _ := set.Shard(1)
	for round := range 4 {
		for i := range 5 {
			send(t, g, busy, "r"+strconv.Itoa(round)+"-"+strconv.Itoa(i))
		}
		set.balanceQueues(steps)
	}
	if id := set.Of(busy); id != 1 {
		t.Fatalf("the busy queue moved to shard %d; the idle ones should have gone", id)
	}
	count := map[uint32]int{}
	for _, id := range set.Named() {
		qs, _ := steps.Queues(ctx, id)
		count[id] = len(qs)
	}
	if count[1] != 2 || count[2] != 1 || count[3] != 1 {
		t.Fatalf("queues per shard after balancing = %v, want 2, 1, 1", count)
	}
}

// TestBalancingPartsBusyQueues places two busy queues in one shard and an
// idle one in each other, so that the counts ask for no move: the
// balancer moves one busy queue to an idle shard, not on the first round
// of load (a burst), but on the second in a row, and then leaves the
// shards be.
func TestBalancingPartsBusyQueues(t *testing.T) {
	defer func(r float64) { minBalancedRate = r }(minBalancedRate)
	minBalancedRate = 0
	host, set := openMember(t, t.TempDir(), 3)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	busyA, busyB := queue("busy-a"), queue("busy-b")
	for q, id := range map[api.QueueKey]uint32{busyA: 1, busyB: 1, queue("idle-c"): 2, queue("idle-d"): 3} {
		placeAt(t, host, set, id, q)
	}
	work := func(round int) {
		for _, q := range []api.QueueKey{busyA, busyB} {
			g, _ := set.Shard(set.Of(q))
			for i := range 5 {
				send(t, g, q, "r"+strconv.Itoa(round)+"-"+strconv.Itoa(i))
			}
		}
	}
	set.balanceQueues(steps) // the first reading: no load known yet
	work(1)
	set.balanceQueues(steps)
	if set.Of(busyA) != 1 || set.Of(busyB) != 1 {
		t.Fatalf("a queue moved on one round's load: busy-a in %d, busy-b in %d", set.Of(busyA), set.Of(busyB))
	}
	work(2)
	set.balanceQueues(steps)
	if set.Of(busyA) == 1 || set.Of(busyB) != 1 {
		t.Fatalf("after two rounds of load, busy-a is in shard %d and busy-b in %d; want busy-a moved out of 1", set.Of(busyA), set.Of(busyB))
	}
	moved := set.Of(busyA)
	var n int
	g, _ := set.Shard(moved)
	g.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(busyA) })
	if n != 10 {
		t.Fatalf("the moved queue holds %d messages, want 10", n)
	}
	for round := 3; round < 7; round++ {
		work(round)
		set.balanceQueues(steps)
	}
	if set.Of(busyA) != moved || set.Of(busyB) != 1 {
		t.Fatalf("the balanced shards were shuffled: busy-a in %d (was %d), busy-b in %d", set.Of(busyA), moved, set.Of(busyB))
	}
}

// TestPlaceAvoidsABusyShard: with the shards' queue counts even, a new
// queue goes to a shard the last round of balancing found idle rather
// than to the busy one it would take by number; before any round has read
// the loads, it takes the busy one, as nothing tells them apart.
func TestPlaceAvoidsABusyShard(t *testing.T) {
	defer func(r float64) { minBalancedRate = r }(minBalancedRate)
	minBalancedRate = 1 // a few commands over a round are a clear load here
	host, set := openMember(t, t.TempDir(), 3)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	busy := queue("busy")
	for q, id := range map[api.QueueKey]uint32{busy: 1, queue("idle-b"): 2, queue("idle-c"): 3} {
		placeAt(t, host, set, id, q)
	}
	if got := set.leastLoaded(set.Named(), ""); got != 1 {
		t.Fatalf("with no load known, a new queue would go to shard %d, want 1 (the lowest numbered)", got)
	}
	set.balanceQueues(steps) // the first reading: no load known yet
	g, _ := set.Shard(1)
	for i := range 50 {
		send(t, g, busy, strconv.Itoa(i))
	}
	time.Sleep(50 * time.Millisecond) // a rate over a round that is not instant
	set.balanceQueues(steps)
	id, err := set.Place(ctx, queue("new"), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if id != 2 {
		t.Fatalf("a new queue went to shard %d, want 2 (the lowest numbered of the idle); rates %v", id, set.shardRates.Load().rate)
	}
}

// TestBalancerLeavesAMovedQueue: a queue just moved (beside its partner
// in a redrive, or by an operator) leaves the shard counts uneven; the
// balancer evens them out with another queue, not by moving the one that
// just moved straight back, which would fence its clients again for
// nothing (and undo the move an operator asked for).
func TestBalancerLeavesAMovedQueue(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 3)
	steps := &localSteps{set: set}
	set.SetSteps(steps)
	ctx := context.Background()
	moved := queue("moved")
	busy := []api.QueueKey{queue("busy-a"), queue("busy-b")}
	for q, id := range map[api.QueueKey]uint32{moved: 1, busy[0]: 2, busy[1]: 2, queue("other"): 3} {
		placeAt(t, host, set, id, q)
	}
	for _, q := range busy { // the queue moved is the least loaded of shard 2
		g, _ := set.Shard(2)
		for i := range 5 {
			send(t, g, q, q.Name+strconv.Itoa(i))
		}
	}
	if _, err := set.Move(ctx, moved, 2); err != nil {
		t.Fatal(err)
	}
	// The balancer of a leader that did not drive the move knows it from
	// the first group's record (the in-memory soak met one that did not,
	// and moved the queue straight back).
	set.movedMu.Lock()
	clear(set.moved)
	set.movedMu.Unlock()
	set.balanceQueues(steps) // shard 1 holds none, shard 2 three
	if got := set.Of(moved); got != 2 {
		t.Fatalf("the balancer moved the queue just moved to shard 2 on to shard %d", got)
	}
	if set.Of(busy[0]) != 1 && set.Of(busy[1]) != 1 {
		t.Fatalf("the balancer did not even the counts out with another queue: busy-a in %d, busy-b in %d", set.Of(busy[0]), set.Of(busy[1]))
	}
	// Records of moves past their quiet time are removed.
	old := time.Now().Add(-movedQuiet - time.Second).UnixNano()
	if _, err := host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: movedKey(moved), Value: strconv.FormatInt(old, 10)}}); err != nil {
		t.Fatal(err)
	}
	set.pruneMoved(ctx, time.Now())
	var v string
	host.Read(func(e *engine.Engine) { v = e.Meta(movedKey(moved)) })
	if v != "" {
		t.Fatalf("a record of a move past its quiet time is left: %q", v)
	}
}
