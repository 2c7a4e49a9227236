package replog

import (
	"errors"
	"testing"
	"time"

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
