package replog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/memnet"
)

// TestCloseWhileCutOff stops members that a partition cuts off from the
// others (a SIGTERM during a partition): a first group's leader, a
// follower, and a shard's leader. Each must stop within Close's timeout
// (5 s here), without ErrCloseTimeout, whose message blames the disk.
// Before the group's connections were closed as Raft stopped, Raft's
// shutdown waited on RPCs to the cut-off members for the transport's
// 10 s: dials that got no answer, and reads of answers that never came.
func TestCloseWhileCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("three members over a partitioned network; skipped in -short mode")
	}
	network := memnet.New(1)
	base := startClusterWith(t, 3, nil, func(cfg *RaftConfig) {
		cfg.Cluster.Network = network.Node(cfg.Cluster.RaftAddr)
		cfg.CloseTimeout = 5 * time.Second
	})
	var addrs []string
	var replicas []Peer
	nodes := make([]*shardNode, len(base))
	for i, nd := range base {
		addrs = append(addrs, nd.cfg.Cluster.RaftAddr)
		replicas = append(replicas, Peer{ID: nd.id, Addr: nd.cfg.Cluster.RaftAddr})
		nodes[i] = &shardNode{testNode: nd}
	}
	waitLeader(t, base)
	for _, nd := range nodes {
		nd.openShardsWith(t, 1, replicas, func(cfg *RaftConfig) { cfg.CloseTimeout = 5 * time.Second })
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.close()
		}
	})
	cutAndClose := func(what string, addr string, l *Raft) {
		t.Helper()
		network.Isolate(addr, addrs)
		defer network.Heal()
		// Let the RPCs in flight meet the partition.
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		err := l.Close()
		t.Logf("%s closed in %v", what, time.Since(start).Round(time.Millisecond))
		if errors.Is(err, ErrCloseTimeout) {
			t.Errorf("%s, cut off, did not close in time: %v", what, err)
		} else if err != nil {
			t.Errorf("%s: Close: %v", what, err)
		}
	}

	// A shard's leader, its first group running.
	sl := shardLeader(t, nodes, 1)
	for _, nd := range nodes {
		if nd.shards[0] == sl {
			cutAndClose("shard 1's leader "+nd.id, nd.cfg.Cluster.RaftAddr, sl)
			nd.shards = nil
		}
	}
	// The first group's leader, then a follower, each closing its shard
	// first as a node does.
	lead := waitLeader(t, base)
	for _, nd := range []*testNode{lead, followerOf(base, lead)} {
		for _, sn := range nodes {
			if sn.testNode == nd {
				for _, s := range sn.shards {
					s.Close()
				}
				sn.shards = nil
			}
		}
		cutAndClose("first group's member "+nd.id, nd.cfg.Cluster.RaftAddr, nd.log)
		nd.log = nil
	}
}

// followerOf is a running member of nodes other than lead.
func followerOf(nodes []*testNode, lead *testNode) *testNode {
	for _, nd := range nodes {
		if nd != lead && nd.log != nil {
			return nd
		}
	}
	return nil
}

// TestTransferWatch checks what counts as a wedged transfer: refusals for
// a transfer in progress, for longer than the timeout, with no write
// accepted since; other errors neither start nor end the count.
func TestTransferWatch(t *testing.T) {
	var w transferWatch
	t0 := time.Unix(1000, 0)
	if _, wedged := w.wedged(t0, time.Second); wedged {
		t.Fatal("wedged before any refusal")
	}
	w.note(errors.New("some other failure"), t0)
	if _, wedged := w.wedged(t0.Add(time.Hour), time.Second); wedged {
		t.Fatal("another error counted as a refused transfer")
	}
	w.note(raft.ErrLeadershipTransferInProgress, t0)
	w.note(raft.ErrLeadershipTransferInProgress, t0.Add(500*time.Millisecond)) // the first refusal counts
	if _, wedged := w.wedged(t0.Add(900*time.Millisecond), time.Second); wedged {
		t.Fatal("wedged before the timeout")
	}
	if d, wedged := w.wedged(t0.Add(2*time.Second), time.Second); !wedged || d != 2*time.Second {
		t.Fatalf("wedged %v for %v, want true for 2s", wedged, d)
	}
	w.note(nil, t0.Add(3*time.Second))
	if _, wedged := w.wedged(t0.Add(time.Hour), time.Second); wedged {
		t.Fatal("still wedged after a write was accepted")
	}
	// Refusals long over the timeout, the latest of them old: a probe is
	// due, and no wedge counted until it is refused too.
	w.note(raft.ErrLeadershipTransferInProgress, t0)
	later := t0.Add(time.Minute)
	if _, wedged := w.wedged(later, time.Second); wedged {
		t.Fatal("wedged on an old refusal alone")
	}
	if !w.probeDue(later) {
		t.Fatal("no probe due after an old refusal")
	}
	w.note(raft.ErrLeadershipTransferInProgress, later)
	if w.probeDue(later.Add(time.Second)) {
		t.Fatal("a probe due right after a refusal")
	}
	if d, wedged := w.wedged(later.Add(time.Second), time.Second); !wedged || d != time.Minute+time.Second {
		t.Fatalf("wedged %v for %v, want true for 1m1s", wedged, d)
	}
}

// TestWedgedLeaderStops makes a group's leader look wedged (Raft refused
// its writes for a transfer in progress for longer than
// wedgedTransferTimeout; hashicorp/raft issue #696, which
// TestMovesOverFaultyNetwork met): it must stop as on a storage fault,
// saying why, so that its supervisor restarts it with a new Raft.
func TestWedgedLeaderStops(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-member cluster; skipped in -short mode")
	}
	nodes := startCluster(t, 3, nil)
	lead := waitLeader(t, nodes)
	// Raft refuses the probes, as a wedged Raft refuses every write, and
	// refused the writes since the timeout. The group's own writes go
	// through here (it is not wedged), and clear the record: it is put
	// back each time.
	refused := func() error { return raft.ErrLeadershipTransferInProgress }
	lead.log.wedgeProbe.Store(&refused)
	deadline := time.Now().Add(15 * time.Second)
	for halted := false; !halted; {
		if lead.log.transfers.since.Load() == 0 {
			lead.log.transfers.note(raft.ErrLeadershipTransferInProgress, time.Now().Add(-wedgedTransferTimeout-time.Second))
		}
		lead.log.checkWedged(time.Now())
		select {
		case <-lead.log.Halted():
			halted = true
		case <-time.After(100 * time.Millisecond):
		}
		if !halted && time.Now().After(deadline) {
			t.Fatal("a wedged leader did not stop")
		}
	}
	var we *wedgedError
	if err := lead.log.Fault(); !errors.As(err, &we) {
		t.Fatalf("the wedged leader stopped for %v", err)
	}
	if got := lead.log.faults.summary(); !strings.Contains(got, "wedged") {
		t.Fatalf("summary %q does not say the group is wedged", got)
	}
}

// TestOldTransferRefusalDoesNotStop: a write refused once for a leadership
// transfer in progress, on a group that then makes no write for the
// watchdog's timeout (an idle shard), is no wedge: the transfer ended long
// since. The leader must find that out and go on, not stop its node (the
// in-memory soaks met members stopped so, with no transfer left running).
func TestOldTransferRefusalDoesNotStop(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-member cluster; skipped in -short mode")
	}
	nodes := startCluster(t, 3, nil)
	lead := waitLeader(t, nodes)
	lead.log.transfers.note(raft.ErrLeadershipTransferInProgress, time.Now().Add(-wedgedTransferTimeout-time.Second))
	select {
	case <-lead.log.Halted():
		t.Fatalf("a leader whose writes go through stopped: %v", lead.log.Fault())
	case <-time.After(5 * time.Second):
	}
	if d, wedged := lead.log.transfers.wedged(time.Now(), wedgedTransferTimeout); wedged || d != 0 {
		t.Fatalf("the watch still counts refusals for %v after writes went through again", d)
	}
}
