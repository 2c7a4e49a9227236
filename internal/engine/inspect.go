package engine

import (
	"container/heap"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// This file, inspect_groups.go and inspect_list.go hold the engine's
// read-only introspection, for the web
// console: what an operator wants to see of a queue that the SQS API does
// not show (its message groups and who holds them, its messages without
// receiving them). Like Read, every function here accounts for the delays,
// visibility timeouts and retention periods that ran out by the time asked
// about without applying them, changes nothing, and so may run under the
// log's read lock concurrently with other reads.

// Bounds on what one inspection returns or walks, so that an operator's
// click costs the engine little whatever the backlog.
const (
	// MaxPeekMessages bounds the messages one Peek returns.
	MaxPeekMessages = 100
	// MaxInspectGroups bounds the groups one Groups call returns.
	MaxInspectGroups = 200
	// groupCountCap bounds the messages counted in one group: past it the
	// group's backlog is reported as at least this many.
	groupCountCap = 100_000
)

// MessageState is where a message stands at the time of an inspection.
type MessageState string

// The states of a stored message.
const (
	StateVisible  MessageState = "visible"
	StateInFlight MessageState = "inflight"
	StateDelayed  MessageState = "delayed"
)

// QueueSummary is what the console lists for a queue: its message figures
// and its place in dead-letter relations.
type QueueSummary struct {
	QueueStats
	// DeadLetterTarget is the ARN of the dead-letter queue the queue's
	// RedrivePolicy names, "" if it has none; MaxReceiveCount goes with it.
	DeadLetterTarget string
	MaxReceiveCount  int
	// DeadLetterSources is the number of queues whose RedrivePolicy names
	// this queue: a dead-letter queue has at least one.
	DeadLetterSources int
	// Groups is the number of message groups (FIFO) or fair-queue tenants
	// (standard) holding stored messages.
	Groups int
	// MoveTaskRunning tells whether a message move task out of this queue
	// is running.
	MoveTaskRunning bool
}

// QueueSummary returns the summary of queue q as of time now, and false if
// there is no such queue. It costs what QueueStats costs.
func (e *Engine) QueueSummary(q api.QueueKey, now int64) (QueueSummary, bool) {
	qu := e.queues[q]
	if qu == nil {
		return QueueSummary{}, false
	}
	s := QueueSummary{
		QueueStats:        qu.statsAt(max(now, e.now)),
		DeadLetterSources: len(e.dlqSources[q]),
	}
	if rp := qu.attrs.redrive; rp != nil {
		s.DeadLetterTarget, s.MaxReceiveCount = rp.arn, rp.maxReceiveCount
	}
	if qu.fifo {
		s.Groups = len(qu.groups)
	} else {
		s.Groups = len(qu.tenants)
	}
	for _, t := range qu.tasks {
		if t.status == api.MoveTaskRunning {
			s.MoveTaskRunning = true
		}
	}
	return s, true
}

// PeekedMessage is a copy of one stored message as it stands, with what a
// receive would tell of it and what only the engine knows (its state).
type PeekedMessage struct {
	MessageID string
	// Body is the body, cut to PeekOptions.MaxBodyBytes (at a character
	// boundary); BodyBytes is the length of the whole body.
	Body          string
	BodyBytes     int
	BodyTruncated bool
	// MessageAttributes are the message's attributes; the values are shared
	// with the engine and must not be modified.
	MessageAttributes map[string]api.MessageAttributeValue
	// Size is the message's size as SQS counts it: body plus attributes.
	Size                int
	GroupID             string
	DeduplicationID     string
	SequenceNumber      uint64 // FIFO only
	SenderID            string
	TraceHeader         string
	DeadLetterSourceARN string
	// SentAt and EnqueuedAt are Unix ns: the send, and the start of the
	// retention period in this queue (later for a message moved in).
	SentAt, EnqueuedAt int64
	State              MessageState
	// VisibleAt is when a delayed or in-flight message becomes visible
	// (Unix ns); 0 for a visible one.
	VisibleAt int64
	// ReceiveCount is ApproximateReceiveCount; FirstReceivedAt and
	// ReceivedAt (Unix ns, 0 if never received) the first and latest
	// receive.
	ReceiveCount                int
	FirstReceivedAt, ReceivedAt int64
}

// PeekOptions say which messages Peek returns.
type PeekOptions struct {
	// Limit is the number of messages wanted (1 if below, MaxPeekMessages
	// if above).
	Limit int
	// Group, if set, restricts Peek to one message group of a FIFO queue.
	Group *string
	// MaxBodyBytes cuts longer bodies (0: no cut).
	MaxBodyBytes int
}

// Peek returns the first messages of queue q at time now, oldest first (in
// the order their retention period began, which for a FIFO queue is
// sequence order but in one merged from partitions; within a group of a
// FIFO queue, the group's order),
// whatever their state, without receiving them: no receive count,
// visibility or group lock changes. It returns false if there is no such
// queue. Its cost is that of the messages returned plus those that
// outlived the retention period unprocessed.
func (e *Engine) Peek(q api.QueueKey, now int64, opts PeekOptions) ([]PeekedMessage, bool) {
	qu := e.queues[q]
	if qu == nil {
		return nil, false
	}
	t := max(now, e.now)
	n := min(max(opts.Limit, 1), MaxPeekMessages)
	limit := qu.retentionLimit(t)
	live := func(m *message) bool { return m.enqueuedAt > limit }

	var picked []*message
	switch {
	case opts.Group != nil && qu.fifo:
		if g := qu.groups[*opts.Group]; g != nil {
			for m := g.head; m != nil && len(picked) < n; m = m.next {
				if live(m) {
					picked = append(picked, m)
				}
			}
		}
	case opts.Group != nil:
		// A standard queue's tenants do not list their messages in order;
		// an operator inspects them by queue, not by tenant.
	default:
		picked = qu.oldest(n, live)
	}
	out := make([]PeekedMessage, len(picked))
	for i, m := range picked {
		out[i] = peeked(qu, m, t, opts.MaxBodyBytes, e.bodyStore())
	}
	return out, true
}

// oldest returns up to n live messages in retention order: the head of the
// arrival list merged with the smallest of the aged heap.
func (q *queue) oldest(n int, live func(*message) bool) []*message {
	var arrival []*message
	for m := q.arrivalHead; m != nil && len(arrival) < n; m = m.anext {
		if live(m) {
			arrival = append(arrival, m)
		}
	}
	aged := smallest(&q.aged, n, live)
	out := make([]*message, 0, min(n, len(arrival)+len(aged)))
	for len(out) < n && (len(arrival) > 0 || len(aged) > 0) {
		if len(aged) == 0 || (len(arrival) > 0 && agedLess(arrival[0], aged[0])) {
			out, arrival = append(out, arrival[0]), arrival[1:]
		} else {
			out, aged = append(out, aged[0]), aged[1:]
		}
	}
	return out
}

// smallest returns up to n items of h for which keep is true, smallest
// first, without modifying h: a best-first walk from the root that keeps
// the frontier in a small heap of its own, so it costs O(k log k) for the
// k items it reaches.
func smallest[T any](h *indexedHeap[T], n int, keep func(T) bool) []T {
	if h.Len() == 0 {
		return nil
	}
	f := &frontier[T]{items: h.items, less: h.less, idx: []int{0}}
	var out []T
	for len(out) < n && len(f.idx) > 0 {
		i := heap.Pop(f).(int)
		if x := h.items[i]; keep(x) {
			out = append(out, x)
		}
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				heap.Push(f, c)
			}
		}
	}
	return out
}

// frontier is a container/heap of positions in an indexedHeap's items.
type frontier[T any] struct {
	items []T
	less  func(a, b T) bool
	idx   []int
}

func (f *frontier[T]) Len() int           { return len(f.idx) }
func (f *frontier[T]) Less(i, j int) bool { return f.less(f.items[f.idx[i]], f.items[f.idx[j]]) }
func (f *frontier[T]) Swap(i, j int)      { f.idx[i], f.idx[j] = f.idx[j], f.idx[i] }
func (f *frontier[T]) Push(x any)         { f.idx = append(f.idx, x.(int)) }
func (f *frontier[T]) Pop() any {
	x := f.idx[len(f.idx)-1]
	f.idx = f.idx[:len(f.idx)-1]
	return x
}

// stateAt returns m's state at time t, once the timers that ran out by t
// are accounted for.
func stateAt(m *message, t int64) MessageState {
	switch {
	case m.state == stateVisible || m.visibleAt <= t:
		return StateVisible
	case m.state == stateInflight:
		return StateInFlight
	default:
		return StateDelayed
	}
}

func peeked(q *queue, m *message, t int64, maxBody int, bodies BodyStore) PeekedMessage {
	pl, attrs, err := payloadOf(bodies, q.ms, m)
	if err != nil {
		// The operator sees that the body is damaged, never another.
		pl.body = "(the body cannot be read: " + err.Error() + ")"
	}
	p := PeekedMessage{
		MessageID:           q.ms.messageID(m, pl.head).String(),
		Body:                pl.body,
		BodyBytes:           len(pl.body),
		MessageAttributes:   attrs,
		Size:                int(m.size),
		GroupID:             q.ms.group(m),
		DeduplicationID:     pl.head.dedupID,
		SenderID:            q.ms.sender(m),
		TraceHeader:         q.ms.traceHeader(m),
		DeadLetterSourceARN: q.ms.dlqSource(m),
		SentAt:              q.ms.sentAt(m),
		EnqueuedAt:          m.enqueuedAt,
		State:               stateAt(m, t),
		ReceiveCount:        int(q.ms.receives(m)),
	}
	if q.fifo {
		p.SequenceNumber = m.seq
	}
	if p.State != StateVisible {
		p.VisibleAt = m.visibleAt
	}
	if q.ms.receives(m) > 0 {
		p.FirstReceivedAt, p.ReceivedAt = q.ms.firstRecvAt(m), q.ms.receivedAt(m)
	}
	if maxBody > 0 && len(p.Body) > maxBody {
		cut := maxBody
		for cut > 0 && !utf8.RuneStart(p.Body[cut]) {
			cut--
		}
		p.Body, p.BodyTruncated = p.Body[:cut], true
	}
	return p
}
