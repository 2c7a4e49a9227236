package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

// mtModel is a reference model of message move tasks and the queues around
// them: two source queues, each with its own dead-letter queue, and a
// third queue that tasks may move to instead. It knows where every message
// is and, on FIFO queues, in what order each group holds them, and it
// predicts exactly how many messages each command moves and what every
// task reports. Its rules:
//   - every command that reaches Apply first advances the running tasks,
//     oldest first: a task moves min(rate × elapsed ms / 1000 − moved,
//     toMove − moved) messages, at most its budget and what its source
//     holds, and completes when it has moved toMove or its source is
//     empty; a tick's Moves is one budget all tasks share, and any other
//     command (or a tick without Moves) gives each task maxMovesPerApply;
//   - a moved message leaves its dead-letter queue from the head of its
//     group (FIFO) and joins the tail of its group in the task's
//     destination, or, without one, in the queue it came from, with its
//     receive count reset;
//   - a message leaves a source queue for its dead-letter queue only during
//     a receive on that queue, after being received maxReceiveCount times,
//     and joins the tail of its group there;
//   - a message disappears only when deleted, and never appears twice.
//
// Which groups a task or a receive serves first is not predicted (SQS does
// not promise it); the model checks the engine's choice against the rules
// above and then follows it. Dead-letter queues are never received from,
// so all their messages stay visible and movable.
type mtModel struct {
	fifo bool
	// movesPerApply is the engine's Config.maxMovesPerApply.
	movesPerApply int
	sources       []api.QueueKey
	dlqOf         map[api.QueueKey]api.QueueKey
	maxRecv       map[api.QueueKey]int
	lists         map[api.QueueKey]map[string][]string // queue → group → ids, in order
	loc           map[string]api.QueueKey
	group         map[string]string
	origin        map[string]api.QueueKey // for a message in a dead-letter queue: where it came from
	receives      map[string]int
	tasks         []*mtTask // every task started, oldest first
}

type mtTask struct {
	handle    string
	source    api.QueueKey
	dest      api.QueueKey // zero: back to where each message came from
	rate      *int
	perSecond int64
	startedAt int64
	toMove    int64
	moved     int64
	status    string
}

func (m *mtModel) size(q api.QueueKey) int {
	n := 0
	for _, ids := range m.lists[q] {
		n += len(ids)
	}
	return n
}

// plannedMove is what the model expects one command to move for a task.
type plannedMove struct {
	task *mtTask
	n    int
}

// advance applies the move tasks' progress at now, as the engine does
// before every command, and returns the moves it expects, and whether a
// task is left behind its rate.
func (m *mtModel) advance(now int64, shared int64) (plan []plannedMove, behind bool) {
	for _, t := range m.tasks {
		if t.status != api.MoveTaskRunning {
			continue
		}
		budget := int64(m.movesPerApply)
		if shared >= 0 {
			budget = shared
		}
		elapsed := (now - t.startedAt) / 1e6
		due := min(elapsed*t.perSecond/1000-t.moved, t.toMove-t.moved)
		n := max(min(due, budget, int64(m.size(t.source))), 0)
		if shared >= 0 {
			shared -= n
		}
		t.moved += n
		plan = append(plan, plannedMove{t, int(n)})
		if t.moved >= t.toMove || m.size(t.source) == int(n) {
			t.status = api.MoveTaskCompleted
		} else if due > n {
			behind = true
		}
	}
	return plan, behind
}

// TestRandomMoveTasks runs random sends, receives (which move messages to
// dead-letter queues), deletes, message move tasks started, cancelled and
// listed, ticks and time passing, on FIFO and standard queues, with small
// move budgets, through the engine and mtModel, and
// checks after every command where every message is (FIFO: in what order)
// and what every task reports. A failure names its seed; rerun it with
// -engine.seed=N.
func TestRandomMoveTasks(t *testing.T) {
	seeds := *flagSeeds
	// The first tier (and -short) runs 30 sequences; FIFOQ_TESTS=all or
	// -engine.seeds runs them all.
	if testing.Short() || testenv.Quick(t, "engine.seeds") {
		seeds = min(seeds, 30)
	}
	first, last := uint64(1), uint64(seeds)
	if *flagSeed != 0 {
		first, last = *flagSeed, *flagSeed
	}
	for seed := first; seed <= last; seed++ {
		r := newMTRun(t, seed)
		for step := 0; step < *flagSteps; step++ {
			r.step(step)
			if t.Failed() {
				t.Logf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
				return
			}
		}
	}
}

type mtReceipt struct {
	q      api.QueueKey
	id     string
	handle string
}

type mtRun struct {
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	h        *harness
	m        *mtModel
	alt      api.QueueKey
	all      []api.QueueKey
	receipts []mtReceipt
	sends    int
	// received counts the messages the step's receive returned: a message
	// moved back by the same command was received after its move.
	received map[string]int
	// sent and sentTo are the message the step sent, and where.
	sent   string
	sentTo api.QueueKey
	log    []string
}

func newMTRun(t *testing.T, seed uint64) *mtRun {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	r := &mtRun{t: t, seed: seed, rng: rng, h: newHarness(t)}
	r.h.entropy = seed
	r.h.e.cfg.maxMovesPerApply = 1 + rng.IntN(6)
	m := &mtModel{fifo: seed%2 == 0, dlqOf: map[api.QueueKey]api.QueueKey{}, maxRecv: map[api.QueueKey]int{},
		lists: map[api.QueueKey]map[string][]string{}, loc: map[string]api.QueueKey{}, group: map[string]string{},
		origin: map[string]api.QueueKey{}, receives: map[string]int{}, movesPerApply: r.h.e.cfg.maxMovesPerApply}
	r.m = m
	suffix := ""
	if m.fifo {
		suffix = ".fifo"
	}
	create := func(name string, attrs map[string]string) api.QueueKey {
		if m.fifo {
			return r.h.fifoQueue(name+suffix, attrs)
		}
		return r.h.createQueue(name, attrs)
	}
	r.alt = create("alt", nil)
	r.all = append(r.all, r.alt)
	for i := range 2 {
		dlq := create(fmt.Sprintf("dlq%d", i), nil)
		mr := 1 + rng.IntN(3)
		src := create(fmt.Sprintf("src%d", i), map[string]string{api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlq.ARN(testRegion), mr)})
		m.sources = append(m.sources, src)
		m.dlqOf[src], m.maxRecv[src] = dlq, mr
		r.all = append(r.all, src, dlq)
	}
	for _, q := range r.all {
		m.lists[q] = map[string][]string{}
	}
	r.logf("seed %d: fifo %v, moves per task per command %d, maxReceiveCount %d and %d", seed, m.fifo, m.movesPerApply, m.maxRecv[m.sources[0]], m.maxRecv[m.sources[1]])
	return r
}

func (r *mtRun) logf(format string, args ...any) { r.log = append(r.log, fmt.Sprintf(format, args...)) }

func (r *mtRun) tail() string {
	out := ""
	for _, l := range r.log[max(0, len(r.log)-40):] {
		out += "  " + l + "\n"
	}
	return out
}

func (r *mtRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("seed %d: "+format, append([]any{r.seed}, args...)...)
}

// apply validates req and applies it as the server would; the model
// advances the tasks first, as Apply does, if the request gets that far.
func (r *mtRun) apply(q api.QueueKey, req api.Request) (api.Response, error, []plannedMove, bool) {
	if _, tick := req.(*TickRequest); !tick {
		if err := api.Validate(req); err != nil {
			return nil, err, nil, false
		}
	}
	shared := int64(-1)
	if t, ok := req.(*TickRequest); ok && t.Moves > 0 {
		shared = int64(t.Moves)
	}
	plan, behind := r.m.advance(r.h.now, shared)
	resp, err := r.h.e.Apply(r.h.command(q, req))
	return resp, err, plan, behind
}

func (r *mtRun) step(i int) {
	r.t.Helper()
	var out string
	var plan []plannedMove
	r.received = map[string]int{}
	r.sent = ""
	switch p := r.rng.IntN(100); {
	case p < 30 && r.sends < MaxPeekMessages:
		out, plan = r.send()
	case p < 55:
		out, plan = r.receive()
	case p < 65:
		out, plan = r.remove()
	case p < 73:
		out, plan = r.start()
	case p < 78:
		out, plan = r.cancel()
	case p < 85:
		out, plan = r.tick()
	default:
		d := time.Duration(r.rng.IntN(3000)) * time.Millisecond
		if r.rng.IntN(6) == 0 {
			d = time.Duration(5+r.rng.IntN(60)) * time.Second
		}
		r.h.advance(d)
		out = fmt.Sprintf("advance %v", d)
	}
	r.logf("%d @%v: %s", i, time.Duration(r.h.now-t0), out)
	r.reconcile(plan)
	r.list()
}

func (r *mtRun) send() (string, []plannedMove) {
	q := r.m.sources[r.rng.IntN(2)]
	body := fmt.Sprintf("b%d", r.sends)
	req := &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: body}
	g := ""
	if r.m.fifo {
		g = fmt.Sprintf("g%d", r.rng.IntN(3))
		req.MessageGroupId, req.MessageDeduplicationId = g, body
	}
	resp, err, plan, _ := r.apply(q, req)
	if err != nil {
		r.fail("send: %v", err)
		return "send failed", plan
	}
	r.sends++
	id := resp.(*api.SendMessageResult).MessageId
	// The command's moves came first: reconcile places the message.
	r.sent, r.sentTo = id, q
	r.m.group[id] = g
	return fmt.Sprintf("send %s %s to %s", id, g, q.Name), plan
}

func (r *mtRun) receive() (string, []plannedMove) {
	q := r.m.sources[r.rng.IntN(2)]
	if r.rng.IntN(4) == 0 {
		q = r.alt
	}
	n := 1 + r.rng.IntN(10)
	vis := []int{0, 0, 1, 5, 30}[r.rng.IntN(5)]
	resp, err, plan, _ := r.apply(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &n, VisibilityTimeout: &vis})
	if err != nil {
		r.fail("receive from %s: %v", q.Name, err)
		return "receive failed", plan
	}
	var ids []string
	for _, msg := range resp.(*api.ReceiveMessageResult).Messages {
		ids = append(ids, msg.MessageId)
		r.m.receives[msg.MessageId]++
		r.received[msg.MessageId]++
		r.receipts = append(r.receipts, mtReceipt{q, msg.MessageId, msg.ReceiptHandle})
	}
	return fmt.Sprintf("receive %d (vis %d) from %s: %v", n, vis, q.Name, ids), plan
}

func (r *mtRun) remove() (string, []plannedMove) {
	if len(r.receipts) == 0 {
		return "no receipt to delete", nil
	}
	i := r.rng.IntN(len(r.receipts))
	rc := r.receipts[i]
	r.receipts = slices.Delete(r.receipts, i, i+1)
	_, err, plan, _ := r.apply(rc.q, &api.DeleteMessageRequest{QueueUrl: rc.q.Path(), ReceiptHandle: rc.handle})
	return fmt.Sprintf("delete %s from %s: %v", rc.id, rc.q.Name, err), plan
}

func (r *mtRun) running(src api.QueueKey) *mtTask {
	for _, t := range r.m.tasks {
		if t.source == src && t.status == api.MoveTaskRunning {
			return t
		}
	}
	return nil
}

func (r *mtRun) start() (string, []plannedMove) {
	src := r.m.sources[r.rng.IntN(2)]
	dlq := r.m.dlqOf[src]
	req := &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion)}
	if r.rng.IntN(3) == 0 {
		req.DestinationArn = r.alt.ARN(testRegion)
	}
	if r.rng.IntN(4) != 0 {
		req.MaxNumberOfMessagesPerSecond = intp(1 + r.rng.IntN(20))
	}
	wasRunning := r.running(dlq) != nil
	resp, err, plan, _ := r.apply(api.QueueKey{}, req)
	// The running task is looked at after the command's own advance,
	// which may have completed it.
	if r.running(dlq) != nil {
		if !isCode(err, "InvalidParameterValue") {
			r.fail("start on %s with a task running: %v; want InvalidParameterValue", dlq.Name, err)
		}
		return fmt.Sprintf("start on %s refused: %v", dlq.Name, err), plan
	}
	if err != nil {
		r.fail("start on %s (a task was running before the command: %v): %v", dlq.Name, wasRunning, err)
		return "start failed", plan
	}
	// The task counts what its source holds after the command's own
	// advance of the task before it.
	toMove := r.m.size(dlq)
	for _, pm := range plan {
		if pm.task.source == dlq {
			toMove -= pm.n
		}
	}
	t := &mtTask{handle: resp.(*api.StartMessageMoveTaskResult).TaskHandle, source: dlq, rate: req.MaxNumberOfMessagesPerSecond,
		startedAt: r.h.now, toMove: int64(toMove), status: api.MoveTaskRunning}
	if req.DestinationArn != "" {
		t.dest = r.alt
	}
	if t.rate != nil {
		t.perSecond = int64(*t.rate)
	} else {
		t.perSecond = optimisedRate(t.toMove)
	}
	if t.toMove == 0 {
		t.status = api.MoveTaskCompleted
	}
	r.m.tasks = append(r.m.tasks, t)
	return fmt.Sprintf("start on %s to %q at %v/s: %d to move", dlq.Name, t.dest.Name, t.perSecond, t.toMove), plan
}

func (r *mtRun) cancel() (string, []plannedMove) {
	if len(r.m.tasks) == 0 {
		return "no task to cancel", nil
	}
	t := r.m.tasks[r.rng.IntN(len(r.m.tasks))]
	resp, err, plan, _ := r.apply(api.QueueKey{}, &api.CancelMessageMoveTaskRequest{TaskHandle: t.handle})
	if t.status != api.MoveTaskRunning {
		if !isCode(err, "ResourceNotFoundException") {
			r.fail("cancel of a %s task: %v; want ResourceNotFoundException", t.status, err)
		}
		return fmt.Sprintf("cancel of a %s task refused", t.status), plan
	}
	if err != nil {
		r.fail("cancel of a running task: %v", err)
		return "cancel failed", plan
	}
	t.status = api.MoveTaskCancelled
	if got := resp.(*api.CancelMessageMoveTaskResult).ApproximateNumberOfMessagesMoved; got != t.moved {
		r.fail("cancel says %d moved; the model %d", got, t.moved)
	}
	return fmt.Sprintf("cancel task on %s after %d moved", t.source.Name, t.moved), plan
}

func (r *mtRun) tick() (string, []plannedMove) {
	// Mostly bounded ticks, as the server applies; sometimes one as older
	// fifoq logged them.
	req := &TickRequest{Moves: 1 + r.rng.IntN(6)}
	if r.rng.IntN(5) == 0 {
		req.Moves = 0
	}
	resp, err, plan, behind := r.apply(api.QueueKey{}, req)
	if err != nil {
		r.fail("tick: %v", err)
		return "tick failed", plan
	}
	if got := resp.(*TickResult).Behind; got != behind {
		r.fail("tick says behind %v; the model %v", got, behind)
	}
	if r.h.e.HasActiveMoveTasks() != (r.runningCount() > 0) {
		r.fail("engine has active tasks %v; the model has %d running", r.h.e.HasActiveMoveTasks(), r.runningCount())
	}
	return fmt.Sprintf("tick (moves %d): behind %v", req.Moves, behind), plan
}

func (r *mtRun) runningCount() int {
	n := 0
	for _, t := range r.m.tasks {
		if t.status == api.MoveTaskRunning {
			n++
		}
	}
	return n
}

// observe returns every queue's messages by group, in the group's order on
// a FIFO queue and sorted by id on a standard one.
func (r *mtRun) observe() map[api.QueueKey]map[string][]string {
	out := map[api.QueueKey]map[string][]string{}
	for _, k := range r.all {
		q := r.h.e.queues[k]
		groups := map[string][]string{}
		if r.m.fifo {
			for g, fg := range q.groups {
				for m := fg.head; m != nil; m = m.next {
					groups[g] = append(groups[g], testMessageID(q, m))
				}
			}
		} else {
			for m := q.arrivalHead; m != nil; m = m.anext {
				groups[""] = append(groups[""], testMessageID(q, m))
			}
			for _, m := range q.aged.items {
				groups[""] = append(groups[""], testMessageID(q, m))
			}
			slices.Sort(groups[""])
		}
		out[k] = groups
	}
	return out
}

// reconcile explains the difference between the model and the engine after
// one command by the moves the model planned, redrives during a receive,
// and a delete, and fails on anything else; then the model follows the
// engine.
func (r *mtRun) reconcile(plan []plannedMove) {
	r.t.Helper()
	got := r.observe()
	where := r.locate(got)
	r.checkPlannedMoves(plan, where)
	r.followMessages(plan, where)
	if r.m.fifo {
		r.checkArrivalOrder(plan, got, where)
	}
	for _, q := range r.all {
		r.m.lists[q] = got[q]
	}
	for _, id := range r.m.orphans(where) {
		r.fail("message %s is lost", id)
	}
}

// locate returns the queue that holds each message the engine holds (got,
// from observe), failing on a message held by two queues.
func (r *mtRun) locate(got map[api.QueueKey]map[string][]string) map[string]api.QueueKey {
	r.t.Helper()
	where := map[string]api.QueueKey{}
	for q, groups := range got {
		for _, ids := range groups {
			for _, id := range ids {
				if prev, dup := where[id]; dup {
					r.fail("message %s is in %s and in %s", id, prev.Name, q.Name)
				}
				where[id] = q
			}
		}
	}
	return where
}

// checkPlannedMoves checks the moves out of each dead-letter queue against
// the plan: as many as planned, each to its task's destination, and (on a
// FIFO queue) from the head of its group. where is the engine's placement
// after the command; the model's lists are still those from before it.
func (r *mtRun) checkPlannedMoves(plan []plannedMove, where map[string]api.QueueKey) {
	r.t.Helper()
	for _, pm := range plan {
		var movedIDs []string
		for _, ids := range r.m.lists[pm.task.source] {
			for _, id := range ids {
				// One that is nowhere was moved and then deleted by
				// the command (a delete with an older handle of it).
				if where[id] != pm.task.source {
					movedIDs = append(movedIDs, id)
				}
			}
		}
		if len(movedIDs) != pm.n {
			r.fail("task on %s moved %d messages %v; the model expected %d", pm.task.source.Name, len(movedIDs), movedIDs, pm.n)
		}
		for _, id := range movedIDs {
			if _, ok := where[id]; !ok {
				continue
			}
			want := pm.task.dest
			if want == (api.QueueKey{}) {
				want = r.m.origin[id]
			}
			if where[id] != want {
				r.fail("message %s moved from %s to %s; want %s", id, pm.task.source.Name, where[id].Name, want.Name)
			}
		}
		for g, ids := range r.m.lists[pm.task.source] {
			if !r.m.fifo {
				break // a standard queue promises no order
			}
			k := 0
			for k < len(ids) && where[ids[k]] != pm.task.source {
				k++
			}
			for _, id := range ids[k:] {
				if where[id] != pm.task.source {
					r.fail("message %s left %s group %q ahead of earlier ones %v", id, pm.task.source.Name, g, ids[:k])
				}
			}
		}
	}
}

// followMessages explains where each message the model placed went (it
// stayed, was redriven to its dead-letter queue after enough receives, was
// moved by a planned task, or was deleted) and where the message sent by
// the command is, failing on anything else, and moves the model's
// placement, origins and receive counts to the engine's.
func (r *mtRun) followMessages(plan []plannedMove, where map[string]api.QueueKey) {
	r.t.Helper()
	for id, from := range r.m.loc {
		to, ok := where[id]
		switch {
		case !ok:
			// Deleted: the model knows no more of it.
			delete(r.m.loc, id)
			delete(r.m.origin, id)
		case to == from:
		case r.m.dlqOf[from] == to:
			if r.m.receives[id] < r.m.maxRecv[from] {
				r.fail("message %s went to the dead-letter queue after %d receives; maxReceiveCount is %d", id, r.m.receives[id], r.m.maxRecv[from])
			}
			r.m.origin[id] = from
		case r.isMove(plan, from):
			r.m.receives[id] = r.received[id]
			delete(r.m.origin, id)
		default:
			r.fail("message %s went from %s to %s unexplained", id, from.Name, to.Name)
		}
		if ok {
			r.m.loc[id] = to
		}
	}
	if r.sent != "" {
		if where[r.sent] != r.sentTo {
			r.fail("message %s sent to %s is in %q", r.sent, r.sentTo.Name, where[r.sent].Name)
		}
		r.m.loc[r.sent] = r.sentTo
	}
	for id := range where {
		if _, ok := r.m.loc[id]; !ok {
			r.fail("message %s appeared in %s unexplained", id, where[id].Name)
		}
	}
}

// checkArrivalOrder checks the order of each FIFO group after the command
// (got, from observe): what stayed keeps its order, and what arrived (by a
// move or a redrive) comes after it, in the order it left (moves) or was
// redriven. The model's lists are still those from before the command.
func (r *mtRun) checkArrivalOrder(plan []plannedMove, got map[api.QueueKey]map[string][]string, where map[string]api.QueueKey) {
	r.t.Helper()
	for _, q := range r.all {
		for g, ids := range got[q] {
			var stayed []string
			for _, id := range r.m.lists[q][g] {
				if where[id] == q {
					stayed = append(stayed, id)
				}
			}
			if !slices.Equal(ids[:min(len(stayed), len(ids))], stayed) {
				r.fail("%s group %q holds %v; the messages that stayed were %v, in that order", q.Name, g, ids, stayed)
			}
		}
	}
	for _, pm := range plan {
		for g, ids := range r.m.lists[pm.task.source] {
			var left []string
			for _, id := range ids {
				if where[id] != pm.task.source {
					left = append(left, id)
				}
			}
			// Those that went to the same queue arrived in order.
			byDest := map[api.QueueKey][]string{}
			for _, id := range left {
				if q, ok := where[id]; ok {
					byDest[q] = append(byDest[q], id)
				}
			}
			for q, moved := range byDest {
				var arrived []string
				for _, id := range got[q][g] {
					if slices.Contains(moved, id) {
						arrived = append(arrived, id)
					}
				}
				if !slices.Equal(arrived, moved) {
					r.fail("group %q arrived in %s as %v; it left %s as %v", g, q.Name, arrived, pm.task.source.Name, moved)
				}
			}
		}
	}
}

// orphans returns the messages the model still places that the engine
// holds nowhere; reconcile has already forgotten deleted ones, so this is
// empty unless followMessages' bookkeeping is wrong.
func (m *mtModel) orphans(where map[string]api.QueueKey) []string {
	var out []string
	for id := range m.loc {
		if _, ok := where[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// isMove reports whether a planned move may have taken a message out of
// queue from.
func (r *mtRun) isMove(plan []plannedMove, from api.QueueKey) bool {
	for _, pm := range plan {
		if pm.task.source == from && pm.n > 0 {
			return true
		}
	}
	return false
}

// list compares ListMessageMoveTasks, on both dead-letter queues, with the
// model's tasks.
func (r *mtRun) list() {
	r.t.Helper()
	for _, src := range r.m.sources {
		dlq := r.m.dlqOf[src]
		var want []*mtTask
		for i := len(r.m.tasks) - 1; i >= 0; i-- {
			if r.m.tasks[i].source == dlq {
				want = append(want, r.m.tasks[i])
			}
		}
		want = want[:min(len(want), 10)]
		resp, err := r.h.e.Read(r.h.command(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: dlq.ARN(testRegion), MaxResults: intp(10)}))
		if err != nil {
			r.fail("list on %s: %v", dlq.Name, err)
			return
		}
		res := resp.(*api.ListMessageMoveTasksResult).Results
		if len(res) != len(want) {
			r.fail("list on %s: %d tasks; the model has %d", dlq.Name, len(res), len(want))
			return
		}
		for i, e := range res {
			w := want[i]
			handle := ""
			if w.status == api.MoveTaskRunning {
				handle = w.handle
			}
			destArn := ""
			if w.dest != (api.QueueKey{}) {
				destArn = w.dest.ARN(testRegion)
			}
			if e.Status != w.status || e.ApproximateNumberOfMessagesMoved != w.moved || e.ApproximateNumberOfMessagesToMove == nil ||
				*e.ApproximateNumberOfMessagesToMove != w.toMove || e.TaskHandle != handle || e.DestinationArn != destArn ||
				ptrInt(e.MaxNumberOfMessagesPerSecond) != ptrInt(w.rate) || e.StartedTimestamp != w.startedAt/1e6 {
				r.fail("list on %s, task %d: %s moved %d of %s, handle %q, dest %q; the model: %s moved %d of %d",
					dlq.Name, i, e.Status, e.ApproximateNumberOfMessagesMoved, ptrString(e.ApproximateNumberOfMessagesToMove), e.TaskHandle, e.DestinationArn,
					w.status, w.moved, w.toMove)
			}
		}
	}
}

func ptrInt(p *int) string {
	if p == nil {
		return "nil"
	}
	return strconv.Itoa(*p)
}

func ptrString(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

// isCode reports whether err is an *api.Error with the given code.
func isCode(err error, code string) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == code
}
