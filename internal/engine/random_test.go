package engine

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	flagSeeds = flag.Int("engine.seeds", 100, "number of random command sequences TestRandomFIFO (and TestRandomStandard, TestRandomMoveTasks) runs; 30 in the first tier unless given (internal/testenv)")
	flagSteps = flag.Int("engine.steps", 300, "commands per random sequence")
	flagSeed  = flag.Uint64("engine.seed", 0, "run only this seed (0: seeds 1..engine.seeds)")
)

// TestRandomFIFO runs random command sequences through the engine and the
// reference model, compares every result, and checks invariants after
// every step. A failure names its seed; rerun it with -engine.seed=N.
func TestRandomFIFO(t *testing.T) {
	seeds := *flagSeeds
	// The first tier (and -short) runs 30 sequences; FIFOQ_TESTS=all or
	// -engine.seeds runs them all.
	if testing.Short() || testenv.Quick(t, "engine.seeds") {
		seeds = min(seeds, 30)
	}
	if *flagSeed != 0 {
		runRandomFIFO(t, *flagSeed, *flagSteps)
		return
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		if !runRandomFIFO(t, seed, *flagSteps) {
			return
		}
	}
}

// TestRandomFIFODeterminism runs sequences twice and requires identical
// results, receipt handles included: replicas applying the same log agree.
func TestRandomFIFODeterminism(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		a := newRandomRun(t, seed)
		b := newRandomRun(t, seed)
		for step := 0; step < 300; step++ {
			ra, rb := a.step(step), b.step(step)
			if ra != rb {
				t.Fatalf("seed %d step %d: runs differ:\n%s\n%s", seed, step, ra, rb)
			}
		}
	}
}

func runRandomFIFO(t *testing.T, seed uint64, steps int) bool {
	t.Helper()
	r := newRandomRun(t, seed)
	for step := 0; step < steps; step++ {
		r.step(step)
		if t.Failed() {
			t.Logf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
			return false
		}
	}
	return true
}

// randomRun is one random sequence: an engine, the model, and a ledger of
// what the engine answered, for the invariants.
type randomRun struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	h    *harness
	q    api.QueueKey
	dlq  api.QueueKey // the dead-letter queue, if the model has a redrive policy
	// dlqHost holds the dead-letter queue when another engine than h's
	// does (outbox_test.go); nil when h's does.
	dlqHost *harness
	model   *refModel
	log     []string

	groups, dedupIDs, bodies []string
	// receipts lists every receive of a message so far: the engine's
	// handle and the model's, for deletes and visibility changes.
	receipts []receipt
	ledger   ledger
}

type receipt struct {
	engine string
	model  refHandle
}

func newRandomRun(t *testing.T, seed uint64) *randomRun {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r := &randomRun{t: t, seed: seed, rng: rng, h: newHarness(t)}
	r.h.entropy = seed
	m := &refModel{
		vis:          int64(5+rng.IntN(60)) * int64(time.Second),
		delay:        0,
		contentDedup: rng.IntN(2) == 0,
		groupScope:   rng.IntN(2) == 0,
		retention:    int64(api.DefaultMessageRetentionPeriod) * int64(time.Second),
	}
	if rng.IntN(3) == 0 {
		m.delay = int64(rng.IntN(15)) * int64(time.Second)
	}
	if rng.IntN(3) == 0 {
		m.retention = int64(60+rng.IntN(600)) * int64(time.Second)
	}
	attrs := map[string]string{
		api.AttrVisibilityTimeout:      strconv.FormatInt(m.vis/int64(time.Second), 10),
		api.AttrDelaySeconds:           strconv.FormatInt(m.delay/int64(time.Second), 10),
		api.AttrMessageRetentionPeriod: strconv.FormatInt(m.retention/int64(time.Second), 10),
	}
	if m.contentDedup {
		attrs[api.AttrContentBasedDeduplication] = "true"
	}
	if m.groupScope {
		attrs[api.AttrDeduplicationScope] = "messageGroup"
	}
	// A dead-letter queue in half the runs, drawn from a generator of its
	// own so that the other draws of a seed stay what they were before
	// dead-letter queues were modelled.
	if dl := rand.New(rand.NewPCG(seed, 0xd1e)); dl.IntN(2) == 0 {
		m.maxReceives = 1 + dl.IntN(3)
		r.dlq = r.h.fifoQueue("dead.fifo", nil)
		arn := "arn:aws:sqs:" + testRegion + ":" + testAccount + ":dead.fifo"
		attrs[api.AttrRedrivePolicy] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, m.maxReceives)
	}
	r.q = r.h.fifoQueue("q.fifo", attrs)
	r.model = m
	nGroups := 1 + rng.IntN(5)
	for i := range nGroups {
		r.groups = append(r.groups, "g"+strconv.Itoa(i))
	}
	for i := range 8 {
		r.dedupIDs = append(r.dedupIDs, "d"+strconv.Itoa(i))
		r.bodies = append(r.bodies, "body-"+strconv.Itoa(i))
	}
	r.ledger = newLedger(m.groupScope, m.retention)
	r.logf("seed %d: vis %v delay %v retention %v contentDedup %v groupScope %v groups %d maxReceiveCount %d",
		seed, time.Duration(m.vis), time.Duration(m.delay), time.Duration(m.retention), m.contentDedup, m.groupScope, nGroups, m.maxReceives)
	return r
}

func (r *randomRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *randomRun) tail() string {
	start := max(0, len(r.log)-40)
	out := ""
	for _, l := range r.log[start:] {
		out += "  " + l + "\n"
	}
	return out
}

func (r *randomRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("seed %d: "+format, append([]any{r.seed}, args...)...)
}

// step runs one random command and returns a description of its result.
func (r *randomRun) step(i int) string {
	r.t.Helper()
	var out string
	switch p := r.rng.IntN(100); {
	case p < 30:
		out = r.send()
	case p < 36:
		out = r.sendBatch()
	case p < 60:
		out = r.receive()
	case p < 74:
		out = r.delete()
	case p < 82:
		out = r.changeVisibility()
	case p < 94:
		out = r.advance()
	case p < 98:
		limit := 1 + r.rng.IntN(4)
		res := r.h.housekeep(limit)
		out = fmt.Sprintf("housekeep(%d) = %+v", limit, *res)
	default:
		out = r.setDelay()
	}
	r.logf("%d @%v: %s", i, time.Duration(r.h.now-t0), out)
	r.compareState()
	checkDueIndex(r.t, r.h.e)
	return out
}

func (r *randomRun) pick(list []string) string { return list[r.rng.IntN(len(list))] }

// message draws the fields of a message to send.
func (r *randomRun) message() (body, group, dedup string) {
	body = r.pick(r.bodies)
	if r.rng.IntN(40) != 0 {
		group = r.pick(r.groups)
	}
	if r.rng.IntN(3) != 0 {
		dedup = r.pick(r.dedupIDs)
	}
	if r.rng.IntN(4) == 0 {
		dedup = "u" + strconv.Itoa(r.rng.IntN(1_000_000)) // almost surely fresh
	}
	return body, group, dedup
}

func (r *randomRun) send() string {
	body, group, dedup := r.message()
	resp, err := r.h.do(r.q, &api.SendMessageRequest{QueueUrl: r.q.Path(), MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup})
	newID := fmt.Sprintf("msg-%06d", r.h.ids)
	id, seq, code := r.model.send(r.h.now, newID, body, group, dedup)
	desc := fmt.Sprintf("send(%s,%s,%s)", body, group, dedup)
	if got := errCode(err); got != code {
		r.fail("%s: error %q, model %q", desc, got, code)
		return desc
	}
	if err != nil {
		return desc + " -> " + code
	}
	res := resp.(*api.SendMessageResult)
	if res.MessageId != id || res.SequenceNumber != strconv.FormatUint(seq, 10) {
		r.fail("%s = (%s, %s), model (%s, %d)", desc, res.MessageId, res.SequenceNumber, id, seq)
	}
	r.ledger.sent(r, res.MessageId, seq, body, group, r.model.find(id).dedupID, r.h.now)
	return fmt.Sprintf("%s -> %s %s", desc, res.MessageId, res.SequenceNumber)
}

func (r *randomRun) sendBatch() string {
	n := 1 + r.rng.IntN(4)
	req := &api.SendMessageBatchRequest{QueueUrl: r.q.Path()}
	for i := range n {
		body, group, dedup := r.message()
		req.Entries = append(req.Entries, api.SendMessageBatchRequestEntry{Id: "e" + strconv.Itoa(i), MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup})
	}
	// An entry without a group id, or without a deduplication id where the
	// queue does not deduplicate by content, fails the whole batch and
	// sends nothing (localstack test_sqs.snapshot.json:
	// test_send_batch_missing_message_group_id_for_fifo_queue,
	// test_send_batch_missing_deduplication_id_for_fifo_queue).
	wantFail := false
	for _, en := range req.Entries {
		if en.MessageGroupId == "" || (en.MessageDeduplicationId == "" && !r.model.contentDedup) {
			wantFail = true
		}
	}
	firstID := r.h.ids + 1
	resp, err := r.h.do(r.q, req)
	if wantFail {
		if errCode(err) != "InvalidParameterValue" {
			r.fail("SendMessageBatch with an entry missing an id: error %q, want InvalidParameterValue", errCode(err))
		}
		return "batch -> InvalidParameterValue"
	}
	if err != nil {
		r.fail("SendMessageBatch: %v", err)
		return "batch error"
	}
	res := resp.(*api.SendMessageBatchResult)
	desc := "batch:"
	for i, en := range req.Entries {
		id, seq, code := r.model.send(r.h.now, fmt.Sprintf("msg-%06d", firstID+i), en.MessageBody, en.MessageGroupId, en.MessageDeduplicationId)
		var ok *api.SendMessageBatchResultEntry
		for j := range res.Successful {
			if res.Successful[j].Id == en.Id {
				ok = &res.Successful[j]
			}
		}
		var failed *api.BatchResultErrorEntry
		for j := range res.Failed {
			if res.Failed[j].Id == en.Id {
				failed = &res.Failed[j]
			}
		}
		switch {
		case code != "" && (failed == nil || failed.Code != code):
			r.fail("batch entry %d: model fails with %s, engine %+v %+v", i, code, ok, failed)
		case code == "" && (ok == nil || ok.MessageId != id || ok.SequenceNumber != strconv.FormatUint(seq, 10)):
			r.fail("batch entry %d: model (%s, %d), engine %+v %+v", i, id, seq, ok, failed)
		case code == "":
			r.ledger.sent(r, id, seq, en.MessageBody, en.MessageGroupId, r.model.find(id).dedupID, r.h.now)
			desc += " " + id
		default:
			desc += " " + code
		}
	}
	return desc
}

func (r *randomRun) receive() string {
	max := 1 + r.rng.IntN(10)
	vis := r.model.vis
	req := &api.ReceiveMessageRequest{QueueUrl: r.q.Path(), MaxNumberOfMessages: &max, MessageSystemAttributeNames: []string{"All"}}
	if r.rng.IntN(2) == 0 {
		v := r.rng.IntN(4) * r.rng.IntN(40)
		req.VisibilityTimeout = &v
		vis = int64(v) * int64(time.Second)
	}
	// The server skips the log when ReceiveOutlook says nothing is to be
	// taken: the receive must then find nothing indeed.
	exists, take := r.h.e.ReceiveOutlook(r.q, r.h.now, "")
	resp, err := r.h.do(r.q, req)
	if err != nil {
		r.fail("receive: %v", err)
		return "receive error"
	}
	got := resp.(*api.ReceiveMessageResult).Messages
	movedBefore := len(r.model.moved)
	if !exists || (!take && len(got) > 0) {
		r.fail("ReceiveOutlook = %v %v, but the receive took %d messages", exists, take, len(got))
	}
	want := r.model.receive(r.h.now, max, vis)
	// The messages the receive moved to the dead-letter queue are gone
	// from the source before it delivers, for the ledger too.
	for _, id := range r.model.moved[movedBefore:] {
		r.ledger.deleted(id)
	}
	r.ledger.received(r, got, vis)
	desc := fmt.Sprintf("receive(%d, %v) ->", max, time.Duration(vis))
	for _, m := range got {
		desc += " " + m.MessageId
	}
	if moved := r.model.moved[movedBefore:]; len(moved) > 0 {
		desc += fmt.Sprintf(" (model dead-letters %v)", moved)
	}
	if len(got) != len(want) {
		r.fail("%s: engine %d messages, model %d", desc, len(got), len(want))
		return desc
	}
	for i, m := range got {
		w := want[i]
		a := m.Attributes
		if m.MessageId != w.id || m.Body != w.body || a[api.MsgAttrMessageGroupId] != w.group || a[api.MsgAttrMessageDeduplicationId] != w.dedupID ||
			a[api.MsgAttrSequenceNumber] != strconv.FormatUint(w.seq, 10) || a[api.MsgAttrApproximateReceiveCount] != strconv.Itoa(w.receives) {
			r.fail("%s: message %d = %s %s %v, model %+v", desc, i, m.MessageId, m.Body, a, *w)
		}
		r.receipts = append(r.receipts, receipt{engine: m.ReceiptHandle, model: refHandle{id: w.id, n: w.receives}})
	}
	return desc
}

// handle picks a receipt: usually a recent one, sometimes an old or a
// garbage one.
func (r *randomRun) handle() (receipt, bool) {
	if len(r.receipts) == 0 || r.rng.IntN(30) == 0 {
		return receipt{engine: "garbage", model: refHandle{bad: true}}, true
	}
	n := len(r.receipts)
	i := n - 1 - r.rng.IntN(min(n, 12))
	if r.rng.IntN(4) == 0 {
		i = r.rng.IntN(n)
	}
	return r.receipts[i], true
}

func (r *randomRun) delete() string {
	rc, _ := r.handle()
	_, err := r.h.do(r.q, &api.DeleteMessageRequest{QueueUrl: r.q.Path(), ReceiptHandle: rc.engine})
	code := r.model.deleteMsg(r.h.now, rc.model)
	desc := fmt.Sprintf("delete(%s#%d) -> %q", rc.model.id, rc.model.n, code)
	if got := errCode(err); got != code {
		r.fail("%s: engine %q", desc, got)
	}
	if err == nil && !rc.model.bad {
		r.ledger.deleted(rc.model.id)
	}
	return desc
}

func (r *randomRun) changeVisibility() string {
	rc, _ := r.handle()
	v := r.rng.IntN(3) * r.rng.IntN(60)
	if r.rng.IntN(20) == 0 {
		v = api.MaxVisibilityTimeout - r.rng.IntN(100)
	}
	_, err := r.h.do(r.q, &api.ChangeMessageVisibilityRequest{QueueUrl: r.q.Path(), ReceiptHandle: rc.engine, VisibilityTimeout: &v})
	code := r.model.changeVis(r.h.now, rc.model, int64(v)*int64(time.Second))
	desc := fmt.Sprintf("changeVisibility(%s#%d, %d) -> %q", rc.model.id, rc.model.n, v, code)
	if got := errCode(err); got != code {
		r.fail("%s: engine %q", desc, got)
	}
	if err == nil {
		r.ledger.leased(rc.model.id, r.h.now+int64(v)*int64(time.Second))
	}
	return desc
}

func (r *randomRun) advance() string {
	var d time.Duration
	switch p := r.rng.IntN(10); {
	case p < 2:
		d = 0
	case p < 8:
		d = time.Duration(r.rng.IntN(40_000)) * time.Millisecond
	default:
		d = time.Duration(60+r.rng.IntN(300)) * time.Second
	}
	r.h.advance(d)
	return fmt.Sprintf("advance %v", d)
}

func (r *randomRun) setDelay() string {
	s := r.rng.IntN(20)
	r.h.must(r.q, &api.SetQueueAttributesRequest{QueueUrl: r.q.Path(), Attributes: map[string]string{api.AttrDelaySeconds: strconv.Itoa(s)}})
	r.model.delay = int64(s) * int64(time.Second)
	return fmt.Sprintf("set delay %ds", s)
}

// compareState compares what a read sees now: counts, Receivable, NextWake.
func (r *randomRun) compareState() {
	r.t.Helper()
	now := r.h.now
	if got, want := r.h.counts(r.q), r.model.counts(now); got != want {
		r.fail("counts = %v, model %v", got, want)
	}
	if got, want := r.h.e.Receivable(r.q, now), r.model.receivable(now); got != want {
		r.fail("Receivable = %v, model %v", got, want)
	}
	gw, gok := r.h.e.NextWake(r.q, now)
	ww, wok := r.model.nextWake(now)
	if gw != ww || gok != wok {
		r.fail("NextWake = %v %v, model %v %v", time.Duration(gw-t0), gok, time.Duration(ww-t0), wok)
	}
	if r.model.maxReceives > 0 {
		// The dead-letter queue holds the moved messages, visible, in the
		// order they were moved, but for the last ones, which may still be
		// on their way to it in the queue's outbox (outbox.go): those it
		// has not taken yet.
		host := r.h
		if r.dlqHost != nil {
			host = r.dlqHost
		}
		leaving := pendingIDs(r.t, r.h.e, r.q, host.e, r.dlq)
		if got, want := host.counts(r.dlq), [3]int{len(r.model.moved) - len(leaving), 0, 0}; got != want {
			r.fail("dead-letter queue counts = %v, model %v less %d in the outbox", got, [3]int{len(r.model.moved), 0, 0}, len(leaving))
		}
		peeked, _ := host.e.Peek(r.dlq, now, PeekOptions{Limit: MaxPeekMessages})
		var got []string
		for _, p := range peeked {
			got = append(got, p.MessageID)
		}
		if got = append(got, leaving...); !slices.Equal(got, r.model.moved) {
			r.fail("dead-letter queue then outbox hold %v, model %v", got, r.model.moved)
		}
	}
}

func errCode(err error) string {
	if err == nil {
		return ""
	}
	if ae, ok := err.(*api.Error); ok {
		return ae.Code
	}
	return err.Error()
}

// ledger records what the engine answered, to check the FIFO invariants
// independently of the model: per-group order of deliveries (a receive
// takes a prefix of a group's messages), no delivery of a message still in
// flight, no duplicate within the deduplication interval.
type ledger struct {
	groupScope bool
	retention  int64
	msgs       map[string]*ledgerMsg
	order      []*ledgerMsg // in sequence order
	// byKey maps a deduplication key to the messages created with it.
	byKey map[[2]string][]*ledgerMsg
}

type ledgerMsg struct {
	id, body, group string
	seq             uint64
	sentAt          int64
	deleted         bool
	leaseUntil      int64 // end of the current delivery's visibility
}

func newLedger(groupScope bool, retention int64) ledger {
	return ledger{groupScope: groupScope, retention: retention, msgs: map[string]*ledgerMsg{}, byKey: map[[2]string][]*ledgerMsg{}}
}

// sent records a successful send; a new message id must not share its
// deduplication key with another message sent within the interval.
func (l *ledger) sent(r *randomRun, id string, seq uint64, body, group, dedupID string, at int64) {
	if l.msgs[id] != nil {
		return // a duplicate: the engine answered with the original
	}
	key := [2]string{"", dedupID}
	if l.groupScope {
		key[0] = group
	}
	for _, other := range l.byKey[key] {
		if at-other.sentAt < dedupWindow {
			r.fail("invariant: message %s enqueued with dedup key %v %v after %s", id, key, time.Duration(at-other.sentAt), other.id)
		}
	}
	m := &ledgerMsg{id: id, body: body, group: group, seq: seq, sentAt: at}
	l.msgs[id] = m
	l.order = append(l.order, m)
	l.byKey[key] = append(l.byKey[key], m)
}

func (l *ledger) live(m *ledgerMsg, t int64) bool { return !m.deleted && t-m.sentAt < l.retention }

// received checks a receive's messages against the invariants and records
// their leases.
func (l *ledger) received(r *randomRun, got []api.Message, vis int64) {
	now := r.h.now
	byGroup := map[string][]*ledgerMsg{}
	var groupOrder []string
	for _, gm := range got {
		m := l.msgs[gm.MessageId]
		if m == nil {
			r.fail("invariant: received unknown message %s", gm.MessageId)
			continue
		}
		if gm.Body != m.body {
			r.fail("invariant: message %s body %q, sent %q", m.id, gm.Body, m.body)
		}
		if !l.live(m, now) {
			r.fail("invariant: received deleted or expired message %s", m.id)
		}
		if _, ok := byGroup[m.group]; !ok {
			groupOrder = append(groupOrder, m.group)
		}
		byGroup[m.group] = append(byGroup[m.group], m)
	}
	for _, g := range groupOrder {
		var live []*ledgerMsg
		for _, m := range l.order {
			if m.group == g && l.live(m, now) {
				live = append(live, m)
			}
		}
		delivered := byGroup[g]
		if len(delivered) > len(live) || !slices.Equal(delivered, live[:len(delivered)]) {
			r.fail("invariant: group %s delivered %v, not a prefix of its messages %v", g, ids(delivered), ids(live))
			continue
		}
		// A group is served from its first message on, none of the
		// messages delivered may still be in flight; later ones may.
		for _, m := range delivered {
			if m.leaseUntil > now {
				r.fail("invariant: group %s delivered %s while it is in flight until %v", g, m.id, time.Duration(m.leaseUntil-now))
			}
		}
	}
	for _, gm := range got {
		if m := l.msgs[gm.MessageId]; m != nil {
			m.leaseUntil = now + vis
		}
	}
}

func (l *ledger) deleted(id string) {
	if m := l.msgs[id]; m != nil {
		m.deleted = true
	}
}

func (l *ledger) leased(id string, until int64) {
	if m := l.msgs[id]; m != nil {
		m.leaseUntil = until
	}
}

func ids(ms []*ledgerMsg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.id
	}
	return out
}
