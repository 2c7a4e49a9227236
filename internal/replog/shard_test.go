package replog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// shardNode is a cluster member with shards beside its first group.
type shardNode struct {
	*testNode
	shards []*Raft // shard i+1
}

// openShards opens shards 1..n on nd, replicated on replicas.
func (nd *shardNode) openShards(t testing.TB, n int, replicas []Peer) {
	t.Helper()
	nd.openShardsWith(t, n, replicas, nil)
}

// openShardsWith is openShards with tweak, if not nil, changing each
// shard's configuration before it is opened.
func (nd *shardNode) openShardsWith(t testing.TB, n int, replicas []Peer, tweak func(*RaftConfig)) {
	t.Helper()
	for id := uint32(1); id <= uint32(n); id++ {
		cfg := RaftConfig{Dir: filepath.Join(nd.dir, "shards", fmt.Sprint(id)), MinFreeBytes: -1,
			Shard: &ShardConfig{ID: id, Host: nd.log, Replicas: replicas}}
		if tweak != nil {
			tweak(&cfg)
		}
		l, err := OpenRaft(cfg)
		if err != nil {
			t.Fatalf("%s: open shard %d: %v", nd.id, id, err)
		}
		nd.shards = append(nd.shards, l)
	}
}

// closeShards closes nd's shards, then its first group.
func (nd *shardNode) close() {
	for _, s := range nd.shards {
		s.Close()
	}
	nd.shards = nil
	if nd.log != nil {
		nd.log.Close()
		nd.log = nil
	}
}

// startShards starts the first groups of n nodes and opens shards
// 1..count beside each, every shard replicated on all n; it returns the
// nodes and the replicas. The nodes close when the test ends.
func startShards(t *testing.T, n, count int) ([]*shardNode, []Peer) {
	t.Helper()
	base := startCluster(t, n, nil)
	var replicas []Peer
	nodes := make([]*shardNode, len(base))
	for i, nd := range base {
		replicas = append(replicas, Peer{ID: nd.id, Addr: nd.cfg.Cluster.RaftAddr})
		nodes[i] = &shardNode{testNode: nd}
	}
	for _, nd := range nodes {
		nd.openShards(t, count, replicas)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.close()
		}
	})
	return nodes, replicas
}

// shardLeader waits until some node leads shard id (1 or more) and is
// ready, and returns its shard.
func shardLeader(t testing.TB, nodes []*shardNode, id int) *Raft {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range nodes {
			if len(nd.shards) >= id && nd.shards[id-1].Leading() {
				return nd.shards[id-1]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no leader of shard %d", id)
	return nil
}

// waitShardMembers waits until shard id's leader has the voters want.
func waitShardMembers(t *testing.T, nodes []*shardNode, id int, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got []Member
	for time.Now().Before(deadline) {
		l := shardLeader(t, nodes, id)
		got, _ = l.Members()
		if fmt.Sprint(memberIDs(got)) == fmt.Sprint(want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("shard %d's members are %v, want voters %v", id, got, want)
}

func memberIDs(ms []Member) []string {
	var out []string
	for _, m := range ms {
		if m.Voter {
			out = append(out, m.ID)
		}
	}
	return out
}

// TestShardsReplicateOverTheFirstGroupsConnections runs three shards beside
// the first group on three nodes: each shard elects a leader, replicates a
// queue's messages to every node, survives the loss of its leader's node,
// and the nodes keep one connection per pair however many shards there
// are.
func TestShardsReplicateOverTheFirstGroupsConnections(t *testing.T) {
	nodes, _ := startShards(t, 3, 3)
	c := newClock()
	for id := 1; id <= 3; id++ {
		l := shardLeader(t, nodes, id)
		createFIFO(t, l, c)
		for i := range id {
			send(t, l, c, i)
		}
	}
	for id := 1; id <= 3; id++ {
		last := shardLeader(t, nodes, id).raft.LastIndex()
		for _, nd := range nodes {
			s := nd.shards[id-1]
			waitApplied(t, &testNode{id: nd.id, log: s}, last)
			if got := queueDepth(&testNode{log: s}); got != id {
				t.Fatalf("%s's shard %d holds %d messages, want %d", nd.id, id, got, id)
			}
		}
	}
	for _, nd := range nodes {
		if n := nd.log.cluster.mux.sessions.connections(); n > 2 {
			t.Fatalf("%s keeps %d sessions with its 2 peers", nd.id, n)
		}
	}

	// The node leading shard 1 stops: the others elect a new leader of
	// it, which takes writes.
	first := shardLeader(t, nodes, 1)
	var down *shardNode
	for _, nd := range nodes {
		if nd.shards[0] == first {
			down = nd
		}
	}
	down.close()
	rest := []*shardNode{}
	for _, nd := range nodes {
		if nd != down {
			rest = append(rest, nd)
		}
	}
	l := shardLeader(t, rest, 1)
	send(t, l, c, 7)
	if got := queueDepth(&testNode{log: l}); got != 2 {
		t.Fatalf("shard 1 holds %d messages after failover, want 2", got)
	}
}

// TestShardsFollowTheClustersMembership adds a node to the first group and
// removes another: every shard's leader gives the new node a replica
// (which catches up on the shard's queue) and takes the removed one's
// away.
func TestShardsFollowTheClustersMembership(t *testing.T) {
	nodes, replicas := startShards(t, 3, 2)
	base := make([]*testNode, len(nodes))
	for i, nd := range nodes {
		base[i] = nd.testNode
	}
	c := newClock()
	l := shardLeader(t, nodes, 2)
	createFIFO(t, l, c)
	send(t, l, c, 0)

	addr := freeAddrs(t, 1)[0]
	joiner := &shardNode{testNode: &testNode{id: "n4", dir: t.TempDir()}}
	joiner.cfg = RaftConfig{NodeID: "n4", MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: addr, Join: true}}
	joiner.log, joiner.eng = openTest(t, joiner.dir, joiner.cfg)
	// The joiner is not among the shards' first replicas: it bootstraps
	// none, and waits to be added.
	joiner.openShards(t, 2, replicas)
	t.Cleanup(joiner.close)
	nodes = append(nodes, joiner)
	leader := waitLeader(t, base)
	if err := leader.log.AddVoter(context.Background(), "n4", addr, joiner.log.Incarnation()); err != nil {
		t.Fatalf("add n4: %v", err)
	}
	if err := leader.log.Promote(context.Background(), "n4"); err != nil {
		t.Logf("promote n4: %v (it may already vote)", err)
	}
	for id := 1; id <= 2; id++ {
		waitShardMembers(t, nodes, id, "n1", "n2", "n3", "n4")
	}
	s2 := joiner.shards[1]
	waitApplied(t, &testNode{id: "n4", log: s2}, shardLeader(t, nodes, 2).raft.LastIndex())
	if got := queueDepth(&testNode{log: s2}); got != 1 {
		t.Fatalf("the joined node's shard 2 holds %d messages, want 1", got)
	}

	// n1 is removed: every shard drops it.
	leader = waitLeader(t, base)
	if leader.id == "n1" {
		if err := leader.log.transferLeadership(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		leader = waitLeader(t, base[1:])
	}
	if err := leader.log.RemoveServer(context.Background(), "n1"); err != nil {
		t.Fatalf("remove n1: %v", err)
	}
	for id := 1; id <= 2; id++ {
		waitShardMembers(t, nodes[1:], id, "n2", "n3", "n4")
	}
}

// TestShardReplacesAnUnreachableReplicaFirst: a shard's map moves a
// replica away from a member that is down but still a member (one being
// drained by fifoq cluster remove, say). Its leader must remove that
// replica before it adds the new one: with both, the group's quorum
// would count the dead replica, and every write would wait for the new
// one to catch up. No configuration in the shard's log may name both.
func TestShardReplacesAnUnreachableReplicaFirst(t *testing.T) {
	nodes, all, want, openShard := startWantedShard(t)
	for _, nd := range nodes {
		openShard(nd)
	}
	c := newClock()
	leader := shardLeader(t, nodes, 1)
	createFIFO(t, leader, c)
	send(t, leader, c, 0)

	// A follower among the first three goes down; the map then wants
	// its replica on n4.
	var down *shardNode
	var next []Peer
	var live []*shardNode
	for i, nd := range nodes[:3] {
		if down == nil && nd.shards[0] != leader {
			down = nd
			continue
		}
		next = append(next, all[i])
		live = append(live, nd)
	}
	next = append(next, all[3])
	live = append(live, nodes[3])
	down.close()
	time.Sleep(time.Second) // the leader's heartbeats to it fail
	want.Store(&next)
	waitShardMembers(t, live, 1, memberIDs(peersAsMembers(next))...)

	l := shardLeader(t, live, 1)
	firstIndex, _ := l.wal.FirstIndex()
	lastIndex, _ := l.wal.LastIndex()
	for i := firstIndex; i <= lastIndex; i++ {
		var e raft.Log
		if err := l.wal.GetLog(i, &e); err != nil || e.Type != raft.LogConfiguration {
			continue
		}
		conf := raft.DecodeConfiguration(e.Data)
		var ids []string
		for _, s := range conf.Servers {
			ids = append(ids, string(s.ID))
		}
		if slices.Contains(ids, down.id) && slices.Contains(ids, "n4") {
			t.Fatalf("entry %d's configuration %v names both the down replica %s and its replacement", i, ids, down.id)
		}
	}
	send(t, l, c, 1)
}

// startWantedShard starts the first groups of four nodes, and returns
// them, their peers, the replicas shard 1 is to have (want: the first
// three until the test says otherwise) and a function that opens a node's
// replica of shard 1, whose first replicas are the first three. The nodes
// close when the test ends.
func startWantedShard(t *testing.T) ([]*shardNode, []Peer, *atomic.Pointer[[]Peer], func(*shardNode)) {
	t.Helper()
	base := startCluster(t, 4, nil)
	nodes := make([]*shardNode, len(base))
	var all []Peer
	for i, nd := range base {
		all = append(all, Peer{ID: nd.id, Addr: nd.cfg.Cluster.RaftAddr})
		nodes[i] = &shardNode{testNode: nd}
	}
	first := all[:3]
	want := &atomic.Pointer[[]Peer]{}
	want.Store(&first)
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.close()
		}
	})
	open := func(nd *shardNode) {
		nd.openShardsWith(t, 1, first, func(cfg *RaftConfig) { cfg.Shard.Want = func() []Peer { return *want.Load() } })
	}
	return nodes, all, want, open
}

// peersAsMembers returns peers as voting members, sorted by id.
func peersAsMembers(peers []Peer) []Member {
	out := make([]Member, len(peers))
	for i, p := range peers {
		out[i] = Member{ID: p.ID, Addr: p.Addr, Voter: true}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// TestNoLeadershipHandedToAnUnreachableMember: a leader asked to hand its
// leadership to a member its heartbeats do not reach refuses at once and
// keeps leading: a transfer that cannot end can hang hashicorp/raft for
// good (wedge.go).
func TestNoLeadershipHandedToAnUnreachableMember(t *testing.T) {
	nodes, _ := startShards(t, 3, 1)
	leader := shardLeader(t, nodes, 1)
	var target *shardNode
	for _, nd := range nodes {
		if nd.shards[0] != leader {
			target = nd
			break
		}
	}
	// The target's shard stops; its node, and the first group, stay.
	target.shards[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for !leader.PeerUnheard(target.id) {
		if time.Now().After(deadline) {
			t.Fatalf("the leader's heartbeats to %s's stopped shard have not failed after 10 s", target.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	term := leader.raft.CurrentTerm()
	if err := leader.HandLeadershipTo(target.id, 5*time.Second); !errors.Is(err, ErrPeerUnheard) {
		t.Fatalf("hand the leadership to an unreachable member: %v, want ErrPeerUnheard", err)
	}
	if !leader.Leading() || leader.raft.CurrentTerm() != term {
		t.Fatal("the leader lost its leadership to a refused hand-over")
	}
}

// TestShardAddsAReplicaAsANonvoterUntilItCatchesUp: a shard's map wants a
// replica on a node that does not yet hold it (its replica not open, as
// on a node still starting, or one whose first snapshot is on its way).
// The leader adds it without a vote, and makes it a voter only once it
// has caught up: added as a voter at once, it would count in the group's
// quorum while it could not answer, and the loss of one more replica
// would stop every write (as a 350-move soak found: a shard leaderless
// for good after its leader crashed beside such a change).
func TestShardAddsAReplicaAsANonvoterUntilItCatchesUp(t *testing.T) {
	nodes, all, want, openShard := startWantedShard(t)
	for _, nd := range nodes[:3] {
		openShard(nd)
	}
	c := newClock()
	leader := shardLeader(t, nodes[:3], 1)
	createFIFO(t, leader, c)
	send(t, leader, c, 0)

	// The map wants n4's replica too, which is not open: the leader adds
	// it, and it must not vote.
	want.Store(&all)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms, _ := shardLeader(t, nodes[:3], 1).Members()
		var n4 *Member
		for i := range ms {
			if ms[i].ID == "n4" {
				n4 = &ms[i]
			}
		}
		if n4 != nil && n4.Voter {
			t.Fatalf("the shard made n4 a voter before its replica held anything: members %v", ms)
		}
		if n4 != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard did not add n4's replica in 20 s: members %v", ms)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a few of the leader's rounds: still no vote
	if ms, _ := shardLeader(t, nodes[:3], 1).Members(); slices.Contains(memberIDs(ms), "n4") {
		t.Fatalf("the shard made n4 a voter before its replica held anything: members %v", ms)
	}

	// One of the three replicas stops: the two left are still a quorum
	// of the shard's voters, and take writes.
	leader = shardLeader(t, nodes[:3], 1)
	var live []*shardNode
	stopped := false
	for _, nd := range nodes[:3] {
		if !stopped && nd.shards[0] != leader {
			nd.shards[0].Close()
			stopped = true
			continue
		}
		live = append(live, nd)
	}
	send(t, shardLeader(t, live, 1), c, 1)

	// n4 opens its replica: it catches up, and then votes.
	openShard(nodes[3])
	live = append(live, nodes[3])
	waitShardMembers(t, live, 1, "n1", "n2", "n3", "n4")
	l := shardLeader(t, live, 1)
	waitApplied(t, &testNode{id: "n4", log: nodes[3].shards[0]}, l.raft.LastIndex())
	if got := queueDepth(&testNode{log: nodes[3].shards[0]}); got != 2 {
		t.Fatalf("n4's replica holds %d messages, want 2", got)
	}
}
