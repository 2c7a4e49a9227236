package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func nodeIDs(n int) []NodeID {
	ns := make([]NodeID, n)
	for i := range ns {
		ns[i] = NodeID(fmt.Sprintf("node-%02d", i+1))
	}
	return ns
}

// spread returns the lowest and highest of the counts of nodes.
func spread(count map[NodeID]int, nodes []NodeID) (lo, hi int) {
	lo, hi = count[nodes[0]], count[nodes[0]]
	for _, n := range nodes {
		lo, hi = min(lo, count[n]), max(hi, count[n])
	}
	return lo, hi
}

// checkMap fails the test unless every shard of m has ReplicaCount(nodes)
// replicas on distinct members, and no member holds two replicas or more
// more than another.
func checkMap(t *testing.T, m Map, nodes []NodeID, when string) {
	t.Helper()
	rf := ReplicaCount(len(nodes))
	for i, s := range m.Shards {
		if s.ID != ShardID(i) {
			t.Fatalf("%s: shard at %d has id %d", when, i, s.ID)
		}
		if len(s.Replicas) != rf {
			t.Fatalf("%s: shard %d has replicas %v, want %d", when, s.ID, s.Replicas, rf)
		}
		for k, r := range s.Replicas {
			if !slices.Contains(nodes, r) {
				t.Fatalf("%s: shard %d has a replica on %q, not a member of %v", when, s.ID, r, nodes)
			}
			if slices.Contains(s.Replicas[:k], r) {
				t.Fatalf("%s: shard %d has two replicas on %q: %v", when, s.ID, r, s.Replicas)
			}
		}
	}
	if lo, hi := spread(replicaCounts(m, nodes), nodes); hi-lo > 1 {
		t.Fatalf("%s: nodes hold %d to %d replicas: %v", when, lo, hi, replicaCounts(m, nodes))
	}
}

func TestReplicaCount(t *testing.T) {
	for _, c := range []struct{ nodes, replicas int }{
		{1, 1}, {2, 2}, {3, 3}, {9, 3}, {0, 1},
	} {
		if got := ReplicaCount(c.nodes); got != c.replicas {
			t.Errorf("ReplicaCount(%d) = %d, want %d", c.nodes, got, c.replicas)
		}
	}
}

// TestInitialSpreadsReplicasAndPreferredLeaders: the first map of any
// cluster has full, distinct replica sets, as many replicas on every node
// to within one, and as many first replicas (preferred leaders) too.
func TestInitialSpreadsReplicasAndPreferredLeaders(t *testing.T) {
	for n := 1; n <= 9; n++ {
		nodes := nodeIDs(n)
		for shards := 1; shards <= 40; shards++ {
			m, err := Initial(nodes, shards)
			if err != nil {
				t.Fatal(err)
			}
			when := fmt.Sprintf("%d nodes, %d shards", n, shards)
			checkMap(t, m, nodes, when)
			first := map[NodeID]int{}
			for _, s := range m.Shards {
				first[s.Replicas[0]]++
			}
			if lo, hi := spread(first, nodes); hi-lo > 1 {
				t.Fatalf("%s: nodes are the first replica of %d to %d shards", when, lo, hi)
			}
		}
	}
	// The order the nodes are given in does not matter.
	a, _ := Initial([]NodeID{"c", "a", "b"}, 5)
	b, _ := Initial([]NodeID{"a", "b", "c"}, 5)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("Initial depends on the nodes' order: %v against %v", a, b)
	}
}

func TestInitialRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		nodes  []NodeID
		shards int
	}{
		{nil, 1}, {[]NodeID{"a"}, 0}, {[]NodeID{"a", "a"}, 1}, {[]NodeID{"a", ""}, 1},
	} {
		if _, err := Initial(c.nodes, c.shards); err == nil {
			t.Errorf("Initial(%q, %d) took it", c.nodes, c.shards)
		}
	}
}

// TestQueueShardPrefersTheOriginsShardAmongTheEmptiest: a queue goes to
// a shard holding the fewest queues, and among those to the one its
// origin node is preferred to lead, so that three nodes each creating a
// queue through themselves get one shard each, each led where its
// queue's requests arrive; a node that leads no emptiest shard, or an
// unknown origin, gets the lowest numbered.
func TestQueueShardPrefersTheOriginsShardAmongTheEmptiest(t *testing.T) {
	ids := []ShardID{1, 2, 3}
	leaders := map[ShardID]NodeID{1: "n2", 2: "n3", 3: "n1"}
	count := map[ShardID]int{}
	for _, origin := range []NodeID{"n1", "n2", "n3"} {
		s := QueueShard(ids, count, Loads{}, leaders, origin)
		if leaders[s] != origin {
			t.Fatalf("a queue created through %s went to shard %d, led by %s; counts %v", origin, s, leaders[s], count)
		}
		count[s]++
	}
	// Now even: n1's next queue goes to its own shard again.
	if s := QueueShard(ids, count, Loads{}, leaders, "n1"); s != 3 {
		t.Fatalf("n1's fourth queue went to shard %d, want 3", s)
	}
	count[3]++
	// Shard 3 holds two; n1's next goes to the lowest of the emptiest.
	if s := QueueShard(ids, count, Loads{}, leaders, "n1"); s != 1 {
		t.Fatalf("n1's fifth queue went to shard %d, want 1 (shard 3 holds more)", s)
	}
	if s := QueueShard(ids, map[ShardID]int{}, Loads{}, leaders, ""); s != 1 {
		t.Fatalf("a queue of no origin went to shard %d, want 1", s)
	}
	if s := QueueShard(ids, map[ShardID]int{}, Loads{}, leaders, "n9"); s != 1 {
		t.Fatalf("a queue from a node that leads no shard went to shard %d, want 1", s)
	}
}

// TestQueueShardAvoidsABusyShard: among the shards holding the fewest
// queues, a new queue goes to one of the least load, even past the shard
// its origin leads; loads that differ by less than the slack (or
// MinLoadGain percent) count as equal, and the queue count comes first,
// since a queue placed where the counts are uneven would be moved out
// again.
func TestQueueShardAvoidsABusyShard(t *testing.T) {
	ids := []ShardID{1, 2, 3}
	leaders := map[ShardID]NodeID{1: "n1", 2: "n2", 3: "n3"}
	even := map[ShardID]int{1: 2, 2: 2, 3: 2}
	busy := Loads{Rate: map[ShardID]float64{1: 900, 2: 40, 3: 20}, Slack: 50}
	for _, c := range []struct {
		name   string
		count  map[ShardID]int
		loads  Loads
		origin NodeID
		want   ShardID
	}{
		{"the origin's shard is busy: the lowest numbered of the idle", even, busy, "n1", 2},
		{"loads within the slack are equal: the origin's", even, busy, "n2", 2},
		{"loads within the slack, no origin: the lowest numbered", even, busy, "", 2},
		{"past the slack: not the origin's", even, Loads{Rate: busy.Rate, Slack: 10}, "n2", 3},
		{"MinLoadGain percent of the least is near", even, Loads{Rate: map[ShardID]float64{1: 1190, 2: 1000, 3: 5000}}, "n1", 1},
		{"beyond it is not", even, Loads{Rate: map[ShardID]float64{1: 1210, 2: 1000, 3: 5000}}, "n1", 2},
		{"fewer queues win over less load", map[ShardID]int{1: 1, 2: 2, 3: 2}, busy, "n3", 1},
		{"no loads known: the origin's", even, Loads{}, "n3", 3},
	} {
		if got := QueueShard(ids, c.count, c.loads, leaders, c.origin); got != c.want {
			t.Errorf("%s: shard %d, want %d (counts %v, loads %v)", c.name, got, c.want, c.count, c.loads)
		}
	}
}

// applyMoves makes moves on m one at a time as the meta group would (add,
// then remove), failing the test if a move adds a replica the shard has,
// removes one it lacks, or leaves a shard with fewer replicas than it had
// while it had no more than want.
func applyMoves(t *testing.T, m Map, moves []Move, want int) Map {
	t.Helper()
	m = m.clone()
	for _, mv := range moves {
		s := &m.Shards[mv.Shard]
		before := len(s.Replicas)
		if mv.Add != "" {
			if slices.Contains(s.Replicas, mv.Add) {
				t.Fatalf("%v adds a replica the shard has: %v", mv, s.Replicas)
			}
			s.Replicas = append(s.Replicas, mv.Add)
		}
		if mv.Remove != "" {
			i := slices.Index(s.Replicas, mv.Remove)
			if i < 0 {
				t.Fatalf("%v removes a replica the shard lacks: %v", mv, s.Replicas)
			}
			s.Replicas = slices.Delete(s.Replicas, i, i+1)
		}
		if len(s.Replicas) < before && before <= want {
			t.Fatalf("%v leaves shard %d with %d replicas, fewer than the %d it had", mv, mv.Shard, len(s.Replicas), before)
		}
	}
	return m
}

// sameReplicaSets says whether a and b place every shard on the same nodes,
// whatever their order.
func sameReplicaSets(a, b Map) bool {
	if len(a.Shards) != len(b.Shards) {
		return false
	}
	for i := range a.Shards {
		x, y := slices.Clone(a.Shards[i].Replicas), slices.Clone(b.Shards[i].Replicas)
		slices.Sort(x)
		slices.Sort(y)
		if !slices.Equal(x, y) {
			return false
		}
	}
	return true
}

// TestRebalanceKeepsEveryShardWholeAndBalanced grows and shrinks clusters
// at random, from 1 to 12 nodes and 1 to 40 shards: after every Rebalance
// every shard has its full count of replicas on distinct members, no node
// holds two or more replicas more than another, the moves made one at a
// time lead to the map returned without ever taking a shard under its
// count, a second Rebalance finds nothing to do, and the same input gives
// the same answer.
func TestRebalanceKeepsEveryShardWholeAndBalanced(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	next := 100
	for trial := range 200 {
		nodes := nodeIDs(1 + rng.IntN(6))
		m, err := Initial(nodes, 1+rng.IntN(40))
		if err != nil {
			t.Fatal(err)
		}
		for step := range 12 {
			switch {
			case len(nodes) == 1 || len(nodes) < 12 && rng.IntN(2) == 0:
				for range 1 + rng.IntN(2) {
					nodes = append(nodes, NodeID(fmt.Sprintf("node-%03d", next)))
					next++
				}
			default:
				i := rng.IntN(len(nodes))
				nodes = slices.Delete(slices.Clone(nodes), i, i+1)
			}
			when := fmt.Sprintf("trial %d step %d, %d nodes, %d shards", trial, step, len(nodes), len(m.Shards))
			moves, got, err := Rebalance(m, nodes)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			checkMap(t, got, nodes, when)
			if applied := applyMoves(t, m, moves, ReplicaCount(len(nodes))); !sameReplicaSets(applied, got) {
				t.Fatalf("%s: the moves %v lead to %v, not the map returned %v", when, moves, applied.Shards, got.Shards)
			}
			if again, _, _ := Rebalance(got, nodes); len(again) != 0 {
				t.Fatalf("%s: a second Rebalance moves %v", when, again)
			}
			reversed := slices.Clone(nodes)
			slices.Reverse(reversed)
			if moves2, got2, _ := Rebalance(m, reversed); !reflect.DeepEqual(moves, moves2) || !reflect.DeepEqual(got, got2) {
				t.Fatalf("%s: Rebalance is not reproducible", when)
			}
			m = got
		}
	}
}

// TestJoiningNodeTakesOnlyItsShare: a node joining a balanced cluster
// receives no more replicas than its share, each moved from another node,
// and a departed node's replicas go to the members holding the fewest.
func TestJoiningNodeTakesOnlyItsShare(t *testing.T) {
	nodes := nodeIDs(5)
	m, _ := Initial(nodes, 10) // 30 replicas, 6 a node
	joined := append(slices.Clone(nodes), "node-06")
	moves, got, err := Rebalance(m, joined)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 5 { // 30 over 6 nodes: 5 each
		t.Fatalf("a sixth node received %d replicas, want its share of 5: %v", len(moves), moves)
	}
	for _, mv := range moves {
		if mv.Add != "node-06" || mv.Remove == "" {
			t.Fatalf("move %v is not one replica moved to the new node", mv)
		}
	}
	checkMap(t, got, joined, "after the join")

	left := slices.DeleteFunc(slices.Clone(joined), func(n NodeID) bool { return n == "node-02" })
	moves, got, err = Rebalance(got, left)
	if err != nil {
		t.Fatal(err)
	}
	for _, mv := range moves {
		if mv.Remove != "node-02" || mv.Add == "" {
			t.Fatalf("move %v is not a replica of the departed node replaced", mv)
		}
	}
	if len(moves) != 5 {
		t.Fatalf("%d moves for the departed node's 5 replicas: %v", len(moves), moves)
	}
	checkMap(t, got, left, "after node-02 left")
}

// TestSmallClustersGainAndLoseReplicas: a cluster growing from one node to
// three adds replicas to every shard, and one shrinking back removes them.
func TestSmallClustersGainAndLoseReplicas(t *testing.T) {
	one := nodeIDs(1)
	m, _ := Initial(one, 4)
	moves, three, err := Rebalance(m, nodeIDs(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 8 {
		t.Fatalf("4 shards of one replica grew to three with %d moves, want 8: %v", len(moves), moves)
	}
	for _, mv := range moves {
		if mv.Remove != "" {
			t.Fatalf("%v removes a replica while the shard grows", mv)
		}
	}
	checkMap(t, three, nodeIDs(3), "grown to three")
	moves, back, err := Rebalance(three, one)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 8 {
		t.Fatalf("shrinking back to one node took %d moves, want 8: %v", len(moves), moves)
	}
	checkMap(t, back, one, "shrunk to one")
}
