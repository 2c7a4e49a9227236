package replog

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestIdleShardSlowsItsHeartbeats runs a shard on three nodes: once its
// log has not grown for idleAfter, every replica raises its heartbeat
// timeout, the shard keeps its leader and term while idle, a write brings
// every replica back to the configured timeout, and an idle shard whose
// leader's node stops elects another leader, which takes writes. The
// first groups are never paced.
func TestIdleShardSlowsItsHeartbeats(t *testing.T) {
	was := idleAfter
	idleAfter = time.Second
	t.Cleanup(func() { idleAfter = was })

	nodes, _ := startShards(t, 3, 1)
	active := nodes[0].shards[0].raft.ReloadableConfig().HeartbeatTimeout
	idle := time.Duration(float64(active) * idleHeartbeatFactor)

	c := newClock()
	leader := shardLeader(t, nodes, 1)
	createFIFO(t, leader, c)
	send(t, leader, c, 0)

	waitPace(t, nodes, true, idle)
	term := leader.raft.CurrentTerm()
	// Idle replicas of every pace at once must not call elections: the
	// idle leader's heartbeats come within an active follower's timeout.
	time.Sleep(3 * idle)
	if !leader.Leading() || leader.raft.CurrentTerm() != term {
		t.Fatalf("the idle shard changed leader or term (term %d, was %d)", leader.raft.CurrentTerm(), term)
	}
	// Nor a mix: followers back at the configured timeout (as one that
	// restarts is) while the leader's heartbeats are the idle ones.
	setFollowers := func(timing func(*pace) raft.ReloadableConfig) {
		for _, nd := range nodes {
			if s := nd.shards[0]; s != leader && !s.setTiming(timing(&s.pace)) {
				t.Fatalf("%s: could not set the shard's timing", nd.id)
			}
		}
	}
	setFollowers(func(p *pace) raft.ReloadableConfig { return p.active })
	time.Sleep(3 * idle)
	if !leader.Leading() || leader.raft.CurrentTerm() != term {
		t.Fatalf("active followers of an idle leader called an election (term %d, was %d)", leader.raft.CurrentTerm(), term)
	}
	setFollowers(func(p *pace) raft.ReloadableConfig { return p.idle })
	for _, nd := range nodes {
		if nd.log.Idle() || nd.log.raft.ReloadableConfig().HeartbeatTimeout != active {
			t.Fatalf("%s's first group is paced (heartbeat timeout %v)", nd.id, nd.log.raft.ReloadableConfig().HeartbeatTimeout)
		}
	}

	send(t, leader, c, 1)
	waitPace(t, nodes, false, active)

	// Idle again, its leader's node stops: the others elect a leader.
	waitPace(t, nodes, true, idle)
	var down *shardNode
	var rest []*shardNode
	for _, nd := range nodes {
		if nd.shards[0] == leader {
			down = nd
		} else {
			rest = append(rest, nd)
		}
	}
	down.close()
	next := shardLeader(t, rest, 1)
	send(t, next, c, 2)
	if got := queueDepth(&testNode{log: next}); got != 3 {
		t.Fatalf("the shard holds %d messages after failover, want 3", got)
	}
}

// waitPace waits until every node's shard 1 has been seen idle (or
// active, as wantIdle says) with that heartbeat timeout. Each is seen on
// its own: an active replica of an idle shard turns idle again idleAfter
// later, on its own tick, so under load the three need not all be active
// at one moment.
func waitPace(t *testing.T, nodes []*shardNode, wantIdle bool, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10*idleAfter + 10*time.Second)
	seen := map[string]bool{}
	for {
		for _, nd := range nodes {
			s := nd.shards[0]
			if s.Idle() == wantIdle && s.raft.ReloadableConfig().HeartbeatTimeout == timeout {
				seen[nd.id] = true
			}
		}
		if len(seen) == len(nodes) {
			return
		}
		if time.Now().After(deadline) {
			for _, nd := range nodes {
				t.Logf("%s: idle %v, heartbeat timeout %v", nd.id, nd.shards[0].Idle(), nd.shards[0].raft.ReloadableConfig().HeartbeatTimeout)
			}
			t.Fatalf("the shard's replicas are not all idle=%v with heartbeat timeout %v", wantIdle, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
