package clustertest

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/historycheck"
)

var flagCheckHistory = flag.String("cluster.check-history", "", "a history written by -cluster.history-out, for TestCheckHistoryFile to check again")

// savedHistory is a run's history as -cluster.history-out writes it.
type savedHistory struct {
	DrainedAt time.Time
	Ops       []historycheck.Op
}

func writeHistory(path string, ops []historycheck.Op, drainedAt time.Time) error {
	b, err := json.Marshal(savedHistory{DrainedAt: drainedAt, Ops: ops})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// TestCheckHistoryFile checks a saved history again (with
// -cluster.check-history=FILE), so that a failure of the failover test can
// be studied without running the cluster again; with -cluster.visualize
// it also writes porcupine's view of each group that fails, and with
// -cluster.bisect=GROUP it logs the shortest failing prefix of a group.
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
	cfg := historycheck.CheckConfig{DedupInterval: 5 * time.Minute, Slack: 20 * time.Millisecond, Timeout: time.Minute,
		DrainedAt: h.DrainedAt, VisualizeDir: *flagVisualize}
	r := historycheck.Check(h.Ops, cfg)
	if len(r.Problems) > 0 {
		t.Errorf("%d operations; problems:\n  %s", len(h.Ops), strings.Join(r.Problems, "\n  "))
	}
	if *flagBisect != "" {
		for _, line := range historycheck.Bisect(h.Ops, *flagBisect, cfg) {
			t.Log(line)
		}
	}
}

var flagBisect = flag.String("cluster.bisect", "", "with -cluster.check-history: a group whose shortest failing prefix TestCheckHistoryFile prints")
