package replog

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/grouplog"
)

var (
	activeGroups = flag.String("active.groups", "1,4,16", "numbers of Raft groups BenchmarkActiveGroupsFsyncs spreads its load over, comma separated")
	activeRate   = flag.Int("active.rate", 4000, "SendMessage commands a second BenchmarkActiveGroupsFsyncs offers, over all its groups")
	activeWindow = flag.Duration("active.window", 5*time.Second, "how long BenchmarkActiveGroupsFsyncs offers its load")
	activeSync   = flag.Duration("active.sync-delay", 0, "time BenchmarkActiveGroupsFsyncs adds to every write of a log entry, as a slower disk's fsync would take")
	activeShared = flag.Bool("active.shared", false, "BenchmarkActiveGroupsFsyncs: the groups keep their entries in one shared log (SharedLog), as shard replicas on a node do")
)

// BenchmarkActiveGroupsFsyncs measures what it costs a node not to share
// one log among several Raft groups: the same load (-active.rate sends a
// second, offered at a fixed rate whatever the answers, each its own
// command) spread evenly over N single-node durable logs in this process,
// each with its own raft-wal and its own fsyncs, as N shards' replicas on
// one node would have today. Group commit gathers what arrives while an
// fsync runs into the next entry, so N logs each see 1/N of the load and
// gather less: it reports the log entries written (one fsync each) per
// second, the commands per entry, and the commands per second served. It
// asserts nothing; the figures go in docs/benchmarks.md. -active.sync-delay
// makes every entry's write take that much longer, as on a disk whose
// fsync is slower than this machine's. -active.shared gives the groups one
// shared log, as a node's shards have: the writes (fsyncs) are then the
// shared log's, each carrying the entries of every group that wrote
// meanwhile.
//
//	go test ./internal/replog -run '^$' -bench ActiveGroupsFsyncs -benchtime 1x [-active.sync-delay 2ms] [-active.shared]
func BenchmarkActiveGroupsFsyncs(b *testing.B) {
	for _, field := range strings.Split(*activeGroups, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			b.Fatalf("-active.groups: %q is not a count", field)
		}
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for range b.N {
				entries, commands, elapsed := offerToGroups(b, n, *activeRate, *activeWindow, *activeSync)
				b.ReportMetric(float64(entries)/elapsed.Seconds(), "fsyncs/s")
				b.ReportMetric(float64(commands)/float64(max(entries, 1)), "commands/fsync")
				b.ReportMetric(float64(commands)/elapsed.Seconds(), "commands/s")
			}
		})
	}
}

// offerToGroups opens n single-node logs, offers rate sends a second over
// window, spread round-robin over them, and returns the entries written
// and commands applied while the load ran, and how long it ran.
func offerToGroups(b *testing.B, n, rate int, window, syncDelay time.Duration) (entries, commands int64, elapsed time.Duration) {
	b.Helper()
	obs := &recordingObserver{}
	logs := make([]*Raft, n)
	c := newClock()
	cfg := RaftConfig{Observer: obs}
	if syncDelay > 0 {
		cfg.wrapStore = func(s raft.LogStore) raft.LogStore { return slowStore{s, syncDelay} }
	}
	var shared *SharedLog
	if *activeShared {
		shared = openSharedTest(b, b.TempDir(), syncDelay)
		cfg.sharedLog, cfg.wrapStore = shared, nil
	}
	for i := range logs {
		l, _ := openTest(b, b.TempDir(), cfg)
		b.Cleanup(func() { l.Close() })
		createFIFO(b, l, c)
		logs[i] = l
	}
	before, _ := obs.commits()
	var sharedBefore uint64
	if shared != nil {
		sharedBefore = shared.Writes()
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	// A burst every millisecond: a ticker at the rate itself falls behind
	// beyond a few thousand a second.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for i := 0; time.Since(start) < window; {
		if due := int(time.Since(start).Seconds() * float64(rate)); i >= due {
			<-tick.C
			continue
		}
		i++
		l := logs[i%n]
		now := c.next()
		cmd := &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, Entropy: uint64(now),
			Request:    &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: "m", MessageGroupId: fmt.Sprintf("g%d", i%64)},
			MessageIDs: []string{fmt.Sprintf("id-%d", i)}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Apply(context.Background(), cmd); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed = time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d sends failed", f)
	}
	batches, _ := obs.commits()
	for _, c := range batches[len(before):] {
		commands += int64(c)
	}
	if shared != nil {
		return int64(shared.Writes() - sharedBefore), commands, elapsed
	}
	return int64(len(batches) - len(before)), commands, elapsed
}

// openSharedTest opens a shared log in dir, closed when the test ends,
// whose writes each take delay longer.
func openSharedTest(tb testing.TB, dir string, delay time.Duration) *SharedLog {
	tb.Helper()
	cfg := RaftConfig{}
	cfg.setDefaults()
	wal, err := openWAL(dir, &cfg, newHCLogger(cfg.Logger))
	if err != nil {
		tb.Fatal(err)
	}
	var under grouplog.WAL = wal
	if delay > 0 {
		under = slowWAL{wal, delay}
	}
	log, err := grouplog.Open(under)
	if err != nil {
		tb.Fatal(err)
	}
	s := &SharedLog{dir: dir, wal: wal, log: log}
	tb.Cleanup(func() { s.Close() })
	return s
}

// slowWAL adds delay to every write of a shared log's WAL.
type slowWAL struct {
	*closingWAL
	delay time.Duration
}

func (s slowWAL) StoreLogs(logs []*raft.Log) error {
	time.Sleep(s.delay)
	return s.closingWAL.StoreLogs(logs)
}

// slowStore adds delay to every write of log entries.
type slowStore struct {
	raft.LogStore
	delay time.Duration
}

func (s slowStore) StoreLogs(logs []*raft.Log) error {
	time.Sleep(s.delay)
	return s.LogStore.StoreLogs(logs)
}

func (s slowStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }
