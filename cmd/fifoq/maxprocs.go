package main

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime"
	"time"

	"go.uber.org/automaxprocs/maxprocs"
)

// maxProcsEvery is how often a server reads its CPU limit again, so that
// GOMAXPROCS follows a limit changed while it runs (a pod resized in
// place). Reading it parses a few files under /proc and /sys: tens of
// microseconds.
const maxProcsEvery = 5 * time.Second

// setMaxProcs runs the server on one P when its cgroup allows it one
// core or less, and returns what keeps that so while it runs
// (cpuLimitFollower.run). Go's own default (since Go 1.25) is the
// cgroup's CPU limit rounded up, but never below 2: a server held to a
// fraction of a core then runs two threads that hand its work to each
// other and spend its quota together, and measured so
// (docs/benchmarks.md, "GOMAXPROCS under a CPU limit below one core") a
// node spent about a third more CPU a message than on one P. At exactly
// one core, two Ps would still share one core's time. GOMAXPROCS set in
// the environment is kept as given, and nil returned.
func setMaxProcs(logger *slog.Logger) *cpuLimitFollower {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return nil
	}
	f := &cpuLimitFollower{logger: logger}
	before := runtime.GOMAXPROCS(0)
	cores, err := f.apply()
	if err != nil {
		logger.Warn("cannot read the CPU limit; GOMAXPROCS left at Go's default", "gomaxprocs", before, "err", err)
		return f
	}
	if now := runtime.GOMAXPROCS(0); now == 1 && before != 1 {
		logger.Info("GOMAXPROCS 1: the CPU limit is one core or less", "go_default", before, "cpu_limit", cores)
	}
	return f
}

// cpuLimitFollower keeps GOMAXPROCS at what the cgroup's CPU limit asks
// (maxProcsFor). Go's runtime follows a changing limit itself only while
// GOMAXPROCS is its own default, and its default never goes below 2; so
// while a limit is set, the follower owns GOMAXPROCS and reads the limit
// again every maxProcsEvery, and when the limit is lifted it gives
// GOMAXPROCS back to Go's default, which follows the machine from then
// on.
type cpuLimitFollower struct {
	logger *slog.Logger
	owned  bool // GOMAXPROCS was set from a limit, not Go's default
}

// apply reads the CPU limit and sets GOMAXPROCS from it; it returns the
// limit in cores, 0 for none.
func (f *cpuLimitFollower) apply() (float64, error) {
	var cores float64
	// maxprocs.Set reads the limit and sets GOMAXPROCS to what the
	// rounding returns; with no limit it changes nothing. Setting the
	// value GOMAXPROCS already has stops nothing (runtime.GOMAXPROCS
	// returns early), so a limit that did not change costs no pause.
	_, err := maxprocs.Set(maxprocs.Min(1), maxprocs.RoundQuotaFunc(func(q float64) int {
		cores = q
		return maxProcsFor(q)
	}))
	if err != nil {
		return 0, err
	}
	switch {
	case cores > 0:
		f.owned = true
	case f.owned:
		runtime.SetDefaultGOMAXPROCS()
		f.owned = false
	}
	return cores, nil
}

// run reads the limit again every maxProcsEvery until ctx ends, and logs
// each change of GOMAXPROCS it makes. A nil follower does nothing.
func (f *cpuLimitFollower) run(ctx context.Context) {
	if f == nil {
		return
	}
	tick := time.NewTicker(maxProcsEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		before := runtime.GOMAXPROCS(0)
		cores, err := f.apply()
		if err != nil {
			continue // the limit as last read stands
		}
		if now := runtime.GOMAXPROCS(0); now != before {
			f.logger.Info("GOMAXPROCS follows a changed CPU limit", "gomaxprocs", now, "was", before, "cpu_limit", cores)
		}
	}
}

// maxProcsFor is the GOMAXPROCS a CPU limit of quota cores asks: 1 at one
// core or less; else what Go's default makes of it: rounded up, no more
// than the CPUs there are.
func maxProcsFor(quota float64) int {
	if quota <= 1 {
		return 1
	}
	return min(int(math.Ceil(quota)), runtime.NumCPU())
}
