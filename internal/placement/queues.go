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
