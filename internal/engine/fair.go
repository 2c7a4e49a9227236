package engine

import "github.com/fifoq/fifoq/internal/api"

// tenant is one MessageGroupId of a standard queue, which makes the queue a
// fair queue: when choosing which messages to return, the engine prefers
// the tenant with the fewest messages in flight, then the one whose oldest
// visible message is oldest, so that a tenant with a large backlog or slow
// consumers does not delay the others. Messages sent without a group id
// share the tenant "".
//
// A tenant lists only its visible messages; its delayed and in-flight ones
// are in the queue's timer heap. Standard queues promise best-effort order
// only: a message whose visibility timeout ran out goes back to the front of
// its tenant's list, a message whose delay ran out to the back.
type tenant struct {
	id       string
	msgList  // visible messages
	inflight int
	total    int   // stored messages of the tenant, in any state
	pos      int32 // position in queue.tenants heap
}

func tenantLess(a, b *tenant) bool {
	if a.inflight != b.inflight {
		return a.inflight < b.inflight
	}
	return a.head.serial < b.head.serial
}

func tenantPos(t *tenant) *int32 { return &t.pos }

// tenantOf returns the tenant of the given group id, creating it if needed.
func (q *queue) tenantOf(id string) *tenant {
	t := q.tenants[id]
	if t == nil {
		t = &tenant{id: id}
		q.tenants[id] = t
	}
	return t
}

// refreshTenant puts t in or out of the ready heap after a change, and
// drops it once it holds no message.
func (q *queue) refreshTenant(t *tenant) {
	if t.total == 0 {
		q.fair.Remove(t)
		if q.tenants[t.id] == t {
			delete(q.tenants, t.id)
		}
		return
	}
	switch {
	case t.head != nil && !q.fair.Contains(t):
		q.fair.Push(t)
	case t.head != nil:
		q.fair.Fix(t)
	default:
		q.fair.Remove(t)
	}
}

// takeStandard receives up to max messages of a standard queue, one at a
// time from the tenant that is most entitled to it. At the in-flight limit
// it answers OverLimit, as SQS does for standard queues, unless it already
// has messages to return.
func (e *Engine) takeStandard(q *queue, now int64, max int, vis int64, entropy uint64) ([]*message, error) {
	var out []*message
	for len(out) < max && q.fair.Len() > 0 {
		if q.nInflight >= api.MaxInflightStandard {
			if len(out) == 0 {
				return nil, api.ErrOverLimit("The maximum number of in flight messages (%d) is reached for the queue.", api.MaxInflightStandard)
			}
			break
		}
		m := q.fair.Min().head
		if e.deadLetter(q, m, now) {
			continue
		}
		q.deliver(m, now, vis, receiptNonce(entropy, m.serial, int(q.ms.receives(m))+1))
		out = append(out, m)
	}
	return out, nil
}
