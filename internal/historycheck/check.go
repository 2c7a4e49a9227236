package historycheck

import (
	"strings"
	"time"
)

// CheckConfig tunes Check.
type CheckConfig struct {
	// DedupInterval is the queue's deduplication interval (5 minutes).
	DedupInterval time.Duration
	// Slack widens time comparisons, for the difference between the
	// test's and the servers' readings of one clock.
	Slack time.Duration
	// Timeout bounds porcupine's search per group; a group whose check
	// runs out of time is reported as unchecked, not as failed.
	Timeout time.Duration
	// DrainedAt, if set, is when the final drain found the queue empty:
	// every group's model must then hold no message.
	DrainedAt time.Time
	// VisualizeDir, if set, receives porcupine's HTML visualization of
	// each group that is not linearizable.
	VisualizeDir string
	// NoLinearizability skips the linearizability check, for a test that
	// asserts only other properties of a history it broke on purpose:
	// proving such a history's groups illegal can take porcupine its
	// Timeout for each of them, and gigabytes under the race detector.
	NoLinearizability bool
}

// Report is what Check found.
type Report struct {
	// Problems lists every violation found; empty when the history is good.
	Problems []string
	// Groups is how many message groups were checked for
	// linearizability, Unchecked how many of them porcupine gave up on.
	Groups, Unchecked int
}

// maxProblems bounds the problems of one kind a check reports.
const maxProblems = 10

// Check verifies a history that ended with a drain (every message left in
// the queue received and deleted, after every visibility timeout ran out).
// Each property has a function of its own; a problem's text starts with
// its kind:
//
//   - lost: every acknowledged send was delivered;
//   - undone delete: no message is delivered by a receive answered after
//     a delete of it was acknowledged (an acknowledged FIFO delete is
//     final: a stale or expired handle is refused, not acknowledged);
//   - duplicate: one deduplication id never becomes two messages inside
//     the deduplication interval;
//   - order: within a group, a message is first delivered no later than
//     any message sent after it, and one receive returns a group's
//     messages in order;
//   - double hold: no two receives certainly hold one message of a group,
//     or an earlier and a later one, at once (but for SQS's exception:
//     see doubleHolds);
//   - not linearizable: each group's history has a linearization that the
//     model of a FIFO group (model.go) accepts.
func Check(ops []Op, cfg CheckConfig) Report {
	h := newChecked(ops, cfg)
	var r Report
	// Each kind of problem (the text before the first colon) is reported
	// up to maxProblems times, so that one kind cannot hide another.
	perKind := map[string]int{}
	add := func(problems []string) {
		for _, p := range problems {
			kind, _, _ := strings.Cut(p, ":")
			if perKind[kind] < maxProblems {
				r.Problems = append(r.Problems, p)
			}
			perKind[kind]++
		}
	}
	for _, property := range []func(*checked) []string{lost, undoneDeletes, duplicates, order, doubleHolds} {
		add(property(h))
	}
	if cfg.NoLinearizability {
		return r
	}
	lin := linearizable(h)
	r.Groups, r.Unchecked = lin.groups, lin.unchecked
	add(lin.problems)
	return r
}

// checked is a history under check, with what several checks look up.
type checked struct {
	ops []Op
	cfg CheckConfig
	// t0 is the earliest invocation: reports count time from it.
	t0 time.Time
	// deliveries maps a MessageId to the acknowledged receives (indexes
	// in ops) that returned it.
	deliveries map[string][]int
}

func newChecked(ops []Op, cfg CheckConfig) *checked {
	h := &checked{ops: ops, cfg: cfg, deliveries: map[string][]int{}}
	for i, op := range ops {
		if h.t0.IsZero() || op.Invoke.Before(h.t0) {
			h.t0 = op.Invoke
		}
		if op.Kind == Receive && op.Outcome == OK {
			for _, m := range op.Msgs {
				h.deliveries[m.ID] = append(h.deliveries[m.ID], i)
			}
		}
	}
	return h
}

// at renders t for reports, as the time since t0.
func (h *checked) at(t time.Time) string {
	return t.Sub(h.t0).Round(time.Millisecond).String()
}

// acknowledged returns the operations of the kind the server acknowledged.
func (h *checked) acknowledged(kind Kind) []Op {
	var out []Op
	for _, op := range h.ops {
		if op.Kind == kind && op.Outcome == OK {
			out = append(out, op)
		}
	}
	return out
}
