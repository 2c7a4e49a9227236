package placement

import (
	"cmp"
	"fmt"
	"slices"
)

// Transfer is one leadership transfer: From, which leads Shard, hands its
// leadership to To, which holds a replica of it.
type Transfer struct {
	Shard    ShardID
	From, To NodeID
}

func (t Transfer) String() string {
	return fmt.Sprintf("shard %d: %q → %q", t.Shard, t.From, t.To)
}

// LeaderTransfers returns the leadership transfers, in order, that spread
// the shards' leaders over the nodes holding their replicas, so that no
// node leads two or more shards more than another where the replicas allow
// it.
// leaders is each shard's leader as Raft reports it; a shard without one
// (an election under way) or whose leader holds no replica in m (a stale
// report) is left alone. Each transfer goes from the node leading the most
// shards (the lowest id of those tied) to the replica of one of its shards
// leading the fewest, the lowest-numbered shard first; there are no more
// transfers than the balance needs.
func LeaderTransfers(m Map, leaders map[ShardID]NodeID) []Transfer {
	count := map[NodeID]int{}
	for _, s := range m.Shards {
		for _, r := range s.Replicas {
			count[r] += 0
		}
	}
	led := make(map[ShardID]NodeID, len(leaders))
	for _, s := range m.Shards {
		if l, ok := leaders[s.ID]; ok && slices.Contains(s.Replicas, l) {
			led[s.ID] = l
			count[l]++
		}
	}
	nodes := make([]NodeID, 0, len(count))
	for n := range count {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)

	var out []Transfer
	for {
		t, ok := nextTransfer(m, nodes, led, count)
		if !ok {
			return out
		}
		led[t.Shard] = t.To
		count[t.From]--
		count[t.To]++
		out = append(out, t)
	}
}

// nextTransfer finds the next transfer of LeaderTransfers, if any.
func nextTransfer(m Map, nodes []NodeID, led map[ShardID]NodeID, count map[NodeID]int) (Transfer, bool) {
	for _, hi := range byCount(nodes, count) {
		for _, s := range m.Shards {
			if led[s.ID] != hi {
				continue
			}
			to := slices.MinFunc(s.Replicas, func(a, b NodeID) int {
				if c := cmp.Compare(count[a], count[b]); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			if count[hi]-count[to] >= 2 {
				return Transfer{Shard: s.ID, From: hi, To: to}, true
			}
		}
	}
	return Transfer{}, false
}
