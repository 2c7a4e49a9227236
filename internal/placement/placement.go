// Package placement decides where a cluster's shards and queues live:
// which nodes hold each shard's replicas (and which of them is preferred
// to lead it), which shard a new queue goes to, which replica moves bring
// a cluster whose nodes changed back into balance, and which queue moves
// even out the shards' queues and loads.
//
// A shard is one Raft group over a set of queues (docs/cluster.md,
// "Shards"). Every decision here is a pure function of its input: the
// same input gives the same answer on every node and in every run, so
// the first group's leader decides and writes the decision into the
// shard map (internal/shards), and any node could check it. Nothing here
// talks to Raft, the network or the engine; internal/shards applies the
// moves (add the new replica as a non-voter, let it catch up, promote
// it, remove the old one) and the queue moves (fence, install, flip,
// drop).
//
// The rules, each as CockroachDB's allocator and NATS JetStream's peer
// selection do in their own terms:
//
//   - A shard has min(3, nodes) replicas, on distinct nodes.
//   - Replicas are spread so that no node holds more than one replica more
//     than another, and so are the preferred leaders.
//   - A change moves as few replicas as that takes, one at a time, each
//     move keeping every shard at its full count of replicas.
//   - A new queue goes to a shard holding the fewest queues, then one of
//     the least load.
//
// Ties are broken by the lowest shard number or node id, never by a map's
// order or a clock, so that decisions are reproducible.
package placement

import (
	"cmp"
	"fmt"
	"slices"
)

// NodeID names a node, as its Raft server id does.
type NodeID string

// ShardID numbers a shard; shard 0 is the cluster's first group, the one an
// upgraded cluster keeps its data in.
type ShardID uint32

// MaxReplicas is how many replicas a shard has in a cluster of that many
// nodes or more: a majority survives the loss of any one node.
const MaxReplicas = 3

// Shard is one Raft group: its number and the nodes that hold its replicas,
// in the order they were placed (the first is where its leader was first
// wanted).
type Shard struct {
	ID       ShardID
	Replicas []NodeID
}

// Map says where every shard's replicas live.
type Map struct {
	Shards []Shard // by ID, ascending; IDs 0..len-1
}

// ReplicaCount is how many replicas each shard has in a cluster of nodes.
func ReplicaCount(nodes int) int {
	return min(MaxReplicas, max(nodes, 1))
}

// Initial returns the first map of a cluster of the given nodes (any
// order; at least one) with shards shards. Shard by shard, its first
// replica (where its leader is first wanted) goes to the node that is the
// first replica of the fewest shards so far, and its others to the nodes
// holding the fewest replicas: every node then holds as many replicas as
// any other to within one, and is the first replica of as many shards to
// within one (TestInitialSpreadsReplicasAndPreferredLeaders checks both
// for every cluster of up to 9 nodes and 40 shards).
func Initial(nodes []NodeID, shards int) (Map, error) {
	ns, err := sortedNodes(nodes)
	if err != nil {
		return Map{}, err
	}
	if shards < 1 {
		return Map{}, fmt.Errorf("placement: %d shards; a cluster has at least one", shards)
	}
	rf := ReplicaCount(len(ns))
	m := Map{Shards: make([]Shard, shards)}
	count := make(map[NodeID]int, len(ns))
	first := make(map[NodeID]int, len(ns))
	for i := range m.Shards {
		s := Shard{ID: ShardID(i), Replicas: make([]NodeID, 0, rf)}
		lead := ns[0]
		for _, n := range ns[1:] {
			if first[n] < first[lead] || first[n] == first[lead] && count[n] < count[lead] {
				lead = n
			}
		}
		s.Replicas = append(s.Replicas, lead)
		first[lead]++
		count[lead]++
		for len(s.Replicas) < rf {
			n, _ := fewest(ns, count, s)
			s.Replicas = append(s.Replicas, n)
			count[n]++
		}
		m.Shards[i] = s
	}
	return m, nil
}

// Loads is how busy each shard's leader has been lately, in commands
// applied a second (Rate), as the balancer last read them. A shard whose
// rate is within Slack commands a second, plus MinLoadGain percent, of the
// least counts as no busier than it: loads waver, and a clear difference
// is what a move by load would part too. The zero Loads knows of none:
// every shard counts as idle.
type Loads struct {
	Rate  map[ShardID]float64
	Slack float64
}

// near reports whether a shard of rate r is as good a home as the one of
// the least rate, least.
func (l Loads) near(r, least float64) bool {
	return r <= least+l.Slack+least*MinLoadGain/100
}

// QueueShard returns the shard of ids (ascending, not empty) a new queue
// goes to, deciding by each of these in turn, so that every node decides
// alike:
//
//   - one holding the fewest queues (count), so that the shards stay even
//     and the balancer has nothing to move: a queue placed in a shard
//     holding more would be moved out again by count;
//   - among those, one of the least load (loads), so that a new queue does
//     not join a shard whose leader is already busy while another idles,
//     which the balancer would part only later, by a move its clients see;
//   - among those, the one whose preferred leader (leaders) is origin, the
//     node the queue's creation arrived at, so that a client that uses the
//     node it created its queue through finds the queue led there and its
//     requests are not forwarded;
//   - else the lowest numbered.
func QueueShard(ids []ShardID, count map[ShardID]int, loads Loads, leaders map[ShardID]NodeID, origin NodeID) ShardID {
	fewest := count[ids[0]]
	for _, id := range ids {
		fewest = min(fewest, count[id])
	}
	least := -1.0
	for _, id := range ids {
		if r := loads.Rate[id]; count[id] == fewest && (least < 0 || r < least) {
			least = r
		}
	}
	var best ShardID
	found := false
	for _, id := range ids {
		if count[id] != fewest || !loads.near(loads.Rate[id], least) {
			continue
		}
		if !found || (origin != "" && leaders[id] == origin && leaders[best] != origin) {
			best, found = id, true
		}
	}
	return best
}

// sortedNodes returns a sorted copy of nodes, refusing an empty list, an
// empty id or one named twice.
func sortedNodes(nodes []NodeID) ([]NodeID, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("placement: no nodes")
	}
	ns := slices.Clone(nodes)
	slices.Sort(ns)
	for i, n := range ns {
		if n == "" {
			return nil, fmt.Errorf("placement: a node with an empty id")
		}
		if i > 0 && ns[i-1] == n {
			return nil, fmt.Errorf("placement: node %q named twice", n)
		}
	}
	return ns, nil
}

// clone returns a deep copy of m.
func (m Map) clone() Map {
	c := Map{Shards: make([]Shard, len(m.Shards))}
	for i, s := range m.Shards {
		c.Shards[i] = Shard{ID: s.ID, Replicas: slices.Clone(s.Replicas)}
	}
	return c
}

// replicaCounts returns how many replicas each of nodes holds in m.
func replicaCounts(m Map, nodes []NodeID) map[NodeID]int {
	count := make(map[NodeID]int, len(nodes))
	for _, n := range nodes {
		count[n] = 0
	}
	for _, s := range m.Shards {
		for _, r := range s.Replicas {
			if _, ok := count[r]; ok {
				count[r]++
			}
		}
	}
	return count
}

// fewest returns the node of nodes with the lowest count that holds no
// replica of s, the lowest id of those tied; ok is false if every node
// holds one.
func fewest(nodes []NodeID, count map[NodeID]int, s Shard) (NodeID, bool) {
	var best NodeID
	found := false
	for _, n := range nodes { // sorted: the first of a tie wins
		if slices.Contains(s.Replicas, n) {
			continue
		}
		if !found || count[n] < count[best] {
			best, found = n, true
		}
	}
	return best, found
}

// byCount orders nodes by descending count, then ascending id.
func byCount(nodes []NodeID, count map[NodeID]int) []NodeID {
	ns := slices.Clone(nodes)
	slices.SortStableFunc(ns, func(a, b NodeID) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ns
}
