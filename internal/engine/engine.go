package engine

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/fifoq/fifoq/internal/api"
)

// Config configures an Engine.
type Config struct {
	// Region is the region of the queue ARNs the engine hands out and
	// accepts: arn:aws:sqs:REGION:ACCOUNT:NAME.
	Region string
	// Bodies, if not nil, keeps the messages' bodies (see bodies.go);
	// SetBodyStore sets it on an engine made without one.
	Bodies BodyStore

	// Knobs only this package's tests turn, each on its own engine (zero
	// is the default): maxMovesPerApply, the messages one command moves
	// for one task (defaultMaxMovesPerApply); viewLockBatch, the messages
	// a snapshot view reads under one hold of its lock
	// (defaultViewLockBatch); restorePipelineMin, the records from which a
	// restore reads and applies a queue's chunks on two goroutines
	// (defaultRestorePipelineMin; negative: every queue).
	maxMovesPerApply   int
	viewLockBatch      int
	restorePipelineMin int
}

// pipelineMin is restorePipelineMin, or its default.
func (c *Config) pipelineMin() int {
	switch {
	case c.restorePipelineMin < 0:
		return 0
	case c.restorePipelineMin > 0:
		return c.restorePipelineMin
	}
	return defaultRestorePipelineMin
}

// movesPerApply is maxMovesPerApply, or its default.
func (c *Config) movesPerApply() int {
	if c.maxMovesPerApply > 0 {
		return c.maxMovesPerApply
	}
	return defaultMaxMovesPerApply
}

// lockBatch is viewLockBatch, or its default.
func (c *Config) lockBatch() int {
	if c.viewLockBatch > 0 {
		return c.viewLockBatch
	}
	return defaultViewLockBatch
}

// Engine holds every queue and applies commands to them. Apply must be
// called by one goroutine at a time; Read, NextWake and Receivable change
// nothing and may run concurrently with each other, but not with Apply.
type Engine struct {
	cfg Config

	// bodyErr is the first error reading a body back for a result since
	// TakeBodyError was last called. It is not state.
	bodyErr error
	// attrBuf is keepBody's buffer for encoding message attributes.
	attrBuf recordWriter
	// heap keeps the bodies if Config.Bodies is nil.
	heap *heapBodies
	// ms holds the message records and their tables.
	ms *msgStore

	now    int64  // time of the latest command applied, ns
	serial uint64 // serial of the latest message created

	queues map[api.QueueKey]*queue

	// deleted holds the deletions of recently deleted queues whose
	// cool-down still runs, for QueueDeletedRecently; deletedLog the same
	// records in time order, so that they are dropped once it has passed.
	deleted    map[api.QueueKey]deletion
	deletedLog ring[deletion]

	// meta is the command log's metadata (meta.go).
	meta map[string]string
	// heldUntil is when the last hold of departures in meta ends
	// (hold.go).
	heldUntil int64

	// moved holds the queues moved out of the engine whose names still
	// answer IsQueueMoving (move.go).
	moved map[api.QueueKey]movedAway

	// dlqSources maps a dead-letter queue to the queues whose RedrivePolicy
	// names it.
	dlqSources map[api.QueueKey]map[api.QueueKey]struct{}

	// orphans holds the outboxes of queues deleted while their outbox
	// held messages (outbox.go).
	orphans map[outboxSource]*orphan
	// outboxed counts the entries of every outbox, the orphans' too.
	outboxed int

	// running lists the running message move tasks, oldest first.
	running []*moveTask
	// movesBehind is set by each Apply: whether a running task was left
	// with messages due that the command's move budget did not cover.
	// It is not state: the next Apply sets it again.
	movesBehind bool

	// due orders the queues where time has work by when (see
	// housekeep.go). A pointer, so that the queues' references to it
	// survive Restore's copy of a decoded engine.
	due *indexedHeap[*queue]

	// cow saves messages changed while a snapshot view is open (see
	// SnapshotView). A pointer shared with the queues, like due.
	cow *cowState

	hook  *availableHook
	woken []api.QueueKey // queues to pass to hook when the command is done
}

// availableHook holds the function SetAvailableHook sets. It may be set
// while commands are applied (a server is put in front of a log that is
// already replaying), so it is read atomically; a pointer, so that
// Restore's copy of a decoded engine keeps it.
type availableHook struct {
	fn atomic.Pointer[func(api.QueueKey)]
}

// get returns the hook's function, nil if none is set.
func (h *availableHook) get() func(api.QueueKey) {
	if p := h.fn.Load(); p != nil {
		return *p
	}
	return nil
}

// New returns an engine with no queues.
func New(cfg Config) *Engine {
	var heap *heapBodies
	if cfg.Bodies == nil {
		heap = &heapBodies{}
	}
	return &Engine{
		cfg:        cfg,
		heap:       heap,
		ms:         newMsgStore(),
		queues:     map[api.QueueKey]*queue{},
		deleted:    map[api.QueueKey]deletion{},
		moved:      map[api.QueueKey]movedAway{},
		dlqSources: map[api.QueueKey]map[api.QueueKey]struct{}{},
		due:        &indexedHeap[*queue]{less: dueLess, pos: duePos},
		cow:        &cowState{},
		hook:       &availableHook{},
	}
}

// SetAvailableHook sets a function that Apply calls, synchronously and
// after the command is applied, with the key of every queue in which
// messages may have become receivable during the command: a send without
// delay, a visibility change to 0, a delay or visibility timeout that ran
// out, a deletion that unblocked a FIFO group, a message moved in. Calls
// may be spurious; the function must not block or call back into the
// engine. It may be called while commands are applied.
func (e *Engine) SetAvailableHook(fn func(api.QueueKey)) {
	if fn == nil {
		e.hook.fn.Store(nil)
		return
	}
	e.hook.fn.Store(&fn)
}

// Now returns the engine's time: that of the latest command it applied
// (Unix ns). It only moves forward.
func (e *Engine) Now() int64 { return e.now }

// HasActiveMoveTasks reports whether a message move task is running, in
// which case the server should apply TickRequest commands regularly (about
// every 100 ms) so that the tasks make progress.
func (e *Engine) HasActiveMoveTasks() bool { return len(e.running) > 0 }

// Apply applies a state-changing command: every action whose
// api.Action.ReadOnly is false, *TickRequest, *HousekeepRequest and
// *SetMetaRequest. It
// returns the typed result (api.Empty{} for actions whose result has no
// fields) or an *api.Error. Read-only actions are answered as Read would
// answer them.
func (e *Engine) Apply(cmd *Command) (api.Response, error) {
	if cmd.Time > e.now {
		e.now = cmd.Time
	}
	now := e.now
	e.woken = e.woken[:0]
	e.advanceMoveTasks(cmd, now)
	resp, err := e.apply(cmd, now)
	// The command's own queue may have lost what was due first (a
	// message deleted, a visibility timeout moved later, a shorter
	// retention period): set its place in the housekeeping index exactly.
	if q := e.queues[cmd.Queue]; q != nil {
		q.refreshDue()
		q.applied++
	}
	e.flushWakes()
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Read answers a read-only action (GetQueueUrl, ListQueues,
// GetQueueAttributes, ListQueueTags, ListDeadLetterSourceQueues,
// ListMessageMoveTasks) as of cmd.Time, changing nothing: counts account
// for the delays, visibility timeouts and retention periods that ran out by
// then without applying them.
func (e *Engine) Read(cmd *Command) (api.Response, error) {
	t := max(cmd.Time, e.now)
	switch r := cmd.Request.(type) {
	case *api.GetQueueUrlRequest:
		return e.getQueueURL(cmd, r)
	case *api.ListQueuesRequest:
		return e.listQueues(cmd, r)
	case *api.GetQueueAttributesRequest:
		return e.getQueueAttributes(cmd, r, t)
	case *api.ListQueueTagsRequest:
		return e.listQueueTags(cmd)
	case *api.ListDeadLetterSourceQueuesRequest:
		return e.listDeadLetterSourceQueues(cmd, r)
	case *api.ListMessageMoveTasksRequest:
		return e.listMessageMoveTasks(r)
	case nil:
		return nil, api.ErrInternalFailure("engine: command without request")
	}
	return nil, api.ErrInternalFailure("engine: %s is not a read-only action", cmd.Request.Action())
}

// NextWake returns the earliest time (Unix ns) after now at which a delayed
// or in-flight message of queue q becomes visible, and false if there is
// none. A long poll sleeps until then at most. It changes nothing.
func (e *Engine) NextWake(q api.QueueKey, now int64) (int64, bool) {
	qu := e.queues[q]
	if qu == nil {
		return 0, false
	}
	return qu.nextWake(max(now, e.now))
}

// Receivable reports whether a ReceiveMessage on queue q at time now would
// find at least one message (for a standard queue at its in-flight limit:
// would answer OverLimit). It changes nothing.
func (e *Engine) Receivable(q api.QueueKey, now int64) bool {
	qu := e.queues[q]
	if qu == nil {
		return false
	}
	return qu.receivableAt(max(now, e.now))
}

// ReceiveOutlook tells, changing nothing, what a ReceiveMessage on queue q
// at time now would do: exists is false when there is no such queue (the
// receive would answer QueueDoesNotExist), and take is true when it may
// take messages, answer OverLimit, or answer a retry of attemptID (a FIFO
// ReceiveRequestAttemptId whose record is still kept). When exists is true
// and take is false, the receive would answer no messages and change
// nothing but what time changes anyway, so it need not go through the log.
func (e *Engine) ReceiveOutlook(q api.QueueKey, now int64, attemptID string) (exists, take bool) {
	qu := e.queues[q]
	if qu == nil || qu.fence != "" {
		// A queue moving or moved away answers through the log, which
		// tells a router to retry where it is now.
		_, err := e.queueAt(q, max(now, e.now))
		return IsQueueMoving(err), IsQueueMoving(err)
	}
	t := max(now, e.now)
	if qu.fifo && attemptID != "" {
		if rec := qu.attempts[attemptID]; rec != nil && t-rec.at < int64(api.ReceiveRequestAttemptIdInterval) {
			return true, true
		}
	}
	return true, qu.receivableAt(t)
}

// ReceiveSpread estimates, changing nothing, how many receives taking up
// to take messages each could take messages of queue q at once: on a
// standard queue, its visible messages shared out take at a time; on a FIFO
// queue, its groups ready to be received from, since a receive blocks the
// groups it takes from (their first message is then in flight). It is what the queue held when last processed
// (messages whose delay or visibility timeout ran out since are not
// counted), which is enough to decide how many long polls to wake.
func (e *Engine) ReceiveSpread(q api.QueueKey, take int) int {
	qu := e.queues[q]
	if qu == nil {
		return 0
	}
	if qu.fifo {
		return qu.ready.Len()
	}
	take = min(max(take, 1), api.MaxReceiveMessages)
	return (qu.nVisible + take - 1) / take
}

func (e *Engine) apply(cmd *Command, now int64) (api.Response, error) {
	switch r := cmd.Request.(type) {
	case *TickRequest:
		return e.tick(r, now)
	case *HousekeepRequest:
		return e.housekeep(r, now)
	case *SetMetaRequest:
		return e.setMeta(r)
	case *HoldDeparturesRequest:
		return e.holdDepartures(r, now)
	case *FenceQueueRequest:
		return e.fenceQueue(cmd, r, now)
	case *UnfenceQueueRequest:
		return e.unfenceQueue(cmd, r)
	case *InstallQueueRequest:
		return e.installQueue(cmd, r, now)
	case *DropQueueRequest:
		return e.dropQueue(cmd, r, now)
	case *TakeMessagesRequest:
		return e.takeMessages(cmd, r, now)
	case *SettleOutboxRequest:
		return e.settleOutbox(cmd, r, now)
	case *SplitQueueRequest:
		return e.splitQueue(cmd, r, now)
	case *MergeQueueRequest:
		return e.mergeQueue(cmd, r, now)
	case *api.CreateQueueRequest:
		return e.createQueue(cmd, r, now)
	case *api.DeleteQueueRequest:
		return e.deleteQueue(cmd, now)
	case *api.SetQueueAttributesRequest:
		return e.setQueueAttributes(cmd, r, now)
	case *api.PurgeQueueRequest:
		return e.purgeQueue(cmd, now)
	case *api.TagQueueRequest:
		return e.tagQueue(cmd, r)
	case *api.UntagQueueRequest:
		return e.untagQueue(cmd, r)
	case *api.AddPermissionRequest:
		return e.addPermission(cmd, r, now)
	case *api.RemovePermissionRequest:
		return e.removePermission(cmd, r, now)
	case *api.SendMessageRequest:
		return e.sendMessage(cmd, r, now)
	case *api.SendMessageBatchRequest:
		return e.sendMessageBatch(cmd, r, now)
	case *api.ReceiveMessageRequest:
		return e.receiveMessage(cmd, r, now)
	case *api.DeleteMessageRequest:
		return e.deleteMessage(cmd, r, now)
	case *api.DeleteMessageBatchRequest:
		return e.deleteMessageBatch(cmd, r, now)
	case *api.ChangeMessageVisibilityRequest:
		return e.changeMessageVisibility(cmd, r, now)
	case *api.ChangeMessageVisibilityBatchRequest:
		return e.changeMessageVisibilityBatch(cmd, r, now)
	case *api.StartMessageMoveTaskRequest:
		return e.startMessageMoveTask(cmd, r, now)
	case *api.CancelMessageMoveTaskRequest:
		return e.cancelMessageMoveTask(r, now)
	case nil:
		return nil, api.ErrInternalFailure("engine: command without request")
	}
	if cmd.Request.Action().ReadOnly() {
		c := *cmd
		c.Time = now
		return e.Read(&c)
	}
	return nil, api.ErrInternalFailure("engine: unsupported request %T", cmd.Request)
}

// queueFor returns the queue a command names by URL, processed up to now.
func (e *Engine) queueFor(cmd *Command, now int64) (*queue, error) {
	q, err := e.queueAt(cmd.Queue, now)
	if err != nil {
		return nil, err
	}
	e.process(q, now)
	return q, nil
}

// process applies to q what time did by now, and wakes its waiters if
// messages became visible.
func (e *Engine) process(q *queue, now int64) {
	q.prunePast(now)
	if q.process(now) {
		e.wake(q.key)
	}
}

// tick answers a TickRequest. Apply has already made the move tasks
// progress, as it does for every command. A tick logged by older fifoq (no
// Moves) also applies time to every queue and drops expired deletion
// records, as it did then, so that such logs replay alike.
func (e *Engine) tick(r *TickRequest, now int64) (api.Response, error) {
	if r.Moves <= 0 {
		for _, q := range e.queues {
			e.process(q, now)
		}
		e.pruneDeleted(now)
	}
	return &TickResult{Behind: e.movesBehind}, nil
}

// deletion records that a queue was deleted at a time, and until when its
// name cannot be used again.
type deletion struct {
	key       api.QueueKey
	at, until int64
}

// pruneDeleted forgets deletions whose cool-down has passed. The log is in
// deletion order; a record whose cool-down ends before an older one's
// (the setting was shortened) waits behind it, which costs memory only:
// createQueue compares with until.
func (e *Engine) pruneDeleted(now int64) {
	e.pruneDeletedUpTo(now, math.MaxInt)
}

// pruneDeletedUpTo is pruneDeleted bounded to limit records, for
// housekeeping. It returns how many it forgot, and whether a record whose
// cool-down has passed is left.
func (e *Engine) pruneDeletedUpTo(now int64, limit int) (n int, more bool) {
	for e.deletedLog.Len() > 0 && e.deletedLog.Front().until <= now {
		if n == limit {
			return n, true
		}
		d := e.deletedLog.Front()
		e.deletedLog.PopFront()
		delete(e.deleted, d.key)
		e.dropDeadDeletions()
		n++
	}
	return n, false
}

// dropDeadDeletions pops the records at the front of the deletion log that
// the map no longer points to (superseded by a later deletion or by the
// queue's creation). The front of the log is thus always a live record,
// so that the next expiry is exact and a snapshot, which keeps only live
// records, restores an engine that prunes alike.
func (e *Engine) dropDeadDeletions() {
	for e.deletedLog.Len() > 0 {
		d := e.deletedLog.Front()
		if cur, ok := e.deleted[d.key]; ok && cur == d {
			return
		}
		e.deletedLog.PopFront()
	}
}

// wake records that messages may have become receivable in queue k.
func (e *Engine) wake(k api.QueueKey) {
	if n := len(e.woken); n > 0 && e.woken[n-1] == k {
		return
	}
	e.woken = append(e.woken, k)
}

func (e *Engine) flushWakes() {
	woken := e.woken
	e.woken = e.woken[:0]
	hook := e.hook.get()
	if hook == nil {
		return
	}
	if len(woken) <= 16 {
		for i, k := range woken {
			if !slices.Contains(woken[:i], k) {
				hook(k)
			}
		}
		return
	}
	seen := make(map[api.QueueKey]bool, len(woken))
	for _, k := range woken {
		if !seen[k] {
			seen[k] = true
			hook(k)
		}
	}
}

// newMessageID returns the id the command carries for its i-th message.
// Commands always carry them; the fallback derives a stable id from the
// command's entropy so that a malformed command cannot break determinism.
func newMessageID(cmd *Command, i int, serial uint64) string {
	if i < len(cmd.MessageIDs) && cmd.MessageIDs[i] != "" {
		return cmd.MessageIDs[i]
	}
	a, b := mix64(cmd.Entropy^serial), mix64(serial^0x6a09e667f3bcc909)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff)
}
