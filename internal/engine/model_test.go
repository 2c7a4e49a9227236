package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// refModel is a reference model of one FIFO queue, written to be obviously
// correct rather than fast: messages live in one slice in send order, and
// every question is answered by a linear scan. The random test runs the
// same commands through it and through the engine and compares every
// result.
//
// Its rules, straight from the SQS documentation:
//   - a message is gone once deleted or once older than the retention period;
//   - a message is in flight while it has been received and its visibility
//     timeout has not run out, delayed while never received and its delay has
//     not run out, visible otherwise;
//   - a group is blocked while its first message is not visible (in flight
//     or delayed); later messages in flight do not block it;
//   - a receive takes the unblocked group whose first message became
//     visible first (then the lower sequence number), takes its messages in
//     order while they are visible, then the next group, until it has max
//     messages;
//   - DeleteMessage and ChangeMessageVisibility refuse, as expired, a
//     handle other than that of the latest receive of a message in flight;
//     ChangeMessageVisibility of a message that is gone is refused too.
//
// The group rules and the handle answers are what SQS was recorded doing
// (LocalStack's AWS-validated FIFO tests, see fifo.go and ack.go).
//   - a send with a deduplication key seen within 5 minutes of its first
//     send stores nothing and answers with the first message's id.
//   - with a redrive policy, a receive that reaches a visible message
//     already received maxReceiveCount times moves it to the dead-letter
//     queue (where it is visible at once) instead of returning it, and
//     goes on with the group's next message.
type refModel struct {
	retention    int64 // ns
	vis          int64 // queue visibility timeout, ns
	delay        int64 // queue delay, ns
	contentDedup bool
	groupScope   bool
	maxReceives  int // the redrive policy's maxReceiveCount; 0: none

	// moved lists the ids of the messages moved to the dead-letter queue,
	// in the order moved.
	moved []string

	msgs    []*refMsg
	dedups  []refDedup
	lastSeq uint64
}

type refMsg struct {
	id, body, group, dedupID string
	seq                      uint64
	sentAt                   int64
	visibleAt                int64
	receives                 int
	receivedAt               int64
	deleted                  bool
	moved                    bool // to the dead-letter queue
}

type refDedup struct {
	group, id string // group is "" unless the scope is messageGroup
	at        int64
	msgID     string
	seq       uint64
}

// refHandle names one receive of one message; bad marks a garbage handle.
type refHandle struct {
	id  string
	n   int
	bad bool
}

const dedupWindow = int64(5 * time.Minute)

func (m *refModel) gone(x *refMsg, t int64) bool {
	return x.deleted || x.moved || t-x.sentAt >= m.retention
}

func (m *refModel) inflight(x *refMsg, t int64) bool { return x.receives > 0 && x.visibleAt > t }

func (m *refModel) find(id string) *refMsg {
	for _, x := range m.msgs {
		if x.id == id {
			return x
		}
	}
	return nil
}

// send returns the message id and sequence number, or an error code.
func (m *refModel) send(t int64, newID, body, group, dedupID string) (string, uint64, string) {
	if group == "" {
		return "", 0, "MissingParameter"
	}
	if dedupID == "" {
		if !m.contentDedup {
			return "", 0, "InvalidParameterValue"
		}
		sum := sha256.Sum256([]byte(body))
		dedupID = hex.EncodeToString(sum[:])
	}
	scope := ""
	if m.groupScope {
		scope = group
	}
	for _, d := range m.dedups {
		if d.id == dedupID && d.group == scope && t-d.at < dedupWindow {
			return d.msgID, d.seq, ""
		}
	}
	seq := uint64(10_000_000_000_000_000_000) + uint64(t)
	if seq <= m.lastSeq {
		seq = m.lastSeq + 1
	}
	m.lastSeq = seq
	m.msgs = append(m.msgs, &refMsg{id: newID, body: body, group: group, dedupID: dedupID, seq: seq, sentAt: t, visibleAt: t + m.delay})
	m.dedups = append(m.dedups, refDedup{group: scope, id: dedupID, at: t, msgID: newID, seq: seq})
	return newID, seq, ""
}

// live returns the messages of a group that are not gone, in order.
func (m *refModel) live(group string, t int64) []*refMsg {
	var out []*refMsg
	for _, x := range m.msgs {
		if x.group == group && !m.gone(x, t) {
			out = append(out, x)
		}
	}
	return out
}

// nextGroup returns the live messages of the group a receive takes from
// next, skipping the groups in skip, or nil.
func (m *refModel) nextGroup(t int64, skip map[string]bool) []*refMsg {
	var best []*refMsg
	for _, x := range m.msgs {
		if skip[x.group] || m.gone(x, t) {
			continue
		}
		live := m.live(x.group, t)
		head := live[0]
		if head.visibleAt > t {
			continue
		}
		if best == nil || head.visibleAt < best[0].visibleAt || head.visibleAt == best[0].visibleAt && head.seq < best[0].seq {
			best = live
		}
	}
	return best
}

// receive delivers up to max messages for vis ns.
func (m *refModel) receive(t int64, max int, vis int64) []*refMsg {
	var out []*refMsg
	picked := map[string]bool{}
	for len(out) < max {
		live := m.nextGroup(t, picked)
		if live == nil {
			break
		}
		picked[live[0].group] = true
		for _, x := range live {
			if len(out) == max || x.visibleAt > t {
				break
			}
			if m.maxReceives > 0 && x.receives >= m.maxReceives {
				x.moved = true
				m.moved = append(m.moved, x.id)
				continue
			}
			x.receives++
			x.receivedAt = t
			x.visibleAt = t + vis
			out = append(out, x)
		}
	}
	return out
}

// deleteMsg returns the error code of a DeleteMessage ("" for success).
func (m *refModel) deleteMsg(t int64, h refHandle) string {
	if h.bad {
		return "ReceiptHandleIsInvalid"
	}
	x := m.find(h.id)
	if x == nil || m.gone(x, t) {
		return ""
	}
	if h.n != x.receives || !m.inflight(x, t) {
		return "InvalidParameterValue"
	}
	x.deleted = true
	return ""
}

// changeVis returns the error code of a ChangeMessageVisibility.
func (m *refModel) changeVis(t int64, h refHandle, vis int64) string {
	if h.bad {
		return "ReceiptHandleIsInvalid"
	}
	x := m.find(h.id)
	if x == nil || m.gone(x, t) || h.n != x.receives || !m.inflight(x, t) {
		return "InvalidParameterValue"
	}
	if t+vis > x.receivedAt+int64(12*time.Hour) {
		return "InvalidParameterValue"
	}
	x.visibleAt = t + vis
	return ""
}

// counts returns the visible, in-flight and delayed message counts.
func (m *refModel) counts(t int64) [3]int {
	var c [3]int
	for _, x := range m.msgs {
		switch {
		case m.gone(x, t):
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

// receivable reports whether a receive at t would return a message.
func (m *refModel) receivable(t int64) bool { return m.nextGroup(t, nil) != nil }

// nextWake returns the earliest time after t at which a delayed or
// in-flight message becomes visible.
func (m *refModel) nextWake(t int64) (int64, bool) {
	best, ok := int64(0), false
	for _, x := range m.msgs {
		if !m.gone(x, t) && x.visibleAt > t && (!ok || x.visibleAt < best) {
			best, ok = x.visibleAt, true
		}
	}
	return best, ok
}
