package engine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

// stdModel is a reference model of one standard queue and its dead-letter
// queue, written to be obviously correct: messages in a slice, linear
// scans. A standard queue promises no order, so the model does not predict
// which messages a receive returns; it checks that the engine's choice is
// one SQS allows, and then follows it. Its rules:
//   - a message is gone once deleted or moved to the dead-letter queue;
//   - it is in flight while received and its visibility timeout has not run
//     out, delayed while never received and its delay has not run out,
//     visible otherwise;
//   - a receive returns only visible messages, at most max, and fewer only
//     when it took every visible message; a visible message it reaches that
//     was already received maxReceiveCount times goes to the dead-letter
//     queue instead of being returned, and one received fewer times is
//     never moved;
//   - DeleteMessage deletes with any handle of the message, in any state,
//     and succeeds for a message that is gone (standard queues, see ack.go);
//   - ChangeMessageVisibility works with any handle of a message that is
//     not gone, within 12 hours of its latest receive, and refuses a gone
//     one as InvalidParameterValue.
type stdModel struct {
	vis, delay   int64 // queue visibility timeout and delay, ns
	maxReceives  int   // the redrive policy's maxReceiveCount; 0: no dead-letter queue
	msgs         []*stdMsg
	moved, sends int
}

type stdMsg struct {
	id, body   string
	visibleAt  int64
	receives   int
	receivedAt int64
	deleted    bool
	moved      bool
}

func (m *stdModel) find(id string) *stdMsg {
	for _, x := range m.msgs {
		if x.id == id {
			return x
		}
	}
	return nil
}

func (x *stdMsg) gone() bool { return x.deleted || x.moved }

// visible returns the messages a receive at t may take or move.
func (m *stdModel) visible(t int64) map[string]*stdMsg {
	out := map[string]*stdMsg{}
	for _, x := range m.msgs {
		if !x.gone() && x.visibleAt <= t {
			out[x.id] = x
		}
	}
	return out
}

func (m *stdModel) counts(t int64) [3]int {
	var c [3]int
	for _, x := range m.msgs {
		switch {
		case x.gone():
		case x.visibleAt <= t:
			c[0]++
		case x.receives > 0:
			c[1]++
		default:
			c[2]++
		}
	}
	return c
}

func (m *stdModel) nextWake(t int64) (int64, bool) {
	best, ok := int64(0), false
	for _, x := range m.msgs {
		if !x.gone() && x.visibleAt > t && (!ok || x.visibleAt < best) {
			best, ok = x.visibleAt, true
		}
	}
	return best, ok
}

// maxStdSends bounds the messages of one run, so that Peek (at most
// MaxPeekMessages) lists the whole dead-letter queue.
const maxStdSends = MaxPeekMessages

// TestRandomStandard runs random command sequences on a standard queue,
// with a dead-letter queue in two runs out of three, through the engine
// and stdModel, and compares every answer and count. A failure names its
// seed; rerun it with -engine.seed=N.
func TestRandomStandard(t *testing.T) {
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
		r := newStdRun(t, seed)
		for step := 0; step < *flagSteps; step++ {
			r.step(step)
			if t.Failed() {
				t.Logf("seed %d failed at step %d; log:\n%s", seed, step, r.tail())
				return
			}
		}
	}
}

type stdRun struct {
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	h        *harness
	q, dlq   api.QueueKey
	model    *stdModel
	log      []string
	receipts []receipt
	inDLQ    map[string]bool
}

func newStdRun(t *testing.T, seed uint64) *stdRun {
	rng := rand.New(rand.NewPCG(seed, seed^0x51ed270b27a5c3d9))
	r := &stdRun{t: t, seed: seed, rng: rng, h: newHarness(t), inDLQ: map[string]bool{}}
	r.h.entropy = seed
	m := &stdModel{vis: int64(5+rng.IntN(60)) * int64(time.Second)}
	if rng.IntN(3) == 0 {
		m.delay = int64(rng.IntN(15)) * int64(time.Second)
	}
	attrs := map[string]string{
		api.AttrVisibilityTimeout: strconv.FormatInt(m.vis/int64(time.Second), 10),
		api.AttrDelaySeconds:      strconv.FormatInt(m.delay/int64(time.Second), 10),
	}
	r.dlq = r.h.createQueue("dead", nil)
	if rng.IntN(3) != 0 {
		m.maxReceives = 1 + rng.IntN(4)
		arn := "arn:aws:sqs:" + testRegion + ":" + testAccount + ":dead"
		attrs[api.AttrRedrivePolicy] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, m.maxReceives)
	}
	r.q = r.h.createQueue("q", attrs)
	r.model = m
	r.logf("seed %d: vis %v delay %v maxReceiveCount %d", seed, time.Duration(m.vis), time.Duration(m.delay), m.maxReceives)
	return r
}

func (r *stdRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *stdRun) tail() string {
	out := ""
	for _, l := range r.log[max(0, len(r.log)-40):] {
		out += "  " + l + "\n"
	}
	return out
}

func (r *stdRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("seed %d: "+format, append([]any{r.seed}, args...)...)
}

func (r *stdRun) step(i int) {
	r.t.Helper()
	var out string
	switch p := r.rng.IntN(100); {
	case p < 35:
		out = r.send()
	case p < 60:
		out = r.receive()
	case p < 74:
		out = r.delete()
	case p < 84:
		out = r.changeVisibility()
	default:
		d := time.Duration(r.rng.IntN(40_000)) * time.Millisecond
		if r.rng.IntN(5) == 0 {
			d = time.Duration(60+r.rng.IntN(300)) * time.Second
		}
		r.h.advance(d)
		out = fmt.Sprintf("advance %v", d)
	}
	r.logf("%d @%v: %s", i, time.Duration(r.h.now-t0), out)
	r.compare()
}

func (r *stdRun) send() string {
	if r.model.sends >= maxStdSends {
		return "send skipped (enough messages)"
	}
	body := "body-" + strconv.Itoa(r.rng.IntN(8))
	req := &api.SendMessageRequest{QueueUrl: r.q.Path(), MessageBody: body}
	if r.rng.IntN(3) == 0 {
		req.MessageGroupId = "t" + strconv.Itoa(r.rng.IntN(3)) // a fair queue's tenant
	}
	delay := r.model.delay
	if r.rng.IntN(4) == 0 {
		d := r.rng.IntN(10)
		req.DelaySeconds = &d
		delay = int64(d) * int64(time.Second)
	}
	resp, err := r.h.do(r.q, req)
	if err != nil {
		r.fail("send: %v", err)
		return "send error"
	}
	id := resp.(*api.SendMessageResult).MessageId
	if r.model.find(id) != nil {
		r.fail("send answered the id %s of an earlier message", id)
	}
	r.model.sends++
	r.model.msgs = append(r.model.msgs, &stdMsg{id: id, body: body, visibleAt: r.h.now + delay})
	return fmt.Sprintf("send(%s, delay %v) -> %s", body, time.Duration(delay), id)
}

func (r *stdRun) receive() string {
	now := r.h.now
	n := 1 + r.rng.IntN(10)
	vis := r.model.vis
	req := &api.ReceiveMessageRequest{QueueUrl: r.q.Path(), MaxNumberOfMessages: &n, MessageSystemAttributeNames: []string{"All"}}
	if r.rng.IntN(2) == 0 {
		v := r.rng.IntN(4) * r.rng.IntN(40)
		req.VisibilityTimeout = &v
		vis = int64(v) * int64(time.Second)
	}
	avail := r.model.visible(now)
	resp, err := r.h.do(r.q, req)
	if err != nil {
		r.fail("receive: %v", err)
		return "receive error"
	}
	got := resp.(*api.ReceiveMessageResult).Messages
	desc := fmt.Sprintf("receive(%d, %v) ->", n, time.Duration(vis))

	// The messages moved to the dead-letter queue by this receive.
	peeked, _ := r.h.e.Peek(r.dlq, now, PeekOptions{Limit: MaxPeekMessages})
	var moved []string
	for _, p := range peeked {
		if !r.inDLQ[p.MessageID] {
			r.inDLQ[p.MessageID] = true
			moved = append(moved, p.MessageID)
		}
	}
	if len(got) > n {
		r.fail("%s %d messages, more than %d", desc, len(got), n)
	}
	taken := map[string]bool{}
	for _, m := range got {
		desc += " " + m.MessageId
		x := avail[m.MessageId]
		switch {
		case x == nil:
			r.fail("%s: %s was not visible (model %+v)", desc, m.MessageId, r.model.find(m.MessageId))
			continue
		case taken[m.MessageId]:
			r.fail("%s: %s returned twice", desc, m.MessageId)
			continue
		case r.model.maxReceives > 0 && x.receives >= r.model.maxReceives:
			r.fail("%s: %s returned after %d receives, not moved to the dead-letter queue", desc, m.MessageId, x.receives)
		}
		taken[m.MessageId] = true
		if m.Body != x.body || m.Attributes[api.MsgAttrApproximateReceiveCount] != strconv.Itoa(x.receives+1) {
			r.fail("%s: %s body %q count %s, model %q %d", desc, m.MessageId, m.Body, m.Attributes[api.MsgAttrApproximateReceiveCount], x.body, x.receives+1)
		}
		x.receives++
		x.receivedAt = now
		x.visibleAt = now + vis
		r.receipts = append(r.receipts, receipt{engine: m.ReceiptHandle, model: refHandle{id: x.id, n: x.receives}})
	}
	if len(moved) > 0 {
		desc += fmt.Sprintf(" (dead-lettered %v)", moved)
	}
	for _, id := range moved {
		x := avail[id]
		switch {
		case x == nil || taken[id]:
			r.fail("%s: %s moved to the dead-letter queue, not a visible message (model %+v)", desc, id, r.model.find(id))
			continue
		case r.model.maxReceives == 0 || x.receives < r.model.maxReceives:
			r.fail("%s: %s moved to the dead-letter queue after %d receives (maxReceiveCount %d)", desc, id, x.receives, r.model.maxReceives)
		}
		taken[id] = true
		x.moved = true
		r.model.moved++
	}
	// Fewer than asked only when every visible message was taken.
	if len(got) < n && len(taken) != len(avail) {
		r.fail("%s: %d messages of %d asked, with %d visible and %d moved", desc, len(got), n, len(avail), len(moved))
	}
	return desc
}

// handle picks a receipt: usually a recent one, sometimes an old or a
// garbage one.
func (r *stdRun) handle() receipt {
	if len(r.receipts) == 0 || r.rng.IntN(30) == 0 {
		return receipt{engine: "garbage", model: refHandle{bad: true}}
	}
	n := len(r.receipts)
	i := n - 1 - r.rng.IntN(min(n, 12))
	if r.rng.IntN(4) == 0 {
		i = r.rng.IntN(n)
	}
	return r.receipts[i]
}

func (r *stdRun) delete() string {
	rc := r.handle()
	_, err := r.h.do(r.q, &api.DeleteMessageRequest{QueueUrl: r.q.Path(), ReceiptHandle: rc.engine})
	want := ""
	if rc.model.bad {
		want = "ReceiptHandleIsInvalid"
	} else if x := r.model.find(rc.model.id); !x.gone() {
		x.deleted = true
	}
	desc := fmt.Sprintf("delete(%s#%d) -> %q", rc.model.id, rc.model.n, want)
	if got := errCode(err); got != want {
		r.fail("%s: engine %q", desc, got)
	}
	return desc
}

func (r *stdRun) changeVisibility() string {
	now := r.h.now
	rc := r.handle()
	v := r.rng.IntN(3) * r.rng.IntN(60)
	if r.rng.IntN(20) == 0 {
		v = api.MaxVisibilityTimeout - r.rng.IntN(100)
	}
	_, err := r.h.do(r.q, &api.ChangeMessageVisibilityRequest{QueueUrl: r.q.Path(), ReceiptHandle: rc.engine, VisibilityTimeout: &v})
	until := now + int64(v)*int64(time.Second)
	want := ""
	switch x := r.model.find(rc.model.id); {
	case rc.model.bad:
		want = "ReceiptHandleIsInvalid"
	case x.gone() || until > x.receivedAt+int64(api.MaxVisibilityTimeout)*int64(time.Second):
		want = "InvalidParameterValue"
	case x.visibleAt <= now && v == 0:
		// Already visible: nothing to end.
	default:
		x.visibleAt = until
	}
	desc := fmt.Sprintf("changeVisibility(%s#%d, %d) -> %q", rc.model.id, rc.model.n, v, want)
	if got := errCode(err); got != want {
		r.fail("%s: engine %q", desc, got)
	}
	return desc
}

// compare compares the counts of both queues and NextWake with the model.
func (r *stdRun) compare() {
	r.t.Helper()
	now := r.h.now
	if got, want := r.h.counts(r.q), r.model.counts(now); got != want {
		r.fail("counts = %v, model %v", got, want)
	}
	if got, want := r.h.counts(r.dlq), [3]int{r.model.moved, 0, 0}; got != want {
		r.fail("dead-letter queue counts = %v, model %v", got, want)
	}
	gw, gok := r.h.e.NextWake(r.q, now)
	ww, wok := r.model.nextWake(now)
	if gw != ww || gok != wok {
		r.fail("NextWake = %v %v, model %v %v", time.Duration(gw-t0), gok, time.Duration(ww-t0), wok)
	}
}
