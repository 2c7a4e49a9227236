package engine

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// Restore replaces the engine's state with one written by Snapshot. The
// engine's Config and available hook are kept. The snapshot is decoded
// into a new state, checked, and only then swapped in: on error the engine
// is left as it was. r must hold exactly one snapshot.
//
// Once restored, the engine calls the available hook for every queue, so
// that long polls waiting on the old state look again.
func (e *Engine) Restore(r io.Reader) error {
	return e.RestoreVerified(r, nil)
}

// RestoreVerified is Restore with one more check: once the snapshot is
// read to its end, and before it is swapped in, it calls verify (if not
// nil), and an error from verify leaves the engine as it was. A caller
// that streams the snapshot out of a container with a checksum of its own
// checks it there, without holding the snapshot in memory.
func (e *Engine) RestoreVerified(r io.Reader, verify func() error) error {
	n, err := decodeSnapshot(r, e.cfg)
	if err != nil {
		return fmt.Errorf("engine: restore: %w", err)
	}
	if verify != nil {
		if err := verify(); err != nil {
			return fmt.Errorf("engine: restore: %w", err)
		}
	}
	box := e.hook
	*e = *n
	e.hook = box
	if hook := box.get(); hook != nil {
		keys := make([]api.QueueKey, 0, len(e.queues))
		for k := range e.queues {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareKeys)
		for _, k := range keys {
			hook(k)
		}
	}
	return nil
}

// RegionError is Restore's refusal of a snapshot written by an engine of
// another region: its queues' ARNs and the URLs that find them name that
// region, so restoring it would move every queue.
type RegionError struct {
	Snapshot string // the region of the engine that wrote the snapshot
	Engine   string // the region of the engine asked to restore it
}

func (e *RegionError) Error() string {
	return fmt.Sprintf("snapshot of region %q, engine configured for region %q", e.Snapshot, e.Engine)
}

// SnapshotRegion reads the header of a snapshot written by Snapshot or a
// SnapshotView and returns the region of the engine that wrote it, which
// the snapshot's queues and ARNs belong to. Restore refuses a snapshot of
// another region than the engine's; a caller reads it first to say which
// region a data dir or a backup belongs to before anything is restored.
// It reads no further than the header (and what a buffer reads ahead of
// it), and checks no checksum.
func SnapshotRegion(r io.Reader) (string, error) {
	br := bufio.NewReader(r)
	if _, _, err := readSnapPrefix(br); err != nil {
		return "", err
	}
	var h snapHeader
	if err := gob.NewDecoder(br).Decode(&h); err != nil {
		return "", fmt.Errorf("decoding the header: %w", err)
	}
	return h.Region, nil
}

// decodeSnapshot reads a snapshot into a new engine of configuration cfg.
// Beyond the checksum, it checks the invariants the engine's code relies
// on to be safe (unique serials, consistent lists and counts, task
// references), so that a crafted input cannot make the engine panic later.
func decodeSnapshot(r io.Reader, cfg Config) (*Engine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	cr, dec, version, h, err := openSnapshot(br, cfg.Region)
	if err != nil {
		return nil, err
	}
	if h.Queues < 0 {
		return nil, fmt.Errorf("negative queue count %d", h.Queues)
	}
	rs := &restorer{e: New(cfg), dec: dec, cr: cr, version: version, interned: map[string]string{}}
	rs.e.now, rs.e.serial = h.Now, h.Serial
	for i := range h.Queues {
		if err := rs.queue(); err != nil {
			return nil, fmt.Errorf("queue %d: %w", i, err)
		}
	}
	if h.Orphans < 0 {
		return nil, fmt.Errorf("negative orphaned outbox count %d", h.Orphans)
	}
	for i := range h.Orphans {
		if err := rs.orphan(); err != nil {
			return nil, fmt.Errorf("orphaned outbox %d: %w", i, err)
		}
	}
	if err := rs.engineRecords(h); err != nil {
		return nil, err
	}
	var tr snapTrailer
	if err := dec.Decode(&tr); err != nil {
		return nil, fmt.Errorf("decoding the trailer: %w", err)
	}
	if tr.Queues != h.Queues || tr.Messages != len(rs.serials)-rs.outboxed {
		return nil, fmt.Errorf("trailer counts %d queues and %d messages, read %d and %d", tr.Queues, tr.Messages, h.Queues, len(rs.serials)-rs.outboxed)
	}
	sum := cr.sum
	var want [4]byte
	if _, err := io.ReadFull(br, want[:]); err != nil {
		return nil, fmt.Errorf("reading the checksum: %w", err)
	}
	if stored := binary.BigEndian.Uint32(want[:]); stored != sum {
		return nil, fmt.Errorf("checksum mismatch over byte offsets 0-%d: stored %08x, computed %08x: the snapshot is corrupt", cr.n, stored, sum)
	}
	switch _, err := br.ReadByte(); {
	case err == nil:
		return nil, errors.New("data after the end of the snapshot")
	case err != io.EOF:
		return nil, fmt.Errorf("after the checksum: %w", err)
	}
	// Serials identify messages engine-wide (a message keeps its serial
	// when it moves to another queue).
	slices.Sort(rs.serials)
	for i := 1; i < len(rs.serials); i++ {
		if rs.serials[i] == rs.serials[i-1] {
			return nil, fmt.Errorf("message serial %d twice, in one queue or in two queues", rs.serials[i])
		}
	}
	return rs.e, nil
}

// openSnapshot reads a snapshot's prefix and header from br, checking
// its region against the engine's, and returns the checksumming reader
// and gob decoder the rest is read with. cr is an io.ByteReader, so gob
// reads from it exactly the bytes of each value, and the checksum after
// the body is left unread.
func openSnapshot(br *bufio.Reader, region string) (cr *crcReader, dec *gob.Decoder, version uint32, h *snapHeader, err error) {
	cr = &crcReader{r: br}
	if _, version, err = readSnapPrefix(cr); err != nil {
		return nil, nil, 0, nil, err
	}
	dec = gob.NewDecoder(cr)
	h = &snapHeader{}
	if err := dec.Decode(h); err != nil {
		return nil, nil, 0, nil, fmt.Errorf("decoding the header: %w", err)
	}
	if h.Region != region {
		return nil, nil, 0, nil, &RegionError{Snapshot: h.Region, Engine: region}
	}
	return cr, dec, version, h, nil
}

// restorer builds an engine from a snapshot's records.
type restorer struct {
	e        *Engine
	dec      *gob.Decoder
	cr       *crcReader        // the stream dec reads, for the packed records
	version  uint32            // of the snapshot's format
	batch    chunkBatch        // the chunk being read, when not pipelined
	serials  []uint64          // of every message, to check they are unique
	outboxed int               // of which in outboxes (outbox.go), which the trailer does not count
	interned map[string]string // sender ids and source ARNs, shared by many messages
	// install is set when one queue is installed into an engine that
	// holds others (move.go): its messages get serials of the engine.
	install *installing
}

// intern returns b as a string, the same string for equal contents.
func (rs *restorer) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := rs.interned[string(b)]; ok {
		return v
	}
	s := string(b)
	rs.interned[s] = s
	return s
}

// engineRecords restores the records of the header that refer to queues:
// deletions, running tasks; and rebuilds the dead-letter source index.
func (rs *restorer) engineRecords(h *snapHeader) error {
	e := rs.e
	for k, v := range h.Meta {
		if k == "" || v == "" || len(k) > maxMetaKey || len(v) > maxMetaValue {
			return fmt.Errorf("metadata %.40q: a key of 1 to %d bytes and a value of 1 to %d", k, maxMetaKey, maxMetaValue)
		}
	}
	e.meta = h.Meta
	e.heldUntil = e.holdsEnd()
	for _, m := range h.Moved {
		key := api.QueueKey{Region: m.Region, Account: m.Account, Name: m.Name, Part: m.Part}
		if _, dup := e.moved[key]; dup || e.queues[key] != nil || checkMoveID(m.Move) != nil && !isMergeMarker(m.Move) {
			return fmt.Errorf("moved-away record of %s: queue exists, listed twice or no move", key)
		}
		e.moved[key] = movedAway{key: key, move: m.Move, until: m.Until}
	}
	var last int64
	for i, d := range h.Deleted {
		key := api.QueueKey{Region: d.Region, Account: d.Account, Name: d.Name, Part: d.Part}
		if _, dup := e.deleted[key]; dup || e.queues[key] != nil {
			return fmt.Errorf("deletion record of %s: queue exists or deleted twice", key)
		}
		if i > 0 && d.At < last {
			return fmt.Errorf("deletion records out of time order at %s", key)
		}
		last = d.At
		until := d.Until
		if until == 0 {
			until = d.At + int64(api.QueueDeletionCooldown)
		}
		rec := deletion{key: key, at: d.At, until: until}
		e.deleted[key] = rec
		e.deletedLog.Push(rec)
	}
	running := 0
	for _, q := range e.queues {
		for _, t := range q.tasks {
			if t.status == api.MoveTaskRunning {
				running++
			}
		}
	}
	for _, ref := range h.Running {
		key := api.QueueKey{Region: ref.Region, Account: ref.Account, Name: ref.Name}
		q := e.queues[key]
		if q == nil || ref.Index < 0 || ref.Index >= len(q.tasks) {
			return fmt.Errorf("running task %d of queue %s does not exist", ref.Index, key)
		}
		t := q.tasks[ref.Index]
		if t.status != api.MoveTaskRunning || slices.Contains(e.running, t) {
			return fmt.Errorf("running task %d of queue %s: status %s or listed twice", ref.Index, key, t.status)
		}
		e.running = append(e.running, t)
	}
	if running != len(e.running) {
		return fmt.Errorf("%d tasks are RUNNING, %d listed as running", running, len(e.running))
	}
	// The index is a function of the queues' redrive policies.
	for _, q := range e.queues {
		e.indexRedrive(q, nil)
	}
	return nil
}

// queueLoad tracks what a queue's section has delivered so far.
type queueLoad struct {
	msgs, dedups, attempts, ordered int
	lastDedup, lastAttempt          int64 // records must be in time order
	// Standard queues: the visible messages, which the tenant order
	// records name by serial; sorted by serial at the first of those.
	visible []*message
	sorted  bool
}

// queue reads one queue section.
func (rs *restorer) queue() error {
	var sq snapQueue
	if err := rs.dec.Decode(&sq); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	key := rs.queueKey(&sq)
	q, err := rs.newQueue(&sq)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := rs.records(q, &sq); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := rs.finishQueue(q, &sq); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := rs.outboxState(q, &sq); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	rs.e.queues[key] = q
	q.due, q.cow = rs.e.due, rs.e.cow
	q.refreshDue()
	return nil
}

// maxRestoreHint bounds the size hints a restore takes from a snapshot's
// record counts.
const maxRestoreHint = 1 << 21

// queueKey returns the key of the queue sq describes. Its region is the
// one its ARN names: snapshots have always held the ARN, and a snapshot
// from before queues had regions names the engine's own in it.
func (rs *restorer) queueKey(sq *snapQueue) api.QueueKey {
	key := api.QueueKey{Account: sq.Account, Name: sq.Name, Part: sq.Part}
	if region, _, ok := api.ParseQueueARN(sq.Arn); ok {
		key = key.InRegion(region, rs.e.cfg.Region)
	}
	return key
}

// newQueue builds a queue, without messages, from its header.
func (rs *restorer) newQueue(sq *snapQueue) (*queue, error) {
	key := rs.queueKey(sq)
	switch {
	case rs.e.queues[key] != nil:
		return nil, errors.New("queue listed twice")
	case sq.Arn != key.ARN(rs.e.cfg.Region):
		return nil, fmt.Errorf("ARN %q does not match the queue", sq.Arn)
	case sq.Messages < 0 || sq.Dedups < 0 || sq.Attempts < 0 || sq.Ordered < 0:
		return nil, errors.New("negative record count")
	case !sq.Fifo && (sq.Dedups > 0 || sq.Attempts > 0):
		return nil, errors.New("deduplication or attempt records in a standard queue")
	case sq.Fifo && sq.Ordered > 0:
		return nil, errors.New("tenant order records in a FIFO queue")
	case len(sq.Tasks) > maxTasksKept:
		return nil, fmt.Errorf("%d move tasks, at most %d are kept", len(sq.Tasks), maxTasksKept)
	}
	attrs, err := queueAttrsOf(&sq.Attrs, key.Region)
	if err != nil {
		return nil, err
	}
	q := &queue{
		key: key, arn: sq.Arn, fifo: sq.Fifo, attrs: attrs, tags: make(map[string]string, len(sq.Tags)),
		createdAt: sq.CreatedAt, modifiedAt: sq.ModifiedAt, handleTag: sq.HandleTag,
		purgedAt: sq.PurgedAt, purged: sq.Purged, lastSeq: sq.LastSeq,
		prevDedupScope: sq.PrevDedupScope, dedupScopeChanged: sq.DedupScopeChanged,
		bodies: rs.e.bodyStore(), ms: rs.e.ms,
	}
	for _, t := range sq.Tags {
		q.tags[t.Key] = t.Value
	}
	if sq.Split {
		if !sq.Fifo || sq.Part > MaxPart || sq.Lo >= sq.Hi || sq.Hi > hashEnd {
			return nil, fmt.Errorf("partition %d of [%d, %d) is not one of a split FIFO queue", sq.Part, sq.Lo, sq.Hi)
		}
		q.split, q.lo, q.hi = true, sq.Lo, sq.Hi
	} else if sq.Part != 0 {
		return nil, fmt.Errorf("partition %d of a queue never split", sq.Part)
	}
	q.fence, q.movedIn = sq.Fence, sq.MovedIn
	if len(sq.Past) > maxPastTags {
		return nil, fmt.Errorf("%d past handle tags, at most %d are kept", len(sq.Past), maxPastTags)
	}
	for _, p := range sq.Past {
		switch {
		case len(p.Old) != len(p.New):
			return nil, errors.New("a past handle tag needs as many new serials as old")
		case p.Tag == sq.HandleTag:
			return nil, errors.New("a past handle tag is the queue's own")
		case !slices.IsSorted(p.Old) || len(slices.Compact(slices.Clone(p.Old))) != len(p.Old):
			return nil, errors.New("a past handle tag's serials are not in order")
		}
		t := pastTag{tag: p.Tag, until: p.Until, serials: make(map[uint64]uint64, min(len(p.Old), maxRestoreHint))}
		for i, old := range p.Old {
			t.serials[old] = p.New[i]
		}
		q.past = append(q.past, t)
	}
	q.resetMessages()
	// The count comes from the input: trust it for the map's size hint
	// only up to a bound, which a crafted header can make cost a few tens
	// of MB until the checksum refuses it. Up to the bound the maps are
	// made once at their final size: growing them by doubling rehashes
	// every entry again at each step, and leaves the old tables behind as
	// garbage while the restore builds the heap.
	rs.serials = slices.Grow(rs.serials, min(sq.Messages, maxRestoreHint))
	if q.fifo {
		q.dedup.reserve(min(sq.Dedups, maxRestoreHint))
		q.attempts = map[string]*attemptRecord{}
	}
	for i, st := range sq.Tasks {
		t, err := moveTaskOf(key, &st)
		if err != nil {
			return nil, fmt.Errorf("move task %d: %w", i, err)
		}
		q.tasks = append(q.tasks, t)
	}
	return q, nil
}

// queueAttrsOf rebuilds a queue's attributes from their snapshot form. A
// dead-letter queue is in its source's region, which is region.
func queueAttrsOf(s *snapAttrs, region string) (queueAttrs, error) {
	a := queueAttrs{
		VisibilityTimeout: s.VisibilityTimeout, MaximumMessageSize: s.MaximumMessageSize,
		MessageRetentionPeriod: s.MessageRetentionPeriod, DelaySeconds: s.DelaySeconds,
		ReceiveMessageWaitTimeSeconds: s.ReceiveMessageWaitTimeSeconds, Policy: s.Policy,
		RedrivePolicy: s.RedrivePolicy, RedriveAllowPolicy: s.RedriveAllowPolicy,
		ContentBasedDeduplication: s.ContentBasedDeduplication, KmsMasterKeyId: s.KmsMasterKeyId,
		KmsDataKeyReusePeriodSeconds: s.KmsDataKeyReusePeriodSeconds, SqsManagedSseEnabled: s.SqsManagedSseEnabled,
		DeduplicationScope: s.DeduplicationScope, FifoThroughputLimit: s.FifoThroughputLimit,
	}
	if s.HasRedrive != (s.RedrivePolicy != "") || s.HasAllow != (s.RedriveAllowPolicy != "") {
		return a, errors.New("redrive policies and their parsed forms disagree")
	}
	if s.HasRedrive {
		a.redrive = &redriveTarget{
			arn:             s.RedriveTargetArn,
			key:             api.QueueKey{Region: region, Account: s.RedriveTargetAccount, Name: s.RedriveTargetName},
			maxReceiveCount: s.RedriveMaxReceiveCount,
		}
	}
	if s.HasAllow {
		a.allow = &api.RedriveAllowPolicy{RedrivePermission: s.AllowPermission, SourceQueueArns: s.AllowSourceQueueArns}
	}
	return a, nil
}

func moveTaskOf(source api.QueueKey, s *snapTask) (*moveTask, error) {
	if s.SourceAccount != source.Account || s.SourceName != source.Name {
		return nil, fmt.Errorf("source %s/%s is not the queue", s.SourceAccount, s.SourceName)
	}
	switch s.Status {
	case api.MoveTaskRunning, api.MoveTaskCompleted, api.MoveTaskCancelled, api.MoveTaskFailed:
	default:
		return nil, fmt.Errorf("unknown status %q", s.Status)
	}
	t := &moveTask{
		handle: s.Handle, source: source, sourceArn: s.SourceArn,
		destArn: s.DestArn, dest: api.QueueKey{Region: source.Region, Account: s.DestAccount, Name: s.DestName},
		perSecond: s.PerSecond, status: s.Status, moved: s.Moved, toMove: s.ToMove,
		startedAt: s.StartedAt, failure: s.Failure,
	}
	if s.HasRate {
		rate := s.Rate
		t.rate = &rate
	}
	return t, nil
}
