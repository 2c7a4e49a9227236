package placement

import (
	"cmp"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// QueueMove is a queue to move from one shard to another to even out how
// many queues the shards hold.
type QueueMove struct {
	Queue    string
	From, To ShardID
}

// BalanceQueues returns the move that brings the shard holding the most
// queues closest to the one holding the fewest, if they differ by two or
// more: one queue of the fullest, not in skip (the queues that cannot
// move), to the emptiest. Of the fullest shard's queues it moves the one
// of the least load (nil: all alike), the last by name of those tied: a
// move fences its queue for a moment, which an idle queue's clients do
// not see. held lists each shard's queues, every shard that takes queues
// named (an empty one with no queues); shard 0, the first group, takes
// none and is never named. Ties of shards go to the lowest number, so
// every node decides alike.
func BalanceQueues(held map[ShardID][]string, skip func(string) bool, load func(string) uint64) (QueueMove, bool) {
	ids := make([]ShardID, 0, len(held))
	for id := range held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) < 2 {
		return QueueMove{}, false
	}
	// From the fullest shard down, the first with a queue that can move
	// and a shard two or more below it.
	byLoad := slices.Clone(ids)
	slices.SortStableFunc(byLoad, func(a, b ShardID) int { return len(held[b]) - len(held[a]) })
	emptiest := ids[0]
	for _, id := range ids {
		if len(held[id]) < len(held[emptiest]) {
			emptiest = id
		}
	}
	for _, from := range byLoad {
		if len(held[from])-len(held[emptiest]) < 2 {
			break
		}
		queues := slices.Clone(held[from])
		slices.Sort(queues)
		slices.Reverse(queues)
		if q, ok := leastLoaded(queues, skip, load); ok {
			return QueueMove{Queue: q, From: from, To: emptiest}, true
		}
	}
	return QueueMove{}, false
}

// leastLoaded returns the first of queues not in skip whose load is the
// least.
func leastLoaded(queues []string, skip func(string) bool, load func(string) uint64) (string, bool) {
	best, found := "", false
	var bestLoad uint64
	for _, q := range queues {
		if skip != nil && skip(q) {
			continue
		}
		var l uint64
		if load != nil {
			l = load(q)
		}
		if !found || l < bestLoad {
			best, bestLoad, found = q, l, true
		}
	}
	return best, found
}

// DrainFirstGroup returns the move of one queue out of shard 0, the first
// group, which takes no queue once a cluster has shards: its writes are
// every node's work. first lists the queues it holds (from before the
// cluster had shards); the one of the least load (nil: all alike) not in
// skip, the first by key of those tied, goes to the shard of held holding
// the fewest queues (the lowest of those tied). The busiest queues so
// move last.
func DrainFirstGroup(first []api.QueueKey, held map[ShardID][]string, skip func(string) bool, load func(string) uint64) (QueueMove, bool) {
	if len(held) == 0 {
		return QueueMove{}, false
	}
	var to ShardID
	found := false
	for id, qs := range held {
		if !found || len(qs) < len(held[to]) || (len(qs) == len(held[to]) && id < to) {
			to, found = id, true
		}
	}
	qs := slices.Clone(first)
	slices.SortFunc(qs, func(a, b api.QueueKey) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Account, b.Account), cmp.Compare(a.Name, b.Name))
	})
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.String()
	}
	if q, ok := leastLoaded(names, skip, load); ok {
		return QueueMove{Queue: q, From: 0, To: to}, true
	}
	return QueueMove{}, false
}

// MinLoadGain is the least part of the busiest shard's load, in percent,
// that a move by load must take off it (BalanceLoad): a move fences a
// busy queue for a moment, which its clients see as retryable 503s, so
// it is made only for a clear gain, and a cluster whose shards are within
// this of each other is left alone rather than shuffled as loads waver.
const MinLoadGain = 20

// BalanceLoad returns the move that best evens out the loads of the
// shard of the most load and the shard of the least, when their queue
// counts do not call for a move (BalanceQueues): one queue of the busiest
// to the idlest, chosen so that the busier of the two after the move
// carries the least it can, and only when that takes MinLoadGain percent
// or more off the busiest shard and the busiest carries min or more. A
// shard is as busy as the sum of its queues' loads (load), so a shard
// whose load is one queue's is never relieved by moving that queue: it
// would only make another shard as busy. held lists each shard's queues
// as for BalanceQueues; skip names the queues that cannot move. Ties go
// to the lower load moved (its clients are fewer), then to the first by
// name, and ties of shards to the lowest number, so every node decides
// alike.
func BalanceLoad(held map[ShardID][]string, skip func(string) bool, load func(string) uint64, min uint64) (QueueMove, bool) {
	if len(held) < 2 || load == nil {
		return QueueMove{}, false
	}
	ids := make([]ShardID, 0, len(held))
	total := make(map[ShardID]uint64, len(held))
	for id, qs := range held {
		ids = append(ids, id)
		for _, q := range qs {
			total[id] += load(q)
		}
	}
	slices.Sort(ids)
	busiest, idlest := ids[0], ids[0]
	for _, id := range ids[1:] {
		if total[id] > total[busiest] {
			busiest = id
		}
		if total[id] < total[idlest] {
			idlest = id
		}
	}
	hot, cold := total[busiest], total[idlest]
	if hot < min || hot == cold {
		return QueueMove{}, false
	}
	queues := slices.Clone(held[busiest])
	slices.Sort(queues)
	best, bestLoad, bestAfter := "", uint64(0), hot
	for _, q := range queues {
		l := load(q)
		if l == 0 || (skip != nil && skip(q)) {
			continue
		}
		after := max(hot-l, cold+l)
		if after < bestAfter || (after == bestAfter && best != "" && l < bestLoad) {
			best, bestLoad, bestAfter = q, l, after
		}
	}
	if best == "" || (hot-bestAfter)*100 < hot*MinLoadGain {
		return QueueMove{}, false
	}
	return QueueMove{Queue: best, From: busiest, To: idlest}, true
}
