package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Message move tasks move the messages of a dead-letter queue back to the
// queues they came from, or to a given destination, at a rate. They make
// progress in every Apply (the server applies TickRequest while any runs):
// by time t a task has moved up to rate × (t − start) messages. A tick
// moves at most TickRequest.Moves messages, all tasks together, and any
// other command at most maxMovesPerApply per task; a task left behind
// catches up in the next commands (the server ticks again soon while
// TickResult.Behind says so), so the rate holds on average without any one
// command stalling the log.
const (
	// minOptimisedRate is the rate of a task started without
	// MaxNumberOfMessagesPerSecond, SQS's "system-optimised" rate: at least
	// this many messages per second, more for large backlogs (see
	// optimisedRate).
	minOptimisedRate = 500
	// optimisedDrainSeconds: a task without a rate aims to move its backlog
	// in about this long.
	optimisedDrainSeconds = 60
	// maxTasksKept is how many tasks a queue remembers for
	// ListMessageMoveTasks.
	maxTasksKept = api.MaxListedMoveTasks
)

// defaultMaxMovesPerApply bounds the messages one command other than a
// bounded TickRequest moves for one task, so that a long pause between
// commands cannot stall the engine (Config.movesPerApply: tests make it
// small).
const defaultMaxMovesPerApply = 10_000

// failNonExistentQueue is the FailureReason of a task whose source or
// destination queue is gone.
const failNonExistentQueue = "AWS.SimpleQueueService.NonExistentQueue"

// moveTask is one message move task.
type moveTask struct {
	handle    string
	source    api.QueueKey
	sourceArn string
	destArn   string // "" to return messages to their source queues
	dest      api.QueueKey
	rate      *int  // as requested
	perSecond int64 // effective rate
	status    string
	moved     int64
	toMove    int64
	startedAt int64
	failure   string
}

func optimisedRate(backlog int64) int64 {
	return max(minOptimisedRate, backlog/optimisedDrainSeconds)
}

// A task handle is what SQS hands out, and what clients decode: the
// standard base64 (padded) of the JSON document
//
//	{"taskId":"<uuid>","sourceArn":"<source queue ARN>"}
//
// (recorded: localstack test_sqs_move_task.py::test_basic_move_task_workflow
// decodes AWS's handle and finds a UUID taskId and the source's ARN). The
// taskId is derived from the command's entropy, so it is unguessable yet
// the same on replay.
type taskHandleDoc struct {
	TaskID    string `json:"taskId"`
	SourceArn string `json:"sourceArn"`
}

// encodeTaskHandle makes the handle of task nonce on the source queue arn.
func encodeTaskHandle(nonce uint64, sourceArn string) string {
	a, b := mix64(nonce), mix64(nonce^0x510e527fade682d1)
	id := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff)
	doc, _ := json.Marshal(taskHandleDoc{TaskID: id, SourceArn: sourceArn}) // two strings: cannot fail
	return base64.StdEncoding.EncodeToString(doc)
}

// decodeTaskHandle returns the source ARN a handle names, and false for a
// handle that is not one: not base64, not a JSON object, or without a
// taskId and a sourceArn. Handles of the format fifoq wrote before (the
// unpadded URL-safe base64 of "NONCE:ARN") are still read, so that tasks
// restored from an older log or snapshot can be cancelled.
func decodeTaskHandle(h string) (sourceArn string, ok bool) {
	if b, err := base64.StdEncoding.DecodeString(h); err == nil {
		var doc taskHandleDoc
		if json.Unmarshal(b, &doc) == nil && doc.TaskID != "" && doc.SourceArn != "" {
			return doc.SourceArn, true
		}
	}
	return decodeLegacyTaskHandle(h)
}

func decodeLegacyTaskHandle(h string) (sourceArn string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "", false
	}
	nonce, arn, ok := strings.Cut(string(b), ":")
	if !ok || nonce == "" || arn == "" {
		return "", false
	}
	if _, err := strconv.ParseUint(nonce, 16, 64); err != nil {
		return "", false
	}
	return arn, true
}

// queueByARN returns the queue an ARN names.
func (e *Engine) queueByARN(arn string) *queue {
	key, ok := api.QueueOfARN(arn, e.cfg.Region)
	if !ok {
		return nil
	}
	return e.queues[key]
}

func (e *Engine) startMessageMoveTask(cmd *Command, r *api.StartMessageMoveTaskRequest, now int64) (api.Response, error) {
	src := e.queueByARN(r.SourceArn)
	if src == nil {
		return nil, errNoSourceArn()
	}
	if !e.isDeadLetterQueue(src.key) {
		return nil, api.ErrInvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
	}
	t := &moveTask{
		source:    src.key,
		sourceArn: src.arn,
		rate:      r.MaxNumberOfMessagesPerSecond,
		status:    api.MoveTaskRunning,
		startedAt: now,
	}
	if r.DestinationArn != "" {
		// A task moves messages within a region, as a redrive does.
		dst := e.queueByARN(r.DestinationArn)
		if dst == nil || dst.key.Region != src.key.Region {
			return nil, api.ErrResourceNotFound("The resource that you specified for the DestinationArn parameter doesn't exist.")
		}
		if dst.fence != "" {
			return nil, errQueueMoving()
		}
		if dst == src {
			return nil, api.ErrInvalidParameterValue("Source queue arn and destination queue arn cannot be the same.")
		}
		if dst.fifo != src.fifo {
			return nil, api.ErrInvalidParameterValue("The source queue and destination queue must be of the same queue type.")
		}
		t.destArn, t.dest = dst.arn, dst.key
	}
	for _, old := range src.tasks {
		if old.status == api.MoveTaskRunning {
			return nil, api.ErrInvalidParameterValue("There is already a task running. Only one active task is allowed for a source queue arn at a given time.")
		}
	}
	e.process(src, now)
	visible, _, _ := src.countsAt(now)
	t.toMove = int64(visible)
	if t.rate != nil {
		t.perSecond = int64(*t.rate)
	} else {
		t.perSecond = optimisedRate(t.toMove)
	}
	t.handle = encodeTaskHandle(mix64(cmd.Entropy^mix64(e.serial)), src.arn)
	src.tasks = append(src.tasks, t)
	if len(src.tasks) > maxTasksKept {
		src.tasks = append(src.tasks[:0:0], src.tasks[len(src.tasks)-maxTasksKept:]...)
	}
	e.running = append(e.running, t)
	// No time has passed since its start, so nothing is due yet: advance
	// only completes a task that has nothing to move.
	var none int64
	e.advance(t, now, &none)
	e.pruneRunning()
	return &api.StartMessageMoveTaskResult{TaskHandle: t.handle}, nil
}

func (e *Engine) cancelMessageMoveTask(r *api.CancelMessageMoveTaskRequest, now int64) (api.Response, error) {
	// The three answers are AWS's, recorded in localstack
	// test_sqs_move_task.snapshot.json: test_cancel_with_invalid_task_handle,
	// test_cancel_with_invalid_source_arn_in_task_handle and
	// test_cancel_with_invalid_task_id_in_task_handle.
	arn, ok := decodeTaskHandle(r.TaskHandle)
	if !ok {
		return nil, api.ErrInvalidParameterValue("Value for parameter TaskHandle is invalid.")
	}
	src := e.queueByARN(arn)
	if src == nil {
		return nil, errNoSourceArn()
	}
	for _, t := range src.tasks {
		if t.handle != r.TaskHandle {
			continue
		}
		if t.status != api.MoveTaskRunning {
			return nil, api.ErrResourceNotFound("Only a task in status RUNNING can be cancelled; this task is %s.", t.status)
		}
		t.status = api.MoveTaskCancelled
		e.pruneRunning()
		return &api.CancelMessageMoveTaskResult{ApproximateNumberOfMessagesMoved: t.moved}, nil
	}
	return nil, api.ErrResourceNotFound("Task does not exist.")
}

// errNoSourceArn is SQS's answer when the source queue a request names,
// by ARN or inside a task handle, does not exist.
func errNoSourceArn() error {
	return api.ErrResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
}

func (e *Engine) listMessageMoveTasks(r *api.ListMessageMoveTasksRequest) (api.Response, error) {
	src := e.queueByARN(r.SourceArn)
	if src == nil {
		return nil, errNoSourceArn()
	}
	limit := 1
	if r.MaxResults != nil {
		limit = min(max(*r.MaxResults, 1), api.MaxListedMoveTasks)
	}
	res := &api.ListMessageMoveTasksResult{Results: []api.ListMessageMoveTasksResultEntry{}}
	for i := len(src.tasks) - 1; i >= 0 && len(res.Results) < limit; i-- {
		t := src.tasks[i]
		toMove := t.toMove
		en := api.ListMessageMoveTasksResultEntry{
			Status:                            t.status,
			SourceArn:                         t.sourceArn,
			DestinationArn:                    t.destArn,
			MaxNumberOfMessagesPerSecond:      t.rate,
			ApproximateNumberOfMessagesMoved:  t.moved,
			ApproximateNumberOfMessagesToMove: &toMove,
			FailureReason:                     t.failure,
			StartedTimestamp:                  t.startedAt / 1e6,
		}
		if t.status == api.MoveTaskRunning {
			en.TaskHandle = t.handle
		}
		res.Results = append(res.Results, en)
	}
	return res, nil
}

// advanceMoveTasks makes the running tasks catch up with time, oldest
// first, and records in e.movesBehind whether any task is left behind its
// rate. A TickRequest with Moves bounds the moves of all tasks together;
// any other command bounds each task to maxMovesPerApply, as fifoq always
// has, so that logs replay alike.
func (e *Engine) advanceMoveTasks(cmd *Command, now int64) {
	e.movesBehind = false
	if len(e.running) == 0 {
		return
	}
	shared := int64(-1)
	if t, ok := cmd.Request.(*TickRequest); ok && t.Moves > 0 {
		shared = int64(t.Moves)
	}
	for _, t := range e.running {
		budget := int64(e.cfg.movesPerApply())
		if shared >= 0 {
			budget = shared
		}
		behind := e.advance(t, now, &budget)
		if shared >= 0 {
			shared = budget
		}
		if behind {
			e.movesBehind = true
		}
	}
	e.pruneRunning()
}

// pruneRunning drops the tasks that are no longer running from e.running.
func (e *Engine) pruneRunning() {
	kept := e.running[:0]
	for _, t := range e.running {
		if t.status == api.MoveTaskRunning {
			kept = append(kept, t)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// stopRunning forgets a task whose source queue was deleted.
func (e *Engine) stopRunning(t *moveTask) {
	if t.status == api.MoveTaskRunning {
		t.status = api.MoveTaskFailed
		t.failure = failNonExistentQueue
	}
	e.pruneRunning()
}

// advance moves as many messages as the task's rate allows by now, at most
// *budget, which it decreases by the messages moved. A task completes when
// it has moved as many messages as the source held at its start, or when
// the source has no visible message left; it fails when a message has
// nowhere to go. It returns true when the budget ran out with messages of
// the task still due.
func (e *Engine) advance(t *moveTask, now int64, budget *int64) (behind bool) {
	if t.status != api.MoveTaskRunning {
		return false
	}
	src := e.queues[t.source]
	if src == nil {
		t.status, t.failure = api.MoveTaskFailed, failNonExistentQueue
		return false
	}
	e.process(src, now)
	elapsedMs := (now - t.startedAt) / 1e6
	due := min(elapsedMs*t.perSecond/1000-t.moved, t.toMove-t.moved)
	for ; due > 0 && *budget > 0; due-- {
		m := src.nextMovable()
		if m == nil {
			break
		}
		dst, remote, reason := e.moveDestination(t, src, m)
		if dst != nil && (dst.fence != "" || len(src.outbox.entries) > 0) {
			// A queue that is leaving this engine (its image is taken
			// already) is reached through the outbox, and messages on
			// their way to other queues are not overtaken.
			dst, remote = nil, dst.key
		}
		switch {
		case remote != (api.QueueKey{}):
			// The queue the message came from lives in another engine
			// (outbox.go); a full outbox holds the task up.
			if !e.toOutbox(src, m, remote, OutboxMoveBack) {
				return false
			}
		case dst == nil:
			t.status, t.failure = api.MoveTaskFailed, reason
			return false
		default:
			e.moveMessage(src, dst, m, now)
		}
		t.moved++
		*budget--
	}
	if t.moved >= t.toMove || src.nextMovable() == nil {
		t.status = api.MoveTaskCompleted
		return false
	}
	return due > 0
}

// nextMovable returns the next visible message a task may move: the oldest
// receivable one, FIFO order respected.
func (q *queue) nextMovable() *message {
	if q.fifo {
		if q.ready.Len() == 0 {
			return nil
		}
		return q.ready.Min().head
	}
	if q.fair.Len() == 0 {
		return nil
	}
	return q.fair.Min().head
}

// moveDestination returns the queue a task moves m to; or the key of a
// queue of another engine it goes to through src's outbox; or nil and a
// failure reason.
func (e *Engine) moveDestination(t *moveTask, src *queue, m *message) (*queue, api.QueueKey, string) {
	if t.destArn != "" {
		if d := e.queues[t.dest]; d != nil {
			return byGroup(d, e.ms.group(m))
		}
		// The bare code, as recorded: localstack test_sqs_move_task.snapshot.json
		// test_move_task_delete_destination_queue_while_running.
		return nil, api.QueueKey{}, failNonExistentQueue
	}
	if e.ms.dlqSource(m) == "" {
		// The text is replicated state, the same on every member of any
		// version: the MessageId is read from the payload, as a receive
		// reads it while it is applied.
		id := "(unreadable)"
		if p, err := readPayload(e.bodyStore(), e.ms, m); err == nil {
			id = e.ms.messageID(m, p.head).String()
		}
		return nil, api.QueueKey{}, "InvalidParameterValue: message " + id + " has no DeadLetterQueueSourceArn to return to; give a DestinationArn."
	}
	d := e.queueByARN(e.ms.dlqSource(m))
	if d == nil {
		if key, ok := api.QueueOfARN(e.ms.dlqSource(m), e.cfg.Region); ok {
			// A partition of the queue that left this engine is one of
			// the dead-letter queue's remote sources: the queue, whole,
			// is reached through the outbox.
			for k := range src.remoteSources {
				if k.Whole() == key {
					return nil, key, ""
				}
			}
		}
	}
	if d == nil || d == src {
		return nil, api.QueueKey{}, failNonExistentQueue
	}
	if d.fifo != src.fifo {
		return nil, api.QueueKey{}, "InvalidParameterValue: the source queue " + e.ms.dlqSource(m) + " is not of the dead-letter queue's type."
	}
	return byGroup(d, e.ms.group(m))
}

// byGroup returns d as the queue a task moves a message of group to, or,
// if d is a partition that does not hold the group, d's key to reach the
// queue through the outbox: the relay gives the message to the partition
// that holds its group (server/outbox_relay.go).
func byGroup(d *queue, group string) (*queue, api.QueueKey, string) {
	if d.ownsGroup(group) {
		return d, api.QueueKey{}, ""
	}
	return nil, d.key, ""
}

// moveMessage moves m from src to dst as a new arrival: it keeps its id,
// body, attributes, sent time and FIFO group and deduplication ids, starts
// a new retention period with a receive count of 0, gets a new sequence
// number in a FIFO destination, and bypasses the destination's
// deduplication.
func (e *Engine) moveMessage(src, dst *queue, m *message, now int64) {
	src.remove(m)
	e.cow.touch(m)
	m.vizChanges = 0
	e.ms.setRecv(m, recvState{})
	e.ms.setDLQSource(m, "")
	e.ms.setEnqueuedAt(m, now)
	m.visibleAt = now
	if dst.fifo {
		m.seq = dst.nextSeq(now)
	}
	dst.insert(m, now)
	e.wake(dst.key)
}
