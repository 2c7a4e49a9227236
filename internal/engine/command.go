package engine

import "github.com/fifoq/fifoq/internal/api"

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
}

// TickRequest is an internal request, never sent by clients: the server
// applies it periodically while message move tasks run (see
// Engine.HasActiveMoveTasks), so that tasks make progress at their rate,
// and it lets the engine drop expired deduplication and attempt-id entries.
type TickRequest struct{}

// ActionTick names TickRequest. It is not an SQS action.
const ActionTick api.Action = "fifoq:Tick"

// Action implements api.Request.
func (*TickRequest) Action() api.Action { return ActionTick }
