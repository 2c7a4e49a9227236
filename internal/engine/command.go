package engine

import (
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// Command is one state change, in the order the log decided: a typed request
// together with everything its outcome may depend on that the engine must not
// decide for itself. The engine never reads a clock or draws a random number,
// so replaying the same commands always rebuilds the same state.
type Command struct {
	// Time is the command's timestamp in Unix nanoseconds, read by the leader
	// when the request arrived. Visibility timeouts, delays, retention,
	// deduplication and attempt-id intervals are all computed from it. The
	// engine treats time as never going backwards: a command older than the
	// last one applied is applied at the last one's time.
	Time int64
	// Caller is the account id of the authenticated caller. CreateQueue
	// creates queues in it, ListQueues lists its queues, GetQueueUrl looks
	// in it unless QueueOwnerAWSAccountId says otherwise.
	Caller string
	// Region is the region the request was made in (the one its signature
	// names), empty for the engine's own (Config.Region): CreateQueue
	// creates its queue there, and ListQueues and GetQueueUrl look there.
	// See api.QueueKey.
	Region string
	// Queue is the queue the request names by QueueUrl, already resolved by
	// the server; zero for actions that name no queue by URL.
	Queue api.QueueKey
	// Request is the validated request.
	Request api.Request
	// MessageIDs holds one fresh message id for each message the request
	// may create: one for SendMessage, one per entry for SendMessageBatch.
	MessageIDs []string
	// Entropy is randomness drawn by the leader, from which the engine
	// derives unguessable receipt handles and task handles.
	Entropy uint64
	// RecreateDelay and PurgeDelay are the server's settings of SQS's two
	// cool-downs (fifoq serve --recreate-delay and --purge-delay). They
	// travel in the command, like Time, rather than in the engine's
	// Config, so that a log replays to the same state whatever the
	// settings of the server that replays it, and every replica of a log
	// agrees. DeleteQueue reads RecreateDelay: the queue's name cannot be
	// used by CreateQueue for that long (QueueDeletedRecently). PurgeQueue
	// reads PurgeDelay: it is refused within that long of the queue's
	// previous purge (PurgeQueueInProgress). Zero means SQS's own 60
	// seconds, so that commands logged before the settings existed replay
	// as they were applied; a negative value turns the rule off.
	RecreateDelay time.Duration
	PurgeDelay    time.Duration
}

// cooldown returns the length of a cool-down a command carries: d, SQS's
// default when d is zero, and zero (no cool-down) when d is negative.
func cooldown(d, sqsDefault time.Duration) int64 {
	switch {
	case d == 0:
		return int64(sqsDefault)
	case d < 0:
		return 0
	}
	return int64(d)
}

// TickRequest is an internal request, never sent by clients: the server
// applies it periodically while message move tasks run (see
// Engine.HasActiveMoveTasks), so that tasks make progress at their rate.
//
// With Moves above 0 the command moves at most Moves messages over all
// running tasks together, oldest task first, and does nothing else; its
// result, a *TickResult, says whether a task is still behind its rate. The
// bound travels in the command, like the time, so that a log replays alike
// whatever the settings of the server that replays it; an older fifoq,
// which does not know the field, refuses such an entry instead of
// misapplying it. A tick without Moves is one logged by older fifoq and is
// applied as it was then: each task moves up to maxMovesPerApply messages,
// then time is applied to every queue and expired deletion records are
// dropped, however many.
type TickRequest struct {
	Moves int `json:"moves,omitempty"`
}

// DefaultTickMoves is the Moves the server puts in its ticks: like
// DefaultHousekeepLimit, a few milliseconds of the log's apply loop.
const DefaultTickMoves = 10_000

// TickResult is the result of a TickRequest.
type TickResult struct {
	// Behind is true when a running task has more messages due by the
	// command's time than the command could move: the server should
	// apply another tick soon rather than wait for the next period.
	Behind bool
}

// ActionTick names TickRequest. It is not an SQS action.
const ActionTick api.Action = "fifoq:Tick"

// Action implements api.Request.
func (*TickRequest) Action() api.Action { return ActionTick }
