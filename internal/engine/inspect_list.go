package engine

import (
	"errors"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// Listing and exporting a queue's messages without receiving them, for
// the developer endpoint and fifoq export (see inspect.go).

// MaxListMessages bounds the messages one ListMessages returns: the
// developer endpoint it serves lists a test's queue, not a backlog.
const MaxListMessages = 10_000

// ListedMessage is a stored message as ReceiveMessage would render it
// with every system and message attribute, and where it stands.
type ListedMessage struct {
	api.Message
	State MessageState
	// Held says that a visible message of a FIFO queue waits behind an
	// in-flight message of its group: no receive would return it now.
	Held bool
}

// ListMessages returns up to limit (at most MaxListMessages) messages of
// queue q at time now, oldest first, whatever their state, rendered as a
// receive that asks for every attribute would render them but with the
// given receipt handle, and without receiving them: no receive count,
// visibility or group lock changes. It returns false if there is no such
// queue. The message attribute maps are the engine's and must not be
// modified, nor read after the log's read lock is released.
func (e *Engine) ListMessages(q api.QueueKey, now int64, limit int, handle string) ([]ListedMessage, bool, error) {
	qu := e.queues[q]
	if qu == nil {
		return nil, false, nil
	}
	t := max(now, e.now)
	retained := qu.retentionLimit(t)
	picked := qu.oldest(min(max(limit, 1), MaxListMessages), func(m *message) bool { return m.enqueuedAt > retained })
	l := newLister(qu, e.bodyStore(), t, handle)
	out := make([]ListedMessage, len(picked))
	for i, m := range picked {
		out[i] = l.list(m)
	}
	return out, true, l.sel.err
}

// lister renders the messages of one queue as ListMessages and
// ExportPage return them.
type lister struct {
	q      *queue
	sel    *selection
	t      int64
	handle string
	held   map[*fifoGroup]bool
}

func newLister(q *queue, bodies BodyStore, t int64, handle string) *lister {
	return &lister{q: q, sel: &selection{bodies: bodies, sysAll: true, attrAll: true}, t: t, handle: handle, held: map[*fifoGroup]bool{}}
}

func (l *lister) list(m *message) ListedMessage {
	lm := ListedMessage{Message: l.sel.render(l.q, m), State: stateAt(m, l.t)}
	lm.ReceiptHandle = l.handle
	if l.q.fifo && lm.State == StateVisible {
		if g := l.q.groups[l.q.ms.group(m)]; g != nil {
			h, seen := l.held[g]
			if !seen {
				for x := g.head; x != nil && !h; x = x.next {
					h = stateAt(x, l.t) == StateInFlight
				}
				l.held[g] = h
			}
			lm.Held = h
		}
	}
	return lm
}

// ExportCursor is where an export of a queue's messages stands between
// two pages (ExportPage). The zero value starts at the queue's first
// message.
type ExportCursor struct {
	q       *queue
	started bool
	// last is the last message returned from the arrival list, and enq
	// and serial its place in it, to resume from if it has left since.
	// The pointer is only followed once stillHere says the record is
	// still that message in this queue: a record is reused once its
	// message is gone.
	last   *message
	enq    int64
	serial uint64
	// aged are the queue's messages of the aged heap in order, with their
	// serials, taken once the arrival list is done; next is the first not
	// returned.
	inAged      bool
	aged        []*message
	agedSerials []uint64
	next        int
}

// agedHolds reports whether m is in q's aged heap, not merely in one: its
// position names m there.
func agedHolds(q *queue, m *message) bool {
	i := m.agedPos
	return i > 0 && int(i) <= len(q.aged.items) && q.aged.items[i-1] == m
}

// stillHere reports whether m, which was the message of the given serial
// in q when the cursor last saw it, still is, and is still in q: a record
// freed since has another serial (or none), one moved to another queue is
// in that queue's receipt index, not q's.
func stillHere(q *queue, m *message, serial uint64) bool {
	return m.serial == serial && (!q.ms.handleable(m) || q.handles[serial] == m)
}

// ErrExportQueueGone is ExportPage's error when the queue was deleted (or
// deleted and created anew) since the export began.
var ErrExportQueueGone = errors.New("the queue was deleted during the export")

// ExportPage returns the next messages of queue q after cur, up to limit
// (at most MaxListMessages), rendered as ListMessages renders them, and
// advances cur; done is true once every message has been returned. It
// returns false if there is no such queue. Messages come in the order of
// the queue's arrival list (for a FIFO queue, each group's order), then those moved into a standard queue with their
// original enqueue time. A message sent after the export began may or may
// not be returned; none is returned twice. Each page costs what its
// messages cost: the cursor resumes where it stopped, unless its last
// message has left the queue meanwhile, when it finds its place again by
// a walk from the head.
func (e *Engine) ExportPage(q api.QueueKey, now int64, cur *ExportCursor, limit int, handle string) (msgs []ListedMessage, done, ok bool, err error) {
	qu := e.queues[q]
	if qu == nil {
		return nil, false, false, nil
	}
	if cur.q == nil {
		cur.q = qu
	} else if cur.q != qu {
		return nil, false, true, ErrExportQueueGone
	}
	t := max(now, e.now)
	retained := qu.retentionLimit(t)
	live := func(m *message) bool { return m.enqueuedAt > retained }
	n := min(max(limit, 1), MaxListMessages)
	l := newLister(qu, e.bodyStore(), t, handle)
	if !cur.inAged {
		var m *message
		switch {
		case !cur.started:
			m = qu.arrivalHead
		case cur.last != nil && stillHere(qu, cur.last, cur.serial) && (cur.last.aprev != nil || qu.arrivalHead == cur.last):
			m = cur.last.anext
		default:
			// The last message returned has left: find the first after it.
			m = qu.arrivalHead
			for m != nil && (m.enqueuedAt < cur.enq || m.enqueuedAt == cur.enq && m.serial <= cur.serial) {
				m = m.anext
			}
		}
		cur.started = true
		for ; m != nil && len(msgs) < n; m = m.anext {
			if live(m) {
				msgs = append(msgs, l.list(m))
			}
			cur.last, cur.enq, cur.serial = m, m.enqueuedAt, m.serial
		}
		if m != nil {
			return msgs, false, true, l.sel.err
		}
		cur.inAged = true
		cur.aged = slices.Clone(qu.aged.items)
		slices.SortFunc(cur.aged, func(a, b *message) int {
			if agedLess(a, b) {
				return -1
			}
			return 1
		})
		cur.agedSerials = make([]uint64, len(cur.aged))
		for i, m := range cur.aged {
			cur.agedSerials[i] = m.serial
		}
	}
	for ; cur.next < len(cur.aged) && len(msgs) < n; cur.next++ {
		if m := cur.aged[cur.next]; stillHere(qu, m, cur.agedSerials[cur.next]) && agedHolds(qu, m) && live(m) {
			msgs = append(msgs, l.list(m))
		}
	}
	return msgs, cur.next == len(cur.aged), true, l.sel.err
}
