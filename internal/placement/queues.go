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
// more: one queue of the fullest (the last by name not in skip, the
// queues that cannot move), to the emptiest. held lists each shard's
// queues, every shard that takes queues named (an empty one with no
// queues); shard 0, the first group, takes none and is never named. Ties
// go to the lowest shard number, so every node decides alike.
func BalanceQueues(held map[ShardID][]string, skip func(string) bool) (QueueMove, bool) {
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
		for i := len(queues) - 1; i >= 0; i-- {
			if skip == nil || !skip(queues[i]) {
				return QueueMove{Queue: queues[i], From: from, To: emptiest}, true
			}
		}
	}
	return QueueMove{}, false
}

// DrainFirstGroup returns the move of one queue out of shard 0, the first
// group, which takes no queue once a cluster has shards: its writes are
// every node's work. first lists the queues it holds (from before the
// cluster had shards); the first by key not in skip goes to the shard of
// held holding the fewest queues (the lowest of those tied).
func DrainFirstGroup(first []api.QueueKey, held map[ShardID][]string, skip func(string) bool) (QueueMove, bool) {
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
	for _, q := range qs {
		if skip == nil || !skip(q.String()) {
			return QueueMove{Queue: q.String(), From: 0, To: to}, true
		}
	}
	return QueueMove{}, false
}
