package shards

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Spreading high-throughput FIFO queues over the shards (docs/cluster.md,
// "One busy FIFO queue over many shards: partitions"). What SQS calls a
// high-throughput FIFO queue (FifoThroughputLimit perMessageGroupId) is
// the one whose guarantees are all per message group, so that the
// partitions of partitions.go can carry it; the first group's leader,
// which drives splits and moves, decides when to make them:
//
//   - spreadQueues, every spreadEvery: a high-throughput queue with fewer
//     partitions than there are shards has its widest partition split at
//     the middle of its range, and the new half moved to a shard holding
//     none of the queue's partitions, until every shard holds one; one
//     made before the cluster had that many shards is so spread further as
//     shards are added. A queue switched out of the mode is gathered back
//     into one partition: its last partition moved beside the one before
//     it and merged into it, until partition 0 is left alone.
//   - splitHot, in the balancer's rounds (balanceQueues): a partition of a
//     high-throughput queue busier than SplitRate commands a second two
//     rounds in a row splits in two, and its new half moves to the least
//     loaded shard, up to maxPartsPerShard partitions of the queue a shard.
//
// The balancer's own moves by count and by load leave the partitions of
// split queues alone: they would crowd two partitions of one queue into
// one shard, the opposite of a spread.
//
// A queue created high-throughput is empty when it is spread, so its
// splits and moves cost each a few log entries and a fence of moments;
// the routers keep its clients on the partition that owns each group
// meanwhile (the moving error, which they retry).

// spreadEvery is how often the first group's leader looks for queues to
// spread or gather: often, so that a queue created high-throughput is
// spread within seconds of its first messages. A variable for the tests.
var spreadEvery = 3 * time.Second

// DefaultSplitRate is the commands a second above which a partition of a
// high-throughput queue splits (Config.SplitRate): about what SQS gives
// one partition of such a queue (300 transactions a second).
const DefaultSplitRate = 300

// maxPartsPerShard bounds the partitions splitHot makes of one queue, per
// shard: past a few per shard a split adds no leader to the queue, only
// another range to ask in each receive.
const maxPartsPerShard = 4

// unspreadableFor is how long a queue whose split, merge or move was
// refused is passed over by spreadQueues (a dead-letter queue, a queue
// with move tasks, one split and merged so often that it honours its most
// past handle tags).
const unspreadableFor = 10 * time.Minute

// splitRate is the rate above which splitHot splits a partition; 0: never.
func (s *Set) splitRate() float64 {
	switch {
	case s.cfg.SplitRate < 0:
		return 0
	case s.cfg.SplitRate == 0:
		return DefaultSplitRate
	}
	return s.cfg.SplitRate
}

// spreadQueues, on the first group's leader, spreads each high-throughput
// queue over the shards, and gathers each split queue no longer in the
// mode into one partition (this file's comment). A queue's mode is read
// from its partition 0, as the replica of its shard that answers has it.
func (s *Set) spreadQueues(st Steps) {
	ids := s.Named()
	if len(ids) < 2 || !s.host.Leading() || !s.host.WritesMoves() {
		return
	}
	ctx, cancel := s.untilQuit(time.Minute)
	defer cancel()
	holding := map[uint32]int{}
	mode := map[api.QueueKey]bool{}
	for _, id := range ids {
		qs, err := st.Queues(ctx, id)
		if err != nil {
			return // a shard that cannot be read is not spread to
		}
		holding[id] = len(qs)
		for q, l := range qs {
			if q.Part == 0 && s.Of(q) == id {
				mode[q] = l.HighThroughput
			}
		}
	}
	now := time.Now()
	for _, q := range slices.SortedFunc(func(yield func(api.QueueKey) bool) {
		for q := range mode {
			if !yield(q) {
				return
			}
		}
	}, compareKeys) {
		if until, ok := s.unspreadable[q]; ok && now.Before(until) {
			continue
		}
		var err error
		switch {
		case mode[q]:
			err = s.spread(ctx, q, ids, holding)
		case s.IsSplit(q):
			err = s.gather(ctx, q)
		}
		if err == nil || ctx.Err() != nil || !s.host.Leading() {
			continue
		}
		if refused(err) || errors.Is(err, errAbandoned) {
			s.unspreadable[q] = now.Add(unspreadableFor)
		}
		s.cfg.Logger.Warn("shards: a high-throughput queue's partitions did not spread or gather", "queue", q, "err", err)
	}
	for q, until := range s.unspreadable {
		if !now.Before(until) {
			delete(s.unspreadable, q)
		}
	}
}

// compareKeys orders queue keys by their names in the map.
func compareKeys(a, b api.QueueKey) int { return cmp.Compare(a.String(), b.String()) }

// spread splits and moves q's partitions until each shard of ids holds
// one, or holds one as far as the partitions go (holding: the queues each
// shard holds, which breaks ties, kept up to date).
func (s *Set) spread(ctx context.Context, q api.QueueKey, ids []uint32, holding map[uint32]int) error {
	for range 2 * len(ids) {
		l := s.layoutOrWhole(q)
		per := s.partsPerShard(q, l)
		empty, ok := leastHolding(ids, holding, func(id uint32) bool { return len(per[id]) == 0 })
		if !ok {
			return nil // every shard holds a partition of q
		}
		var part api.QueueKey
		if len(l.Parts) < len(ids) {
			i := widest(l)
			lo, hi := l.span(i)
			k := q
			k.Part = l.Parts[i].Part
			if s.Of(k) == 0 {
				return nil // in the first group: it is drained to a shard first
			}
			n, err := s.Split(ctx, k, uint32(lo+(hi-lo)/2))
			if err != nil {
				return err
			}
			part = q
			part.Part = n
			holding[s.Of(k)]++
		} else {
			// As many partitions as shards, or more, but one shard
			// holds none while another holds two (a partition left in
			// its parent's shard by a leader killed before its move).
			crowded, ok := mostOf(ids, per)
			if !ok {
				return nil
			}
			part = q
			part.Part = per[crowded][len(per[crowded])-1]
		}
		from := s.Of(part)
		if _, err := s.Move(ctx, part, empty); err != nil {
			return err
		}
		holding[from]--
		holding[empty]++
	}
	return nil
}

// gather merges q's partitions back into partition 0, last first: the
// last is moved beside the one before it, then merged into it.
func (s *Set) gather(ctx context.Context, q api.QueueKey) error {
	for range engine.MaxPart {
		l, split := s.Layout(q)
		if !split || len(l.Parts) < 2 {
			return nil
		}
		a, b := q, q
		a.Part, b.Part = l.Parts[len(l.Parts)-2].Part, l.Parts[len(l.Parts)-1].Part
		if to := s.Of(a); s.Of(b) != to {
			if _, err := s.Move(ctx, b, to); err != nil {
				return err
			}
		}
		if err := s.Merge(ctx, a, b.Part); err != nil {
			return err
		}
	}
	return nil
}

// splitHot splits a partition of a high-throughput queue that was busier
// than the split rate in two rounds of balancing in a row (hot: the
// partitions busier than it this round, with their shards), and moves its
// new half to the shard of the least load (rate, commands a second) that
// holds the fewest of the queue's partitions. It makes at most one split
// a round, and reports whether it made one.
func (s *Set) splitHot(ctx context.Context, hot map[api.QueueKey]uint32, ids []uint32, rate map[uint32]float64) bool {
	for q := range s.hotParts {
		if _, ok := hot[q]; !ok {
			delete(s.hotParts, q)
		}
	}
	var pick api.QueueKey
	found := false
	for _, q := range slices.SortedFunc(func(yield func(api.QueueKey) bool) {
		for q := range hot {
			if !yield(q) {
				return
			}
		}
	}, compareKeys) {
		s.hotParts[q]++
		if s.hotParts[q] < 2 || found {
			continue
		}
		if until, ok := s.unspreadable[q.Whole()]; ok && time.Now().Before(until) {
			continue
		}
		if len(s.Parts(q)) >= maxPartsPerShard*len(ids) {
			continue
		}
		pick, found = q, true
	}
	if !found {
		return false
	}
	delete(s.hotParts, pick)
	l := s.layoutOrWhole(pick)
	i := slices.IndexFunc(l.Parts, func(p PartRange) bool { return p.Part == pick.Part })
	if i < 0 {
		return false
	}
	lo, hi := l.span(i)
	if hi-lo < 2 {
		return false
	}
	n, err := s.Split(ctx, pick, uint32(lo+(hi-lo)/2))
	if err != nil {
		if refused(err) {
			s.unspreadable[pick.Whole()] = time.Now().Add(unspreadableFor)
		}
		s.cfg.Logger.Warn("shards: a busy partition did not split", "queue", pick, "err", err)
		return false
	}
	half := pick
	half.Part = n
	per := s.partsPerShard(pick.Whole(), s.layoutOrWhole(pick))
	from := s.Of(half)
	to := slices.MinFunc(ids, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(len(per[a]), len(per[b])), cmp.Compare(rate[a], rate[b]), cmp.Compare(a, b))
	})
	s.cfg.Logger.Info("shards: split a busy partition", "queue", pick, "new", n, "shard", from, "to", to)
	if to != from {
		if _, err := s.Move(ctx, half, to); err != nil {
			s.cfg.Logger.Warn("shards: a busy partition's new half did not move", "queue", half, "to", to, "err", err)
		}
	}
	return true
}

// partsPerShard returns the partitions of q's layout l that each shard
// holds, in the layout's order.
func (s *Set) partsPerShard(q api.QueueKey, l Layout) map[uint32][]uint32 {
	per := map[uint32][]uint32{}
	for _, p := range l.Parts {
		k := q
		k.Part = p.Part
		per[s.Of(k)] = append(per[s.Of(k)], p.Part)
	}
	return per
}

// widest returns the position of l's partition of the widest range (the
// first of them).
func widest(l Layout) int {
	best, width := 0, uint64(0)
	for i := range l.Parts {
		if lo, hi := l.span(i); hi-lo > width {
			best, width = i, hi-lo
		}
	}
	return best
}

// leastHolding returns the shard of ids, among those ok takes, holding the
// fewest queues (the lowest id of those).
func leastHolding(ids []uint32, holding map[uint32]int, ok func(uint32) bool) (uint32, bool) {
	var best uint32
	found := false
	for _, id := range ids {
		if ok(id) && (!found || holding[id] < holding[best] || (holding[id] == holding[best] && id < best)) {
			best, found = id, true
		}
	}
	return best, found
}

// mostOf returns the shard of ids holding the most partitions in per, if
// it holds two or more.
func mostOf(ids []uint32, per map[uint32][]uint32) (uint32, bool) {
	best, most := uint32(0), 1
	for _, id := range ids {
		if len(per[id]) > most {
			best, most = id, len(per[id])
		}
	}
	return best, most >= 2
}
