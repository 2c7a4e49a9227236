package historycheck

import (
	"fmt"
	"hash/fnv"
	"math"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The model of one FIFO message group, for porcupine. It follows the
// engine's rules (internal/engine: fifo.go, receive.go, ack.go), which
// follow SQS's:
//
//   - A send appends the message to the group unless a message with its
//     deduplication id was accepted within the deduplication interval; a
//     deduplicated send answers the first message's MessageId.
//   - A receive takes the group's stored messages from the first one on,
//     while they are visible, and stops at the first that is not: a group
//     whose first message is in flight gives nothing. (The first message,
//     given back with a visibility timeout of 0, is receivable again even
//     while later ones are in flight: SQS does that too.) Each message
//     taken gets a new receipt handle and stays in flight for the
//     receive's visibility timeout.
//   - A delete with the handle of the message's latest receive, while it
//     is in flight, removes it; a delete of a message that is gone
//     succeeds; any other handle is refused ("expired").
//   - A release (ChangeMessageVisibility 0) with the latest handle of a
//     message in flight makes it visible; any other is refused.
//
// Time enters through the operations' windows: the server stamps an
// operation somewhere between its invocation and its answer, so a message
// received by an operation invoked at t with visibility v is in flight at
// least until t+v. The model never assumes more than that lower bound: a
// message in flight whose bound has passed by the end of a later
// operation's window may have become visible again. (A receive retried
// late, after its answer, may extend the timeout further; that only makes
// the server stricter than the model.) Receives that returned nothing of
// the group, and receives that never got an answer, are not in the
// group's history: they cannot reorder the group, only hold it back, and
// the model does not check that a receive returns everything it could.

// Message states in the model.
const (
	mVisible  = 0
	mInflight = 1
)

// mMsg is one message of the group in the model's state.
type mMsg struct {
	dedup    string
	id       string // "" while unknown (sent by an operation without an answer)
	state    uint8
	handle   string // latest receipt handle
	expLo    int64  // in flight at least until this time
	acceptHi int64  // accepted no later than this time (for the dedup interval)
}

// groupState is the model's state: the group's stored messages in send
// order. It is never modified: a step copies it.
//
// Deleted messages are dropped, deduplication ids and all: a test gives
// every message its own deduplication id and records a send's retries
// within one operation (a retry after the message's acknowledgement, as
// the crash test's of a whole batch, is deduplicated without effect and
// not recorded), so no later operation of a history could be
// deduplicated against a deleted message, and the state stays as small as
// the group's backlog, which keeps long histories cheap to check.
type groupState struct {
	msgs []mMsg
}

// mInput is one operation of the group's history, as the model sees it.
type mInput struct {
	kind   Kind
	invoke int64
	vis    int64    // receive: visibility timeout
	dedups []string // send: the group's messages of the request, in order
	dedup  string   // delete, release: the message
	handle string   // delete, release: the handle used
	client int
}

// mOutput is what the operation answered.
type mOutput struct {
	ret     int64 // math.MaxInt64 for unknown
	outcome Outcome
	ids     []string // send: MessageIds, one per dedup
	got     []Msg    // receive: the group's messages returned, in order
}

// modelConfig is what the model needs to know beyond the history.
type modelConfig struct {
	dedupInterval int64
	// slack widens every time comparison, for clock reading differences
	// between the test and the servers on one machine.
	slack int64
}

func (c modelConfig) model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{groupState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			return c.step(state.(groupState), input.(mInput), output.(mOutput))
		},
		Equal: func(a, b interface{}) bool { return a.(groupState).equal(b.(groupState)) },
		Hash:  func(s interface{}) uint64 { return s.(groupState).hash() },
		DescribeOperation: func(input, output interface{}) string {
			return describeOp(input.(mInput), output.(mOutput))
		},
		DescribeState: func(s interface{}) string { return s.(groupState).String() },
	}
	return nm.ToModel()
}

func (c modelConfig) step(s groupState, in mInput, out mOutput) []interface{} {
	switch in.kind {
	case Send:
		return c.stepSend(s, in, out)
	case Receive:
		if next, ok := c.stepReceive(s, in, out); ok {
			return []interface{}{next}
		}
		return nil
	case Delete, Release:
		return c.stepAck(s, in, out)
	case drained:
		if len(s.msgs) > 0 {
			return nil
		}
		return []interface{}{s}
	}
	return nil
}

// drained is the model's last operation of a group: the final drain found
// the queue empty.
const drained Kind = -1

// stepSend applies a send of the group's messages of one request: all or
// none of them take effect, since a request is one log command.
func (c modelConfig) stepSend(s groupState, in mInput, out mOutput) []interface{} {
	apply := func() (groupState, bool) {
		next := s.clone()
		for i, d := range in.dedups {
			id := ""
			if out.outcome == OK {
				id = out.ids[i]
			}
			if j := next.find(d); j >= 0 && in.invoke-next.msgs[j].acceptHi < c.dedupInterval-c.slack {
				// Deduplicated: the answer is the first message's id.
				m := &next.msgs[j]
				if id != "" && m.id != "" && m.id != id {
					return s, false
				}
				if m.id == "" {
					m.id = id
				}
				continue
			}
			next.msgs = append(next.msgs, mMsg{dedup: d, id: id, state: mVisible, acceptHi: out.ret})
		}
		return next, true
	}
	switch out.outcome {
	case OK:
		if next, ok := apply(); ok {
			return []interface{}{next}
		}
		return nil
	case Unknown:
		next, _ := apply()
		if next.equal(s) {
			return []interface{}{s}
		}
		return []interface{}{s, next}
	}
	return []interface{}{s} // a refused send took no effect
}

// stepReceive applies a receive that returned some of the group's
// messages: they must be the group's first stored messages, in order, each
// visible or possibly visible again by the receive's answer.
func (c modelConfig) stepReceive(s groupState, in mInput, out mOutput) (groupState, bool) {
	if out.outcome != OK {
		return s, false // not in the history: see the model's comment
	}
	next := s.clone()
	i := 0
	for _, g := range out.got {
		if i == len(next.msgs) {
			return s, false // more messages than the group holds
		}
		m := &next.msgs[i]
		if m.dedup != g.Dedup || (m.id != "" && m.id != g.ID) {
			return s, false // not the group's next message
		}
		if m.state == mInflight && out.ret+c.slack < m.expLo {
			return s, false // still certainly held by an earlier receive
		}
		m.id, m.state, m.handle, m.expLo = g.ID, mInflight, g.Handle, in.invoke+in.vis
		i++
	}
	return next, true
}

// stepAck applies a delete or a release.
func (c modelConfig) stepAck(s groupState, in mInput, out mOutput) []interface{} {
	j := s.find(in.dedup)
	if j < 0 {
		// Gone (a message is acknowledged only once received, so it was
		// stored): a delete succeeds, a release is refused.
		switch {
		case out.outcome == Unknown,
			in.kind == Delete && out.outcome == OK,
			in.kind == Release && out.outcome == Refused:
			return []interface{}{s}
		}
		return nil
	}
	m := s.msgs[j]
	current := m.state == mInflight && m.handle == in.handle
	effect := func() groupState {
		next := s.clone()
		if in.kind == Delete {
			next.msgs = append(next.msgs[:j], next.msgs[j+1:]...)
		} else {
			next.msgs[j].state = mVisible
		}
		return next
	}
	switch out.outcome {
	case OK:
		if !current {
			return nil
		}
		return []interface{}{effect()}
	case Refused:
		// Refused unless the handle is current and certainly unexpired.
		if current && out.ret+c.slack < m.expLo {
			return nil
		}
		return []interface{}{s}
	}
	if current {
		return []interface{}{s, effect()}
	}
	return []interface{}{s}
}

func (s groupState) clone() groupState {
	return groupState{msgs: append([]mMsg(nil), s.msgs...)}
}

// find returns the index of the latest message with the given dedup id, or -1.
func (s groupState) find(dedup string) int {
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if s.msgs[i].dedup == dedup {
			return i
		}
	}
	return -1
}

func (s groupState) equal(o groupState) bool {
	if len(s.msgs) != len(o.msgs) {
		return false
	}
	for i := range s.msgs {
		if s.msgs[i] != o.msgs[i] {
			return false
		}
	}
	return true
}

func (s groupState) hash() uint64 {
	h := fnv.New64a()
	for _, m := range s.msgs {
		h.Write([]byte(m.dedup))
		h.Write([]byte{0, m.state})
		h.Write([]byte(m.handle))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func (s groupState) String() string {
	var b strings.Builder
	for _, m := range s.msgs {
		switch m.state {
		case mVisible:
			fmt.Fprintf(&b, "%s ", m.dedup)
		case mInflight:
			fmt.Fprintf(&b, "%s(held %s) ", m.dedup, short(m.handle))
		}
	}
	return strings.TrimSpace(b.String())
}

func describeOp(in mInput, out mOutput) string {
	var what string
	switch in.kind {
	case Send:
		what = fmt.Sprintf("send %v", in.dedups)
	case Receive:
		var got []string
		for _, g := range out.got {
			got = append(got, g.Dedup+"@"+short(g.Handle))
		}
		what = fmt.Sprintf("receive → %v", got)
	case drained:
		what = "drained: the queue is empty"
	default:
		what = fmt.Sprintf("%s %s@%s", in.kind, in.dedup, short(in.handle))
	}
	return fmt.Sprintf("c%d %s: %s", in.client, what, out.outcome)
}

// short abbreviates a receipt handle for reports.
func short(h string) string {
	if len(h) > 8 {
		return h[len(h)-8:]
	}
	return h
}

// forever is the answer time of an operation that never got one.
const forever = math.MaxInt64 / 2
