package replog

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

var (
	recoveryMessages = flag.Int("replog.recovery", 0, "run TestRecoveryTime with this many queued messages (e.g. 1000000)")
	recoveryDir      = flag.String("replog.recovery.dir", "", "TestRecoveryTime: keep the log in this directory; if it already holds a snapshot of an earlier run, measure only the restart from it")
)

// TestRecoveryTime measures how long a restart takes with a large backlog,
// by log replay and from a snapshot, and the heap the engine then holds
// per queued message. It only measures (there are no timed assertions)
// and runs only when asked:
//
//	go test ./internal/replog -run TestRecoveryTime -replog.recovery=1000000 -v
//
// With -replog.recovery.dir=DIR the log is kept in DIR, and a later run
// on the same DIR (and the same -replog.recovery) measures only the
// restart from its snapshot: that is how before and after builds are timed
// restarting from the same files.
func TestRecoveryTime(t *testing.T) {
	n := *recoveryMessages
	if n == 0 {
		t.Skip("set -replog.recovery=N to measure recovery with N queued messages")
	}
	dir := *recoveryDir
	if dir == "" {
		dir = t.TempDir()
	}
	// No automatic snapshot: the first restart replays the whole log.
	cfg := RaftConfig{SnapshotEntries: 1 << 40, SnapshotBytes: 1 << 50}
	c := newClock()
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin")); len(snaps) > 0 {
		// Commands of the earlier run took up to a few minutes of the
		// clock: read the restored state at a later time.
		c.t += int64(time.Hour)
		restartFromSnapshot(t, dir, cfg, c, n)
		return
	}
	l, _ := openTest(t, dir, cfg)
	createFIFO(t, l, c)

	// Fill with 200-byte bodies in batches of 10, 64 producers at a time so
	// that group commit packs the log as it would under load.
	body := fmt.Sprintf("%0200d", 0)
	began := time.Now()
	var wg sync.WaitGroup
	batches := n / 10
	work := make(chan int)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				entries := make([]api.SendMessageBatchRequestEntry, 10)
				ids := make([]string, 10)
				for i := range entries {
					k := b*10 + i
					entries[i] = api.SendMessageBatchRequestEntry{Id: fmt.Sprint(i), MessageBody: body, MessageGroupId: fmt.Sprintf("g%d", k%100), MessageDeduplicationId: fmt.Sprint(k)}
					// MessageIds are UUIDs, as the server makes them.
					ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", k, k)
				}
				if _, err := l.Apply(context.Background(), &engine.Command{Time: c.next(), Caller: testQueue.Account, Queue: testQueue,
					Request: &api.SendMessageBatchRequest{QueueUrl: testQueue.Path(), Entries: entries}, MessageIDs: ids}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for b := 0; b < batches; b++ {
		work <- b
	}
	close(work)
	wg.Wait()
	t.Logf("filled %d messages in %v (%.0f msgs/s) in %d log entries", n, time.Since(began).Round(time.Millisecond),
		float64(n)/time.Since(began).Seconds(), l.raft.LastIndex())
	l.Close()

	began = time.Now()
	l, _ = openTest(t, dir, cfg)
	t.Logf("restart by log replay: %v", time.Since(began).Round(time.Millisecond))
	checkCount(t, l, c, n)

	// A writer sends to another queue, one message at a time, before and
	// while the snapshot is taken: its slowest write during the snapshot,
	// next to its median before, is how long the snapshot held writes up.
	probe := api.QueueKey{Account: testQueue.Account, Name: "probe"}
	apply(t, l, c, probe, &api.CreateQueueRequest{QueueName: probe.Name})
	probeWrite := func() time.Duration {
		began := time.Now()
		apply(t, l, c, probe, &api.SendMessageRequest{QueueUrl: probe.Path(), MessageBody: "p"})
		return time.Since(began)
	}
	var before []time.Duration
	for range 200 {
		before = append(before, probeWrite())
	}
	slices.Sort(before)
	runtime.GC() // the peak below is then the snapshot's, not the replay's garbage
	peak := watchHeap()
	snapDone := make(chan struct{})
	var during []time.Duration
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		for {
			select {
			case <-snapDone:
				return
			default:
				during = append(during, probeWrite())
			}
		}
	}()
	began = time.Now()
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	snapTime := time.Since(began)
	close(snapDone)
	<-probed
	snapPeak := peak()
	slices.Sort(during)
	t.Logf("snapshot taken in %v; peak heap during it %d MiB", snapTime.Round(time.Millisecond), snapPeak>>20)
	if len(during) > 0 {
		t.Logf("writes during the snapshot: %d, slowest %v, median %v (before it: median %v, slowest %v)", len(during),
			during[len(during)-1].Round(time.Millisecond), during[len(during)/2].Round(100*time.Microsecond),
			before[len(before)/2].Round(100*time.Microsecond), before[len(before)-1].Round(time.Millisecond))
	}
	l.Close()
	// Drop the closed log, and with it its engine, before the restart: a
	// restarted process does not hold the old state, and the peak below
	// would count it.
	l = nil
	restartFromSnapshot(t, dir, cfg, c, n)
}

// restartFromSnapshot opens the log in dir, which holds a snapshot of n
// queued messages, and reports how long that took, the peak heap during it
// and the heap in use after it.
func restartFromSnapshot(t *testing.T, dir string, cfg RaftConfig, c *clock, n int) {
	runtime.GC()
	peak := watchHeap()
	began, cpu := time.Now(), processCPU()
	l, _ := openTest(t, dir, cfg)
	defer l.Close()
	high := peak()
	// The process's CPU time tells a slower restart from a busier machine.
	t.Logf("restart from snapshot: %v; peak heap during it %d MiB; CPU time %v", time.Since(began).Round(time.Millisecond), high>>20,
		(processCPU() - cpu).Round(time.Millisecond))
	checkCount(t, l, c, n)

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use after restore: %d MiB, %.0f bytes per queued message (200-byte bodies); peak during the restart %.2f times that",
		ms.HeapInuse>>20, float64(ms.HeapInuse)/float64(n), float64(high)/float64(ms.HeapInuse))
}

// watchHeap samples the heap's live and not yet collected objects every
// millisecond until the returned function is called, which returns the
// highest sample.
func watchHeap() (peak func() uint64) {
	stop := make(chan struct{})
	result := make(chan uint64)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var high uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			high = max(high, sample[0].Value.Uint64())
			select {
			case <-stop:
				result <- high
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-result
	}
}

func checkCount(t *testing.T, l *Raft, c *clock, want int) {
	t.Helper()
	var resp api.Response
	var err error
	l.Read(func(e *engine.Engine) {
		resp, err = e.Read(&engine.Command{Time: c.next(), Caller: testQueue.Account, Queue: testQueue,
			Request: &api.GetQueueAttributesRequest{QueueUrl: testQueue.Path(), AttributeNames: []string{"ApproximateNumberOfMessages"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.(*api.GetQueueAttributesResult).Attributes["ApproximateNumberOfMessages"]; got != fmt.Sprint(want) {
		t.Fatalf("after restart the queue holds %s messages, want %d", got, want)
	}
}
