//go:build linux

package replog

import (
	"bufio"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	idleGroups   = flag.String("idle.groups", "1,16,64", "numbers of Raft groups BenchmarkIdleGroups runs, comma separated")
	idleWindow   = flag.Duration("idle.window", 20*time.Second, "how long BenchmarkIdleGroups measures the idle groups' CPU")
	idleProfile  = flag.String("idle.cpuprofile", "", "write a CPU profile of each idle window to this path, the benchmark's name appended")
	idleCoalesce = flag.Bool("idle.coalesce", true, "BenchmarkIdleShards: the shards' heartbeats to each peer go coalesced (beats.go), as fifoq's do")
	idleShared   = flag.Bool("idle.shared", false, "BenchmarkIdleShards: each node's shards keep their entries in one shared log (SharedLog), as fifoq's do")
)

// BenchmarkIdleGroups measures what an idle Raft group costs as fifoq runs
// one today, to be the baseline of a cluster of many groups: for each
// count in -idle.groups it opens that many 3-member groups in this one
// process (every member a whole durable log, OpenRaft with its own data
// dir, body store, port and connections, as three nodes would each open
// one), elects their leaders, creates a FIFO queue and sends one message
// in each, lets them settle for 5 s, and then measures the process over
// -idle.window while nothing is asked of them. It reports, per member
// (a replica: three per group), the goroutines, the Go heap in use after a
// collection, the resident memory, all as growth over the process before
// the groups, and the CPU time (user and system) per second of idleness.
// It asserts nothing; the figures go in docs/benchmarks.md.
//
//	go test ./internal/replog -run '^$' -bench IdleGroups -benchtime 1x
func BenchmarkIdleGroups(b *testing.B) {
	for _, field := range strings.Split(*idleGroups, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			b.Fatalf("-idle.groups: %q is not a count", field)
		}
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for range b.N {
				measureIdleGroups(b, n).report(b, 3*n)
			}
		})
	}
}

// BenchmarkIdleShards is BenchmarkIdleGroups for shards as fifoq runs them
// (shard.go): three nodes' first groups in this one process, and beside
// each, for each count in -idle.groups, that many shards, every shard a
// Raft group of three replicas (one a node) whose traffic goes over the
// one session each pair of nodes keeps, as a cluster run with --shards
// does, once they have been idle for idleAfter and slowed their
// heartbeats. The first groups are part of the baseline; the figures are
// per shard replica.
//
// -idle.shared gives each node's shards one shared log, as fifoq's have.
//
//	go test ./internal/replog -run '^$' -bench IdleShards -benchtime 1x [-idle.shared]
func BenchmarkIdleShards(b *testing.B) {
	for _, field := range strings.Split(*idleGroups, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			b.Fatalf("-idle.groups: %q is not a count", field)
		}
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			for range b.N {
				measureIdleShards(b, n).report(b, 3*n)
			}
		})
	}
}

func measureIdleShards(b *testing.B, n int) idleCost {
	coalesceBeats = *idleCoalesce
	b.Cleanup(func() { coalesceBeats = true })
	quiet := slog.New(slog.DiscardHandler)
	base := startClusterWith(b, 3, nil, func(cfg *RaftConfig) { cfg.Logger = quiet })
	waitLeader(b, base)
	var replicas []Peer
	nodes := make([]*shardNode, len(base))
	shared := make([]*SharedLog, len(base))
	for i, nd := range base {
		replicas = append(replicas, Peer{ID: nd.id, Addr: nd.cfg.Cluster.RaftAddr})
		nodes[i] = &shardNode{testNode: nd}
		if *idleShared {
			shared[i] = openSharedTest(b, b.TempDir(), 0) // closed after the shards (cleanups run last first)
		}
	}
	b.Cleanup(func() {
		for _, nd := range nodes {
			nd.close()
		}
	})
	time.Sleep(2 * time.Second)
	// The first groups' own idle CPU is measured first, and taken off.
	baseCPU0, baseStart := processCPU(), time.Now()
	time.Sleep(5 * time.Second)
	baseRate := float64(processCPU()-baseCPU0) / time.Since(baseStart).Seconds()
	before := processFigures(b)
	for i, nd := range nodes {
		nd.openShardsWith(b, n, replicas, func(cfg *RaftConfig) { cfg.Logger, cfg.sharedLog = quiet, shared[i] })
	}
	c := newClock()
	for id := 1; id <= n; id++ {
		leader := shardLeader(b, nodes, id)
		createFIFO(b, leader, c)
		send(b, leader, c, 0)
	}
	// Past idleAfter, so that what is measured is an idle shard's pace
	// (pace.go).
	time.Sleep(idleAfter + 5*time.Second)
	var frames0, beats0 uint64
	for _, nd := range nodes {
		frames0 += nd.shards[0].cluster.mux.sessions.beats.frames.Load()
		beats0 += nd.shards[0].cluster.mux.sessions.beats.beats.Load()
	}
	cost := measureIdleWindow(b, before)
	frames, beats := -frames0, -beats0
	for _, nd := range nodes {
		frames += nd.shards[0].cluster.mux.sessions.beats.frames.Load()
		beats += nd.shards[0].cluster.mux.sessions.beats.beats.Load()
	}
	b.Logf("%d heartbeats in %d frames", beats, frames)
	b.ReportMetric(float64(beats)/idleWindow.Seconds()/float64(3*n), "coalesced-beats/s/replica")
	if frames > 0 {
		b.ReportMetric(float64(beats)/float64(frames), "beats/frame")
	}
	for id := 1; id <= n; id++ {
		var logs []*Raft
		for _, nd := range nodes {
			logs = append(logs, nd.shards[id-1])
		}
		checkOneLeader(b, fmt.Sprintf("shard %d", id), logs)
	}
	cost.cpuPerSecond = max(cost.cpuPerSecond-time.Duration(baseRate), 0)
	return cost
}

// idleCost is what a set of idle groups adds to the process.
type idleCost struct {
	goroutines, heap, rss float64
	cpuPerSecond          time.Duration
}

// report reports c per replica, of replicas.
func (c idleCost) report(b *testing.B, replicas int) {
	n := float64(replicas)
	b.ReportMetric(c.goroutines/n, "goroutines/replica")
	b.ReportMetric(c.heap/n/(1<<20), "heap-MiB/replica")
	b.ReportMetric(c.rss/n/(1<<20), "rss-MiB/replica")
	b.ReportMetric(c.cpuPerSecond.Seconds()*1000/n, "cpu-ms/s/replica")
}

func measureIdleGroups(b *testing.B, n int) idleCost {
	before := processFigures(b)
	quiet := slog.New(slog.DiscardHandler)
	var groups [][]*testNode
	for range n {
		nodes := startClusterWith(b, 3, nil, func(cfg *RaftConfig) { cfg.Logger = quiet })
		groups = append(groups, nodes)
	}
	c := newClock()
	for _, nodes := range groups {
		leader := waitLeader(b, nodes)
		createFIFO(b, leader.log, c)
		send(b, leader.log, c, 0)
	}
	time.Sleep(5 * time.Second)
	cost := measureIdleWindow(b, before)
	// Every group must still be whole: a group that lost its leader in
	// the window would have been measured electing, not idle.
	for i, nodes := range groups {
		var logs []*Raft
		for _, nd := range nodes {
			logs = append(logs, nd.log)
		}
		checkOneLeader(b, fmt.Sprintf("group %d", i), logs)
	}
	return cost
}

// measureIdleWindow measures the process over -idle.window: its CPU per
// second, and its goroutines, heap and resident memory at the end less
// before.
func measureIdleWindow(b *testing.B, before figures) idleCost {
	if *idleProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%s", *idleProfile, strings.ReplaceAll(b.Name(), "/", "_")))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := processCPU()
	start := time.Now()
	time.Sleep(*idleWindow)
	cpu := processCPU() - cpu0
	elapsed := time.Since(start)
	after := processFigures(b)
	return idleCost{
		goroutines:   after.goroutines - before.goroutines,
		heap:         after.heap - before.heap,
		rss:          after.rss - before.rss,
		cpuPerSecond: time.Duration(float64(cpu) / elapsed.Seconds()),
	}
}

// checkOneLeader fails the benchmark unless exactly one of a group's
// replicas leads and is ready after the window.
func checkOneLeader(b *testing.B, what string, replicas []*Raft) {
	leaders := 0
	for _, l := range replicas {
		if l.Leading() {
			leaders++
		}
	}
	if leaders != 1 {
		b.Fatalf("%s has %d ready leaders after the window", what, leaders)
	}
}

// figures is a moment's goroutines, Go heap in use (after a collection)
// and resident memory of this process, memory mapped by the engine's
// record arenas included in the last.
type figures struct{ goroutines, heap, rss float64 }

func processFigures(b *testing.B) figures {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return figures{goroutines: float64(runtime.NumGoroutine()), heap: float64(ms.HeapInuse), rss: float64(residentBytes(b))}
}

// residentBytes is VmRSS of /proc/self/status.
func residentBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS: %q", rest)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
