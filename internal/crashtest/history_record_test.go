package crashtest

import (
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/historycheck"
)

// history is what the crash test's clients saw: every operation, recorded
// as historycheck's records and checked by historycheck.Check, the
// failover test's checker (lost, undone deletes, duplicates, group order,
// double holds, linearizability), and what only the crash test looks at:
// deliveries whose body is not the one sent.
type history struct {
	historycheck.History

	// pad is the length the run's bodies are padded to (crashBody).
	pad int

	mu sync.Mutex
	// wrongBodies lists deliveries whose body was not the one sent.
	wrongBodies []string
	// drainedAt is when the final drain found the queue empty.
	drainedAt time.Time
	// timeout, if not 0, is check's bound on porcupine's search of one
	// group, in place of checkTimeout.
	timeout time.Duration
}

func newHistory(pad int) *history { return &history{pad: pad} }

// received records an acknowledged receive, op without its messages, and
// returns each message of its answer as the history names it; ok[i] is
// false for a message whose body names no message of the test (a wrong
// body, recorded as such).
func (h *history) received(op historycheck.Op, msgs []types.Message) (got []historycheck.Msg, ok []bool) {
	got, ok = make([]historycheck.Msg, len(msgs)), make([]bool, len(msgs))
	for i, m := range msgs {
		body, id := aws.ToString(m.Body), aws.ToString(m.MessageId)
		var p, s int
		if _, err := fmt.Sscanf(body, "crash p=%d s=%d", &p, &s); err != nil {
			h.wrongBody("wrong body: MessageId %s delivered with a body that names no message of the test: %.60q", id, body)
			continue
		}
		g := groupOf(p, s)
		got[i], ok[i] = testMsg(p, s, g), true
		got[i].ID, got[i].Handle = id, aws.ToString(m.ReceiptHandle)
		if body != crashBody(p, s, g, h.pad) {
			h.wrongBody("wrong body: %s of group %s (MessageId %s) delivered with a body of %d bytes that is not the one sent", got[i].Dedup, g, id, len(body))
		}
		op.Msgs = append(op.Msgs, got[i])
	}
	h.Add(op)
	return got, ok
}

// wrongBody records a delivery whose body is not the one sent.
func (h *history) wrongBody(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wrongBodies = append(h.wrongBodies, fmt.Sprintf(format, args...))
}

// drained records that the final drain found the queue empty at t.
func (h *history) drained(t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drainedAt = t
}

// checkTimeout bounds porcupine's search of one group's history.
const checkTimeout = time.Minute

// quickCheckTimeout is checkTimeout in the first tier. A group whose
// history has many operations without an answer can take porcupine up to
// the whole minute, its search growing by about 100 MB a second under
// -race: bounded so, a first-tier run stays within a laptop's memory. A
// group the search gives up on is reported unchecked, not passed; the
// second tier checks it in full.
const quickCheckTimeout = 5 * time.Second

// check verifies the history after the final drain: every body delivered
// is the one sent, and historycheck.Check's properties. Slack is 0: the
// test and the server read one clock, and the server stamps an operation
// no earlier than the test's reading before its request.
func (h *history) check() historycheck.Report { return h.checkWithout(false) }

// checkWithout is check, without the linearizability check if noLin.
func (h *history) checkWithout(noLin bool) historycheck.Report {
	h.mu.Lock()
	wrong, drainedAt := append([]string(nil), h.wrongBodies...), h.drainedAt
	h.mu.Unlock()
	timeout := h.timeout
	if timeout == 0 {
		timeout = checkTimeout
	}
	r := historycheck.Check(h.Ops(), historycheck.CheckConfig{DedupInterval: 5 * time.Minute, Timeout: timeout, DrainedAt: drainedAt,
		NoLinearizability: noLin})
	r.Problems = append(wrong, r.Problems...)
	return r
}

// sent is how many messages the server acknowledged.
func (h *history) sent() int {
	sent, _, _, _ := historycheck.Counts(h.Ops())
	return sent
}

func (h *history) summary() string {
	sent, delivered, deleted, unknown := historycheck.Counts(h.Ops())
	return fmt.Sprintf("%d sends acknowledged, %d deliveries, %d deletes acknowledged, %d operations without an answer", sent, delivered, deleted, unknown)
}
