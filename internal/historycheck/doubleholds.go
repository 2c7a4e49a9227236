package historycheck

import (
	"fmt"
	"sort"
	"time"
)

// hold is one message a receive took. The receive certainly holds it from
// its answer until a delete or release with its handle is first invoked
// (acknowledged or not: it may take effect at once), or until its
// visibility timeout, counted from the receive's invocation (the server
// stamps the receive no earlier), runs out.
type hold struct {
	op       int // the receive, an index in the history
	msg      Msg
	invoke   time.Time
	answered time.Time
	released time.Time // zero if the message was never deleted or released
	expires  time.Time
}

// heldAt reports whether the hold certainly lasts at t.
func (x hold) heldAt(t time.Time, slack time.Duration) bool {
	return (x.released.IsZero() || t.Before(x.released)) && t.Add(slack).Before(x.expires)
}

// taken names a message of a group taken by one receive.
type taken struct {
	op    int
	group string
	seq   int
}

// doubleHolds: a FIFO group has one holder at a time. Two holds of a group
// by different receives are in force at once when the later-answered one
// was invoked after the other's answer and answered while the other
// certainly lasted (it took its messages while the other held), or was
// answered while both certainly lasted. Two such holds break the rule if
// they hold the same message, or an earlier message and a later one whose
// receive did not take the earlier one too. That last case is SQS's
// exception (recorded, and followed by the engine: see fifoGroup): a
// consumer that gives back the head of its group with
// ChangeMessageVisibility 0 while it holds later messages lets another
// receive take that head, so the holder of the later messages took the
// earlier one too. One problem is reported per pair of receives.
func doubleHolds(h *checked) []string {
	byGroup, took := holdsByGroup(h)
	var out []string
	for _, g := range sortedKeys(byGroup) {
		list := byGroup[g]
		reported := map[[2]int]bool{}
		for i, x := range list {
			for _, y := range list[i+1:] {
				if !x.heldAt(y.answered, h.cfg.Slack) {
					break // nor at any later answer
				}
				pair := [2]int{min(x.op, y.op), max(x.op, y.op)}
				if x.op == y.op || reported[pair] {
					continue
				}
				if !y.invoke.After(x.answered) && !y.heldAt(y.answered, h.cfg.Slack) {
					continue
				}
				lo, hi := x, y
				if y.msg.Seq < x.msg.Seq {
					lo, hi = y, x
				}
				if x.msg.Seq != y.msg.Seq && took[taken{hi.op, g, lo.msg.Seq}] {
					continue
				}
				reported[pair] = true
				a, b := h.ops[x.op], h.ops[y.op]
				out = append(out, fmt.Sprintf("double hold: group %s: client %d's receive (answered at %s) held message %d while client %d's receive (invoked at %s, answered at %s) held message %d",
					g, a.Client, h.at(x.answered), x.msg.Seq, b.Client, h.at(y.invoke), h.at(y.answered), y.msg.Seq))
			}
		}
	}
	return out
}

// holdsByGroup lists every acknowledged receive's holds by group, in the
// order of their receives' answers, and which messages each receive took.
func holdsByGroup(h *checked) (map[string][]hold, map[taken]bool) {
	// released maps a handle to the earliest invocation of a delete or
	// release with it.
	released := map[string]time.Time{}
	for _, op := range h.ops {
		if op.Kind != Delete && op.Kind != Release {
			continue
		}
		hd := op.Msgs[0].Handle
		if t, ok := released[hd]; !ok || op.Invoke.Before(t) {
			released[hd] = op.Invoke
		}
	}
	byGroup := map[string][]hold{}
	took := map[taken]bool{}
	for i, op := range h.ops {
		if op.Kind != Receive || op.Outcome != OK {
			continue
		}
		for _, m := range op.Msgs {
			byGroup[m.Group] = append(byGroup[m.Group], hold{op: i, msg: m, invoke: op.Invoke, answered: op.Return,
				released: released[m.Handle], expires: op.Invoke.Add(op.Visibility)})
			took[taken{i, m.Group, m.Seq}] = true
		}
	}
	for _, list := range byGroup {
		sort.SliceStable(list, func(i, j int) bool { return list[i].answered.Before(list[j].answered) })
	}
	return byGroup, took
}
