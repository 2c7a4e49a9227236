package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
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
// the queue received and deleted, after every visibility timeout ran out):
//
//   - lost: every acknowledged send was delivered;
//   - undone delete: no message is delivered by a receive invoked after a
//     delete of it was acknowledged (an acknowledged FIFO delete is
//     final: a stale or expired handle is refused, not acknowledged);
//   - order: within a group, a message is first delivered no later than
//     any message sent after it;
//   - double hold: no receive takes a message of a group while another
//     receive certainly still holds that message or an earlier one;
//   - duplicate: one deduplication id never becomes two messages inside
//     the deduplication interval;
//   - linearizable: each group's history has a linearization that the
//     model of a FIFO group (model.go) accepts.
func Check(ops []Op, cfg CheckConfig) Report {
	var r Report
	// Each kind of problem (the text before the first colon) is reported
	// up to maxProblems times, so that one kind cannot hide another.
	perKind := map[string]int{}
	add := func(format string, args ...any) {
		p := fmt.Sprintf(format, args...)
		kind, _, _ := strings.Cut(p, ":")
		if perKind[kind] < maxProblems {
			r.Problems = append(r.Problems, p)
		}
		perKind[kind]++
	}
	var t0 time.Time
	for _, op := range ops {
		if t0.IsZero() || op.Invoke.Before(t0) {
			t0 = op.Invoke
		}
	}
	at := func(t time.Time) string { return t.Sub(t0).Round(time.Millisecond).String() }

	// Deliveries, by MessageId and by dedup id.
	type delivery struct {
		op  int
		msg Msg
	}
	byID := map[string][]delivery{}
	idsOf := map[string]map[string]time.Time{} // dedup → MessageId → first seen
	note := func(dedup, id string, when time.Time) {
		if id == "" {
			return
		}
		if idsOf[dedup] == nil {
			idsOf[dedup] = map[string]time.Time{}
		}
		if first, ok := idsOf[dedup][id]; !ok || when.Before(first) {
			idsOf[dedup][id] = when
		}
	}
	for i, op := range ops {
		if op.Outcome != OK {
			continue
		}
		switch op.Kind {
		case Receive:
			for _, m := range op.Msgs {
				byID[m.ID] = append(byID[m.ID], delivery{i, m})
				note(m.Dedup, m.ID, op.Return)
			}
		case Send:
			for _, m := range op.Msgs {
				note(m.Dedup, m.ID, op.Return)
			}
		}
	}

	// Lost.
	for _, op := range ops {
		if op.Kind != Send || op.Outcome != OK {
			continue
		}
		for _, m := range op.Msgs {
			if len(byID[m.ID]) == 0 {
				add("lost: %s of group %s (MessageId %s) acknowledged at %s, never delivered", m.Dedup, m.Group, m.ID, at(op.Return))
			}
		}
	}

	// Undone deletes.
	for _, op := range ops {
		if op.Kind != Delete || op.Outcome != OK {
			continue
		}
		m := op.Msgs[0]
		for _, d := range byID[m.ID] {
			if rcv := ops[d.op]; rcv.Invoke.After(op.Return) {
				add("undone delete: %s of group %s delivered by client %d's receive invoked at %s, after its delete was acknowledged at %s",
					m.Dedup, m.Group, rcv.Client, at(rcv.Invoke), at(op.Return))
				break
			}
		}
	}

	// Duplicates.
	dedups := make([]string, 0, len(idsOf))
	for d := range idsOf {
		dedups = append(dedups, d)
	}
	sort.Strings(dedups)
	for _, d := range dedups {
		var seen []time.Time
		for _, when := range idsOf[d] {
			seen = append(seen, when)
		}
		sort.Slice(seen, func(i, j int) bool { return seen[i].Before(seen[j]) })
		for i := 1; i < len(seen); i++ {
			if seen[i].Sub(seen[0]) < cfg.DedupInterval {
				add("duplicate: dedup id %s became %d messages within the deduplication interval", d, len(idsOf[d]))
				break
			}
		}
	}

	// Order: a message's first delivery must not come strictly after the
	// first delivery of a later message of its group.
	type first struct {
		op  int
		msg Msg
	}
	firsts := map[string]map[int]first{} // group → seq → first delivery
	for i, op := range ops {
		if op.Kind != Receive || op.Outcome != OK {
			continue
		}
		for _, m := range op.Msgs {
			g := firsts[m.Group]
			if g == nil {
				g = map[int]first{}
				firsts[m.Group] = g
			}
			if f, ok := g[m.Seq]; !ok || op.Return.Before(ops[f.op].Return) {
				g[m.Seq] = first{i, m}
			}
		}
	}
	groups := make([]string, 0, len(firsts))
	for g := range firsts {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		seqs := make([]int, 0, len(firsts[g]))
		for s := range firsts[g] {
			seqs = append(seqs, s)
		}
		sort.Ints(seqs)
		// For each message, the earliest answer of a first delivery of any
		// later message: the message's own first delivery must be invoked
		// before it.
		earliestLater := time.Time{}
		var laterSeq int
		for i := len(seqs) - 1; i >= 0; i-- {
			f := firsts[g][seqs[i]]
			rcv := ops[f.op]
			if !earliestLater.IsZero() && rcv.Invoke.After(earliestLater) {
				add("order: group %s: message %d first delivered by a receive invoked at %s, after message %d was delivered at %s",
					g, seqs[i], at(rcv.Invoke), laterSeq, at(earliestLater))
			}
			if earliestLater.IsZero() || rcv.Return.Before(earliestLater) {
				earliestLater, laterSeq = rcv.Return, seqs[i]
			}
		}
	}
	// Within one receive, a group's messages come in order.
	for _, op := range ops {
		if op.Kind != Receive || op.Outcome != OK {
			continue
		}
		last := map[string]int{}
		for _, m := range op.Msgs {
			if prev, ok := last[m.Group]; ok && m.Seq <= prev {
				add("order: group %s: one receive returned message %d after message %d", m.Group, m.Seq, prev)
			}
			last[m.Group] = m.Seq
		}
	}

	for _, p := range doubleHolds(ops, cfg.Slack) {
		add("%s", p)
	}

	// Linearizability, group by group.
	mc := modelConfig{dedupInterval: int64(cfg.DedupInterval), slack: int64(cfg.Slack)}
	model := mc.model()
	hist := groupHistories(ops, t0)
	if !cfg.DrainedAt.IsZero() {
		at := int64(cfg.DrainedAt.Sub(t0))
		for g := range hist {
			hist[g] = append(hist[g], porcupine.Operation{Input: mInput{kind: drained, invoke: at}, Call: at, Output: mOutput{ret: at, outcome: OK}, Return: at})
		}
	}
	names := make([]string, 0, len(hist))
	for g := range hist {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		r.Groups++
		res, info := porcupine.CheckOperationsVerbose(model, hist[g], cfg.Timeout)
		switch res {
		case porcupine.Illegal:
			msg := fmt.Sprintf("not linearizable: group %s (%d operations)", g, len(hist[g]))
			if cfg.VisualizeDir != "" {
				path := filepath.Join(cfg.VisualizeDir, "group-"+g+".html")
				if err := os.MkdirAll(cfg.VisualizeDir, 0o755); err == nil {
					if err := porcupine.VisualizePath(model, info, path); err == nil {
						msg += "; visualization in " + path
					}
				}
			}
			add("%s", msg)
		case porcupine.Unknown:
			r.Unchecked++
		}
	}
	return r
}

// doubleHolds finds receives that took a message of a group while an
// earlier receive certainly still held that message or an earlier one of
// the group: the earlier receive answered before the later one was
// invoked, had not released (deleted or given back) the message when the
// later one answered, and its visibility timeout had not run out by then.
func doubleHolds(ops []Op, slack time.Duration) []string {
	// released maps a message's handle to the earliest invocation of a
	// delete or release with it.
	released := map[string]time.Time{}
	for _, op := range ops {
		if op.Kind != Delete && op.Kind != Release {
			continue
		}
		h := op.Msgs[0].Handle
		if t, ok := released[h]; !ok || op.Invoke.Before(t) {
			released[h] = op.Invoke
		}
	}
	type recv struct {
		op   Op
		msgs []Msg
	}
	byGroup := map[string][]recv{}
	for _, op := range ops {
		if op.Kind != Receive || op.Outcome != OK {
			continue
		}
		per := map[string][]Msg{}
		for _, m := range op.Msgs {
			per[m.Group] = append(per[m.Group], m)
		}
		for g, ms := range per {
			byGroup[g] = append(byGroup[g], recv{op, ms})
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []string
	for _, g := range groups {
		list := byGroup[g]
		sort.Slice(list, func(i, j int) bool { return list[i].op.Invoke.Before(list[j].op.Invoke) })
		for i, a := range list {
			expires := a.op.Invoke.Add(a.op.Visibility)
			for _, b := range list[i+1:] {
				if !b.op.Invoke.After(a.op.Return) {
					continue // concurrent: either may have come first
				}
				if !b.op.Return.Add(slack).Before(expires) {
					continue
				}
				maxB := -1
				for _, m := range b.msgs {
					maxB = max(maxB, m.Seq)
				}
				for _, m := range a.msgs {
					rel, ok := released[m.Handle]
					if ok && rel.Before(b.op.Return) {
						continue
					}
					if m.Seq <= maxB {
						out = append(out, fmt.Sprintf("double hold: group %s: client %d's receive (answered %v) held message %d when client %d's receive took messages up to %d",
							g, a.op.Client, a.op.Return.Format("15:04:05.000"), m.Seq, b.op.Client, maxB))
						break
					}
				}
			}
		}
	}
	return out
}

// groupHistories splits the history into one porcupine history per group.
// Receives and deletes of messages never sent by a recorded send (none in
// the test) are kept: the model refuses them.
func groupHistories(ops []Op, t0 time.Time) map[string][]porcupine.Operation {
	out := map[string][]porcupine.Operation{}
	ns := func(t time.Time) int64 { return int64(t.Sub(t0)) }
	for _, op := range ops {
		call := ns(op.Invoke)
		ret := int64(forever)
		if op.Outcome != Unknown {
			ret = ns(op.Return)
		}
		per := map[string][]Msg{}
		var order []string
		for _, m := range op.Msgs {
			if _, ok := per[m.Group]; !ok {
				order = append(order, m.Group)
			}
			per[m.Group] = append(per[m.Group], m)
		}
		for _, g := range order {
			ms := per[g]
			in := mInput{kind: op.Kind, invoke: call, client: op.Client}
			o := mOutput{ret: ret, outcome: op.Outcome}
			switch op.Kind {
			case Send:
				for _, m := range ms {
					in.dedups = append(in.dedups, m.Dedup)
					o.ids = append(o.ids, m.ID)
				}
			case Receive:
				if op.Outcome != OK {
					continue // see the model's comment
				}
				in.vis = int64(op.Visibility)
				o.got = ms
			case Delete, Release:
				in.dedup, in.handle = ms[0].Dedup, ms[0].Handle
				if op.Kind == Release && op.Outcome == Refused && op.Attempts > 1 {
					// An earlier attempt may have made the message visible
					// and another receive taken it since, so that the
					// retry found its handle expired: the release may have
					// taken effect, before the final answer. (A delete
					// has no such case: a retry of one that took effect
					// finds the message gone, which succeeds.)
					o.outcome = Unknown
				}
			}
			out[g] = append(out[g], porcupine.Operation{ClientId: max(op.Client, 0), Input: in, Call: call, Output: o, Return: ret})
		}
	}
	return out
}
