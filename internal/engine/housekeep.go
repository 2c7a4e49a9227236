package engine

import (
	"cmp"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// Housekeeping applies time to queues nobody touches. Every command on a
// queue first applies to it what time did (delays and visibility timeouts
// that ran out, messages past the retention period, expired deduplication
// and receive attempt records), and reads account for the rest without
// changing anything; but a queue no command names would keep its expired
// messages and records in memory for ever, and every read (a /metrics
// scrape, GetQueueAttributes) would walk them again. The server applies a
// HousekeepRequest, through the log like any command, whenever
// NextHousekeeping says there may be work; each command does a bounded
// amount of it and the next continues.
//
// The engine finds the queues with work in a heap ordered by dueAt, a
// lower bound of the earliest time time has something to do in the queue.
// Every change that can make that time earlier (a message stored, made in
// flight or delayed, a visibility timeout moved, a record added) lowers
// dueAt; changes that make it later (a message deleted) leave it early, and
// the queue's next command, or the next housekeeping, sets it exactly. Which
// queues a housekeeping command works on, and in what order, depends only
// on the exact times, never on how early a stale dueAt is, so an engine
// restored from a snapshot (whose index is exact) behaves exactly as the
// one that wrote it.

// HousekeepRequest is an internal request, never sent by clients: it
// applies time to the queues where something became due by the command's
// time, at most Limit steps (a message made visible or removed, a record
// dropped), in the order their work became due. It also drops deletion
// records whose cool-down has passed. The server applies it when
// NextHousekeeping says so. The limit travels in the command, like the
// time, so that a log replays alike whatever the settings of the server
// that replays it.
type HousekeepRequest struct {
	// Limit bounds the steps of the command; below 1 it is 1.
	Limit int `json:"limit"`
}

// ActionHousekeep names HousekeepRequest. It is not an SQS action.
const ActionHousekeep api.Action = "fifoq:Housekeep"

// Action implements api.Request.
func (*HousekeepRequest) Action() api.Action { return ActionHousekeep }

// HousekeepResult is the result of a HousekeepRequest.
type HousekeepResult struct {
	// Steps is the number of steps done.
	Steps int
	// More is true when the limit stopped the command with work due left:
	// the server should apply another one soon.
	More bool
}

// DefaultHousekeepLimit is the limit the server puts in its housekeeping
// commands: enough to keep up with 100,000 expirations a second at ten
// commands a second, small enough that one command takes a few
// milliseconds of the log's apply loop.
const DefaultHousekeepLimit = 10_000

// NewInternalRequest returns a zero internal request (TickRequest,
// HousekeepRequest, SetMetaRequest, the move requests of move.go, the
// outbox requests of outbox.go, SplitQueueRequest and
// MergeQueueRequest) of action a, ready to be decoded into, and false if a
// names none. The log decodes its entries with it.
func NewInternalRequest(a api.Action) (api.Request, bool) {
	switch a {
	case ActionTick:
		return &TickRequest{}, true
	case ActionHousekeep:
		return &HousekeepRequest{}, true
	case ActionSetMeta:
		return &SetMetaRequest{}, true
	case ActionHoldDepartures:
		return &HoldDeparturesRequest{}, true
	case ActionFenceQueue:
		return &FenceQueueRequest{}, true
	case ActionUnfenceQueue:
		return &UnfenceQueueRequest{}, true
	case ActionInstallQueue:
		return &InstallQueueRequest{}, true
	case ActionDropQueue:
		return &DropQueueRequest{}, true
	case ActionTakeMessages:
		return &TakeMessagesRequest{}, true
	case ActionSettleOutbox:
		return &SettleOutboxRequest{}, true
	case ActionSplitQueue:
		return &SplitQueueRequest{}, true
	case ActionMergeQueue:
		return &MergeQueueRequest{}, true
	}
	return nil, false
}

// NextHousekeeping returns the earliest time (Unix ns) at which a
// HousekeepRequest may find work, and false if nothing stored will ever
// expire or become visible by itself. The time may be early (the command
// then corrects it), never late. It changes nothing and costs O(1).
func (e *Engine) NextHousekeeping() (int64, bool) {
	t, ok := int64(0), false
	if e.due.Len() > 0 {
		t, ok = e.due.Min().dueAt, true
	}
	if e.deletedLog.Len() > 0 {
		if u := e.deletedLog.Front().until; !ok || u < t {
			t, ok = u, true
		}
	}
	return t, ok
}

func (e *Engine) housekeep(r *HousekeepRequest, now int64) (api.Response, error) {
	budget := max(r.Limit, 1)
	// The candidates are the queues whose dueAt has come; their exact due
	// times decide which have work and in what order.
	type cand struct {
		q  *queue
		at int64
	}
	var cands []cand
	e.due.Scan(func(q *queue) bool {
		if q.dueAt > now {
			return false
		}
		cands = append(cands, cand{q: q})
		return true
	}, nil)
	work := cands[:0]
	for _, c := range cands {
		at, ok := c.q.nextDue()
		c.q.setDue(at, ok)
		if ok && at <= now {
			work = append(work, cand{q: c.q, at: at})
		}
	}
	slices.SortFunc(work, func(a, b cand) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return compareKeys(a.q.key, b.q.key)
	})
	res := &HousekeepResult{}
	for _, c := range work {
		if res.Steps == budget {
			res.More = true
			break
		}
		woke, n, complete := c.q.processUpTo(now, budget-res.Steps)
		res.Steps += n
		res.More = res.More || !complete
		if woke {
			e.wake(c.q.key)
		}
		c.q.refreshDue()
	}
	// The front of the deletion log is always live (see
	// dropDeadDeletions), so the steps are the same in every replica.
	n, more := e.pruneDeletedUpTo(now, budget-res.Steps)
	res.Steps += n
	res.More = res.More || more
	return res, nil
}

// noteDue records that time may have work in the queue at t.
func (q *queue) noteDue(t int64) {
	if q.due == nil {
		return
	}
	if q.duePos == 0 {
		q.dueAt = t
		q.due.Push(q)
		return
	}
	if t < q.dueAt {
		q.dueAt = t
		q.due.Fix(q)
	}
}

// refreshDue sets the queue's place in the housekeeping index exactly.
func (q *queue) refreshDue() {
	q.setDue(q.nextDue())
}

func (q *queue) setDue(at int64, ok bool) {
	if q.due == nil {
		return
	}
	switch {
	case !ok:
		q.due.Remove(q)
	case q.duePos == 0:
		q.dueAt = at
		q.due.Push(q)
	case at != q.dueAt:
		q.dueAt = at
		q.due.Fix(q)
	}
}

// nextDue returns the earliest time at which time has work in the queue:
// a delay or visibility timeout runs out, a message outlives the retention
// period, a deduplication or receive attempt record expires; false if none
// ever will.
func (q *queue) nextDue() (int64, bool) {
	t, ok := int64(0), false
	at := func(x int64) {
		if !ok || x < t {
			t, ok = x, true
		}
	}
	if q.timers.Len() > 0 {
		at(q.timers.Min().visibleAt)
	}
	if q.arrivalHead != nil {
		at(q.arrivalHead.enqueuedAt + q.retention())
	}
	if q.aged.Len() > 0 {
		at(q.aged.Min().enqueuedAt + q.retention())
	}
	if q.fifo {
		if !q.dedup.empty() {
			at(q.dedup.front().at + int64(api.DeduplicationInterval))
		}
		if q.attemptLog.Len() > 0 {
			at(q.attemptLog.Front().at + int64(api.ReceiveRequestAttemptIdInterval))
		}
	}
	return t, ok
}

// dueLess orders the housekeeping index by dueAt, then by key so that the
// order is total.
func dueLess(a, b *queue) bool {
	if a.dueAt != b.dueAt {
		return a.dueAt < b.dueAt
	}
	return compareKeys(a.key, b.key) < 0
}

func duePos(q *queue) *int32 { return &q.duePos }

// StoredMessages returns the number of messages queue q holds in memory,
// those past the retention period that housekeeping or a command has not
// removed yet included, and false if there is no such queue. Reads count
// expired messages out without removing them; this tells whether they
// were removed.
func (e *Engine) StoredMessages(q api.QueueKey) (int, bool) {
	qu := e.queues[q]
	if qu == nil {
		return 0, false
	}
	return qu.stored(), true
}
