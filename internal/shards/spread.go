package shards

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
//   - spreadQueues, every spreadEvery: a high-throughput queue that has
//     had a message sent to it (so that one made to be a dead-letter
//     queue, which a split queue cannot be, is named so first; one named
//     so once split is gathered by MakeWhole) with fewer
//     partitions than there are shards has its widest partition split
//     (a shard's share of the hashes off it, or in the middle if it is
//     narrower than two shares), and the new part moved to a shard holding
//     none of the queue's partitions, until every shard holds one; one
//     made before the cluster had that many shards is so spread further as
//     shards are added. A split queue out of the mode (switched back to
//     perQueue: splits are made only here) is gathered back into one
//     partition: its last partition moved beside the one before it and
//     merged into it, until partition 0 is left alone.
//   - splitHot, in the balancer's rounds (balanceQueues): a partition of a
//     high-throughput queue busier than SplitRate commands a second two
//     rounds in a row splits in two where it halves the groups holding
//     messages (engine.QueueLoad's SplitAt: a partition whose load is one
//     group is not split, which would part nothing), and its new half
//     moves to the least loaded shard, up to maxPartsPerShard partitions
//     of the queue a shard.
//   - mergeIdle, in the same rounds when splitHot made nothing: a
//     high-throughput queue with more partitions than there are shards
//     (its load split it past the spread) whose every partition has stayed
//     below a quarter of SplitRate for MergeIdle merges two adjacent
//     partitions back into one, a pair a round, until it is spread one
//     partition per shard again. What is merged comes off a shard that
//     holds two or more of the queue's partitions, so that the spread
//     stays whole; the pair merged is the quietest of those.
//
// A queue the engine would refuse to split (engine.QueueLoad's
// Splittable: a dead-letter queue, one with move tasks or messages in its
// outbox, one that changed its DeduplicationScope a moment ago) is not
// asked to: a refused split would still take a partition number. A split,
// merge or move that fails leaves the queue alone for a while
// (unspreadableFor, or retryAfter for a failure of a moment), so that a
// queue that cannot be spread is not retried every few seconds.
//
// The balancer's own moves by count and by load leave the partitions of
// split queues alone: they would crowd two partitions of one queue into
// one shard, the opposite of a spread.
//
// A queue is spread as its first messages arrive, when its partitions
// hold few, so that its splits and moves cost each a few log entries and
// a fence of moments; a client whose request meets a partition fenced or
// not yet named by its router's map gets the moving error, which it
// retries.

// spreadEvery is how often the first group's leader looks for queues to
// spread or gather (Config.Spread unless it says otherwise): often, so
// that a high-throughput queue is spread within seconds of its first
// message.
const spreadEvery = 3 * time.Second

// DefaultSplitRate is the commands a second above which a partition of a
// high-throughput queue splits (Config.SplitRate): about what SQS gives
// one partition of such a queue (300 transactions a second).
const DefaultSplitRate = 300

// DefaultMergeIdle is how long a queue split by load must stay quiet
// before its extra partitions merge back (Config.MergeIdle): long enough
// that a queue busy in bursts, or through the night's lull, keeps the
// partitions its day needs, since a merge and the split that undoes it
// each fence the partitions for a moment and take a partition number.
const DefaultMergeIdle = 10 * time.Minute

// quietShare is the share of the split rate below which a partition
// counts as quiet for mergeIdle: well below the rate that split it, so
// that a queue whose load hovers near the threshold does not split and
// merge by turns.
const quietShare = 4

// maxPartsPerShard bounds the partitions splitHot makes of one queue, per
// shard: past a few per shard a split adds no leader to the queue, only
// another range to ask in each receive.
const maxPartsPerShard = 4

// unspreadableFor is how long a queue whose split, merge or move was
// refused is passed over by spreadQueues (one split and merged so often
// that it honours its most past handle tags, or made its most
// partitions); retryAfter, one whose step failed otherwise (a shard
// without a leader, a move under way).
const (
	unspreadableFor = 10 * time.Minute
	retryAfter      = 30 * time.Second
)

// mergeIdleAfter is how long mergeIdle waits; 0: never.
func (s *Set) mergeIdleAfter() time.Duration {
	switch {
	case s.cfg.MergeIdle < 0:
		return 0
	case s.cfg.MergeIdle == 0:
		return DefaultMergeIdle
	}
	return s.cfg.MergeIdle
}

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
	loads := map[api.QueueKey]engine.QueueLoad{}
	for _, id := range ids {
		qs, err := st.Queues(ctx, id)
		if err != nil {
			return // a shard that cannot be read is not spread to
		}
		holding[id] = len(qs)
		for q, l := range qs {
			if s.Of(q) == id {
				loads[q] = l
			}
		}
	}
	s.dropOrphans(ctx, st, loads)
	now := time.Now()
	for q := range s.unspreadable {
		if !now.Before(s.unspreadable[q]) {
			delete(s.unspreadable, q)
		}
	}
	for _, q := range slices.SortedFunc(func(yield func(api.QueueKey) bool) {
		for q := range loads {
			if q.Part == 0 && !yield(q) {
				return
			}
		}
	}, compareKeys) {
		if _, ok := s.unspreadable[q]; ok || s.isKeptWhole(q, now) {
			continue
		}
		var err error
		switch {
		case loads[q].HighThroughput && loads[q].Sent:
			err = s.spread(ctx, q, ids, holding, loads)
		case s.IsSplit(q):
			err = s.gather(ctx, q)
		}
		if err == nil || ctx.Err() != nil || !s.host.Leading() {
			continue
		}
		wait := retryAfter
		if refused(err) || errors.Is(err, errAbandoned) || errors.Is(err, ErrTooManyParts) {
			wait = unspreadableFor
		}
		s.unspreadable[q] = now.Add(wait)
		s.cfg.Logger.Warn("shards: a high-throughput queue's partitions did not spread or gather", "queue", q, "retry_in", wait, "err", err)
	}
}

// dropOrphans drops the partitions a deleted queue left: a split queue
// deleted through a member whose copy of the map did not have the split
// yet (one created high-throughput and deleted a moment later) was
// deleted in partition 0 alone, and its other partitions, with their
// messages, would stay where a queue created again by the name routes
// its groups. Such a queue's layout names partitions while its partition
// 0 is gone. Its other partitions are fenced and dropped, as moved away,
// and the layout forgotten (forgetLayout). loads are the queues the
// shards hold, as read this round; each finding is checked again at the
// shard's leader, with no split, merge or move under way, before anything
// is dropped. A queue created again by the name before that (possible
// only with the recreate delay turned off: SQS's 60 seconds leave the
// leader time) keeps the old partitions' groups routed to them.
func (s *Set) dropOrphans(ctx context.Context, st Steps, loads map[api.QueueKey]engine.QueueLoad) {
	for _, r := range s.recorded(partsPrefix) {
		q := r.q.Whole()
		l, ok := parseLayout(r.value)
		if _, alive := loads[q]; alive || !ok || len(l.Parts) < 2 || s.Of(q) == 0 {
			continue
		}
		if err := s.dropOrphan(ctx, st, q); err != nil {
			s.cfg.Logger.Warn("shards: the partitions a deleted queue left were not dropped yet", "queue", q, "err", err)
		}
	}
}

// dropOrphan checks again, at its shard's leader, that split queue q's
// partition 0 is gone, and drops its other partitions and forgets its
// layout if so.
func (s *Set) dropOrphan(ctx context.Context, st Steps, q api.QueueKey) error {
	ctx = WithDriver(ctx, s.host.Leading)
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	if err := s.host.ReadBarrier(ctx); err != nil {
		return err
	}
	s.Forget(q)
	s.layouts.Delete(q)
	l, split := s.Layout(q)
	if !split || len(l.Parts) < 2 {
		return nil
	}
	if err := s.noStepOn(q, l); err != nil {
		return nil // not now: a split, merge or move will end first
	}
	// The round's reading may be a lagging replica's: the shard's leader
	// is asked, through its log, with a split it refuses without a
	// change (partition 0 is no new partition) if the queue is there.
	probe := &engine.SplitQueueRequest{}
	if err := st.Step(ctx, s.Of(q), q, probe); !isQueueGone(err) {
		return err // alive (refused), or not known now
	}
	for _, p := range l.Parts[1:] {
		k := q
		k.Part = p.Part
		s.Forget(k)
		at := s.Of(k)
		if at == 0 {
			continue
		}
		if !s.host.Leading() {
			return errNotLeading
		}
		move := newMoveID()
		fence := &engine.FenceQueueRequest{Move: move, Spanning: s.host.WritesOutbox(), Ended: s.host.WritesPartitions()}
		if err := st.Step(ctx, at, k, fence); isQueueGone(err) {
			continue // dropped by an earlier try
		} else if err != nil {
			return fmt.Errorf("fence partition %d in shard %d: %w", p.Part, at, err)
		}
		if err := st.Step(ctx, at, k, &engine.DropQueueRequest{Move: move}); err != nil {
			return fmt.Errorf("drop partition %d in shard %d: %w", p.Part, at, err)
		}
	}
	s.cfg.Logger.Warn("shards: dropped the partitions a deleted queue left", "queue", q, "parts", len(l.Parts)-1)
	return s.forgetLayout(ctx, q, l)
}

// isQueueGone reports whether err is the engine's answer for a queue it
// does not hold.
func isQueueGone(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.ErrQueueDoesNotExist().Code
}

// compareKeys orders queue keys by their names in the map.
func compareKeys(a, b api.QueueKey) int { return cmp.Compare(a.String(), b.String()) }

// spread splits and moves q's partitions until each shard of ids holds
// one, or holds one as far as the partitions go (holding: the queues each
// shard holds, which breaks ties, kept up to date).
func (s *Set) spread(ctx context.Context, q api.QueueKey, ids []uint32, holding map[uint32]int, loads map[api.QueueKey]engine.QueueLoad) error {
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
			// A partition twice as wide as a shard's share of the hashes
			// or more gives a share away; else it is halved. A queue
			// spread from whole so ends in equal shares.
			at := lo + (hi-lo)/2
			if share := uint64(1<<32) / uint64(len(ids)); hi-lo >= 2*share {
				at = lo + share
			}
			k := q
			k.Part = l.Parts[i].Part
			if s.Of(k) == 0 {
				return nil // in the first group: it is drained to a shard first
			}
			if r, ok := loads[k]; !ok || !r.Splittable {
				// Not now (a dead-letter queue, an outbox to empty), or
				// not read this round (made by the last step): the next
				// round reads it again.
				if ok {
					s.noteNotSplittable(q, r.NotSplittable)
				}
				return nil
			}
			n, err := s.Split(ctx, k, uint32(at))
			if err != nil {
				return err
			}
			part = q
			part.Part = n
			// Made of a splittable partition with its attributes: as
			// splittable, until the next round reads it.
			loads[part] = loads[k]
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

// noteNotSplittable logs, at most once every unspreadableFor for each
// queue, that high-throughput queue q stays whole because its engine
// refuses to split it, and why (a dead-letter queue, one with message
// move tasks or messages on their way to other queues): an operator who
// set the mode otherwise sees nothing of it.
func (s *Set) noteNotSplittable(q api.QueueKey, why string) {
	if why == "" || time.Since(s.notSplitNoted[q]) < unspreadableFor {
		return
	}
	s.notSplitNoted[q] = time.Now()
	s.cfg.Logger.Info("shards: a high-throughput queue is not spread over the shards while it cannot be split", "queue", q, "why", why)
}

// keptWholeFor is how long the spread leaves a queue MakeWhole gathered:
// long enough for the request that needed it whole to name it a
// dead-letter queue, which the engine then refuses to split.
const keptWholeFor = time.Minute

// MakeWhole gathers split queue q (whatever q.Part) back into one
// partition, for a request that names it a dead-letter queue: what is
// dead-lettered goes to a queue, not to the partition of its group, so
// the engine refuses a split queue as one (engine/redrive.go). The spread
// leaves q whole for keptWholeFor, by when the request has named it, and
// the engine refuses to split a dead-letter queue. Only on the first
// group's leader; a queue not split is left as it is.
func (s *Set) MakeWhole(ctx context.Context, q api.QueueKey) error {
	q = q.Whole()
	now := time.Now()
	s.movedMu.Lock()
	for k, until := range s.keptWhole {
		if !now.Before(until) {
			delete(s.keptWhole, k) // one deleted since, say
		}
	}
	s.keptWhole[q] = now.Add(keptWholeFor)
	s.movedMu.Unlock()
	if !s.IsSplit(q) {
		return nil
	}
	s.cfg.Logger.Info("shards: gathering a split queue named as a dead-letter queue into one partition", "queue", q)
	return s.gather(ctx, q)
}

// isKeptWhole reports whether MakeWhole gathered q a moment ago, which
// the spread then leaves as it is.
func (s *Set) isKeptWhole(q api.QueueKey, now time.Time) bool {
	s.movedMu.Lock()
	defer s.movedMu.Unlock()
	return now.Before(s.keptWhole[q.Whole()]) // MakeWhole drops those past
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

// hotPart is a partition busier than the split rate in a round of
// balancing: its shard, and where it would split (engine.QueueLoad's
// SplitAt).
type hotPart struct {
	shard uint32
	at    uint32
}

// splitHot splits a partition of a high-throughput queue that was busier
// than the split rate in two rounds of balancing in a row (hot: the
// partitions busier than it this round that could be split), at the hash
// that halves its groups, and moves its new half to the shard holding the
// fewest of the queue's partitions, of the least load (rate, commands a
// second) of those. It makes at most one split a round, and reports
// whether it made one.
func (s *Set) splitHot(ctx context.Context, hot map[api.QueueKey]hotPart, ids []uint32, rate map[uint32]float64) bool {
	for q := range s.hotParts {
		if _, ok := hot[q]; !ok {
			delete(s.hotParts, q)
		}
	}
	var pick api.QueueKey
	found := false
	now := time.Now()
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
		if until, ok := s.unspreadable[q.Whole()]; ok && now.Before(until) || s.isKeptWhole(q, now) {
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
	at := hot[pick].at
	if lo, hi := l.span(i); uint64(at) <= lo || uint64(at) >= hi {
		return false // read before a change of the layout
	}
	n, err := s.Split(ctx, pick, at)
	if err != nil {
		wait := retryAfter
		if refused(err) || errors.Is(err, ErrTooManyParts) {
			wait = unspreadableFor
		}
		s.unspreadable[pick.Whole()] = now.Add(wait)
		s.cfg.Logger.Warn("shards: a busy partition did not split", "queue", pick, "retry_in", wait, "err", err)
		return false
	}
	half := pick
	half.Part = n
	per := s.partsPerShard(pick.Whole(), s.layoutOrWhole(pick))
	from := s.Of(half)
	to := slices.MinFunc(ids, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(len(per[a]), len(per[b])), cmp.Compare(rate[a], rate[b]), cmp.Compare(a, b))
	})
	s.cfg.Logger.Info("shards: split a busy partition", "queue", pick, "new", n, "at", at, "shard", from, "to", to)
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

// mergeIdle merges two adjacent partitions of a high-throughput queue that
// has more partitions than ids has shards once every one of them has been
// quiet (below a quarter of the split rate, as load and since say this
// round's commands) for mergeIdleAfter, and reports whether it changed
// anything: the pair whose merge moves no partition, else the one whose
// move takes a partition off a shard holding two or more of the queue's,
// the quietest of those. A queue's mode is read from its partition 0, and
// only the shard the map places a partition in is believed about it.
func (s *Set) mergeIdle(ctx context.Context, readings map[shardQueue]engine.QueueLoad, load map[api.QueueKey]uint64, since time.Duration, ids []uint32) bool {
	after, split := s.mergeIdleAfter(), s.splitRate()
	if after == 0 || split == 0 || since <= 0 {
		return false
	}
	quiet := split / quietShare
	candidates, busy := map[api.QueueKey]bool{}, map[api.QueueKey]bool{}
	for sq, r := range readings {
		q := sq.queue
		if s.Of(q) != sq.shard || !s.IsSplit(q.Whole()) {
			continue // a replica the map no longer names, or a queue whole
		}
		if q.Part == 0 && r.HighThroughput && len(s.Parts(q)) > len(ids) {
			candidates[q.Whole()] = true
		}
		if float64(load[q])/since.Seconds() >= quiet {
			busy[q.Whole()] = true
		}
	}
	now := time.Now()
	for q := range s.quietSince {
		if !candidates[q] || busy[q] {
			delete(s.quietSince, q)
		}
	}
	for _, q := range slices.SortedFunc(func(yield func(api.QueueKey) bool) {
		for q := range candidates {
			if !busy[q] && !yield(q) {
				return
			}
		}
	}, compareKeys) {
		first, noted := s.quietSince[q]
		if !noted {
			s.quietSince[q] = now
			continue
		}
		if now.Sub(first) < after {
			continue
		}
		if until, ok := s.unspreadable[q]; ok && now.Before(until) {
			continue
		}
		a, b, move, to, ok := s.quietestPair(q, load)
		if !ok {
			continue
		}
		s.cfg.Logger.Info("shards: merging two partitions of a quiet queue", "queue", a, "merged", b.Part, "quiet_for", now.Sub(first).Round(time.Second))
		err := s.mergePair(ctx, a, b, move, to)
		if err != nil {
			wait := retryAfter
			if refused(err) {
				wait = unspreadableFor
			}
			s.unspreadable[q] = now.Add(wait)
			s.cfg.Logger.Warn("shards: two partitions of a quiet queue did not merge", "queue", a, "merged", b.Part, "retry_in", wait, "err", err)
		}
		return true // one change a round: the next reads the loads anew
	}
	return false
}

// quietestPair returns the two adjacent partitions of split queue q that
// mergeIdle merges (b into a), and the one of them to move into the
// other's shard first (move, to), if they are in two.
func (s *Set) quietestPair(q api.QueueKey, load map[api.QueueKey]uint64) (a, b, move api.QueueKey, to uint32, found bool) {
	l := s.layoutOrWhole(q)
	per := s.partsPerShard(q, l)
	bestMoves, bestLoad := 0, uint64(0)
	for i := 0; i+1 < len(l.Parts); i++ {
		pa, pb := q, q
		pa.Part, pb.Part = l.Parts[i].Part, l.Parts[i+1].Part
		sa, sb := s.Of(pa), s.Of(pb)
		var mv api.QueueKey
		var dest uint32
		moves := 1
		switch {
		case sa == sb:
			moves = 0
		case len(per[sb]) >= 2:
			mv, dest = pb, sa
		case len(per[sa]) >= 2:
			mv, dest = pa, sb
		default:
			continue // either would leave a shard without the queue
		}
		n := load[pa] + load[pb]
		if found && (moves > bestMoves || (moves == bestMoves && n >= bestLoad)) {
			continue
		}
		a, b, move, to, found = pa, pb, mv, dest, true
		bestMoves, bestLoad = moves, n
	}
	return a, b, move, to, found
}

// mergePair moves partition move to shard to, if move names one, and then
// merges partition b of its queue into a.
func (s *Set) mergePair(ctx context.Context, a, b, move api.QueueKey, to uint32) error {
	if move != (api.QueueKey{}) {
		if _, err := s.Move(ctx, move, to); err != nil {
			return err
		}
	}
	return s.Merge(ctx, a, b.Part)
}
