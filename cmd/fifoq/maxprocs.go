package main

import (
	"log/slog"
	"math"
	"os"
	"runtime"

	"go.uber.org/automaxprocs/maxprocs"
)

// setMaxProcs runs the server on one P when its cgroup allows it one
// core or less. Go's own default (since Go 1.25) is the cgroup's CPU
// limit rounded up, but never below 2: a server held to a fraction of a
// core then runs two threads that hand its work to each other and spend
// its quota together, and measured so (docs/benchmarks.md, "GOMAXPROCS
// under a CPU limit below one core") a node spent about a third more CPU a
// message than on one P. At exactly one core, two Ps would still share
// one core's time. A limit above one core, none, or GOMAXPROCS set in the
// environment, leaves Go's default as it is, with its updates when the
// limit changes.
func setMaxProcs(logger *slog.Logger) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	before := runtime.GOMAXPROCS(0)
	if _, err := maxprocs.Set(maxprocs.Min(1), maxprocs.RoundQuotaFunc(maxProcsFor)); err != nil {
		logger.Warn("cannot read the CPU limit; GOMAXPROCS left at Go's default", "gomaxprocs", before, "err", err)
		return
	}
	if runtime.GOMAXPROCS(0) == 1 && before != 1 {
		logger.Info("GOMAXPROCS 1: the CPU limit is one core or less", "go_default", before)
		return
	}
	// maxprocs sets the value it computed even where it is Go's own; Go's
	// default is given back, so that it follows a limit that changes.
	runtime.SetDefaultGOMAXPROCS()
}

// maxProcsFor is the GOMAXPROCS a CPU limit of quota cores asks: 1 at one
// core or less; else what Go's default makes of it (rounded up, no more than
// the CPUs there are), which setMaxProcs leaves to Go.
func maxProcsFor(quota float64) int {
	if quota <= 1 {
		return 1
	}
	return min(int(math.Ceil(quota)), runtime.NumCPU())
}
