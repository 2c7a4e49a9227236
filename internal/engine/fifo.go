package engine

import "github.com/fifoq/fifoq/internal/api"

// fifoGroup is one message group of a FIFO queue: every stored message of
// the group, in sequence order, whatever its state.
//
// Messages of a group are received strictly in order: a receive takes the
// group's messages from the first one on while they are visible, and stops
// at the first one that is not (in flight or delayed). A group is ready (its
// head receivable) when its first message is visible, even if later ones
// are still in flight from an earlier receive: SQS was recorded serving the
// first message of a group whose visibility was ended early while the
// second was in flight (LocalStack's AWS-validated
// test_fifo_message_group_visibility_after_terminate_visibility_timeout,
// and test_fifo_group_visibility_extends_with_change_message_visibility in
// test_sqs.snapshot.json). Ready groups sit in queue.ready ordered by when
// their first message became visible (see groupLess), so a receive picks
// the next group in O(log groups), however long the backlogs.
type fifoGroup struct {
	id       string
	msgList        // the group's messages, in sequence order
	inflight int   // messages of the group in flight
	pos      int32 // position in queue.ready
}

// groupLess orders ready groups by the moment their first message became
// visible (sent, delay over, visibility timeout over or ended by
// ChangeMessageVisibility), then by its sequence number. SQS was recorded
// serving groups in that order: a group whose messages' visibility timeout
// ran out comes after a group that was never received, even one sent
// later, and a group unblocked by deleting its in-flight messages comes
// back in the place of the send time of its new first message
// (LocalStack's AWS-validated test_fifo_receive_message_visibility_timeout_shared_in_group,
// test_fifo_receive_message_with_zero_visibility_timeout,
// test_fifo_message_group_visibility_after_delete).
func groupLess(a, b *fifoGroup) bool {
	if a.head.visibleAt != b.head.visibleAt {
		return a.head.visibleAt < b.head.visibleAt
	}
	return a.head.seq < b.head.seq
}

func groupPos(g *fifoGroup) *int32 { return &g.pos }

// receivableAt reports whether the group would be ready at time t, once
// the delays, visibility timeouts and retention periods that run out by t
// are applied (messages enqueued at or before limit have expired): its
// first live message is visible. It walks the expired messages at the head
// and stops at the first live one.
func (g *fifoGroup) receivableAt(t, limit int64) bool {
	for m := g.head; m != nil; m = m.next {
		if m.enqueuedAt <= limit {
			continue
		}
		return m.state == stateVisible || m.visibleAt <= t
	}
	return false
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
	ready := g.head.state == stateVisible
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
// SQS's until the year 2236. A split queue's partition (split.go) ends
// its numbers with its partition number, so that two partitions never
// give the same one.
func (q *queue) nextSeq(now int64) uint64 {
	const base = 10_000_000_000_000_000_000 // 10^19: makes the numbers 20 digits
	v := base + uint64(max(now, 0))
	if q.split {
		part := uint64(q.key.Part)
		if v = v - v%partDigits + part; v <= q.lastSeq {
			v = q.lastSeq - q.lastSeq%partDigits + partDigits + part
		}
		q.lastSeq = v
		return v
	}
	if v <= q.lastSeq {
		v = q.lastSeq + 1
	}
	q.lastSeq = v
	return v
}

// takeFIFO receives up to max messages of a FIFO queue: as many as possible
// from the ready group whose first message became visible first, then from
// the next group, each group in order. Messages due for the dead-letter queue are
// moved there on the way. At the in-flight limit it returns nothing, as SQS
// does for FIFO queues.
func (e *Engine) takeFIFO(q *queue, now int64, max int, vis int64, entropy uint64) []*message {
	var out []*message
	for len(out) < max && q.ready.Len() > 0 && q.nInflight < api.MaxInflightFIFO {
		g := q.ready.Min()
		for m := g.head; m != nil && len(out) < max && q.nInflight < api.MaxInflightFIFO; {
			next := m.next
			if m.state != stateVisible {
				break // in flight or delayed: the rest of the group waits behind it
			}
			if e.deadLetter(q, m, now) {
				m = next
				continue
			}
			q.deliver(m, now, vis, receiptNonce(entropy, m.serial, int(q.ms.receives(m))+1))
			out = append(out, m)
			m = next
		}
		// Each pass delivers or dead-letters at least the head of g, so
		// the loop ends: a group that delivered has its first message in
		// flight, so it is not ready.
		q.refreshGroup(g)
	}
	return out
}
