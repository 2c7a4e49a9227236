package historycheck

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// linearized is what the linearizability check found.
type linearized struct {
	groups, unchecked int
	problems          []string
}

// linearizable: each group's history, ended by the drain if the history
// has one, has a linearization that the model of a FIFO group (model.go)
// accepts. A group whose search runs out of cfg.Timeout is counted as
// unchecked, not as a problem.
func linearizable(h *checked) linearized {
	var r linearized
	model := modelConfig{dedupInterval: int64(h.cfg.DedupInterval), slack: int64(h.cfg.Slack)}.model()
	hist := groupHistories(h.ops, h.t0)
	if !h.cfg.DrainedAt.IsZero() {
		at := int64(h.cfg.DrainedAt.Sub(h.t0))
		for g := range hist {
			hist[g] = append(hist[g], porcupine.Operation{Input: mInput{kind: drained, invoke: at}, Call: at, Output: mOutput{ret: at, outcome: OK}, Return: at})
		}
	}
	for _, g := range sortedKeys(hist) {
		r.groups++
		res, info := porcupine.CheckOperationsVerbose(model, hist[g], h.cfg.Timeout)
		switch res {
		case porcupine.Illegal:
			msg := fmt.Sprintf("not linearizable: group %s (%d operations)", g, len(hist[g]))
			if dir := h.cfg.VisualizeDir; dir != "" {
				path := filepath.Join(dir, "group-"+g+".html")
				if err := os.MkdirAll(dir, 0o755); err == nil {
					if err := porcupine.VisualizePath(model, info, path); err == nil {
						msg += "; visualization in " + path
					}
				}
			}
			r.problems = append(r.problems, msg)
		case porcupine.Unknown:
			r.unchecked++
		}
	}
	return r
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
