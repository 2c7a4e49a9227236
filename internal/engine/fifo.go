package engine

import "github.com/fifoq/fifoq/internal/api"

// fifoGroup is one message group of a FIFO queue: every stored message of
// the group, in sequence order, whatever its state.
//
// Messages of a group are received strictly in order and only while none of
// the group is in flight, so the in-flight messages of a group all come from
// a single receive: they are among the first MaxReceiveMessages messages of
// the list. A group is ready (its head receivable) when nothing of it is in
// flight and its head is visible; ready groups sit in queue.ready ordered by
// their head's sequence number, so a receive picks the group holding the
// oldest receivable message in O(log groups), however long the backlogs.
type fifoGroup struct {
	id       string
	msgList      // the group's messages, in sequence order
	inflight int // messages of the group in flight
	pos      int // position in queue.ready
}

func groupLess(a, b *fifoGroup) bool { return a.head.seq < b.head.seq }
func groupPos(g *fifoGroup) *int     { return &g.pos }

// receivableAt reports whether the group would be ready at time t, once
// the delays, visibility timeouts and retention periods that run out by t
// are applied (messages enqueued at or before limit have expired): no live
// message in flight, and the first live message visible. It walks the
// expired messages at the head, then at most the in-flight ones, which are
// near the head.
func (g *fifoGroup) receivableAt(t, limit int64) bool {
	need := g.inflight // in-flight messages not yet seen
	head := false
	for m := g.head; m != nil; m = m.next {
		if m.enqueuedAt <= limit {
			if m.state == stateInflight {
				need--
			}
			continue
		}
		visible := m.state == stateVisible || m.visibleAt <= t
		if !head {
			if !visible {
				return false
			}
			head = true
		}
		if m.state == stateInflight {
			if !visible {
				return false
			}
			need--
		}
		if need == 0 {
			return true
		}
	}
	return head
}

// fifoGroupOf returns the group of the given id, creating it if needed.
func (q *queue) fifoGroupOf(id string) *fifoGroup {
	g := q.groups[id]
	if g == nil {
		g = &fifoGroup{id: id}
		q.groups[id] = g
	}
	return g
}

// refreshGroup puts g in or out of the ready heap after a change, and drops
// it once it holds no message.
func (q *queue) refreshGroup(g *fifoGroup) {
	if g.head == nil {
		q.ready.Remove(g)
		if q.groups[g.id] == g {
			delete(q.groups, g.id)
		}
		return
	}
	ready := g.inflight == 0 && g.head.state == stateVisible
	switch {
	case ready && !q.ready.Contains(g):
		q.ready.Push(g)
	case ready:
		q.ready.Fix(g) // the head may have changed
	default:
		q.ready.Remove(g)
	}
}

// nextSeq returns the next sequence number of a FIFO queue: derived from
// the command time (so numbers are large and leave gaps between commands),
// strictly increasing within the queue, and 20 decimal digits long like
// SQS's until the year 2236.
func (q *queue) nextSeq(now int64) uint64 {
	const base = 10_000_000_000_000_000_000 // 10^19: makes the numbers 20 digits
	v := base + uint64(max(now, 0))
	if v <= q.lastSeq {
		v = q.lastSeq + 1
	}
	q.lastSeq = v
	return v
}

// takeFIFO receives up to max messages of a FIFO queue: as many as possible
// from the group with the oldest receivable message, then from the next
// group, each group in order. Messages due for the dead-letter queue are
// moved there on the way. At the in-flight limit it returns nothing, as SQS
// does for FIFO queues.
func (e *Engine) takeFIFO(q *queue, now int64, max int, vis int64, entropy uint64) []*message {
	var out []*message
	for len(out) < max && q.ready.Len() > 0 && q.nInflight < api.MaxInflightFIFO {
		g := q.ready.Min()
		for m := g.head; m != nil && len(out) < max && q.nInflight < api.MaxInflightFIFO; {
			next := m.next
			if m.state != stateVisible {
				break // a delayed message: the rest of the group waits behind it
			}
			if e.deadLetter(q, m, now) {
				m = next
				continue
			}
			q.deliver(m, now, vis, receiptNonce(entropy, m.serial, m.receives+1))
			out = append(out, m)
			m = next
		}
		// Each pass delivers or dead-letters at least the head of g, so
		// the loop ends: a group that delivered is in flight, not ready.
		q.refreshGroup(g)
	}
	return out
}
