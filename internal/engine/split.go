package engine

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Splitting a FIFO queue by the hash of its message groups: how one busy
// queue is spread over several shards (docs/cluster.md, "One busy FIFO
// queue over many shards: partitions"). Every guarantee of a FIFO queue
// whose deduplication is scoped to the message group holds per group, so
// the queue can be cut by ranges of api.GroupHash into partitions, each a
// queue of this engine keyed by the queue's key and a partition number
// (api.QueueKey.Part), with the queue's ARN, URL and attributes. Every
// queue is partition 0, owning every hash, until it is split.
//
// SplitQueueRequest cuts a partition in two at one log index: the groups
// of the upper part of its range, with their messages in every state,
// deduplication records, the messages of their receive attempt records and
// the handles already handed out for them, become a new partition in the
// same engine; no body is copied. A router outside the engine places each
// partition (moving it, as any queue, with move.go's steps) and sends each
// request to the partition of its group. Once split, a partition:
//
//   - answers a send, or a receipt handle, of a group outside its range
//     with IsQueueMoving's error, so that a router whose map is stale
//     learns the new one and retries;
//   - ends its sequence numbers with its partition number (the last four
//     decimal digits), so that they stay unique across the queue, and
//     starts above the number its parent had reached, so that a group's
//     numbers keep increasing;
//   - hands out receipt handles that carry their group's hash
//     (HandleGroupHash), for a router to find the partition that holds the
//     group after later splits and moves; a handle from before the
//     queue's first split, which carries none, is answered with
//     IsQueueMoving's error by a partition that does not hold its message
//     (lookup).
//
// A receive attempt record is shared by the halves, each keeping the
// messages it holds (splitAttempts). A partition that holds none of an
// attempt's messages keeps no record of it: a retry there is a new
// receive, which may return messages the first did not. Recording the
// empty answer instead would make every receive with that attempt id
// answer nothing there for the attempt's five minutes, whatever arrives.
//
// A queue that is a dead-letter queue, the destination of a running move
// task or the source of one, or whose outbox holds messages, is not split
// (yet): what reaches it by key would have to be sent on by group. Nor is
// one whose deduplication is scoped to the queue, which one deduplication
// id spans groups.
//
// MergeQueueRequest joins two adjacent partitions of one engine, the
// reverse of a split: their arrival lists are merged in time order (each
// group's messages come from one side, in its order; across groups, a
// burst can run one side's sequence numbers ahead of the other's clock,
// so the merged list need not be in sequence order), their deduplication
// and receive attempt records are joined, and the partition that stays
// honours the handles the other handed out. A partition 0 that owns
// every hash again is a queue never split.
//
// Each split or merge leaves the partition that results honouring one
// more past handle tag (for pastTagLife). It also drops the past tags that
// name no message the partition holds any more, a minute after they were
// made, or sooner where more than maxPastTags would be kept (trimPast):
// their handles could only name messages gone, and a partition of a busy
// queue, whose messages come and go in seconds, would otherwise run out of
// tags after a few splits, moves and merges, and stay whole for half a
// day. A queue split and merged so often that it would honour more than
// maxPastTags tags that still name messages is refused further ones
// (UnsupportedOperation) until some expire.

// SplitQueueRequest is an internal request, never sent by clients: it
// splits the command's queue (a partition: Part in the command's key) at
// hash At, which must fall strictly inside its range. The groups whose
// hash is At or more become partition Part of the same queue. Splitting
// again the same way changes nothing.
type SplitQueueRequest struct {
	At   uint32 `json:"at"`
	Part uint32 `json:"part"`
}

// ActionSplitQueue is the action of SplitQueueRequest. It is not an SQS
// action.
const ActionSplitQueue api.Action = "fifoq:SplitQueue"

// Action implements api.Request.
func (*SplitQueueRequest) Action() api.Action { return ActionSplitQueue }

const (
	// hashEnd is one past the largest api.GroupHash: the end of the last
	// partition's range.
	hashEnd = 1 << 32
	// partDigits is the power of ten below which a split queue's
	// sequence numbers hold its partition number.
	partDigits = 10_000
	// MaxPart is the largest partition number.
	MaxPart = partDigits - 1
)

// Partition describes a partition of a split queue, as PartitionOf
// returns it: the groups whose api.GroupHash is in [Lo, Hi) are its.
type Partition struct {
	Split  bool // false: the queue was never split, and owns every hash
	Lo, Hi uint64
}

// PartitionOf returns the range of hashes queue key (a partition) owns,
// and false if the engine holds no such queue. It changes nothing.
func (e *Engine) PartitionOf(key api.QueueKey) (Partition, bool) {
	q := e.queues[key]
	if q == nil {
		return Partition{}, false
	}
	lo, hi := q.span()
	return Partition{Split: q.split, Lo: lo, Hi: hi}, true
}

// span returns the range of hashes q owns.
func (q *queue) span() (lo, hi uint64) {
	if !q.split {
		return 0, hashEnd
	}
	return q.lo, q.hi
}

// owns reports whether the group of hash h belongs in q.
func (q *queue) owns(h uint32) bool {
	return !q.split || uint64(h) >= q.lo && uint64(h) < q.hi
}

// ownsGroup reports whether group belongs in q.
func (q *queue) ownsGroup(group string) bool {
	return !q.split || q.owns(api.GroupHash(group))
}

// ownsHandle reports whether the receipt handle h may name a message of q:
// false only for a handle of a split queue's that carries the hash of a
// group of another partition. Anything else is left to lookup.
func (q *queue) ownsHandle(h string) bool {
	if !q.split {
		return true
	}
	hash, ok := HandleGroupHash(h)
	return !ok || q.owns(hash)
}

// splitQueue applies a SplitQueueRequest.
func (e *Engine) splitQueue(cmd *Command, r *SplitQueueRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	key := q.key
	key.Part = r.Part
	if n := e.queues[key]; n != nil && q.split && n.split && q.hi == uint64(r.At) && n.lo == uint64(r.At) {
		return api.Empty{}, nil // split so already
	}
	if err := e.splittable(q, key, r.At, now); err != nil {
		return nil, err
	}
	lo, hi := q.span()
	n := newQueue(key, e.cfg.Region, true, q.attrs, q.createdAt)
	n.bodies, n.due, n.cow, n.ms = q.bodies, q.due, q.cow, q.ms
	n.modifiedAt, n.purgedAt, n.purged, n.lastSeq = q.modifiedAt, q.purgedAt, q.purged, q.lastSeq
	n.prevDedupScope, n.dedupScopeChanged = q.prevDedupScope, q.dedupScopeChanged
	maps.Copy(n.tags, q.tags)
	n.redriveRemote = q.redriveRemote
	// The new partition is a new outbox source: numbering its entries on
	// from its parent's keeps them above any a partition of the same
	// number made before took (the destination's taken records outlive
	// the partition's).
	n.outbox.seq = q.outbox.seq
	if len(q.taken) > 0 {
		n.taken = maps.Clone(q.taken)
	}
	q.split, q.lo, q.hi = true, lo, uint64(r.At)
	n.split, n.lo, n.hi = true, uint64(r.At), hi

	// The groups that leave, then their messages in arrival order (a
	// FIFO queue's arrival list holds every message, in time order and in
	// each group's order), so that the new partition's list is in order
	// too.
	leaving := map[string]bool{}
	for id := range q.groups {
		if !q.owns(api.GroupHash(id)) {
			leaving[id] = true
		}
	}
	moved := map[uint64]uint64{}
	for m := q.arrivalHead; m != nil && len(leaving) > 0; {
		next := m.anext
		if leaving[q.ms.group(m)] {
			q.remove(m)
			n.adopt(m)
			if n.handles[m.serial] == m {
				moved[m.serial] = m.serial
			}
		}
		m = next
	}

	// Handles handed out for the messages that left still name them:
	// by this partition's tag, and by the tags it had before its moves.
	for _, p := range q.past {
		n.past = append(n.past, pastTag{tag: p.tag, until: p.until, serials: maps.Clone(p.serials)})
	}
	// Even with none moved: a handle of a message deleted before the
	// split is then a handle of a message that no longer exists, as it
	// was, rather than a handle of another queue.
	n.past = append([]pastTag{{tag: q.handleTag, until: now + pastTagLife, serials: moved}}, n.past...)
	q.dropDeadPast(now)
	n.dropDeadPast(now)
	// Its own tag differs from every tag it honours (a snapshot holding
	// one twice does not restore).
	n.handleTag = newHandleTag(n, "split "+strconv.FormatUint(uint64(r.Part), 10))

	// A deduplication record's key is a digest of its group and id, so
	// its group is not known: both halves keep every record. A record in
	// the wrong half is never matched, as no message of its group is sent
	// there, and is dropped with the others at the end of its interval.
	q.dedup.each(func(r *dedupRecord, id msgID) { n.dedup.push(*r, id) })
	splitAttempts(q, n)

	e.queues[key] = n
	e.indexRedrive(n, nil)
	q.refreshDue()
	n.refreshDue()
	e.wake(q.key)
	e.wake(n.key)
	return api.Empty{}, nil
}

// splittable returns why q may not be split at hash at into the partition
// key, or nil.
func (e *Engine) splittable(q *queue, key api.QueueKey, at uint32, now int64) error {
	lo, hi := q.span()
	switch {
	case !q.fifo:
		return api.ErrUnsupportedOperation("Queue %s is not a FIFO queue: only FIFO queues are split.", q.key.Name)
	case key.Part == 0 || key.Part > MaxPart:
		return api.ErrInvalidParameterValue("A new partition is numbered 1 to %d.", MaxPart)
	case e.queues[key] != nil || e.knows(key):
		// A partition deleted or moved away leaves records under its key
		// for a while, and the new one would be made at the same time.
		return api.ErrInvalidParameterValue("Partition %d of queue %s exists already, or did lately.", key.Part, q.key.Name)
	case uint64(at) <= lo || uint64(at) >= hi:
		return api.ErrInvalidParameterValue("Hash %d is not inside partition %d of queue %s, which holds [%d, %d).", at, q.key.Part, q.key.Name, lo, hi)
	}
	return e.splitRefusal(q, now)
}

// splitRefusal returns why q may not be split now, whatever the hash and
// the new partition's number, or nil.
func (e *Engine) splitRefusal(q *queue, now int64) error {
	switch {
	case !q.fifo:
		return api.ErrUnsupportedOperation("Queue %s is not a FIFO queue: only FIFO queues are split.", q.key.Name)
	case q.fence != "":
		return errQueueMoving()
	case q.dedupScope(now) != scopeMessageGroup:
		return api.ErrUnsupportedOperation("Queue %s deduplicates across its message groups (DeduplicationScope queue): it cannot be split.", q.key.Name)
	case len(q.tasks) > 0 || e.isDeadLetterQueue(q.key):
		return api.ErrUnsupportedOperation("Queue %s is a dead-letter queue or has message move tasks: it is not split.", q.key.Name)
	case len(q.outbox.entries) > 0:
		return api.ErrServiceUnavailable("Queue %s has messages on their way to other queues; retry once they are delivered.", q.key.Name)
	case q.livePast() >= maxPastTags:
		return api.ErrUnsupportedOperation("Queue %s honours %d past receipt handle tags already: it is not split until some expire.", q.key.Name, q.livePast())
	}
	for _, t := range e.running {
		if t.dest.Whole() == q.key.Whole() {
			return api.ErrUnsupportedOperation("Queue %s is the destination of a running message move task: it is not split.", q.key.Name)
		}
	}
	return nil
}

// knows reports whether the engine keeps records of a queue key that is
// gone: deleted lately, moved away lately, or with an outbox left behind.
func (e *Engine) knows(key api.QueueKey) bool {
	_, deleted := e.deleted[key]
	_, moved := e.moved[key]
	if deleted || moved {
		return true
	}
	for src := range e.orphans {
		if src.key == key {
			return true
		}
	}
	return false
}

// adopt stores m, taken from another partition of the same engine with
// every field as it was: in flight, delayed or visible, its receive count,
// serial and sequence number kept.
func (q *queue) adopt(m *message) {
	q.appendArrival(m)
	q.adoptLinked(m)
}

// adoptLinked is adopt, for a message already linked into q's arrival
// list.
func (q *queue) adoptLinked(m *message) {
	if q.ms.handleable(m) {
		q.handles[m.serial] = m
	}
	q.countStored(m)
	g := q.fifoGroupOf(q.ms.group(m))
	g.pushBack(m)
	if m.state == stateInflight {
		g.inflight++
	}
	q.refreshGroup(g)
}

// splitAttempts shares q's receive attempt records between q and the
// partition n just split from it: a record keeps, in each, the messages it
// holds there, and is dropped where it holds none, so that a retry there
// is a new receive. A record with a message in neither (deleted since)
// can no longer be replayed, and stays with q as it is, as it would in the
// queue unsplit. Records never change once made (a snapshot view may hold
// them), so the shares are new records.
func splitAttempts(q, n *queue) {
	live := q.attemptLog.live()
	if len(live) == 0 {
		return
	}
	var keep ring[*attemptRecord]
	kept := make(map[string]*attemptRecord, len(q.attempts))
	for _, rec := range live {
		if q.attempts[rec.id] != rec {
			continue
		}
		var mine, theirs []int
		for i, s := range rec.serials {
			switch {
			case q.handles[s] != nil:
				mine = append(mine, i)
			case n.handles[s] != nil:
				theirs = append(theirs, i)
			}
		}
		if len(theirs) == 0 || len(mine)+len(theirs) < len(rec.serials) {
			keep.Push(rec)
			kept[rec.id] = rec
			continue
		}
		if len(mine) > 0 {
			r := rec.subset(mine)
			keep.Push(r)
			kept[r.id] = r
		}
		r := rec.subset(theirs)
		if r.tag == 0 {
			// A retry hands out the handles the receive did, which name
			// the messages by this partition's tag.
			r.tag, r.handles = q.handleTag, slices.Clone(r.serials)
		}
		n.attempts[r.id] = r
		n.attemptLog.Push(r)
	}
	q.attempts, q.attemptLog, q.attemptDrops = kept, keep, 0
}

// subset returns a copy of rec holding the messages at positions idx.
func (rec *attemptRecord) subset(idx []int) *attemptRecord {
	r := &attemptRecord{id: rec.id, at: rec.at, tag: rec.tag, serials: make([]uint64, len(idx)), nonces: make([]uint64, len(idx))}
	if rec.tag != 0 {
		r.handles = make([]uint64, len(idx))
	}
	for j, i := range idx {
		r.serials[j], r.nonces[j] = rec.serials[i], rec.nonces[i]
		if rec.tag != 0 {
			r.handles[j] = rec.handles[i]
		}
	}
	return r
}

// MergeQueueRequest is an internal request, never sent by clients: it
// merges partition Part of the command's queue into the command's
// partition, the one whose range ends where Part's begins; both must be
// in this engine. Part's groups, with their messages in every state,
// deduplication and receive attempt records, become the command
// partition's, which honours the receipt handles Part handed out; Part is
// gone, and a request that reaches it by a stale map is answered with
// IsQueueMoving's error. Merging a partition that is gone already
// changes nothing. A partition 0 that owns every hash once more is a queue
// never split: its handles and sequence numbers are a whole queue's.
type MergeQueueRequest struct {
	Part uint32 `json:"part"`
}

// ActionMergeQueue is the action of MergeQueueRequest. It is not an SQS
// action.
const ActionMergeQueue api.Action = "fifoq:MergeQueue"

// Action implements api.Request.
func (*MergeQueueRequest) Action() api.Action { return ActionMergeQueue }

// mergeQueue applies a MergeQueueRequest.
func (e *Engine) mergeQueue(cmd *Command, r *MergeQueueRequest, now int64) (api.Response, error) {
	p, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	key := p.key
	key.Part = r.Part
	n := e.queues[key]
	if n == nil {
		if m, ok := e.moved[key]; ok && m.move == mergeMarker(p.key.Part) {
			return api.Empty{}, nil // merged so already
		}
	}
	if err := e.mergeable(p, n, key); err != nil {
		return nil, err
	}
	past, retag, err := mergedPast(p, n, now)
	if err != nil {
		return nil, err
	}

	// The two arrival lists are each in time order, and in serial order
	// among messages of one time (a FIFO queue's is in sequence order
	// too); the merged one is in (time, serial) order, and each group's
	// messages, all from one side, keep their order.
	var moving []*message
	for m := n.arrivalHead; m != nil; m = m.anext {
		moving = append(moving, m)
	}
	at := p.arrivalHead
	for _, m := range moving {
		n.remove(m)
		for at != nil && (at.enqueuedAt < m.enqueuedAt || at.enqueuedAt == m.enqueuedAt && at.serial < m.serial) {
			at = at.anext
		}
		p.adoptBefore(m, at)
	}
	oldTag := p.handleTag
	p.past = past
	if retag {
		// p's own tag now names some messages by other serials: it is a
		// past tag, and p hands out a new one.
		p.handleTag = newHandleTag(p, "merge "+strconv.FormatUint(uint64(n.key.Part), 10))
	}
	p.hi = n.hi
	p.lastSeq = max(p.lastSeq, n.lastSeq)
	p.outbox.seq = max(p.outbox.seq, n.outbox.seq)
	p.modifiedAt = max(p.modifiedAt, n.modifiedAt)
	if n.purgedAt > p.purgedAt {
		p.purgedAt, p.purged = n.purgedAt, n.purged
	}
	for src, t := range n.taken {
		if mine, ok := p.taken[src]; !ok || t.through > mine.through {
			if p.taken == nil {
				p.taken = map[outboxSource]takenRecord{}
			}
			p.taken[src] = t
		}
	}
	mergeDedup(p, n)
	mergeAttempts(p, n, oldTag)
	if p.key.Part == 0 && p.lo == 0 && p.hi == hashEnd {
		p.split = false
	}

	delete(e.queues, n.key)
	e.unindexRedrive(n)
	e.due.Remove(n)
	e.pruneMoved(now)
	e.moved[n.key] = movedAway{key: n.key, move: mergeMarker(p.key.Part), until: now + movedMarkerLife}
	p.refreshDue()
	e.wake(p.key)
	e.wake(n.key)
	return api.Empty{}, nil
}

// mergeMarker names, in the record a merged partition leaves behind, the
// merge into partition part: what a retry of the merge recognises.
func mergeMarker(part uint32) string { return mergePrefix + strconv.FormatUint(uint64(part), 10) }

// mergePrefix begins every mergeMarker; no move's name holds a space.
const mergePrefix = "merge into "

// isMergeMarker reports whether a moved record's move is a merge's.
func isMergeMarker(move string) bool { return strings.HasPrefix(move, mergePrefix) }

// mergeable returns why partition n (key) may not be merged into p, or nil.
func (e *Engine) mergeable(p, n *queue, key api.QueueKey) error {
	switch {
	case key.Part == p.key.Part || key.Part > MaxPart:
		return api.ErrInvalidParameterValue("Partition %d cannot be merged into partition %d.", key.Part, p.key.Part)
	case n == nil:
		return api.ErrInvalidParameterValue("Partition %d of queue %s is not here.", key.Part, p.key.Name)
	case !p.split || !n.split || p.hi != n.lo:
		return api.ErrInvalidParameterValue("Partition %d of queue %s does not begin where partition %d ends.", key.Part, p.key.Name, p.key.Part)
	case p.fence != "" || n.fence != "":
		return errQueueMoving()
	case len(n.outbox.entries) > 0:
		return api.ErrServiceUnavailable("Queue %s has messages on their way to other queues; retry once they are delivered.", n.key.Name)
	case len(n.tasks) > 0:
		return api.ErrUnsupportedOperation("Partition %d of queue %s has message move tasks.", key.Part, n.key.Name)
	}
	return nil
}

// mergedPast returns the past handle tags p honours once n is merged into
// it, newest first, and whether p's own tag must become one of them (and
// p take a new one). They are p's and n's, each tag once, and n's own
// tag, naming the messages n hands over by their serials, which a merge
// within one engine keeps.
//
// Of a tag both honour (one from before the split), each keeps the
// serials of the messages on its side as they are now: a side moved away
// and back since has its messages under new serials, and the other
// side's entries for them name serials gone for good (an engine never
// reuses one). So an entry naming a message either side holds wins. Of
// p's own tag, n may honour entries too (it was p's when n was split
// off): when n moved since, they name n's messages by new serials, and
// p's tag must then map those while naming p's own messages directly,
// which only a past tag does.
//
// It refuses a merge that would keep more than maxPastTags that name a
// message either side holds; of the others, it keeps what trimPast does.
func mergedPast(p, n *queue, now int64) ([]pastTag, bool, error) {
	p.prunePast(now)
	n.prunePast(now)
	live := func(s uint64) bool { return p.handles[s] != nil || n.handles[s] != nil }
	var out []pastTag
	add := func(tag uint32, until int64, serials map[uint64]uint64) {
		i := slices.IndexFunc(out, func(o pastTag) bool { return o.tag == tag })
		if i < 0 {
			out = append(out, pastTag{tag: tag, until: until, serials: maps.Clone(serials)})
			return
		}
		out[i].until = max(out[i].until, until)
		for old, cur := range serials {
			if have, ok := out[i].serials[old]; !ok || !live(have) && live(cur) {
				out[i].serials[old] = cur
			}
		}
	}
	identity := func(handles map[uint64]*message) map[uint64]uint64 {
		m := make(map[uint64]uint64, len(handles))
		for s := range handles {
			m[s] = s
		}
		return m
	}
	retag := n.handleTag == p.handleTag // never made so, but cheap to be safe from
	for _, t := range n.past {
		for old, cur := range t.serials {
			if t.tag == p.handleTag && old != cur && n.handles[cur] != nil {
				retag = true
			}
		}
	}
	add(n.handleTag, now+pastTagLife, identity(n.handles))
	if retag {
		add(p.handleTag, now+pastTagLife, identity(p.handles))
	}
	for _, t := range slices.Concat(p.past, n.past) {
		if t.tag != p.handleTag || retag {
			add(t.tag, t.until, t.serials)
		}
	}
	named := 0
	for _, t := range out {
		if t.namesLive(live) {
			named++
		}
	}
	if named > maxPastTags {
		return nil, false, api.ErrUnsupportedOperation("Queue %s would honour %d past receipt handle tags: it is not merged until some expire.", p.key.Name, named)
	}
	out = trimPast(out, live, now)
	// Newest first, as a move that carries them keeps the first ones.
	slices.SortStableFunc(out, func(a, b pastTag) int { return cmp.Compare(b.until, a.until) })
	return out, retag, nil
}

// adoptBefore stores m, taken from another partition of the same engine as
// adopt does, in the arrival list before at (at its end if at is nil).
func (q *queue) adoptBefore(m *message, at *message) {
	if at == nil {
		q.adopt(m)
		return
	}
	m.aprev, m.anext = at.aprev, at
	if at.aprev != nil {
		at.aprev.anext = m
	} else {
		q.arrivalHead = m
	}
	at.aprev = m
	q.adoptLinked(m)
}

// mergeDedup gives p the deduplication records of both p and n, in time
// order. A record both kept since the split is held once; of two records
// of one key, the later (the earlier expired before it was made).
func mergeDedup(p, n *queue) {
	type rec struct {
		r  dedupRecord
		id msgID
	}
	var all []rec
	seen := map[dedupKey]int{}
	add := func(r *dedupRecord, id msgID) {
		if i, ok := seen[r.key]; ok {
			if r.at > all[i].r.at {
				all[i] = rec{*r, id}
			}
			return
		}
		seen[r.key] = len(all)
		all = append(all, rec{*r, id})
	}
	p.dedup.each(add)
	n.dedup.each(add)
	slices.SortStableFunc(all, func(a, b rec) int { return cmp.Compare(a.r.at, b.r.at) })
	// A new table: an open snapshot view may read the old ones' buffers.
	var t dedupTable
	t.reserve(len(all))
	for _, r := range all {
		t.push(r.r, r.id)
	}
	p.dedup = t
}

// mergeAttempts gives p the receive attempt records of both p and n (p's
// tag before the merge was oldTag). An
// attempt a receive made over both partitions, or one made before the
// split that each kept a share of, becomes one record of every message
// the shares hold; its retry hands out p's receipt handles for them,
// which name the same messages as those the receive handed out. Records
// never change once made (a snapshot view may hold them): the merged ones
// are new.
func mergeAttempts(p, n *queue, oldTag uint32) {
	byID := map[string]*attemptRecord{}
	var order []string
	add := func(rec *attemptRecord) {
		have := byID[rec.id]
		if have == nil {
			byID[rec.id] = rec
			order = append(order, rec.id)
			return
		}
		if len(have.serials)+len(rec.serials) > api.MaxReceiveMessages {
			// Two receives that shared an attempt id: a retry returns
			// no more than one receive may, so the first stands alone;
			// the other's messages wait out their visibility timeout.
			return
		}
		both := &attemptRecord{id: rec.id, at: min(have.at, rec.at)}
		for _, r := range []*attemptRecord{have, rec} {
			for i, s := range r.serials {
				if !slices.Contains(both.serials, s) {
					both.serials = append(both.serials, s)
					both.nonces = append(both.nonces, r.nonces[i])
				}
			}
		}
		byID[rec.id] = both
	}
	for _, rec := range p.attemptLog.live() {
		if p.attempts[rec.id] != rec {
			continue
		}
		if rec.tag == 0 && oldTag != p.handleTag {
			// p took a new tag: the retry hands out the handles the
			// receive did, by the old one.
			rec = &attemptRecord{id: rec.id, at: rec.at, serials: rec.serials, nonces: rec.nonces, tag: oldTag, handles: slices.Clone(rec.serials)}
		}
		add(rec)
	}
	for _, rec := range n.attemptLog.live() {
		if n.attempts[rec.id] != rec {
			continue
		}
		if rec.tag == 0 {
			// Its retry hands out the handles n did, by n's tag, which p
			// now honours.
			rec = &attemptRecord{id: rec.id, at: rec.at, serials: rec.serials, nonces: rec.nonces, tag: n.handleTag, handles: slices.Clone(rec.serials)}
		}
		add(rec)
	}
	recs := make([]*attemptRecord, len(order))
	for i, id := range order {
		recs[i] = byID[id]
	}
	slices.SortStableFunc(recs, func(a, b *attemptRecord) int { return cmp.Compare(a.at, b.at) })
	var log ring[*attemptRecord]
	for _, rec := range recs {
		log.Push(rec)
	}
	p.attempts, p.attemptLog, p.attemptDrops = byID, log, 0
}
