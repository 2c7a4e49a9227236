package engine

import (
	"math"

	"github.com/fifoq/fifoq/internal/api"
)

// queue is one queue: its configuration, its messages and the indexes over
// them. The state a snapshot has to keep is the configuration, the messages
// with their fields (FIFO: in each group's order; standard: with the order of
// each tenant's visible list, the only order that is not derived from
// message fields), the deduplication and receive attempt records, the move
// tasks and the counters (lastSeq, purgedAt). The maps, heaps, arrival list
// and counts are rebuilt from it: every heap orders by a total key, so its
// layout does not matter.
type queue struct {
	key        api.QueueKey
	arn        string
	fifo       bool
	attrs      queueAttrs
	tags       map[string]string
	createdAt  int64
	modifiedAt int64
	handleTag  uint32
	purgedAt   int64
	purged     bool

	// A change of DeduplicationScope reaches deduplication a propagation
	// delay after SetQueueAttributes (see dedupScope); until then
	// prevDedupScope, the scope in force at the change, applies.
	prevDedupScope    string
	dedupScopeChanged int64

	// A queue being moved (move.go): fence names the move that fenced it
	// here, movedIn the move that installed it here, and past the
	// receipt handle tags it had before its moves, still honoured.
	fence   string
	movedIn string
	past    []pastTag

	// A partition of a split queue (split.go): split is set once the
	// queue has been split, and it then holds the message groups whose
	// api.GroupHash is in [lo, hi).
	split  bool
	lo, hi uint64

	// applied counts the commands applied on the queue since this engine
	// was made or restored: a measure of its load (CommandsApplied), kept
	// out of snapshots.
	applied uint64

	// handles holds, by serial, the messages a receipt handle of this
	// queue may name (see handleable): not every message, so that a
	// backlog of messages never received costs no map entry.
	handles map[uint64]*message

	// The arrival list holds messages in the order their retention period
	// started, which is arrival order for everything but messages moved to a
	// standard dead-letter queue: those keep their original enqueue time
	// and go to the aged heap instead.
	arrivalHead, arrivalTail *message
	aged                     indexedHeap[*message]
	// bodies is where the engine keeps its bodies (Engine.bodyStore).
	bodies BodyStore

	// timers holds every delayed or in-flight message, by visibleAt.
	timers indexedHeap[*message]

	// Message counts by state, as of the last time the queue was processed.
	nVisible, nInflight, nDelayed int

	// FIFO queues.
	groups     map[string]*fifoGroup
	ready      indexedHeap[*fifoGroup]
	lastSeq    uint64
	dedup      dedupTable
	attempts   map[string]*attemptRecord
	attemptLog ring[*attemptRecord]
	// attemptDrops counts deletions from attempts since it was last
	// copied (see compactMap); not state.
	attemptDrops int

	// Standard queues.
	tenants map[string]*tenant
	fair    indexedHeap[*tenant]

	// Message move tasks whose source is this queue, oldest first.
	tasks []*moveTask

	// Queues of other engines (outbox.go): outbox holds the messages on
	// their way to them; redriveRemote says that the dead-letter queue
	// the RedrivePolicy names lives in another engine, and remoteSources
	// which queues of other engines name this one as theirs; taken is,
	// per source queue, the highest outbox entry this queue took from it.
	outbox        outbox
	redriveRemote bool
	remoteSources map[api.QueueKey]struct{}
	taken         map[outboxSource]takenRecord

	// The engine's housekeeping index (see housekeep.go): due is the heap
	// of queues by dueAt, a lower bound of the earliest time time has work
	// to do in this queue; duePos is the queue's position in it, 0 when it
	// has nothing pending. Derived state, rebuilt on restore.
	due    *indexedHeap[*queue]
	dueAt  int64
	duePos int32

	// cow is the engine's copy-on-write record: every change to a stored
	// message's fields calls cow.touch first.
	cow *cowState
	// ms is the engine's message store, which holds its records.
	ms *msgStore
}

func newQueue(key api.QueueKey, region string, fifo bool, attrs queueAttrs, now int64) *queue {
	q := &queue{
		key:        key,
		arn:        key.ARN(region),
		fifo:       fifo,
		attrs:      attrs,
		tags:       map[string]string{},
		createdAt:  now,
		modifiedAt: now,
		handleTag:  queueTag(key, now),
	}
	q.resetMessages()
	if fifo {
		q.attempts = map[string]*attemptRecord{}
	}
	return q
}

// resetMessages drops every message and index.
func (q *queue) resetMessages() {
	q.handles = map[uint64]*message{}
	q.arrivalHead, q.arrivalTail = nil, nil
	q.aged = newIndexedHeap(agedLess, agedPos)
	q.timers = newIndexedHeap(timerLess, timerPos)
	q.nVisible, q.nInflight, q.nDelayed = 0, 0, 0
	if q.fifo {
		q.groups = map[string]*fifoGroup{}
		q.ready = newIndexedHeap(groupLess, groupPos)
	} else {
		q.tenants = map[string]*tenant{}
		q.fair = newIndexedHeap(tenantLess, tenantPos)
	}
}

// stored returns the number of messages the queue holds.
func (q *queue) stored() int { return q.nVisible + q.nInflight + q.nDelayed }

// handleable reports whether a receipt handle of the queue holding m may
// name m: it was received (in this queue, or in a queue it was moved
// from, which it may come back to by a move task), or moved at all. Only
// a message sent straight to its queue and never received is out: no
// receive has handed out its serial. The answer depends on the message's
// fields alone, so an engine restored from a snapshot indexes the same
// messages.
func (s *msgStore) handleable(m *message) bool {
	return s.receives(m) > 0 || s.nonce(m) != 0 || m.enqueuedAt != s.sentAt(m) || s.dlqSource(m) != ""
}

// path is the queue URL's path, which results carry in place of the URL.
func (q *queue) path() string { return q.key.Path() }

// insert stores m, whose fields are set, at time now: visible, or delayed
// if m.visibleAt is later.
func (q *queue) insert(m *message, now int64) {
	q.cow.touch(m)
	if q.ms.handleable(m) {
		q.handles[m.serial] = m
	}
	if q.arrivalTail == nil || m.enqueuedAt >= q.arrivalTail.enqueuedAt {
		q.appendArrival(m)
	} else {
		q.aged.Push(m)
	}
	if m.visibleAt > now {
		m.state = stateDelayed
		q.nDelayed++
		q.timers.Push(m)
		q.noteDue(m.visibleAt)
	} else {
		m.state = stateVisible
		q.nVisible++
	}
	q.noteDue(m.enqueuedAt + q.retention())
	if q.fifo {
		g := q.fifoGroupOf(q.ms.group(m))
		g.pushBack(m)
		q.refreshGroup(g)
		return
	}
	t := q.tenantOf(q.ms.group(m))
	t.total++
	if m.state == stateVisible {
		t.pushBack(m)
	}
	q.refreshTenant(t)
}

// appendArrival links m at the end of the arrival list.
func (q *queue) appendArrival(m *message) {
	m.aprev, m.anext = q.arrivalTail, nil
	if q.arrivalTail != nil {
		q.arrivalTail.anext = m
	} else {
		q.arrivalHead = m
	}
	q.arrivalTail = m
}

// countStored counts m, stored as it is, in its state's count, and puts
// it in the timer heap if it waits for a time.
func (q *queue) countStored(m *message) {
	switch m.state {
	case stateVisible:
		q.nVisible++
	case stateDelayed:
		q.nDelayed++
		q.timers.Push(m)
	case stateInflight:
		q.nInflight++
		q.timers.Push(m)
	}
}

// discard deletes m from the queue for good (it expired): remove, its
// body is released, and m is freed.
func (q *queue) discard(m *message) {
	q.remove(m)
	if m.ref.File != 0 {
		q.bodies.Release(m.ref)
	}
	q.ms.freeMessage(m)
}

// remove deletes m from the queue, whatever its state. The message may go
// on in another queue (moved, or redriven to its dead-letter queue), so
// its body is not released.
func (q *queue) remove(m *message) {
	delete(q.handles, m.serial)
	if q.aged.Contains(m) {
		q.aged.Remove(m)
	} else {
		if m.aprev != nil {
			m.aprev.anext = m.anext
		} else {
			q.arrivalHead = m.anext
		}
		if m.anext != nil {
			m.anext.aprev = m.aprev
		} else {
			q.arrivalTail = m.aprev
		}
		m.aprev, m.anext = nil, nil
	}
	switch m.state {
	case stateVisible:
		q.nVisible--
	case stateDelayed:
		q.nDelayed--
		q.timers.Remove(m)
	case stateInflight:
		q.nInflight--
		q.timers.Remove(m)
	}
	if q.fifo {
		g := q.groups[q.ms.group(m)]
		g.unlink(m)
		if m.state == stateInflight {
			g.inflight--
		}
		q.refreshGroup(g)
		return
	}
	t := q.tenants[q.ms.group(m)]
	switch m.state {
	case stateVisible:
		t.unlink(m)
	case stateInflight:
		t.inflight--
	}
	t.total--
	q.refreshTenant(t)
}

// deliver makes the visible message m in flight for vis nanoseconds under a
// new receive identified by nonce.
func (q *queue) deliver(m *message, now, vis int64, nonce uint64) {
	q.cow.touch(m)
	q.nVisible--
	q.nInflight++
	m.state = stateInflight
	m.visibleAt = now + vis
	r := q.ms.recvOf(m)
	if r.receives < math.MaxInt32 {
		r.receives++
	}
	if r.receives == 1 {
		r.firstAt = now
	}
	r.at, r.nonce = now, nonce
	q.ms.setRecv(m, r)
	m.vizChanges = 0
	q.handles[m.serial] = m
	q.timers.Push(m)
	q.noteDue(m.visibleAt)
	q.countInflight(m)
}

// countInflight counts m, which has just gone in flight, against its FIFO
// group or its fair-queue tenant (whose list it leaves). A FIFO group is
// not locked as such: it is blocked while its first message is not
// visible, and an in-flight message is the group's first until it is
// deleted (fifoGroup).
func (q *queue) countInflight(m *message) {
	if q.fifo {
		g := q.groups[q.ms.group(m)]
		g.inflight++
		q.refreshGroup(g)
		return
	}
	t := q.tenants[q.ms.group(m)]
	t.unlink(m)
	t.inflight++
	q.refreshTenant(t)
}

// makeVisible makes a delayed or in-flight message visible at time now.
// visibleAt becomes the moment the message turned visible: the end of its
// delay or visibility timeout if that came first, else now. FIFO queues
// serve groups in that order (see groupLess).
func (q *queue) makeVisible(m *message, now int64) {
	q.cow.touch(m)
	q.timers.Remove(m)
	m.visibleAt = min(m.visibleAt, now)
	wasInflight := m.state == stateInflight
	if wasInflight {
		q.nInflight--
	} else {
		q.nDelayed--
	}
	q.nVisible++
	m.state = stateVisible
	if q.fifo {
		g := q.groups[q.ms.group(m)]
		if wasInflight {
			g.inflight--
		}
		q.refreshGroup(g)
		return
	}
	t := q.tenants[q.ms.group(m)]
	if wasInflight {
		t.inflight--
		t.pushFront(m)
	} else {
		t.pushBack(m)
	}
	q.refreshTenant(t)
}

// hide makes the visible message m in flight again until visibleAt, under
// its current receive: a standard queue's ChangeMessageVisibility on a
// message whose visibility timeout ran out. It is not a new receive: the
// receive count, the receive time and the receipt nonce stay.
func (q *queue) hide(m *message, visibleAt int64) {
	q.cow.touch(m)
	q.nVisible--
	q.nInflight++
	m.state = stateInflight
	m.visibleAt = visibleAt
	q.timers.Push(m)
	q.noteDue(visibleAt)
	q.countInflight(m)
}

// setVisibility moves the end of an in-flight message's visibility timeout.
func (q *queue) setVisibility(m *message, visibleAt int64) {
	q.cow.touch(m)
	m.visibleAt = visibleAt
	q.timers.Fix(m)
	q.noteDue(visibleAt)
}

// retentionLimit returns the enqueue time at or before which a message has
// outlived the retention period at time t.
func (q *queue) retentionLimit(t int64) int64 {
	return t - q.retention()
}

// retention is the queue's retention period in ns: a message enqueued at
// e has outlived it from e + retention on.
func (q *queue) retention() int64 {
	return int64(q.attrs.MessageRetentionPeriod) * 1e9
}

// process applies everything that time did to the queue by now: delays and
// visibility timeouts that ran out, messages past the retention period,
// expired deduplication and receive attempt records. It reports whether
// messages may have become receivable.
func (q *queue) process(now int64) bool {
	woke, _, _ := q.processUpTo(now, math.MaxInt)
	return woke
}

// processUpTo is process bounded to budget steps, a step being a message
// made visible or removed or a record dropped. It does the first steps of
// what process would do, in the same order, so that a queue processed in
// several bounded parts (by housekeeping) ends as if processed at once:
// any later command on the queue processes it in full before acting. It
// returns whether messages may have become receivable, the steps done, and
// whether everything due by now is done.
func (q *queue) processUpTo(now int64, budget int) (woke bool, done int, complete bool) {
	for q.timers.Len() > 0 && q.timers.Min().visibleAt <= now {
		if done == budget {
			return woke, done, false
		}
		q.makeVisible(q.timers.Min(), now)
		woke = true
		done++
	}
	limit := q.retentionLimit(now)
	for q.arrivalHead != nil && q.arrivalHead.enqueuedAt <= limit {
		if done == budget {
			return woke, done, false
		}
		q.discard(q.arrivalHead)
		woke = true // an expired in-flight message may unblock its group
		done++
	}
	for q.aged.Len() > 0 && q.aged.Min().enqueuedAt <= limit {
		if done == budget {
			return woke, done, false
		}
		q.discard(q.aged.Min())
		woke = true
		done++
	}
	if q.fifo {
		n, ok := q.pruneDedup(now, budget-done)
		done += n
		if !ok {
			return woke, done, false
		}
		n, ok = q.pruneAttempts(now, budget-done)
		done += n
		if !ok {
			return woke, done, false
		}
	}
	return woke, done, true
}

// countsAt returns the number of visible, in-flight and delayed messages at
// time t, accounting for the delays, visibility timeouts and retention
// periods that ran out since the queue was last processed, without
// changing anything.
func (q *queue) countsAt(t int64) (visible, inflight, delayed int) {
	visible, inflight, delayed = q.nVisible, q.nInflight, q.nDelayed
	q.timers.Scan(func(m *message) bool {
		if m.visibleAt > t {
			return false
		}
		if m.state == stateInflight {
			inflight--
		} else {
			delayed--
		}
		visible++
		return true
	}, nil)
	limit := q.retentionLimit(t)
	expired := func(m *message) {
		switch {
		case m.state == stateVisible || m.visibleAt <= t:
			visible--
		case m.state == stateInflight:
			inflight--
		default:
			delayed--
		}
	}
	for m := q.arrivalHead; m != nil && m.enqueuedAt <= limit; m = m.anext {
		expired(m)
	}
	q.aged.Scan(func(m *message) bool {
		if m.enqueuedAt > limit {
			return false
		}
		expired(m)
		return true
	}, nil)
	return visible, inflight, delayed
}

// nextWake returns the earliest time after t at which a delayed or
// in-flight message becomes visible, leaving out messages that will have
// outlived the retention period by t.
func (q *queue) nextWake(t int64) (int64, bool) {
	limit := q.retentionLimit(t)
	best, found := int64(0), false
	// Descend past the due timers and the expired messages; the first live
	// message on each path is the earliest of its subtree.
	q.timers.Scan(func(m *message) bool { return m.visibleAt <= t || m.enqueuedAt <= limit }, func(m *message) {
		if !found || m.visibleAt < best {
			best, found = m.visibleAt, true
		}
	})
	return best, found
}

// receivableAt reports whether a receive at time t would find a message,
// without changing anything. For a standard queue it may answer true when
// the only candidates have outlived the retention period; for a FIFO queue,
// where an expiring message can unblock its group, it is exact.
func (q *queue) receivableAt(t int64) bool {
	if !q.fifo {
		return q.fair.Len() > 0 || (q.timers.Len() > 0 && q.timers.Min().visibleAt <= t)
	}
	if q.nInflight >= api.MaxInflightFIFO {
		_, inflight, _ := q.countsAt(t)
		if inflight >= api.MaxInflightFIFO {
			return false
		}
	}
	limit := q.retentionLimit(t)
	// Every group that is or may have become ready since the queue was last
	// processed: the ready ones, those of a message whose delay or
	// visibility timeout ran out, those of a message that expired.
	for _, g := range q.ready.items {
		if g.receivableAt(t, limit) {
			return true
		}
	}
	found := false
	check := func(m *message) {
		if g := q.groups[q.ms.group(m)]; g != nil && g.receivableAt(t, limit) {
			found = true
		}
	}
	q.timers.Scan(func(m *message) bool {
		if found || m.visibleAt > t {
			return false
		}
		check(m)
		return true
	}, nil)
	for m := q.arrivalHead; !found && m != nil && m.enqueuedAt <= limit; m = m.anext {
		if m.state != stateVisible {
			check(m)
		}
	}
	return found
}
