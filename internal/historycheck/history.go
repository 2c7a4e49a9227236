package historycheck

import (
	"sync"
	"time"
)

// Kind is what an operation asked of the queue.
type Kind int

// The operations a test records.
const (
	// Send is SendMessage or SendMessageBatch: Msgs are the messages sent.
	Send Kind = iota
	// Receive is ReceiveMessage: Msgs are the messages returned, with
	// their receipt handles.
	Receive
	// Delete is DeleteMessage of Msgs[0] with Msgs[0].Handle.
	Delete
	// Release is ChangeMessageVisibility of Msgs[0] to 0 with Msgs[0].Handle.
	Release
)

// String names the kind for reports.
func (k Kind) String() string {
	switch k {
	case Send:
		return "send"
	case Receive:
		return "receive"
	case Delete:
		return "delete"
	case Release:
		return "release"
	}
	return "?"
}

// Outcome is what the client learnt of an operation.
type Outcome int

// The outcomes of an operation.
const (
	// Unknown: no definitive answer (an error, a timeout, the run's end).
	// The operation may have taken effect, at any time after its invocation.
	Unknown Outcome = iota
	// OK: the server acknowledged it.
	OK
	// Refused: the server answered a definitive error (a FIFO queue's
	// "receipt handle has expired"), so it took no effect.
	Refused
)

// String names the outcome for reports.
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	}
	return "unknown"
}

// Msg is one message of the test. Dedup is its deduplication id, unique to
// the message, so it names the message whatever MessageId the server gave
// it; Seq is its place in its group (each group has one producer, which
// sends its messages one request after another).
type Msg struct {
	Group  string
	Dedup  string
	Seq    int
	ID     string // MessageId, once the server answered one
	Handle string // receipt handle: of a receive's delivery, or the one a delete or release used
}

// Op is one logical operation: every attempt of one request, retried with
// the same ids until the server answered definitively. A retried send
// carries the same deduplication ids, a retried receive the same
// ReceiveRequestAttemptId, a retried delete or release the same receipt
// handle, so the attempts together take effect at most once, at some
// moment between the first attempt's invocation and the last one's answer.
// An operation that never got a definitive answer is Unknown, and may take
// effect any time after Invoke.
type Op struct {
	Kind     Kind
	Client   int // the producer's or consumer's number
	Invoke   time.Time
	Return   time.Time // zero when Outcome is Unknown
	Attempts int
	Outcome  Outcome
	Err      string // the last attempt's error, if any
	Msgs     []Msg
	// Visibility is the visibility timeout a receive asked for.
	Visibility time.Duration
	// AttemptID is a receive's ReceiveRequestAttemptId.
	AttemptID string
	// Nodes lists the nodes the attempts went to, for reports.
	Nodes []string
}

// History collects operations from many goroutines.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records a finished (or abandoned) operation.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Ops returns a copy of the operations recorded so far.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Counts summarizes the history: acknowledged sends (messages),
// deliveries, acknowledged deletes and unknown operations.
func Counts(ops []Op) (sent, delivered, deleted, unknown int) {
	for _, op := range ops {
		if op.Outcome == Unknown {
			unknown++
			continue
		}
		if op.Outcome != OK {
			continue
		}
		switch op.Kind {
		case Send:
			sent += len(op.Msgs)
		case Receive:
			delivered += len(op.Msgs)
		case Delete:
			deleted++
		}
	}
	return
}
