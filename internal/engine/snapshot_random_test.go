package engine

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	flagSnapSeeds = flag.Int("engine.snapseeds", 60, "number of random sequences TestSnapshotTwins runs; 15 in the first tier unless given (internal/testenv)")
	flagSnapSteps = flag.Int("engine.snapsteps", 400, "commands per sequence in TestSnapshotTwins")
	flagSnapSeed  = flag.Uint64("engine.snapseed", 0, "run only this seed of TestSnapshotTwins (0: seeds 1..engine.snapseeds)")
)

// TestSnapshotTwins is the decisive test of Snapshot and Restore. Random
// command sequences over FIFO and standard queues, with dead-letter queues,
// move tasks, attempt ids, deduplication, purges and queue deletion, run
// through engine A continuously and through engine X, which at random steps
// is snapshotted and replaced by a fresh engine (or a used one) restored
// from the snapshot. Every result of A and X must be identical, receipt
// handles included, and so must every read: GetQueueAttributes All,
// ListQueues, tags, dead-letter sources, move task lists, NextWake and
// Receivable of every queue, now and later. At each snapshot the snapshots
// of A and X must be byte-identical, which compares the whole states.
func TestSnapshotTwins(t *testing.T) { testSnapshotTwins(t, restoreDefault) }

func testSnapshotTwins(t *testing.T, mode restoreMode) {
	seeds := *flagSnapSeeds
	// The first tier (and -short) runs 15 sequences; FIFOQ_TESTS=all or
	// -engine.snapseeds runs them all.
	if testing.Short() || testenv.Quick(t, "engine.snapseeds") {
		seeds = min(seeds, 15)
	}
	var cov twinCoverage
	run := func(seed uint64) bool {
		tw := newTwins(t, seed, &cov)
		tw.mode = mode
		for step := range *flagSnapSteps {
			tw.step(step)
			if t.Failed() {
				t.Logf("seed %d failed at step %d (rerun with -engine.snapseed=%d); last commands:\n%s", seed, step, seed, tw.tail())
				return false
			}
		}
		if tw.view != nil {
			tw.writeView()
		}
		tw.snapshot(true)
		return !t.Failed()
	}
	if *flagSnapSeed != 0 {
		run(*flagSnapSeed)
		return
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		if !run(seed) {
			return
		}
	}
	t.Logf("coverage: %+v", cov)
	// The generator must keep reaching what a snapshot has to carry;
	// otherwise the comparison above proves little.
	for name, n := range map[string]int{
		"snapshots": cov.snapshots, "snapshots with a running move task": cov.snapRunningTask,
		"snapshots with two running move tasks": cov.snapTwoTasks,
		"snapshots with in-flight messages":     cov.snapInflight, "dead-lettered receives": cov.deadLettered,
		"attempt id replays": cov.replays, "duplicates answered": cov.duplicates,
		"purges": cov.purges, "queues recreated": cov.recreated, "completed move tasks": cov.tasksCompleted,
		"restores into a used engine": cov.usedEngine, "housekeeping that did work": cov.housekept,
		"snapshot views written while commands were applied": cov.viewsWritten,
		"messages saved for an open view":                    cov.viewSaved,
	} {
		if n == 0 && seeds >= 15 && *flagSnapSteps >= 300 {
			t.Errorf("the random sequences never produced: %s", name)
		}
	}
}

type twinCoverage struct {
	snapshots, snapRunningTask, snapTwoTasks, snapInflight, usedEngine int
	deadLettered, replays, duplicates, purges, recreated               int
	tasksCompleted, housekept                                          int
	viewsWritten, viewSaved                                            int
	viewsByRef, snapByRef                                              int // with a body store
}

// twins drives engines A and X with the same commands.
type twins struct {
	// mode is how the engines the twins restore into read chunks.
	mode restoreMode
	// aBodies and xBodies are a's and x's BodyStores, with harnessBodies.
	aBodies, xBodies *testBodies
	t                *testing.T
	seed             uint64
	rng              *rand.Rand
	cov              *twinCoverage

	a, x    *Engine
	now     int64
	entropy uint64
	ids     int
	log     []string

	// view is a snapshot view of A open since a past step, and viewWant
	// the snapshot A wrote at that step; writing is set while the view is
	// being written, with commands applied between its reads.
	// vrng decides when views open and are written, apart from rng, so
	// that the command sequences stay those of the seeds without views.
	view     *SnapshotView
	viewWant []byte
	writing  bool
	vrng     *rand.Rand

	receipts []twinReceipt
	tasks    []string
	attempts map[string][]string // attempt id -> handles it returned
	deleted  map[api.QueueKey]bool
}

type twinReceipt struct {
	q      api.QueueKey
	handle string
}

const twinOtherAccount = "222222222222"

var (
	twinFIFO     = []string{"f1.fifo", "f2.fifo", "fdlq.fifo"}
	twinStandard = []string{"s1", "s2", "sdlq"}
)

func newTwins(t *testing.T, seed uint64, cov *twinCoverage) *twins {
	tw := &twins{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), cov: cov,
		a: New(Config{Region: testRegion}), x: New(Config{Region: testRegion}),
		vrng: rand.New(rand.NewPCG(seed, 0x7e1e)),
		now:  t0, entropy: seed, attempts: map[string][]string{}, deleted: map[api.QueueKey]bool{},
	}
	if harnessBodies {
		tw.aBodies, tw.xBodies = newTestBodies(t), newTestBodies(t)
		tw.a.SetBodyStore(tw.aBodies)
		tw.x.SetBodyStore(tw.xBodies)
	}
	// Start with the dead-letter queues and a source of each type, so that
	// redrive and move tasks happen early.
	tw.apply(tw.createReq("fdlq.fifo", testAccount))
	tw.apply(tw.createReq("sdlq", testAccount))
	tw.apply(tw.createReq("f1.fifo", testAccount))
	tw.apply(tw.createReq("s1", testAccount))
	return tw
}

func (tw *twins) logf(format string, args ...any) {
	tw.log = append(tw.log, fmt.Sprintf(format, args...))
}

func (tw *twins) tail() string {
	var b bytes.Buffer
	for _, l := range tw.log[max(0, len(tw.log)-30):] {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func (tw *twins) fail(format string, args ...any) {
	tw.t.Helper()
	tw.t.Errorf("seed %d: "+format, append([]any{tw.seed}, args...)...)
}

func (tw *twins) key(name string) api.QueueKey { return api.QueueKey{Account: testAccount, Name: name} }

func (tw *twins) allKeys() []api.QueueKey {
	var keys []api.QueueKey
	for _, n := range append(slices.Clone(twinFIFO), twinStandard...) {
		keys = append(keys, tw.key(n))
	}
	return append(keys, api.QueueKey{Account: twinOtherAccount, Name: "s1"})
}

func (tw *twins) pick(list []string) string { return list[tw.rng.IntN(len(list))] }
func (tw *twins) chance(n int) bool         { return tw.rng.IntN(n) == 0 }

// anyQueue picks a queue of the universe, mostly of the main account.
func (tw *twins) anyQueue() api.QueueKey {
	if tw.chance(25) {
		return api.QueueKey{Account: twinOtherAccount, Name: "s1"}
	}
	if tw.chance(2) {
		return tw.key(tw.pick(twinFIFO))
	}
	return tw.key(tw.pick(twinStandard))
}

// command builds a command the way the server does.
func (tw *twins) command(caller string, q api.QueueKey, req api.Request) *Command {
	ids := messageIDs(req, func() string {
		tw.ids++
		return fmt.Sprintf("m-%06d", tw.ids)
	})
	tw.entropy = mix64(tw.entropy)
	return &Command{Time: tw.now, Caller: caller, Queue: q, Request: req, MessageIDs: ids, Entropy: tw.entropy}
}

// twinReq is a request with the account and queue its command carries.
type twinReq struct {
	caller string
	q      api.QueueKey
	req    api.Request
}

// apply validates a request as the server would and applies it to both
// engines, comparing the results; it returns A's.
func (tw *twins) apply(r twinReq) (api.Response, error) {
	tw.t.Helper()
	if r.caller == "" {
		r.caller = testAccount
	}
	// Internal requests (ticks, housekeeping) are not client input:
	// api.Validate does not know them.
	if _, internal := NewInternalRequest(r.req.Action()); !internal {
		if err := api.Validate(r.req); err != nil {
			tw.logf("%s: invalid: %v", r.req.Action(), err)
			return nil, err
		}
	}
	cmd := tw.command(r.caller, r.q, r.req)
	ra, ea := tw.a.Apply(cmd)
	rx, ex := tw.x.Apply(cmd)
	if !reflect.DeepEqual(ra, rx) || !reflect.DeepEqual(ea, ex) {
		tw.fail("%s %s: results differ:\n  A: %#v %v\n  X: %#v %v", r.req.Action(), r.q, ra, ea, rx, ex)
	}
	tw.logf("%s %s -> %s", r.req.Action(), r.q, summarize(ra, ea))
	tw.learn(r, ra, ea)
	return ra, ea
}

func summarize(resp api.Response, err error) string {
	if err != nil {
		return errCode(err)
	}
	switch r := resp.(type) {
	case *api.ReceiveMessageResult:
		ids := make([]string, len(r.Messages))
		for i, m := range r.Messages {
			ids[i] = m.MessageId
		}
		return fmt.Sprint(ids)
	case *api.SendMessageResult:
		return r.MessageId
	}
	return "ok"
}

// learn remembers receipt and task handles for later commands, and counts
// what the sequences reach.
func (tw *twins) learn(r twinReq, resp api.Response, err error) {
	if err != nil {
		return
	}
	switch res := resp.(type) {
	case *api.ReceiveMessageResult:
		rr := r.req.(*api.ReceiveMessageRequest)
		var hs []string
		for _, m := range res.Messages {
			tw.receipts = append(tw.receipts, twinReceipt{q: r.q, handle: m.ReceiptHandle})
			hs = append(hs, m.ReceiptHandle)
			if m.Attributes[api.MsgAttrDeadLetterQueueSourceArn] != "" {
				tw.cov.deadLettered++
			}
		}
		if len(tw.receipts) > 64 {
			tw.receipts = tw.receipts[len(tw.receipts)-64:]
		}
		if id := rr.ReceiveRequestAttemptId; id != "" && len(hs) > 0 && r.q.Name != "" && api.IsFIFOName(r.q.Name) {
			if slices.Equal(tw.attempts[r.q.String()+id], hs) {
				tw.cov.replays++
			}
			tw.attempts[r.q.String()+id] = hs
		}
	case *api.SendMessageResult:
		if res.MessageId != fmt.Sprintf("m-%06d", tw.ids) {
			tw.cov.duplicates++
		}
	case *api.StartMessageMoveTaskResult:
		tw.tasks = append(tw.tasks, res.TaskHandle)
	}
	switch rq := r.req.(type) {
	case *api.PurgeQueueRequest:
		tw.cov.purges++
	case *api.DeleteQueueRequest:
		tw.deleted[r.q] = true
	case *api.CreateQueueRequest:
		k := api.QueueKey{Account: r.caller, Name: rq.QueueName}
		if tw.deleted[k] {
			tw.cov.recreated++
			delete(tw.deleted, k)
		}
	}
}

// step runs one random command, compares every read, and sometimes
// replaces X by a restored copy.
func (tw *twins) step(i int) {
	tw.t.Helper()
	tw.logf("step %d @%v", i, time.Duration(tw.now-t0))
	switch p := tw.rng.IntN(100); {
	case p < 4:
		tw.apply(tw.createReq(tw.anyQueue().Name, tw.anyQueue().Account))
	case p < 6:
		q := tw.anyQueue()
		tw.apply(twinReq{q: q, req: &api.DeleteQueueRequest{QueueUrl: q.Path()}})
	case p < 10:
		tw.apply(tw.setAttributesReq())
	case p < 12:
		tw.apply(tw.tagReq())
	case p < 13:
		tw.apply(tw.permissionReq())
	case p < 14:
		q := tw.anyQueue()
		tw.apply(twinReq{q: q, req: &api.PurgeQueueRequest{QueueUrl: q.Path()}})
	case p < 32:
		tw.apply(tw.sendReq())
	case p < 37:
		tw.apply(tw.sendBatchReq())
	case p < 55:
		tw.apply(tw.receiveReq())
	case p < 63:
		tw.apply(tw.deleteReq())
	case p < 69:
		tw.apply(tw.visibilityReq())
	case p < 75:
		tw.apply(tw.startTaskReq())
	case p < 76:
		tw.apply(tw.cancelTaskReq())
	case p < 78:
		tw.apply(twinReq{req: &TickRequest{}})
	case p < 81:
		res, _ := tw.apply(twinReq{req: &HousekeepRequest{Limit: 1 + tw.rng.IntN(6)}})
		if r, ok := res.(*HousekeepResult); ok && r.Steps > 0 {
			tw.cov.housekept++
		}
	default:
		tw.advance()
	}
	tw.compareReads()
	checkDueIndex(tw.t, tw.a)
	checkDueIndex(tw.t, tw.x)
	if tw.chance(12) {
		tw.snapshot(false)
	}
	if !tw.writing {
		switch {
		case tw.view == nil && tw.vrng.IntN(10) == 0:
			tw.openView()
		case tw.view != nil && tw.vrng.IntN(6) == 0:
			tw.writeView()
		}
	}
}

// openView opens a snapshot view of A, and keeps what Snapshot writes at
// this moment to compare with what the view writes later.
func (tw *twins) openView() {
	tw.t.Helper()
	var want bytes.Buffer
	if err := tw.a.Snapshot(&want); err != nil {
		tw.fail("Snapshot A: %v", err)
		return
	}
	v, err := tw.a.BeginSnapshot()
	if err != nil {
		tw.fail("BeginSnapshot A: %v", err)
		return
	}
	if _, err := tw.a.BeginSnapshot(); err == nil {
		tw.fail("BeginSnapshot A with a view open: no error")
	}
	tw.view, tw.viewWant = v, want.Bytes()
	tw.logf("snapshot view opened")
}

// writeView writes the open view of A while running a random step (and so
// applying commands to A) before every message it reads, and checks that
// it wrote the state of the moment it was opened, byte for byte.
func (tw *twins) writeView() {
	tw.t.Helper()
	tw.view.lockBatch = 1 + tw.vrng.IntN(3)
	tw.writing = true
	step := 0
	// With a body store, the view writes half the time by reference: put
	// back inline, that must be the snapshot of its moment.
	byRef := tw.aBodies != nil && tw.vrng.IntN(2) == 0
	if byRef {
		tw.view.BodiesByReference()
	}
	var got bytes.Buffer
	n, err := tw.view.WriteTo(&got, stepLocker(func() {
		step++
		tw.logf("step within the view's writing %d", step)
		tw.step(-step)
	}))
	tw.writing = false
	wrote := int64(got.Len())
	if byRef && err == nil {
		var inline bytes.Buffer
		if err = InlineBodies(&inline, bytes.NewReader(got.Bytes()), tw.aBodies.Get); err != nil {
			err = fmt.Errorf("InlineBodies: %w", err)
		}
		got = inline
		tw.cov.viewsByRef++
	}
	tw.cov.viewSaved += len(tw.view.cow.saved)
	tw.view.Release()
	tw.view = nil
	switch {
	case err != nil:
		tw.fail("SnapshotView.WriteTo: %v", err)
	case n != wrote:
		tw.fail("SnapshotView.WriteTo counted %d bytes, wrote %d", n, wrote)
	case !bytes.Equal(got.Bytes(), tw.viewWant):
		tw.fail("the view, written after %d more steps, differs from the snapshot of its moment (%d bytes, want %d)", step, got.Len(), len(tw.viewWant))
	}
	if step > 0 {
		tw.cov.viewsWritten++
	}
	// Released, the view saves nothing more and cannot be written.
	if tw.a.cow.active {
		tw.fail("the engine still saves messages for a released view")
	}
	tw.logf("snapshot view written after %d steps", step)
}

// stepLocker runs a function on each Lock: commands applied between the
// reads of a view's writer.
type stepLocker func()

func (s stepLocker) Lock()   { s() }
func (s stepLocker) Unlock() {}

func (tw *twins) advance() {
	var d time.Duration
	switch p := tw.rng.IntN(10); {
	case p < 2:
		d = 0
	case p < 6:
		d = time.Duration(tw.rng.IntN(3000)) * time.Millisecond
	case p < 9:
		d = time.Duration(tw.rng.IntN(40)) * time.Second
	default:
		d = time.Duration(60+tw.rng.IntN(300)) * time.Second
	}
	tw.now += int64(d)
	tw.logf("advance %v", d)
}

// createReq draws a CreateQueue of the named queue with random attributes.
func (tw *twins) createReq(name, account string) twinReq {
	fifo := api.IsFIFOName(name)
	attrs := map[string]string{}
	if fifo {
		attrs[api.AttrFifoQueue] = "true"
		if tw.chance(2) {
			attrs[api.AttrContentBasedDeduplication] = "true"
		}
		if tw.chance(3) {
			attrs[api.AttrDeduplicationScope] = "messageGroup"
			if tw.chance(2) {
				attrs[api.AttrFifoThroughputLimit] = "perMessageGroupId"
			}
		}
	}
	if tw.chance(2) {
		attrs[api.AttrVisibilityTimeout] = strconv.Itoa(tw.rng.IntN(30))
	}
	if tw.chance(3) {
		attrs[api.AttrDelaySeconds] = strconv.Itoa(tw.rng.IntN(8))
	}
	if tw.chance(3) {
		attrs[api.AttrMessageRetentionPeriod] = strconv.Itoa(60 + tw.rng.IntN(600))
	}
	if !slices.Contains([]string{"fdlq.fifo", "sdlq"}, name) || tw.chance(4) {
		if rp := tw.redrivePolicy(fifo, account); rp != "" {
			attrs[api.AttrRedrivePolicy] = rp
		}
	} else if tw.chance(3) {
		attrs[api.AttrRedriveAllowPolicy] = tw.allowPolicy(fifo)
	}
	req := &api.CreateQueueRequest{QueueName: name, Attributes: attrs}
	if tw.chance(3) {
		req.Tags = map[string]string{"team": tw.pick([]string{"a", "b"}), "env": "test"}
	}
	return twinReq{caller: account, req: req}
}

func (tw *twins) redrivePolicy(fifo bool, account string) string {
	if tw.chance(4) {
		return ""
	}
	target := "fdlq.fifo"
	if !fifo {
		target = "sdlq"
	}
	if tw.chance(6) {
		target = tw.anyQueue().Name
	}
	arn := api.QueueKey{Account: account, Name: target}.ARN(testRegion)
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, 1+tw.rng.IntN(3))
}

func (tw *twins) allowPolicy(fifo bool) string {
	switch tw.rng.IntN(3) {
	case 0:
		return `{"redrivePermission":"allowAll"}`
	case 1:
		src := "f1.fifo"
		if !fifo {
			src = "s1"
		}
		return fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":[%q]}`, tw.key(src).ARN(testRegion))
	}
	return `{"redrivePermission":"denyAll"}`
}

func (tw *twins) setAttributesReq() twinReq {
	q := tw.anyQueue()
	fifo := api.IsFIFOName(q.Name)
	attrs := map[string]string{}
	switch tw.rng.IntN(8) {
	case 0:
		attrs[api.AttrVisibilityTimeout] = strconv.Itoa(tw.rng.IntN(30))
	case 1:
		attrs[api.AttrDelaySeconds] = strconv.Itoa(tw.rng.IntN(8))
	case 2:
		attrs[api.AttrMessageRetentionPeriod] = strconv.Itoa(60 + tw.rng.IntN(600))
	case 3:
		attrs[api.AttrRedrivePolicy] = tw.redrivePolicy(fifo, q.Account)
	case 4:
		attrs[api.AttrRedriveAllowPolicy] = tw.allowPolicy(fifo)
	case 5:
		if fifo {
			attrs[api.AttrContentBasedDeduplication] = strconv.FormatBool(tw.chance(2))
		} else {
			attrs[api.AttrMaximumMessageSize] = strconv.Itoa(1024 + tw.rng.IntN(4096))
		}
	case 6:
		if fifo {
			attrs[api.AttrDeduplicationScope] = tw.pick([]string{"queue", "messageGroup"})
		} else {
			attrs[api.AttrReceiveMessageWaitTimeSeconds] = strconv.Itoa(tw.rng.IntN(20))
		}
	default:
		if tw.chance(2) {
			attrs[api.AttrKmsMasterKeyId] = "alias/aws/sqs"
		} else {
			attrs[api.AttrSqsManagedSseEnabled] = "true"
		}
	}
	return twinReq{q: q, req: &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: attrs}}
}

func (tw *twins) tagReq() twinReq {
	q := tw.anyQueue()
	if tw.chance(3) {
		return twinReq{q: q, req: &api.UntagQueueRequest{QueueUrl: q.Path(), TagKeys: []string{tw.pick([]string{"team", "env", "k1"})}}}
	}
	return twinReq{q: q, req: &api.TagQueueRequest{QueueUrl: q.Path(), Tags: map[string]string{tw.pick([]string{"team", "k1", "k2"}): tw.pick([]string{"x", "y"})}}}
}

func (tw *twins) permissionReq() twinReq {
	q := tw.anyQueue()
	label := tw.pick([]string{"l1", "l2"})
	if tw.chance(2) {
		return twinReq{q: q, req: &api.RemovePermissionRequest{QueueUrl: q.Path(), Label: label}}
	}
	return twinReq{q: q, req: &api.AddPermissionRequest{QueueUrl: q.Path(), Label: label,
		AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage", "ReceiveMessage"}[:1+tw.rng.IntN(2)]}}
}

// sendQueue picks a queue to send to, mostly a source queue.
func (tw *twins) sendQueue() api.QueueKey {
	if tw.chance(5) {
		return tw.anyQueue()
	}
	return tw.key(tw.pick([]string{"f1.fifo", "f2.fifo", "s1", "s2", "fdlq.fifo", "sdlq"}))
}

// entry draws a message: FIFO fields for FIFO queues, a fair-queue tenant,
// a delay, message and system attributes.
func (tw *twins) entry(q api.QueueKey) (body, group, dedup string, delay *int, attrs map[string]api.MessageAttributeValue, sys map[string]api.MessageSystemAttributeValue) {
	body = "body-" + strconv.Itoa(tw.rng.IntN(12))
	if api.IsFIFOName(q.Name) {
		if !tw.chance(40) {
			group = "g" + strconv.Itoa(tw.rng.IntN(4))
		}
		if tw.chance(2) {
			dedup = "d" + strconv.Itoa(tw.rng.IntN(10))
		}
	} else {
		if tw.chance(2) {
			group = "t" + strconv.Itoa(tw.rng.IntN(3))
		}
		if tw.chance(4) {
			d := tw.rng.IntN(6)
			delay = &d
		}
	}
	if tw.chance(4) {
		attrs = map[string]api.MessageAttributeValue{
			"color": {DataType: "String", StringValue: strp(tw.pick([]string{"red", "blue"}))},
			"n":     {DataType: "Number", StringValue: strp(strconv.Itoa(tw.rng.IntN(100)))},
		}
		if tw.chance(2) {
			attrs["blob"] = api.MessageAttributeValue{DataType: "Binary", BinaryValue: []byte{1, 2, byte(tw.rng.IntN(256))}}
		}
	}
	if tw.chance(6) {
		sys = map[string]api.MessageSystemAttributeValue{
			api.MsgAttrAWSTraceHeader: {DataType: "String", StringValue: strp("Root=1-5759e988-bd862e3fe1be46a994272793")},
		}
	}
	return
}

func (tw *twins) sendReq() twinReq {
	q := tw.sendQueue()
	body, group, dedup, delay, attrs, sys := tw.entry(q)
	return twinReq{q: q, req: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: body, MessageGroupId: group,
		MessageDeduplicationId: dedup, DelaySeconds: delay, MessageAttributes: attrs, MessageSystemAttributes: sys}}
}

func (tw *twins) sendBatchReq() twinReq {
	q := tw.sendQueue()
	req := &api.SendMessageBatchRequest{QueueUrl: q.Path()}
	for i := range 1 + tw.rng.IntN(4) {
		body, group, dedup, delay, attrs, sys := tw.entry(q)
		req.Entries = append(req.Entries, api.SendMessageBatchRequestEntry{Id: "e" + strconv.Itoa(i), MessageBody: body,
			MessageGroupId: group, MessageDeduplicationId: dedup, DelaySeconds: delay, MessageAttributes: attrs, MessageSystemAttributes: sys})
	}
	return twinReq{q: q, req: req}
}

func (tw *twins) receiveReq() twinReq {
	q := tw.anyQueue()
	if tw.chance(2) {
		q = tw.key(tw.pick([]string{"f1.fifo", "s1"}))
	}
	n := 1 + tw.rng.IntN(10)
	req := &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &n,
		MessageSystemAttributeNames: []string{"All"}}
	switch tw.rng.IntN(3) {
	case 0:
		req.MessageAttributeNames = []string{"All"}
	case 1:
		req.MessageAttributeNames = []string{"color"}
	}
	if !tw.chance(3) {
		v := []int{0, 0, 1, 5, 20}[tw.rng.IntN(5)]
		req.VisibilityTimeout = &v
	}
	if api.IsFIFOName(q.Name) && tw.chance(3) {
		req.ReceiveRequestAttemptId = "a" + strconv.Itoa(tw.rng.IntN(3))
	}
	return twinReq{q: q, req: req}
}

// receipt picks a receipt handle, mostly a recent one, with its queue.
func (tw *twins) receipt() twinReceipt {
	if len(tw.receipts) == 0 || tw.chance(30) {
		return twinReceipt{q: tw.anyQueue(), handle: "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAA"[:28]}
	}
	rc := tw.receipts[len(tw.receipts)-1-tw.rng.IntN(min(len(tw.receipts), 10))]
	if tw.chance(20) {
		rc.q = tw.anyQueue()
	}
	return rc
}

func (tw *twins) deleteReq() twinReq {
	rc := tw.receipt()
	if tw.chance(4) {
		req := &api.DeleteMessageBatchRequest{QueueUrl: rc.q.Path()}
		for i := range 1 + tw.rng.IntN(3) {
			h := rc.handle
			if i > 0 {
				h = tw.receipt().handle
			}
			req.Entries = append(req.Entries, api.DeleteMessageBatchRequestEntry{Id: "b" + strconv.Itoa(i), ReceiptHandle: h})
		}
		return twinReq{q: rc.q, req: req}
	}
	return twinReq{q: rc.q, req: &api.DeleteMessageRequest{QueueUrl: rc.q.Path(), ReceiptHandle: rc.handle}}
}

func (tw *twins) visibilityReq() twinReq {
	rc := tw.receipt()
	v := []int{0, 1, 10, 30, 600}[tw.rng.IntN(5)]
	if tw.chance(4) {
		req := &api.ChangeMessageVisibilityBatchRequest{QueueUrl: rc.q.Path()}
		for i := range 1 + tw.rng.IntN(3) {
			h := rc.handle
			if i > 0 {
				h = tw.receipt().handle
			}
			vv := v
			req.Entries = append(req.Entries, api.ChangeMessageVisibilityBatchRequestEntry{Id: "c" + strconv.Itoa(i), ReceiptHandle: h, VisibilityTimeout: &vv})
		}
		return twinReq{q: rc.q, req: req}
	}
	return twinReq{q: rc.q, req: &api.ChangeMessageVisibilityRequest{QueueUrl: rc.q.Path(), ReceiptHandle: rc.handle, VisibilityTimeout: &v}}
}

func (tw *twins) startTaskReq() twinReq {
	src := tw.key(tw.pick([]string{"fdlq.fifo", "sdlq"}))
	if tw.chance(8) {
		src = tw.anyQueue()
	}
	req := &api.StartMessageMoveTaskRequest{SourceArn: src.ARN(testRegion)}
	if tw.chance(3) {
		req.DestinationArn = tw.anyQueue().ARN(testRegion)
	}
	if !tw.chance(4) {
		r := 1 + tw.rng.IntN(3)
		req.MaxNumberOfMessagesPerSecond = &r
	}
	return twinReq{req: req}
}

func (tw *twins) cancelTaskReq() twinReq {
	h := "bm9uZQ"
	if len(tw.tasks) > 0 && !tw.chance(10) {
		h = tw.tasks[len(tw.tasks)-1-tw.rng.IntN(min(len(tw.tasks), 4))]
	}
	return twinReq{req: &api.CancelMessageMoveTaskRequest{TaskHandle: h}}
}

// compareReads compares every read-only answer of A and X, now and at a
// random later time.
func (tw *twins) compareReads() {
	tw.t.Helper()
	if tw.a.HasActiveMoveTasks() != tw.x.HasActiveMoveTasks() {
		tw.fail("HasActiveMoveTasks differs")
	}
	later := tw.now + int64(tw.rng.IntN(400_000))*int64(time.Millisecond)
	read := func(caller string, q api.QueueKey, at int64, req api.Request) {
		cmd := &Command{Time: at, Caller: caller, Queue: q, Request: req}
		ra, ea := tw.a.Read(cmd)
		rx, ex := tw.x.Read(cmd)
		if !reflect.DeepEqual(ra, rx) || !reflect.DeepEqual(ea, ex) {
			tw.fail("read %s %s at %v: results differ:\n  A: %#v %v\n  X: %#v %v", req.Action(), q, time.Duration(at-t0), ra, ea, rx, ex)
		}
		if res, ok := ra.(*api.ListMessageMoveTasksResult); ok {
			for _, en := range res.Results {
				if en.Status == api.MoveTaskCompleted && en.ApproximateNumberOfMessagesMoved > 0 {
					tw.cov.tasksCompleted++
				}
			}
		}
	}
	for _, q := range tw.allKeys() {
		for _, at := range []int64{tw.now, later} {
			read(q.Account, q, at, &api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: []string{"All"}})
			wa, oka := tw.a.NextWake(q, at)
			wx, okx := tw.x.NextWake(q, at)
			if wa != wx || oka != okx {
				tw.fail("NextWake(%s) differs: A %d %v, X %d %v", q, wa, oka, wx, okx)
			}
			if ra, rx := tw.a.Receivable(q, at), tw.x.Receivable(q, at); ra != rx {
				tw.fail("Receivable(%s) differs: A %v, X %v", q, ra, rx)
			}
		}
		read(q.Account, q, tw.now, &api.ListQueueTagsRequest{QueueUrl: q.Path()})
		read(q.Account, q, tw.now, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: q.Path()})
		ten := 10
		read(q.Account, api.QueueKey{}, tw.now, &api.ListMessageMoveTasksRequest{SourceArn: q.ARN(testRegion), MaxResults: &ten})
	}
	for _, acct := range []string{testAccount, twinOtherAccount} {
		read(acct, api.QueueKey{}, tw.now, &api.ListQueuesRequest{})
		read(acct, api.QueueKey{}, tw.now, &api.GetQueueUrlRequest{QueueName: "s1"})
	}
}

// snapshot replaces X by an engine restored from X's snapshot, after
// checking that the snapshot is A's too, byte for byte.
func (tw *twins) snapshot(final bool) {
	tw.t.Helper()
	var sx, sa bytes.Buffer
	if err := tw.x.Snapshot(&sx); err != nil {
		tw.fail("Snapshot X: %v", err)
		return
	}
	if err := tw.a.Snapshot(&sa); err != nil {
		tw.fail("Snapshot A: %v", err)
		return
	}
	if !bytes.Equal(sa.Bytes(), sx.Bytes()) {
		tw.fail("snapshots of A (%d bytes) and X (%d bytes) differ", sa.Len(), sx.Len())
	}
	if final {
		return
	}
	tw.cov.snapshots++
	if tw.x.HasActiveMoveTasks() {
		tw.cov.snapRunningTask++
	}
	if len(tw.x.running) >= 2 {
		tw.cov.snapTwoTasks++
	}
	for _, q := range tw.x.queues {
		if q.nInflight > 0 {
			tw.cov.snapInflight++
			break
		}
	}
	y := New(Config{Region: testRegion})
	if tw.chance(3) {
		// Restore into an engine with a state of its own: it must go.
		y = junkEngine(tw.t, tw.rng.Uint64())
		tw.cov.usedEngine++
	}
	y = tw.mode.engine(y)
	var yBodies *testBodies
	if harnessBodies {
		if st, ok := y.cfg.Bodies.(*testBodies); ok {
			yBodies = st // the junk engine's
		} else {
			yBodies = newTestBodies(tw.t)
			y.SetBodyStore(yBodies)
		}
	}
	woken := 0
	y.SetAvailableHook(func(api.QueueKey) { woken++ })
	if err := y.Restore(bytes.NewReader(sx.Bytes())); err != nil {
		tw.fail("Restore: %v", err)
		return
	}
	if yBodies != nil {
		yBodies.restored(y)
		tw.refSnapshot(sx.Bytes())
		tw.xBodies = yBodies
	}
	if woken != len(y.queues) {
		tw.fail("Restore called the hook %d times for %d queues", woken, len(y.queues))
	}
	var sy bytes.Buffer
	if err := y.Snapshot(&sy); err != nil || !bytes.Equal(sy.Bytes(), sx.Bytes()) {
		tw.fail("snapshot of the restored engine differs (%v)", err)
	}
	tw.logf("snapshot (%d bytes) and restore", sx.Len())
	tw.x = y
}

// refSnapshot checks X's snapshot by reference to its body store against
// inline, X's snapshot as Snapshot writes it: InlineBodies must turn the
// one into the other byte for byte, and an engine restored from it beside
// X's store must write inline again.
func (tw *twins) refSnapshot(inline []byte) {
	tw.t.Helper()
	v, err := tw.x.BeginSnapshot()
	if err != nil {
		tw.fail("BeginSnapshot X: %v", err)
		return
	}
	defer v.Release()
	v.BodiesByReference()
	var refs, back bytes.Buffer
	if _, err := v.WriteTo(&refs, noLock{}); err != nil {
		tw.fail("WriteTo by reference: %v", err)
		return
	}
	if err := VerifySnapshot(bytes.NewReader(refs.Bytes())); err != nil {
		tw.fail("VerifySnapshot of a snapshot by reference: %v", err)
	}
	if err := InlineBodies(&back, bytes.NewReader(refs.Bytes()), tw.xBodies.Get); err != nil {
		tw.fail("InlineBodies: %v", err)
	} else if !bytes.Equal(back.Bytes(), inline) {
		tw.fail("InlineBodies made %d bytes, not the %d of the snapshot", back.Len(), len(inline))
	}
	z := tw.mode.engine(New(Config{Region: testRegion}))
	z.SetBodyStore(tw.xBodies)
	if err := z.Restore(bytes.NewReader(refs.Bytes())); err != nil {
		tw.fail("Restore by reference: %v", err)
		return
	}
	var sz bytes.Buffer
	if err := z.Snapshot(&sz); err != nil || !bytes.Equal(sz.Bytes(), inline) {
		tw.fail("snapshot of the engine restored by reference differs (%v)", err)
	}
	if len(refs.Bytes()) > 0 {
		tw.cov.snapByRef++
	}
}

// junkEngine returns an engine with queues, messages, records and a
// running task of its own.
func junkEngine(t *testing.T, seed uint64) *Engine {
	h := newHarness(t)
	h.entropy = seed
	dlq := h.fifoQueue("junk-dlq.fifo", nil)
	q := h.fifoQueue("f1.fifo", map[string]string{api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion))})
	for i := range 5 {
		h.sendFIFO(q, "junk", "g", "j"+strconv.Itoa(i))
	}
	h.receive(q, 2, 0)
	h.receive(q, 5, 30)
	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), MaxNumberOfMessagesPerSecond: intp(1)})
	s := h.createQueue("junk-s", nil)
	h.send(s, &api.SendMessageRequest{MessageBody: "junk"})
	h.must(s, &api.DeleteQueueRequest{QueueUrl: s.Path()})
	return h.e
}
