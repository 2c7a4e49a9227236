package historycheck

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Bisect finds the shortest prefix (by invocation) of group g's history
// that is not linearizable, operations still pending at its end counted as
// unanswered, and describes the operations that end it, one per line: a
// failing check's group made readable.
func Bisect(ops []Op, g string, cfg CheckConfig) []string {
	h := newChecked(ops, cfg)
	hist := groupHistories(ops, h.t0)[g]
	sort.Slice(hist, func(i, j int) bool { return hist[i].Call < hist[j].Call })
	model := modelConfig{dedupInterval: int64(cfg.DedupInterval), slack: int64(cfg.Slack)}.model()
	prefix := func(k int) []porcupine.Operation {
		cut := hist[k-1].Call
		var out []porcupine.Operation
		for _, op := range hist[:k] {
			if op.Return > cut {
				in := op.Input.(mInput)
				if in.kind == Receive {
					continue
				}
				o := op.Output.(mOutput)
				o.outcome, o.ret = Unknown, forever
				op.Output, op.Return = o, forever
			}
			out = append(out, op)
		}
		return out
	}
	lo, hi := 1, len(hist)
	if hi == 0 || porcupine.CheckOperations(model, prefix(hi)) {
		return []string{fmt.Sprintf("group %s: every prefix is linearizable", g)}
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperations(model, prefix(mid)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	lines := []string{fmt.Sprintf("group %s: the first %d of %d operations are not linearizable; the last ones:", g, lo, len(hist))}
	for _, op := range hist[max(0, lo-25):lo] {
		ret := "never"
		if op.Return < forever {
			ret = time.Duration(op.Return).String()
		}
		lines = append(lines, fmt.Sprintf("  [%v, %s] %s", time.Duration(op.Call), ret, describeOp(op.Input.(mInput), op.Output.(mOutput))))
	}
	return lines
}
