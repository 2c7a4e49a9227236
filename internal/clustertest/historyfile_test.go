package clustertest

import (
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

var flagCheckHistory = flag.String("cluster.check-history", "", "a history written by -cluster.history-out, for TestCheckHistoryFile to check again")

// savedHistory is a run's history as -cluster.history-out writes it.
type savedHistory struct {
	DrainedAt time.Time
	Ops       []Op
}

func writeHistory(path string, ops []Op, drainedAt time.Time) error {
	b, err := json.Marshal(savedHistory{DrainedAt: drainedAt, Ops: ops})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// TestCheckHistoryFile checks a saved history again (with
// -cluster.check-history=FILE), so that a failure of the failover test can
// be studied without running the cluster again; with -cluster.visualize
// it also writes porcupine's view of each group that fails.
func TestCheckHistoryFile(t *testing.T) {
	if *flagCheckHistory == "" {
		t.Skip("no -cluster.check-history file given")
	}
	b, err := os.ReadFile(*flagCheckHistory)
	if err != nil {
		t.Fatal(err)
	}
	var h savedHistory
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	r := Check(h.Ops, CheckConfig{DedupInterval: 5 * time.Minute, Slack: 20 * time.Millisecond, Timeout: time.Minute,
		DrainedAt: h.DrainedAt, VisualizeDir: *flagVisualize})
	if len(r.Problems) > 0 {
		t.Errorf("%d operations; problems:\n  %s", len(h.Ops), strings.Join(r.Problems, "\n  "))
	}
	if *flagBisect != "" {
		bisectGroup(t, h.Ops, *flagBisect)
	}
}

var flagBisect = flag.String("cluster.bisect", "", "with -cluster.check-history: a group whose shortest failing prefix TestCheckHistoryFile prints")

// bisectGroup finds the shortest prefix (by invocation) of group g's
// history that is not linearizable, operations still pending at its end
// counted as unanswered, and logs the operations that end it.
func bisectGroup(t *testing.T, ops []Op, g string) {
	var t0 time.Time
	for _, op := range ops {
		if t0.IsZero() || op.Invoke.Before(t0) {
			t0 = op.Invoke
		}
	}
	hist := groupHistories(ops, t0)[g]
	sort.Slice(hist, func(i, j int) bool { return hist[i].Call < hist[j].Call })
	model := modelConfig{dedupInterval: int64(5 * time.Minute), slack: int64(20 * time.Millisecond)}.model()
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
	if porcupine.CheckOperations(model, prefix(hi)) {
		t.Logf("group %s: every prefix is linearizable", g)
		return
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperations(model, prefix(mid)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	t.Logf("group %s: the first %d of %d operations are not linearizable; the last ones:", g, lo, len(hist))
	for _, op := range hist[max(0, lo-25):lo] {
		ret := "never"
		if op.Return < forever {
			ret = time.Duration(op.Return).String()
		}
		t.Logf("  [%v, %s] %s", time.Duration(op.Call), ret, describeOp(op.Input.(mInput), op.Output.(mOutput)))
	}
}
