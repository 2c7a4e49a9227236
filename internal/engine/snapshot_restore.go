package engine

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
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

// decodeSnapshot reads a snapshot into a new engine of configuration cfg.
// Beyond the checksum, it checks the invariants the engine's code relies
// on to be safe (unique serials, consistent lists and counts, task
// references), so that a crafted input cannot make the engine panic later.
func decodeSnapshot(r io.Reader, cfg Config) (*Engine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	cr := &crcReader{r: br}
	_, version, err := readSnapPrefix(cr)
	if err != nil {
		return nil, err
	}
	// cr is an io.ByteReader, so gob reads from it exactly the bytes of
	// each value, and the checksum after the body is left unread.
	dec := gob.NewDecoder(cr)
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("decoding the header: %w", err)
	}
	if h.Region != cfg.Region {
		return nil, fmt.Errorf("snapshot of region %q, engine configured for region %q", h.Region, cfg.Region)
	}
	if h.Queues < 0 {
		return nil, fmt.Errorf("negative queue count %d", h.Queues)
	}
	rs := &restorer{e: New(cfg), dec: dec, cr: cr, version: version, interned: map[string]string{}, istrs: map[string]istr{}}
	rs.e.now, rs.e.serial = h.Now, h.Serial
	for i := range h.Queues {
		if err := rs.queue(); err != nil {
			return nil, fmt.Errorf("queue %d: %w", i, err)
		}
	}
	if err := rs.engineRecords(&h); err != nil {
		return nil, err
	}
	var tr snapTrailer
	if err := dec.Decode(&tr); err != nil {
		return nil, fmt.Errorf("decoding the trailer: %w", err)
	}
	if tr.Queues != h.Queues || tr.Messages != len(rs.serials) {
		return nil, fmt.Errorf("trailer counts %d queues and %d messages, read %d and %d", tr.Queues, tr.Messages, h.Queues, len(rs.serials))
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

// restorer builds an engine from a snapshot's records.
type restorer struct {
	e        *Engine
	dec      *gob.Decoder
	cr       *crcReader        // the stream dec reads, for the packed records
	version  uint32            // of the snapshot's format
	batch    chunkBatch        // the chunk being read, when not pipelined
	serials  []uint64          // of every message, to check they are unique
	interned map[string]string // sender ids and source ARNs, shared by many messages
	istrs    map[string]istr   // group ids and senders, as the messages hold them
}

// istr returns b interned as messages hold group ids and senders.
func (rs *restorer) istr(b []byte) istr {
	if s, ok := rs.istrs[string(b)]; ok {
		return s
	}
	s := string(b)
	h := intern(s)
	rs.istrs[s] = h
	return h
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
	var last int64
	for i, d := range h.Deleted {
		key := api.QueueKey{Region: d.Region, Account: d.Account, Name: d.Name}
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
	lastSeq                         uint64 // FIFO: sequence numbers must increase
	lastDedup, lastAttempt          int64  // records must be in time order
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
	key := api.QueueKey{Account: sq.Account, Name: sq.Name}
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
		bodies: rs.e.cfg.Bodies,
	}
	for _, t := range sq.Tags {
		q.tags[t.Key] = t.Value
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

// readChunk reads the next chunk of a queue's records into b and decodes
// its message and deduplication records. got counts the records read so
// far, against the counts sq announces. It touches no queue, so that it can
// run ahead of applyChunk (see records).
func (rs *restorer) readChunk(b *chunkBatch, sq *snapQueue, got *queueLoad) error {
	// Gob leaves alone the fields a value does not carry and decodes into
	// the slices it finds: reuse the byte slices, whose contents are
	// copied out, and nothing else.
	c := &b.c
	if rs.version >= 2 {
		*c = snapChunk{} // the records are read beside the value, into b.data
	} else {
		*c = snapChunk{MessageData: c.MessageData[:0], DedupData: c.DedupData[:0]}
	}
	if err := rs.dec.Decode(c); err != nil {
		return fmt.Errorf("decoding records: %w", err)
	}
	if rs.version >= 2 {
		if len(c.MessageData) > 0 || len(c.DedupData) > 0 {
			return errors.New("records inside the chunk's value")
		}
		var err error
		if c.MessageData, c.DedupData, err = b.data.read(rs.cr); err != nil {
			return err
		}
	}
	switch {
	case c.Messages < 0 || c.Dedups < 0:
		return errors.New("negative record count")
	case c.Messages+c.Dedups+len(c.Attempts)+len(c.Orders) == 0:
		return errors.New("empty chunk")
	case c.Messages > sq.Messages-got.msgs:
		return errors.New("more messages than announced")
	case c.Dedups > sq.Dedups-got.dedups:
		return errors.New("more deduplication records than announced")
	case len(c.Attempts) > sq.Attempts-got.attempts:
		return errors.New("more attempt records than announced")
	}
	// The counts come from the input: size by them no further than a
	// writer fills a chunk; more records, if there are, append.
	b.msgs = slices.Grow(b.msgs[:0], min(c.Messages, snapChunkSize))
	rr := recordReader{buf: c.MessageData, bodies: rs.e.cfg.Bodies, version: rs.version}
	for i := range c.Messages {
		d := decodedMessage{m: &message{}}
		if err := rr.message(&d); err != nil {
			return fmt.Errorf("message %d: %w", got.msgs+i, err)
		}
		b.msgs = append(b.msgs, d)
	}
	if len(rr.buf) > 0 {
		return errors.New("unread bytes after the message records")
	}
	b.dedups = slices.Grow(b.dedups[:0], min(c.Dedups, snapChunkSize))
	rr = recordReader{buf: c.DedupData}
	for i := range c.Dedups {
		r, id, err := rr.dedup(rs.version)
		if err != nil {
			return fmt.Errorf("deduplication record %d: %w", got.dedups+i, err)
		}
		b.dedups = append(b.dedups, decodedDedup{r: r, id: id})
	}
	if len(rr.buf) > 0 {
		return errors.New("unread bytes after the deduplication records")
	}
	got.msgs += c.Messages
	got.dedups += c.Dedups
	got.attempts += len(c.Attempts)
	for _, o := range c.Orders {
		if len(o.Serials) > sq.Ordered-got.ordered {
			return errors.New("more ordered messages than announced")
		}
		got.ordered += len(o.Serials)
	}
	return nil
}

// applyChunk adds the records of a chunk read by readChunk to q. ld tracks
// what the queue's chunks have added so far.
func (rs *restorer) applyChunk(q *queue, b *chunkBatch, ld *queueLoad) error {
	for i := range b.msgs {
		if err := rs.message(q, &b.msgs[i], ld); err != nil {
			return fmt.Errorf("message %d: %w", ld.msgs, err)
		}
		ld.msgs++
	}
	for i := range b.dedups {
		if err := restoreDedup(q, &b.dedups[i].r, b.dedups[i].id, ld); err != nil {
			return fmt.Errorf("deduplication record %d: %w", ld.dedups, err)
		}
		ld.dedups++
	}
	c := &b.c
	for i := range c.Attempts {
		if err := restoreAttempt(q, &c.Attempts[i], ld); err != nil {
			return fmt.Errorf("attempt record %d: %w", ld.attempts, err)
		}
		ld.attempts++
	}
	for i := range c.Orders {
		o := &c.Orders[i]
		if !ld.sorted {
			slices.SortFunc(ld.visible, func(a, b *message) int { return cmp.Compare(a.serial, b.serial) })
			ld.sorted = true
		}
		if err := restoreOrder(q, o, ld.visible); err != nil {
			return fmt.Errorf("order of tenant %q: %w", o.Tenant, err)
		}
		ld.ordered += len(o.Serials)
	}
	return nil
}

// message adds a decoded message to q, in its arrival list or aged heap,
// its FIFO group or fair-queue tenant, and the timer heap if it waits for a
// time. Standard queues link visible messages into their tenant's list
// later, from the order records.
func (rs *restorer) message(q *queue, d *decodedMessage, ld *queueLoad) error {
	m := d.m
	switch {
	case m.serial == 0 || m.serial > rs.e.serial:
		return fmt.Errorf("serial %d out of range (latest %d)", m.serial, rs.e.serial)
	case m.state > stateInflight:
		return fmt.Errorf("unknown state %d", m.state)
	case q.fifo && d.aged:
		return errors.New("aged message in a FIFO queue") // FIFO arrival order is sequence order
	case q.fifo && (m.seq <= ld.lastSeq || m.seq > q.lastSeq):
		return fmt.Errorf("sequence number %d out of order", m.seq)
	case !d.aged && q.arrivalTail != nil && m.enqueuedAt < q.arrivalTail.enqueuedAt:
		return errors.New("arrival list out of time order")
	}
	ld.lastSeq = m.seq
	m.sender = rs.istr(d.sender)
	m.setExt(d.id, msgExt{
		attrs:       d.attrs,
		storedAttrs: d.storedAttrs,
		md5Attrs:    d.md5Attrs,
		traceHeader: d.traceHeader,
		dlqSource:   rs.intern(d.dlqSource),
	})
	// Serials are checked unique across queues at the end (rs.serials).
	if handleable(m) {
		q.handles[m.serial] = m
	}
	if !q.fifo && m.state == stateVisible {
		ld.visible = append(ld.visible, m)
	}
	rs.serials = append(rs.serials, m.serial)
	if d.aged {
		q.aged.Push(m)
	} else {
		m.aprev = q.arrivalTail
		if q.arrivalTail != nil {
			q.arrivalTail.anext = m
		} else {
			q.arrivalHead = m
		}
		q.arrivalTail = m
	}
	switch m.state {
	case stateVisible:
		q.nVisible++
	case stateDelayed:
		q.nDelayed++
		q.timers.Push(m)
	case stateInflight:
		q.nInflight++
		q.timers.Push(m)
	}
	// The group's id is shared by its messages, as when they were sent.
	if q.fifo {
		g := q.groups[string(d.group)]
		if g == nil {
			g = q.fifoGroupOf(string(d.group))
		}
		m.group = rs.istr(d.group)
		g.pushBack(m)
		if m.state == stateInflight {
			g.inflight++
		}
		return nil
	}
	t := q.tenants[string(d.group)]
	if t == nil {
		t = q.tenantOf(string(d.group))
	}
	m.group = rs.istr(d.group)
	t.total++
	if m.state == stateInflight {
		t.inflight++
	}
	return nil
}

func restoreDedup(q *queue, r *dedupRecord, id msgID, ld *queueLoad) error {
	if r.at == superseded {
		return errors.New("time out of range")
	}
	if ld.dedups > 0 && r.at < ld.lastDedup {
		return errors.New("out of time order")
	}
	ld.lastDedup = r.at
	if q.dedup.get(r.key) != nil {
		return fmt.Errorf("key %x twice", r.key)
	}
	q.dedup.push(*r, id)
	return nil
}

func restoreAttempt(q *queue, a *snapAttempt, ld *queueLoad) error {
	switch {
	case q.attempts[a.ID] != nil:
		return fmt.Errorf("id %q twice", a.ID)
	case len(a.Serials) != len(a.Nonces):
		return errors.New("as many serials as nonces needed")
	case ld.attempts > 0 && a.At < ld.lastAttempt:
		return errors.New("out of time order")
	}
	ld.lastAttempt = a.At
	r := &attemptRecord{id: a.ID, at: a.At, serials: a.Serials, nonces: a.Nonces}
	q.attempts[a.ID] = r
	q.attemptLog.Push(r)
	return nil
}

// restoreOrder appends visible messages to their tenant's list; visible
// holds the queue's visible messages by serial.
func restoreOrder(q *queue, o *snapOrder, visible []*message) error {
	t := q.tenants[o.Tenant]
	if t == nil {
		return errors.New("tenant without messages")
	}
	for _, s := range o.Serials {
		var m *message
		if i, ok := slices.BinarySearchFunc(visible, s, func(m *message, s uint64) int { return cmp.Compare(m.serial, s) }); ok {
			m = visible[i]
		}
		switch {
		case m == nil:
			return fmt.Errorf("unknown message %d, or not a visible message", s)
		case m.group.String() != t.id || m.state != stateVisible:
			return fmt.Errorf("message %d is not a visible message of the tenant", s)
		case m.prev != nil || m.next != nil || t.head == m:
			return fmt.Errorf("message %d listed twice", s)
		}
		t.pushBack(m)
	}
	return nil
}

// finishQueue checks that every message is where it belongs and fills the
// ready heaps. Heaps order by total keys, so the order in which groups and
// tenants are pushed does not matter.
func (rs *restorer) finishQueue(q *queue, sq *snapQueue) error {
	if !q.fifo && sq.Ordered != q.nVisible {
		return fmt.Errorf("%d visible messages, %d in tenant lists", q.nVisible, sq.Ordered)
	}
	for _, g := range q.groups {
		q.refreshGroup(g)
	}
	for _, t := range q.tenants {
		q.refreshTenant(t)
	}
	return nil
}

// crcReader checksums what it reads. It is an io.ByteReader so that
// encoding/gob does not wrap it in a buffer of its own, which would read
// past the gob stream.
// n counts the bytes summed, for naming the range a mismatch covers.
type crcReader struct {
	r   *bufio.Reader
	sum uint32
	n   int64
	one [1]byte
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sum = crc32.Update(c.sum, snapCRCTable, p[:n])
	c.n += int64(n)
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.one[0] = b
		c.sum = crc32.Update(c.sum, snapCRCTable, c.one[:])
		c.n++
	}
	return b, err
}

// snapPrefix is a snapshot's magic number and format version.
type snapPrefix [len(snapMagic) + 4]byte

// readSnapPrefix reads a snapshot's magic number and format version, and
// checks that this engine reads that version.
func readSnapPrefix(r io.Reader) (pre snapPrefix, version uint32, err error) {
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return pre, 0, fmt.Errorf("reading the format header: %w", err)
	}
	if string(pre[:len(snapMagic)]) != snapMagic {
		return pre, 0, errors.New("not an engine snapshot (bad magic number)")
	}
	version = binary.BigEndian.Uint32(pre[len(snapMagic):])
	if version < snapOldest || version > snapVersionRefs {
		return pre, 0, fmt.Errorf("snapshot format version %d; this engine reads versions %d to %d", version, snapOldest, snapVersionRefs)
	}
	return pre, version, nil
}

// VerifySnapshot reads a snapshot written by Snapshot or a SnapshotView
// to its end and checks its header and checksum, without decoding it and
// in constant memory.
func VerifySnapshot(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	pre, _, err := readSnapPrefix(br)
	if err != nil {
		return fmt.Errorf("engine snapshot: %w", err)
	}
	sum := crc32.Update(0, snapCRCTable, pre[:])
	// The last 4 bytes are the checksum: hold them back from the sum.
	var tail []byte
	buf := make([]byte, 64<<10)
	var total int64 = int64(len(pre))
	for {
		n, err := br.Read(buf)
		if n > 0 {
			tail = append(tail, buf[:n]...)
			if len(tail) > 4 {
				sum = crc32.Update(sum, snapCRCTable, tail[:len(tail)-4])
				total += int64(len(tail) - 4)
				tail = append(tail[:0], tail[len(tail)-4:]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("engine snapshot: after byte offset %d: %w", total, err)
		}
	}
	if len(tail) < 4 {
		return fmt.Errorf("engine snapshot: truncated at byte offset %d", total+int64(len(tail)))
	}
	if got := binary.BigEndian.Uint32(tail); got != sum {
		return fmt.Errorf("engine snapshot: checksum mismatch over byte offsets 0-%d: stored %08x, computed %08x", total, got, sum)
	}
	return nil
}
