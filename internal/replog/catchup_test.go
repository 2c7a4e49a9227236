package replog

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

var (
	catchUpMessages = flag.Int("replog.catchup", 0, "run TestFollowerCatchUpTime with this many messages sent while a follower is down (e.g. 1000000)")
	catchUpSnapshot = flag.Bool("replog.catchup-snapshot", false, "in TestFollowerCatchUpTime, have the leader take a snapshot (and compact its log) before the follower returns, so that it catches up by a snapshot install")
)

// TestFollowerCatchUpTime measures how long a follower of a 3-node cluster
// (real TCP on loopback, durable data dirs, the default snapshot settings)
// takes to catch up after N messages were sent while it was down, whether
// it caught up by a snapshot install or by log entries, and the latency of
// the leader's writes meanwhile. It only measures (there are no timed
// assertions) and runs only when asked:
//
//	go test ./internal/replog -run TestFollowerCatchUpTime -replog.catchup=1000000 -v
//
// With the default snapshot settings the leader may not have taken a
// snapshot yet, and the follower then gets the log's entries;
// -replog.catchup-snapshot makes the leader take one first, which (with
// more than the 1,024 entries kept behind a snapshot) compacts its log
// past the follower's last entry.
func TestFollowerCatchUpTime(t *testing.T) {
	n := *catchUpMessages
	if n == 0 {
		t.Skip("set -replog.catchup=N to measure a follower's catch-up after N messages")
	}
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	probe := api.QueueKey{Account: testQueue.Account, Name: "probe"}
	apply(t, leader.log, c, probe, &api.CreateQueueRequest{QueueName: probe.Name})
	for _, nd := range nodes {
		waitApplied(t, nd, leader.log.raft.LastIndex())
	}

	down, downLast, live := stopOneFollower(t, nodes, leader)
	began := time.Now()
	fillWhileDown(t, live, c, n)
	if t.Failed() {
		return
	}
	leader = waitLeader(t, live)
	t.Logf("sent %d messages in %v (%.0f msgs/s) with %s down; the leader's log: indexes %d..%d, last snapshot at %s",
		n, time.Since(began).Round(time.Millisecond), float64(n)/time.Since(began).Seconds(), down.id,
		mustIndex(leader.log.wal.FirstIndex()), leader.log.raft.LastIndex(), leader.log.raft.Stats()["last_snapshot_index"])

	if *catchUpSnapshot {
		began := time.Now()
		if err := leader.log.raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		t.Logf("the leader took a snapshot in %v: its log now begins at %d, its last snapshot is at %s", time.Since(began).Round(time.Millisecond),
			mustIndex(leader.log.wal.FirstIndex()), leader.log.raft.Stats()["last_snapshot_index"])
	}

	// The leader's write latency, one message at a time, before the
	// follower returns and while it catches up.
	probeWrite := func() time.Duration { return probeWriteTime(t, live, c, probe) }
	var before []time.Duration
	for range 200 {
		before = append(before, probeWrite())
	}
	slices.Sort(before)

	// The follower returns: by Raft, it gets the leader's entries after
	// its own last one if the leader still holds them, else a snapshot.
	leaderFirst := mustIndex(leader.log.wal.FirstIndex())
	bySnapshot := leaderFirst > downLast+1
	target := leader.log.raft.AppliedIndex()
	took, opened, during := restartAndCatchUp(t, down, target, n, probeWrite)
	how := "log entries"
	if bySnapshot {
		how = "a snapshot install"
	}
	t.Logf("%s (last index %d when it stopped) caught up to the leader's applied index %d in %v, by %s (the leader's log began at %d); its own restart took %v; its last snapshot is now at %s",
		down.id, downLast, target, took.Round(time.Millisecond), how, leaderFirst, opened.Round(time.Millisecond), down.log.raft.Stats()["last_snapshot_index"])
	if len(during) > 0 {
		t.Logf("the leader's writes while it caught up: %d, median %v, slowest %v (before: median %v, slowest %v)", len(during),
			during[len(during)/2].Round(100*time.Microsecond), during[len(during)-1].Round(time.Millisecond),
			before[len(before)/2].Round(100*time.Microsecond), before[len(before)-1].Round(time.Millisecond))
	}
	checkCount(t, down.log, c, n)
}

// stopOneFollower closes the log of a node of nodes other than leader and
// returns that node, the last index of its log when it stopped, and the
// nodes still running, which the writers use (the stopped node's log is
// replaced while they run).
func stopOneFollower(t *testing.T, nodes []*testNode, leader *testNode) (down *testNode, downLast uint64, live []*testNode) {
	t.Helper()
	for _, nd := range nodes {
		if nd != leader {
			down = nd
			break
		}
	}
	downLast = down.log.raft.LastIndex()
	if err := down.log.Close(); err != nil {
		t.Fatalf("close %s: %v", down.id, err)
	}
	down.log = nil
	for _, nd := range nodes {
		if nd != down {
			live = append(live, nd)
		}
	}
	return down, downLast, live
}

// fillWhileDown sends n messages to the test queue through live, with
// 200-byte bodies in batches of 10, 64 producers at a time; a write refused
// by a node that no longer leads (the machine is shared, a heartbeat can be
// late) is retried on the current leader, with the same deduplication ids,
// so that it is not sent twice. A write that fails anyway fails t.
func fillWhileDown(t *testing.T, live []*testNode, c *clock, n int) {
	body := fmt.Sprintf("%0200d", 0)
	var wg sync.WaitGroup
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
					ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", k, k)
				}
				cmd := &engine.Command{Time: c.next(), Caller: testQueue.Account, Queue: testQueue,
					Request: &api.SendMessageBatchRequest{QueueUrl: testQueue.Path(), Entries: entries}, MessageIDs: ids}
				if err := applyOnLeader(live, cmd); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for b := 0; b < n/10; b++ {
		work <- b
	}
	close(work)
	wg.Wait()
}

// probeWriteTime sends one message to the probe queue through whichever of
// live leads and returns how long the write took; a failed write fails t.
func probeWriteTime(t *testing.T, live []*testNode, c *clock, probe api.QueueKey) time.Duration {
	began := time.Now()
	now := c.next()
	if err := applyOnLeader(live, &engine.Command{Time: now, Caller: probe.Account, Queue: probe,
		Request: &api.SendMessageRequest{QueueUrl: probe.Path(), MessageBody: "p"}, MessageIDs: []string{fmt.Sprint(now)}}); err != nil {
		t.Error(err)
	}
	return time.Since(began)
}

// restartAndCatchUp reopens down's log and waits, for up to 30 minutes,
// until it has caught up: its engine holds the leader's log up to target
// and the test queue all n messages. Meanwhile it times the leader's
// writes with probeWrite. It returns how long the catch-up took, how long
// of that the reopening took, and the write times, sorted.
func restartAndCatchUp(t *testing.T, down *testNode, target uint64, n int, probeWrite func() time.Duration) (took, opened time.Duration, during []time.Duration) {
	t.Helper()
	caughtUp := make(chan struct{})
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		for {
			select {
			case <-caughtUp:
				return
			default:
				during = append(during, probeWrite())
			}
		}
	}()
	began := time.Now()
	down.log, down.eng = openTest(t, down.dir, down.cfg)
	opened = time.Since(began)
	deadline := time.Now().Add(30 * time.Minute)
	for !down.log.applied(target) || queueCount(down.log) < n {
		if time.Now().After(deadline) {
			close(caughtUp)
			<-probed
			t.Fatalf("%s applied %d after 30 min, want %d", down.id, down.log.raft.AppliedIndex(), target)
		}
		time.Sleep(time.Millisecond)
	}
	took = time.Since(began)
	close(caughtUp)
	<-probed
	slices.Sort(during)
	return took, opened, during
}

// applyOnLeader applies cmd on whichever node leads, retrying while
// leadership moves (a refused write appended nothing).
func applyOnLeader(nodes []*testNode, cmd *engine.Command) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		for _, nd := range nodes {
			if l := nd.log; l != nil && l.Leading() {
				if _, err = l.Apply(context.Background(), cmd); err == nil {
					return nil
				}
				break
			}
		}
		var apiErr *api.Error
		if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == 503) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader took the write for a minute: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// queueCount is how many messages the test queue holds on a node.
func queueCount(l *Raft) (n int) {
	l.Read(func(e *engine.Engine) {
		// A day after the clock's start: later than any command here.
		if s, ok := e.QueueSummary(testQueue, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).UnixNano()); ok {
			n = int(s.Visible)
		}
	})
	return n
}

func mustIndex(i uint64, err error) uint64 {
	if err != nil {
		return 0
	}
	return i
}
