package engine

import (
	"container/heap"
	"errors"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// This file holds the engine's read-only introspection, for the web
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
// sequence order; within a group of a FIFO queue, the group's order),
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
		out[i] = peeked(qu, m, t, opts.MaxBodyBytes, e.cfg.Bodies)
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
	body, attrs, err := payloadOf(bodies, m)
	if err != nil {
		// The operator sees that the body is damaged, never another.
		body = "(the body cannot be read: " + err.Error() + ")"
	}
	p := PeekedMessage{
		MessageID:           m.messageID().String(),
		Body:                body,
		BodyBytes:           len(body),
		MessageAttributes:   attrs,
		Size:                int(m.size),
		GroupID:             m.group.String(),
		DeduplicationID:     m.dedupID,
		SenderID:            m.sender.String(),
		TraceHeader:         m.traceHeader(),
		DeadLetterSourceARN: m.dlqSource(),
		SentAt:              m.sentAt,
		EnqueuedAt:          m.enqueuedAt,
		State:               stateAt(m, t),
		ReceiveCount:        int(m.receives),
	}
	if q.fifo {
		p.SequenceNumber = m.seq
	}
	if p.State != StateVisible {
		p.VisibleAt = m.visibleAt
	}
	if m.receives > 0 {
		p.FirstReceivedAt, p.ReceivedAt = m.firstRecvAt, m.receivedAt
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
			info.HeadSequence, info.OldestSentAt = m.seq, m.sentAt
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
			ReceiptHandle: encodeHandle(q.handleTag, h.serial, h.nonce),
			AttemptID:     q.attemptOf(h),
			ReceivedAt:    h.receivedAt,
			VisibleAt:     h.visibleAt,
			ReceiveCount:  int(h.receives),
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
	i := sort.Search(len(recs), func(i int) bool { return recs[i].at >= m.receivedAt })
	for ; i < len(recs) && recs[i].at == m.receivedAt; i++ {
		for j, s := range recs[i].serials {
			if s == m.serial && recs[i].nonces[j] == m.nonce {
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
			info.OldestSentAt = tn.head.sentAt
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
	l := newLister(qu, e.cfg.Bodies, t, handle)
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
		if g := l.q.groups[m.group.String()]; g != nil {
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
	last   *message
	enq    int64
	serial uint64
	// aged are the queue's messages of the aged heap in order, taken
	// once the arrival list is done; next is the first not returned.
	inAged bool
	aged   []*message
	next   int
}

// ErrExportQueueGone is ExportPage's error when the queue was deleted (or
// deleted and created anew) since the export began.
var ErrExportQueueGone = errors.New("the queue was deleted during the export")

// ExportPage returns the next messages of queue q after cur, up to limit
// (at most MaxListMessages), rendered as ListMessages renders them, and
// advances cur; done is true once every message has been returned. It
// returns false if there is no such queue. Messages come in the order of
// the queue's arrival list (for a FIFO queue, sequence order, so each
// group's order), then those moved into a standard queue with their
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
	l := newLister(qu, e.cfg.Bodies, t, handle)
	if !cur.inAged {
		var m *message
		switch {
		case !cur.started:
			m = qu.arrivalHead
		case cur.last != nil && (cur.last.aprev != nil || qu.arrivalHead == cur.last):
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
	}
	for ; cur.next < len(cur.aged) && len(msgs) < n; cur.next++ {
		if m := cur.aged[cur.next]; qu.aged.Contains(m) && live(m) {
			msgs = append(msgs, l.list(m))
		}
	}
	return msgs, cur.next == len(cur.aged), true, l.sel.err
}
