package engine

import (
	"container/heap"
	"sort"
	"strconv"

	"github.com/fifoq/fifoq/internal/api"
)

// The message groups and fair-queue tenants of a queue, for the web
// console (see inspect.go).

// GroupInfo is one message group of a FIFO queue, or one fair-queue tenant
// of a standard queue, at the time of an inspection.
type GroupInfo struct {
	// ID is the MessageGroupId ("" for a standard queue's messages sent
	// without one).
	ID string
	// Messages is the group's backlog: its stored messages, in any state.
	// Capped says that counting stopped at a bound: the group holds more
	// (FIFO) or the split by state below is partial (standard).
	Messages int
	Capped   bool
	// Visible, InFlight and Delayed split Messages by state. For a FIFO
	// group, visible messages behind an in-flight one wait for it.
	Visible, InFlight, Delayed int
	// HeadSequence (FIFO) is the sequence number of the group's first
	// message, and OldestSentAt (Unix ns) its send time; 0 when unknown.
	HeadSequence uint64
	OldestSentAt int64
	// Owner is the receive that holds a FIFO group, nil if none does.
	Owner *GroupOwner
}

// GroupOwner is the receive holding a FIFO message group: while its
// messages are in flight, no other receive gets them or the group's later
// messages.
type GroupOwner struct {
	// ReceiptHandle is the receipt handle of the first in-flight message.
	ReceiptHandle string
	// AttemptID is the ReceiveRequestAttemptId the receive carried, ""
	// if it had none or the engine no longer remembers it (after
	// ReceiveRequestAttemptIdInterval).
	AttemptID string
	// ReceivedAt is when the receive happened and VisibleAt when its hold
	// runs out unless the consumer deletes or extends it (Unix ns).
	ReceivedAt, VisibleAt int64
	// ReceiveCount is the first in-flight message's ApproximateReceiveCount.
	ReceiveCount int
}

// GroupsOptions say which groups Groups returns.
type GroupsOptions struct {
	// Limit is the number of groups wanted (1 if below, MaxInspectGroups
	// if above).
	Limit int
	// After is the Next cursor of a previous page; "" starts at the first.
	After string
	// Group, if set, asks for that one group only.
	Group *string
}

// GroupsPage is one page of a queue's groups.
type GroupsPage struct {
	FIFO bool
	// Total is the number of groups holding stored messages; InFlight, of
	// a FIFO queue, the number held by a receive.
	Total, InFlight int
	// Groups are the groups of the page: for a FIFO queue oldest head
	// first (the order in which receives serve them), for a standard
	// queue by id.
	Groups []GroupInfo
	// Next is the cursor of the next page, "" on the last one.
	Next string
}

// Groups returns a page of the message groups of queue q at time now, and
// false if there is no such queue. It walks every group of the queue once
// (to order them and count those in flight), then the messages of the
// groups it returns, up to groupCountCap per group.
func (e *Engine) Groups(q api.QueueKey, now int64, opts GroupsOptions) (GroupsPage, bool) {
	qu := e.queues[q]
	if qu == nil {
		return GroupsPage{}, false
	}
	t := max(now, e.now)
	n := min(max(opts.Limit, 1), MaxInspectGroups)
	limit := qu.retentionLimit(t)
	if qu.fifo {
		return qu.fifoGroups(t, limit, n, opts), true
	}
	return qu.tenantGroups(n, opts), true
}

func (q *queue) fifoGroups(t, limit int64, n int, opts GroupsOptions) GroupsPage {
	page := GroupsPage{FIFO: true, Total: len(q.groups)}
	var after uint64
	if opts.After != "" {
		after, _ = strconv.ParseUint(opts.After, 10, 64)
	}
	sel := newBest(n, func(a, b *fifoGroup) bool { return a.head.seq < b.head.seq })
	for _, g := range q.groups {
		if g.inflight > 0 && holder(g, t, limit) != nil {
			page.InFlight++
		}
		switch {
		case opts.Group != nil:
			if g.id == *opts.Group {
				sel.offer(g)
			}
		case g.head.seq > after:
			sel.offer(g)
		}
	}
	chosen := sel.sorted()
	for _, g := range chosen {
		page.Groups = append(page.Groups, q.fifoGroupInfo(g, t, limit))
	}
	if sel.offered > len(chosen) {
		page.Next = strconv.FormatUint(chosen[len(chosen)-1].head.seq, 10)
	}
	return page
}

// best keeps the n smallest of the items offered to it, in a max-heap of
// n items, so that choosing a page among many groups costs O(groups log n).
type best[T any] struct {
	n       int
	less    func(a, b T) bool
	items   []T
	offered int
}

func newBest[T any](n int, less func(a, b T) bool) *best[T] {
	return &best[T]{n: n, less: less}
}

func (b *best[T]) offer(x T) {
	b.offered++
	switch {
	case len(b.items) < b.n:
		heap.Push(b, x)
	case b.less(x, b.items[0]):
		b.items[0] = x
		heap.Fix(b, 0)
	}
}

// sorted returns the kept items, smallest first.
func (b *best[T]) sorted() []T {
	sort.Slice(b.items, func(i, j int) bool { return b.less(b.items[i], b.items[j]) })
	return b.items
}

// heap.Interface, ordered largest first.
func (b *best[T]) Len() int           { return len(b.items) }
func (b *best[T]) Less(i, j int) bool { return b.less(b.items[j], b.items[i]) }
func (b *best[T]) Swap(i, j int)      { b.items[i], b.items[j] = b.items[j], b.items[i] }
func (b *best[T]) Push(x any)         { b.items = append(b.items, x.(T)) }
func (b *best[T]) Pop() any {
	x := b.items[len(b.items)-1]
	b.items = b.items[:len(b.items)-1]
	return x
}

// holder returns the first message of g that is in flight at time t (and
// has not outlived the retention period), nil if none is. In-flight
// messages sit near the head (a receive takes a group's messages from its
// first visible one on), so the walk stops once all of them are seen.
func holder(g *fifoGroup, t, limit int64) *message {
	need := g.inflight
	for m := g.head; m != nil && need > 0; m = m.next {
		if m.state != stateInflight {
			continue
		}
		need--
		if m.enqueuedAt > limit && m.visibleAt > t {
			return m
		}
	}
	return nil
}

func (q *queue) fifoGroupInfo(g *fifoGroup, t, limit int64) GroupInfo {
	info := GroupInfo{ID: g.id}
	for m := g.head; m != nil; m = m.next {
		if m.enqueuedAt <= limit {
			continue
		}
		if info.Messages == groupCountCap {
			info.Capped = true
			break
		}
		if info.Messages == 0 {
			info.HeadSequence, info.OldestSentAt = m.seq, q.ms.sentAt(m)
		}
		info.Messages++
		switch stateAt(m, t) {
		case StateVisible:
			info.Visible++
		case StateInFlight:
			info.InFlight++
		default:
			info.Delayed++
		}
	}
	if h := holder(g, t, limit); h != nil {
		info.Owner = &GroupOwner{
			ReceiptHandle: q.handleOf(q.handleTag, h.serial, q.ms.nonce(h), h),
			AttemptID:     q.attemptOf(h),
			ReceivedAt:    q.ms.receivedAt(h),
			VisibleAt:     h.visibleAt,
			ReceiveCount:  int(q.ms.receives(h)),
		}
	}
	return info
}

// attemptOf returns the ReceiveRequestAttemptId of the receive that made m
// in flight, if the engine still remembers it. The attempt log is in time
// order and a record's time is that of the receive, so the search looks
// only at the records made at m's receive time.
func (q *queue) attemptOf(m *message) string {
	recs := q.attemptLog.live()
	i := sort.Search(len(recs), func(i int) bool { return recs[i].at >= q.ms.receivedAt(m) })
	for ; i < len(recs) && recs[i].at == q.ms.receivedAt(m); i++ {
		for j, s := range recs[i].serials {
			if s == m.serial && recs[i].nonces[j] == q.ms.nonce(m) {
				return recs[i].id
			}
		}
	}
	return ""
}

// tenantGroups pages through a standard queue's tenants by id. A tenant
// keeps counts and a list of its visible messages only, so its figures are
// as of the last command that touched the queue, and Delayed is what is
// neither visible nor in flight (unknown, and left 0, when the visible
// messages are too many to count: Capped).
func (q *queue) tenantGroups(n int, opts GroupsOptions) GroupsPage {
	page := GroupsPage{Total: len(q.tenants)}
	sel := newBest(n, func(a, b *tenant) bool { return a.id < b.id })
	for id, tn := range q.tenants {
		switch {
		case opts.Group != nil:
			if id == *opts.Group {
				sel.offer(tn)
			}
		case opts.After == "" || id > opts.After:
			sel.offer(tn)
		}
	}
	chosen := sel.sorted()
	for _, tn := range chosen {
		info := GroupInfo{ID: tn.id, Messages: tn.total, InFlight: tn.inflight}
		for m := tn.head; m != nil; m = m.next {
			if info.Visible == groupCountCap {
				info.Capped = true
				break
			}
			info.Visible++
		}
		if tn.head != nil {
			info.OldestSentAt = q.ms.sentAt(tn.head)
		}
		if !info.Capped {
			info.Delayed = max(info.Messages-info.Visible-info.InFlight, 0)
		}
		page.Groups = append(page.Groups, info)
	}
	if sel.offered > len(chosen) {
		page.Next = chosen[len(chosen)-1].id
	}
	return page
}
