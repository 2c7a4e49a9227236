package placement

import (
	"fmt"
	"slices"
)

// Move is one change of a shard's replicas: Add joins it (as a non-voter
// until it has caught up, then a voter), and then Remove leaves it. One of
// the two may be empty: a shard short of replicas only gains one, a shard
// of a cluster that shrank under MaxReplicas nodes only loses one. A
// replica that leads is asked to hand its leadership over before it is
// removed.
type Move struct {
	Shard  ShardID
	Add    NodeID
	Remove NodeID
}

func (mv Move) String() string {
	return fmt.Sprintf("shard %d: +%q -%q", mv.Shard, mv.Add, mv.Remove)
}

// Rebalance returns the moves that bring m to a cluster of the given nodes,
// in the order to make them, and the map they lead to. In order:
//
//  1. a replica on a node that is no longer a member is replaced by one on
//     the member holding the fewest replicas (or only removed, if every
//     member already holds one of that shard);
//  2. a shard with fewer than ReplicaCount replicas gains them, and one
//     with more (the cluster shrank under three nodes) loses them from the
//     nodes holding the most;
//  3. while a node holds two or more replicas more than another, one of its
//     replicas moves to the other: the lowest-numbered shard that the
//     other does not already hold.
//
// Each move keeps a shard's replicas on distinct nodes. Step 3 moves no
// more replicas than the balance needs: a node that joins a cluster of n
// receives about total/(n+1) replicas, each taken from a node that held
// more than its share.
func Rebalance(m Map, nodes []NodeID) ([]Move, Map, error) {
	ns, err := sortedNodes(nodes)
	if err != nil {
		return nil, Map{}, err
	}
	rf := ReplicaCount(len(ns))
	next := m.clone()
	count := replicaCounts(next, ns)
	var moves []Move
	move := func(s *Shard, add, remove NodeID) {
		switch {
		case add != "" && remove != "":
			s.Replicas[slices.Index(s.Replicas, remove)] = add
		case add != "":
			s.Replicas = append(s.Replicas, add)
		default:
			s.Replicas = slices.DeleteFunc(s.Replicas, func(n NodeID) bool { return n == remove })
		}
		if add != "" {
			count[add]++
		}
		if _, member := count[remove]; member && remove != "" {
			count[remove]--
		}
		moves = append(moves, Move{Shard: s.ID, Add: add, Remove: remove})
	}

	for i := range next.Shards {
		s := &next.Shards[i]
		for _, r := range slices.Clone(s.Replicas) {
			if _, member := count[r]; member {
				continue
			}
			if to, ok := fewest(ns, count, *s); ok && len(members(s.Replicas, count)) < rf {
				move(s, to, r)
			} else {
				move(s, "", r)
			}
		}
		for len(s.Replicas) < rf {
			to, ok := fewest(ns, count, *s)
			if !ok {
				break
			}
			move(s, to, "")
		}
		for len(s.Replicas) > rf {
			move(s, "", byCount(s.Replicas, count)[0])
		}
	}

	for {
		mv, ok := balancingMove(next, ns, count)
		if !ok {
			break
		}
		move(&next.Shards[mv.shard], mv.add, mv.remove)
	}
	return moves, next, nil
}

// members returns the replicas that are on members (keys of count).
func members(replicas []NodeID, count map[NodeID]int) []NodeID {
	var in []NodeID
	for _, r := range replicas {
		if _, ok := count[r]; ok {
			in = append(in, r)
		}
	}
	return in
}

// pendingMove is a balancing move found, by the index of its shard.
type pendingMove struct {
	shard       int
	add, remove NodeID
}

// balancingMove finds the next move of step 3 of Rebalance: from the node
// holding the most replicas (the lowest id of those tied) to the node
// holding the fewest that takes one of its shards, if they differ by two
// or more.
func balancingMove(m Map, nodes []NodeID, count map[NodeID]int) (pendingMove, bool) {
	order := byCount(nodes, count)
	for _, hi := range order {
		for k := len(order) - 1; k >= 0; k-- {
			lo := order[k]
			if count[hi]-count[lo] < 2 {
				break
			}
			for i, s := range m.Shards {
				if slices.Contains(s.Replicas, hi) && !slices.Contains(s.Replicas, lo) {
					return pendingMove{shard: i, add: lo, remove: hi}, true
				}
			}
		}
	}
	return pendingMove{}, false
}
