package shards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Partitions of split queues in the map (docs/cluster.md, "One busy FIFO
// queue over many shards: partitions"). The engine splits a FIFO queue
// into partitions by ranges of api.GroupHash and merges them back
// (engine/split.go); each partition is a queue of its shard, keyed by the
// queue's key and its number, with a record of its own as any queue has
// ("shards/queue/ACCOUNT/REGION/NAME#PART"; partition 0 keeps the queue's
// record), so that it is moved as a queue is (move.go). Beside them, a
// split queue has a layout record:
//
//	"shards/parts/ACCOUNT/REGION/NAME" = "NEXT LO:PART LO:PART ..."
//
// its partitions in the order of their ranges, each by the first hash it
// owns, and the number the next partition will take: numbers are never
// reused in a queue's life, so that its sequence numbers, which end in
// their partition's, stay unique. A queue without a layout record is
// whole.
//
// The first group's leader drives every split and merge, as it drives
// moves, from a record written before the first step:
//
//	"shards/split/ACCOUNT/REGION/NAME#PART" = "split NEW AT" | "merge OTHER"
//
// (PART the partition split, or merged into) and driven from it to its
// end by whichever node leads the first group:
//
//   - split: take NEW from the layout's NEXT (the record first, so that a
//     leader killed between the two takes the same number), write NEW's
//     record naming PART's shard, split PART in its shard at hash AT
//     (which the engine does once, at one log index, on every replica),
//     then write the layout naming NEW and flip the map's epoch;
//   - merge: OTHER must begin where PART ends and be in PART's shard;
//     merge it into PART in that shard, then write the layout without it,
//     remove its record and flip the epoch.
//
// The layout, the records and the epoch change in one round of the first
// group's log (setMetas), as a move's record and epoch do, and every node
// checks what it cached against the epoch its copy holds now (Epoch): a
// router pairs a layout from before a merge with the records from after
// it, which no longer name the partition it sends to, only when the flip
// lands between its two reads, and the server routes such a request again
// (internal/server, misrouted). Between a split's step in its
// shard and the layout that names its result, a router sends NEW's groups
// to PART, which answers the retryable moving error; so does OTHER once
// merged, until the layout no longer names it.

// Record keys of partitions.
const (
	partsPrefix = "shards/parts/"
	splitPrefix = "shards/split/"
)

// partsKey is the layout record of queue q (partition 0's key).
func partsKey(q api.QueueKey) string { q.Part = 0; return partsPrefix + recordName(q) }

// splitKey is the record of a split or merge of partition q.
func splitKey(q api.QueueKey) string { return splitPrefix + recordName(q) }

// Layout is how a split queue's hashes are cut into partitions.
type Layout struct {
	// Next is the number the next partition made will take.
	Next uint32
	// Parts are the partitions, in the order of their ranges: each owns
	// the hashes from its Lo to the next one's.
	Parts []PartRange
}

// PartRange is a partition of a split queue and the first hash it owns.
type PartRange struct {
	Part uint32
	Lo   uint64
}

// String is the layout in its record's form.
func (l Layout) String() string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(l.Next), 10))
	for _, p := range l.Parts {
		fmt.Fprintf(&b, " %d:%d", p.Lo, p.Part)
	}
	return b.String()
}

// parseLayout reads a layout record: the first partition owns hash 0,
// the ranges increase, and every number is below Next.
func parseLayout(v string) (Layout, bool) {
	f := strings.Fields(v)
	if len(f) < 2 {
		return Layout{}, false
	}
	next, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil || next > engine.MaxPart+1 {
		return Layout{}, false
	}
	l := Layout{Next: uint32(next)}
	for _, item := range f[1:] {
		lo, part, ok := strings.Cut(item, ":")
		a, err1 := strconv.ParseUint(lo, 10, 64)
		b, err2 := strconv.ParseUint(part, 10, 32)
		switch {
		case !ok || err1 != nil || err2 != nil || a >= 1<<32 || b >= next:
			return Layout{}, false
		case len(l.Parts) == 0 && a != 0, len(l.Parts) > 0 && a <= l.Parts[len(l.Parts)-1].Lo:
			return Layout{}, false
		case slices.ContainsFunc(l.Parts, func(p PartRange) bool { return p.Part == uint32(b) }):
			return Layout{}, false
		}
		l.Parts = append(l.Parts, PartRange{Part: uint32(b), Lo: a})
	}
	return l, true
}

// index returns the position in l.Parts of the partition that owns hash h.
func (l Layout) index(h uint32) int {
	i, _ := slices.BinarySearchFunc(l.Parts, uint64(h)+1, func(p PartRange, t uint64) int {
		switch {
		case p.Lo < t:
			return -1
		case p.Lo > t:
			return 1
		}
		return 0
	})
	return i - 1
}

// PartOf returns the partition that owns the group of hash h.
func (l Layout) PartOf(h uint32) uint32 { return l.Parts[l.index(h)].Part }

// span returns the range of hashes the partition at position i owns.
func (l Layout) span(i int) (lo, hi uint64) {
	hi = 1 << 32
	if i+1 < len(l.Parts) {
		hi = l.Parts[i+1].Lo
	}
	return l.Parts[i].Lo, hi
}

// Layout returns how queue q is cut into partitions, and false if it has
// never been split, by this node's copy of the map. A queue merged back
// whole keeps its layout, partition 0 alone, for the numbers it took.
func (s *Set) Layout(q api.QueueKey) (Layout, bool) {
	var v string
	s.host.Read(func(e *engine.Engine) { v = e.Meta(partsKey(q)) })
	if v == "" {
		return Layout{}, false
	}
	return parseLayout(v)
}

// PartOf returns the partition of queue q (whatever q.Part) that holds
// the group of hash h, by this node's copy of the map: 0 for a queue never
// split, or merged back whole. Every request for a message group asks it:
// a layout read is cached while the map's epoch is the one it was read
// with (a split or merge flips the epoch with the layout).
func (s *Set) PartOf(q api.QueueKey, h uint32) uint32 { return s.cachedLayout(q).partOf(h) }

// IsSplit reports whether queue q (whatever q.Part) is split into
// partitions, by this node's copy of the map: what a request asks first,
// so that one on a queue never split costs no more.
func (s *Set) IsSplit(q api.QueueKey) bool { return s.cachedLayout(q).layout != nil }

// Parts returns the partitions of queue q (whatever q.Part) in the order
// of their ranges, by this node's copy of the map: nil for a queue never
// split, or merged back whole. What no one message group names (a
// receive, the queue's counts) is asked of each.
func (s *Set) Parts(q api.QueueKey) []uint32 {
	c := s.cachedLayout(q)
	if c.layout == nil {
		return nil
	}
	out := make([]uint32, len(c.layout.Parts))
	for i, p := range c.layout.Parts {
		out[i] = p.Part
	}
	return out
}

// Splitting reports whether a partition of queue q (whatever q.Part)
// splits or merges now, by this node's copy of the map: between the
// engine's split and the layout that names the new partition, what is
// asked of every partition would miss it.
func (s *Set) Splitting(q api.QueueKey) bool {
	q = q.Whole()
	l, split := s.Layout(q)
	if !split {
		l = Layout{Parts: []PartRange{{Part: 0}}}
	}
	busy := false
	s.host.Read(func(e *engine.Engine) {
		for _, p := range l.Parts {
			key := q
			key.Part = p.Part
			busy = busy || e.Meta(splitKey(key)) != ""
		}
	})
	return busy
}

// cachedLayout returns q's layout as this node's map has it, read again
// only once the map's epoch changed since it was read.
func (s *Set) cachedLayout(q api.QueueKey) cachedLayout {
	q.Part = 0
	epoch := s.Epoch()
	if v, ok := s.layouts.Load(q); ok {
		if c := v.(cachedLayout); c.epoch == epoch {
			return c
		}
	}
	var rec, at string
	s.host.Read(func(e *engine.Engine) { rec, at = e.Meta(partsKey(q)), e.Meta(epochKey) })
	c := cachedLayout{epoch: at}
	if l, ok := parseLayout(rec); ok && len(l.Parts) > 1 {
		c.layout = &l
	}
	s.layouts.Store(q, c)
	return c
}

// cachedLayout is a queue's layout as PartOf read it (nil: whole), with
// the map's epoch then.
type cachedLayout struct {
	layout *Layout
	epoch  string
}

func (c cachedLayout) partOf(h uint32) uint32 {
	if c.layout == nil {
		return 0
	}
	return c.layout.PartOf(h)
}

// splitRecord is a split's or merge's record in the first group's state.
type splitRecord struct {
	merge bool
	part  uint32 // the partition made (split) or merged away (merge)
	at    uint32 // split: the first hash of the new partition
}

func (r splitRecord) String() string {
	if r.merge {
		return "merge " + strconv.FormatUint(uint64(r.part), 10)
	}
	return "split " + strconv.FormatUint(uint64(r.part), 10) + " " + strconv.FormatUint(uint64(r.at), 10)
}

func parseSplit(v string) (splitRecord, bool) {
	f := strings.Fields(v)
	num := func(s string) (uint32, bool) {
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err == nil
	}
	switch {
	case len(f) == 2 && f[0] == "merge":
		p, ok := num(f[1])
		return splitRecord{merge: true, part: p}, ok && p != 0 && p <= engine.MaxPart
	case len(f) == 3 && f[0] == "split":
		p, ok1 := num(f[1])
		at, ok2 := num(f[2])
		return splitRecord{part: p, at: at}, ok1 && ok2 && p != 0 && p <= engine.MaxPart && at != 0
	}
	return splitRecord{}, false
}

// Errors of Split and Merge.
var (
	// ErrSplitUnderWay: a split or merge of the partition is under way.
	ErrSplitUnderWay = errors.New("shards: a split or merge of the partition is under way")
	// ErrNoPartition: the queue has no such partition, or its range holds
	// no such hash.
	ErrNoPartition = errors.New("shards: no such partition, or no such hash in it")
	// ErrNotBeside: the partitions to merge are in two shards: one must
	// move first.
	ErrNotBeside = errors.New("shards: the partitions to merge are in two shards")
	// ErrTooManyParts: the queue has made as many partitions as its name
	// may in its life (engine.MaxPart; numbers are not reused).
	ErrTooManyParts = errors.New("shards: the queue has made the most partitions it may")
)

// Split splits partition q (q.Part) of a queue at hash at, which must
// fall strictly inside its range: the groups of hashes at and above
// become a new partition, in the same shard, whose number it returns.
// Only on the first group's leader; the queue must be in a shard (not the
// first group). The engine refuses queues that cannot be split
// (engine.SplitQueueRequest). A partition does not move while it splits,
// nor split while it moves (ErrMoveUnderWay).
func (s *Set) Split(ctx context.Context, q api.QueueKey, at uint32) (uint32, error) {
	if err := s.partsReady(ctx); err != nil {
		return 0, err
	}
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	s.Forget(q)
	if s.Of(q) == 0 {
		return 0, ErrNoPartition
	}
	l := s.layoutOrWhole(q)
	i := slices.IndexFunc(l.Parts, func(p PartRange) bool { return p.Part == q.Part })
	if i < 0 {
		return 0, ErrNoPartition
	}
	if lo, hi := l.span(i); uint64(at) <= lo || uint64(at) >= hi {
		return 0, ErrNoPartition
	}
	if l.Next > engine.MaxPart {
		return 0, fmt.Errorf("%w: queue %s has made %d", ErrTooManyParts, q.Name, engine.MaxPart)
	}
	rec := splitRecord{part: l.Next, at: at}
	if err := s.record(ctx, q, rec, q); err != nil {
		return 0, err
	}
	return rec.part, s.driveSplit(ctx, q, rec)
}

// Merge merges partition part of queue q into partition q (q.Part), whose
// range must end where part's begins; both must be in one shard
// (ErrNotBeside). Only on the first group's leader.
func (s *Set) Merge(ctx context.Context, q api.QueueKey, part uint32) error {
	if err := s.partsReady(ctx); err != nil {
		return err
	}
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	l, split := s.Layout(q)
	i := slices.IndexFunc(l.Parts, func(p PartRange) bool { return p.Part == q.Part })
	if !split || i < 0 || i+1 >= len(l.Parts) || l.Parts[i+1].Part != part {
		return ErrNoPartition
	}
	other := q
	other.Part = part
	s.Forget(q)
	s.Forget(other)
	if s.Of(q) != s.Of(other) {
		return ErrNotBeside
	}
	rec := splitRecord{merge: true, part: part}
	if err := s.record(ctx, q, rec, q, other); err != nil {
		return err
	}
	return s.driveSplit(ctx, q, rec)
}

// Unsplit forgets the partitions of queue q (whatever q.Part), deleted in
// every one: its layout becomes partition 0 alone, keeping the number the
// next partition would take (numbers are not reused in a name's life),
// and the other partitions' records go, so that a queue created again by
// the name starts whole in partition 0's shard. Only on the first group's
// leader; refused while a partition of q splits, merges or moves
// (ErrSplitUnderWay, ErrMoveUnderWay). A leader killed between the layout
// and the records leaves records of partitions no layout names, which
// nothing routes to.
func (s *Set) Unsplit(ctx context.Context, q api.QueueKey) error {
	if err := s.partsReady(ctx); err != nil {
		return err
	}
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	q = q.Whole()
	l, split := s.Layout(q)
	if !split || len(l.Parts) < 2 {
		return nil
	}
	if err := s.noStepOn(q, l); err != nil {
		return err
	}
	return s.forgetLayout(ctx, q, l)
}

// forgetLayout makes q's layout l partition 0 alone, as Unsplit says,
// with partsMu and moveMu held.
func (s *Set) forgetLayout(ctx context.Context, q api.QueueKey, l Layout) error {
	kv := []string{partsKey(q), Layout{Next: l.Next, Parts: []PartRange{{Part: 0}}}.String()}
	for _, p := range l.Parts[1:] {
		key := q
		key.Part = p.Part
		kv = append(kv, queueKey(key), "")
	}
	if err := s.setMetas(ctx, append(kv, epochKey, newMoveID())...); err != nil {
		return err
	}
	for _, p := range l.Parts[1:] {
		key := q
		key.Part = p.Part
		s.Forget(key)
	}
	s.Forget(q)
	s.layouts.Delete(q)
	s.cfg.Logger.Info("shards: forgot the partitions of a deleted queue", "queue", q, "parts", len(l.Parts))
	return nil
}

// noStepOn returns why no partition of q's layout l may change now: one
// splits, merges or moves.
func (s *Set) noStepOn(q api.QueueKey, l Layout) error {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	for _, p := range l.Parts {
		key := q
		key.Part = p.Part
		switch {
		case s.meta(splitKey(key)) != "":
			return ErrSplitUnderWay
		case s.meta(moveKey(key)) != "":
			return ErrMoveUnderWay
		}
	}
	return nil
}

// partsReady checks that this node may split and merge partitions now,
// and reads the map as the log has it.
func (s *Set) partsReady(ctx context.Context) error {
	switch {
	case s.steps.Load() == nil:
		return errors.New("shards: this node cannot carry splits out")
	case !s.host.Leading():
		return errors.New("shards: only the first group's leader splits queues")
	}
	if err := s.host.EnsurePartitions(ctx); err != nil {
		return err
	}
	return s.host.ReadBarrier(ctx)
}

// record writes rec, the split or merge of partition q, unless another is
// under way, or one of the partitions it changes (touched) moves.
func (s *Set) record(ctx context.Context, q api.QueueKey, rec splitRecord, touched ...api.QueueKey) error {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	for _, t := range touched {
		if s.meta(moveKey(t)) != "" {
			return ErrMoveUnderWay
		}
	}
	if err := s.setOnce(ctx, splitKey(q), rec.String()); err != nil {
		return err
	}
	if s.meta(splitKey(q)) != rec.String() {
		return ErrSplitUnderWay
	}
	return nil
}

// layoutOrWhole returns q's layout, or that of a whole queue, which is
// partition 0 alone.
func (s *Set) layoutOrWhole(q api.QueueKey) Layout {
	if l, ok := s.Layout(q); ok {
		return l
	}
	return Layout{Next: 1, Parts: []PartRange{{Part: 0, Lo: 0}}}
}

// meta reads a record of the first group's state.
func (s *Set) meta(key string) (v string) {
	s.host.Read(func(e *engine.Engine) { v = e.Meta(key) })
	return v
}

// setMeta writes a record of the first group's state ("" removes it).
func (s *Set) setMeta(ctx context.Context, key, value string) error {
	_, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: key, Value: value}})
	return err
}

// setMetas writes records of the first group's state, given as key and
// value pairs ("" removes one), in order and in one round of its log (one
// entry, or consecutive ones), as a move flips its record and the epoch
// together. Callers name the map's epoch last: a member that reads the
// new epoch has applied the layout and the records with it.
func (s *Set) setMetas(ctx context.Context, kv ...string) error {
	cmds := make([]*engine.Command, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		cmds = append(cmds, &engine.Command{Request: &engine.SetMetaRequest{Key: kv[i], Value: kv[i+1]}})
	}
	_, err := s.host.ApplyInOrder(ctx, cmds...)
	return err
}

// resumeSplits drives every recorded split and merge to its end: on the
// first group's leader, those a former leader left.
func (s *Set) resumeSplits() {
	if s.steps.Load() == nil || !s.host.Leading() {
		return
	}
	for _, r := range s.recorded(splitPrefix) {
		rec, ok := parseSplit(r.value)
		if !ok {
			continue
		}
		ctx, cancel := s.untilQuit(30 * time.Second)
		s.partsMu.Lock()
		err := s.driveSplit(ctx, r.q, rec)
		s.partsMu.Unlock()
		if err != nil && !errors.Is(err, errNotLeading) && ctx.Err() == nil {
			s.cfg.Logger.Warn("shards: a queue's split or merge did not finish yet", "queue", r.q, "step", rec.String(), "err", err)
		}
		cancel()
	}
}

// refused reports whether the engine refused a split's or merge's step
// for good: the queue cannot be split (not FIFO, deduplicating by queue, a
// dead-letter queue), or not now (too many past handle tags), or the
// partitions are not as the record says. A moving queue, or a shard
// without a leader, is only a moment's refusal.
func refused(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.SenderFault() && !engine.IsQueueMoving(err)
}

// giveUp removes the record of rec, a split or merge of q that cannot be
// made, and returns why.
func (s *Set) giveUp(ctx context.Context, q api.QueueKey, rec splitRecord, why error) error {
	if err := s.setMeta(ctx, splitKey(q), ""); err != nil {
		return err
	}
	s.cfg.Logger.Info("shards: gave up a "+strings.Fields(rec.String())[0], "queue", q, "err", why)
	return why
}

// driveSplit takes the split or merge rec of partition q from wherever it
// is to its end (the steps in this file's comment): every step may be done
// again. Moves wait meanwhile (moveMu).
func (s *Set) driveSplit(ctx context.Context, q api.QueueKey, rec splitRecord) error {
	st := s.steps.Load()
	if st == nil {
		return errors.New("shards: this node carries out no steps")
	}
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	if err := s.host.ReadBarrier(ctx); err != nil {
		return err
	}
	if s.meta(splitKey(q)) != rec.String() {
		return nil // done meanwhile
	}
	ctx = WithDriver(ctx, s.host.Leading)
	step := func(id uint32, req api.Request) error {
		if !s.host.Leading() {
			return errNotLeading
		}
		return (*st).Step(ctx, id, q, req)
	}
	other := q
	other.Part = rec.part
	s.Forget(q)
	s.Forget(other)
	shard := s.Of(q)
	l := s.layoutOrWhole(q)
	i := slices.IndexFunc(l.Parts, func(p PartRange) bool { return p.Part == q.Part })
	if shard == 0 || i < 0 {
		// The queue is gone, or the partition merged away: nothing to do.
		return s.setMeta(ctx, splitKey(q), "")
	}
	if rec.merge {
		j := slices.IndexFunc(l.Parts, func(p PartRange) bool { return p.Part == rec.part })
		if j >= 0 {
			if s.Of(other) != shard {
				// It moved away before the merge was recorded.
				return s.giveUp(ctx, q, rec, ErrNotBeside)
			}
			if err := step(shard, &engine.MergeQueueRequest{Part: rec.part}); refused(err) {
				return s.giveUp(ctx, q, rec, fmt.Errorf("merge in shard %d: %w", shard, err))
			} else if err != nil {
				return fmt.Errorf("merge in shard %d: %w", shard, err)
			}
			l.Parts = slices.Delete(l.Parts, j, j+1)
		}
		if err := s.setMetas(ctx, partsKey(q), l.String(), queueKey(other), "", epochKey, newMoveID()); err != nil {
			return err
		}
	} else {
		if l.Next <= rec.part {
			// The number is taken first, so that a leader killed after
			// it takes the same one, and none reuses it.
			l.Next = rec.part + 1
			if err := s.setMeta(ctx, partsKey(q), l.String()); err != nil {
				return err
			}
		}
		if err := s.setOnce(ctx, queueKey(other), strconv.FormatUint(uint64(shard), 10)); err != nil {
			return err
		}
		// A new partition that has moved on already was split here
		// before: its record is the only sign of it.
		if s.Of(other) == shard {
			if err := step(shard, &engine.SplitQueueRequest{At: rec.at, Part: rec.part}); refused(err) {
				// Not split: the new partition's record names nothing.
				if err := s.setMeta(ctx, queueKey(other), ""); err != nil {
					return err
				}
				s.Forget(other) // Of cached it under this epoch
				return s.giveUp(ctx, q, rec, fmt.Errorf("split in shard %d: %w", shard, err))
			} else if err != nil {
				return fmt.Errorf("split in shard %d: %w", shard, err)
			}
		}
		if !slices.ContainsFunc(l.Parts, func(p PartRange) bool { return p.Part == rec.part }) {
			l.Parts = slices.Insert(l.Parts, i+1, PartRange{Part: rec.part, Lo: uint64(rec.at)})
		}
		if err := s.setMetas(ctx, partsKey(q), l.String(), epochKey, newMoveID()); err != nil {
			return err
		}
	}
	s.Forget(q)
	s.Forget(other)
	s.layouts.Delete(q.Whole())
	if err := s.setMeta(ctx, splitKey(q), ""); err != nil {
		return err
	}
	s.cfg.Logger.Info("shards: "+rec.String(), "queue", q, "shard", shard)
	return nil
}
