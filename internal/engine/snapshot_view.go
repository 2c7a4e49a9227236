package engine

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/fifoq/fifoq/internal/api"
)

// A SnapshotView is the engine's state as of one moment, which can be
// written out (WriteTo) while later commands are applied. Taking it costs
// a walk over the engine's lists that copies pointers, not contents:
// messages and attempt records, in the order the snapshot writes them;
// deduplication records are shared with their tables, which leave them
// alone while the view is open (see dedupTable.capture). Attempt records
// never change once made, and the few places that change a message save a
// copy of it first while a view is open (copy-on-write, see cowState), so
// the view writes exactly the bytes Snapshot would have written at the
// moment it was taken. The
// queues' configurations, tags, tasks and the engine-wide records are few
// and copied whole.
type SnapshotView struct {
	cow    *cowState // nil when nothing changes while the view is written
	ms     *msgStore // holds the messages' records
	msHeld bool      // ms keeps what is freed until Release
	gen    uint32
	header *snapHeader
	queues []queueView
	// orphans are the outboxes of deleted queues (outbox.go), in the
	// order the header's count announces them.
	orphans []orphanView
	total   int // messages
	done    bool
	// bodies is where the engine keeps its bodies: the bodies the view
	// writes are read from it, unless byRef is set (see
	// BodiesByReference), which only a BodyStore given to the engine
	// allows (external). heap is the engine's table in memory, if the
	// bodies are there: it keeps the slots released while the view is
	// open until Release.
	bodies   BodyStore
	external bool
	heap     *heapBodies
	byRef    bool
	// lockBatch is the most messages read under one hold of the lock
	// (Config.lockBatch).
	lockBatch int
}

// queueView is one queue's part of a view.
type queueView struct {
	sq       *snapQueue
	msgs     packedSeq    // places in the arena (msgArena.placeOf): the arrival list, then the aged heap in order
	arrival  int          // the first arrival entries of msgs come from the arrival list
	dedups   dedupCapture // shared with the queue's table, which keeps it unchanged
	attempts []*attemptRecord
	orders   []tenantOrder // standard queues: each tenant's visible list
	serials  packedSeq     // the orders' serials, one order after the other
	outbox   []outboxEntry // copied: its messages never change while in it
}

// orphanView is an orphaned outbox's part of a view.
type orphanView struct {
	so      *snapOrphan
	entries []outboxEntry
}

// tenantOrder is a tenant's visible list: its n messages are the next n
// serials of its queueView.
type tenantOrder struct {
	id string
	n  int
}

// cowState is the engine's copy-on-write record for the open view: gen
// numbers the view, and saved holds, for each message changed since the
// view was taken, its content at that moment. A message whose serial is
// above lastSerial was made after the view was taken, and is not in it.
type cowState struct {
	gen        uint32
	active     bool
	lastSerial uint64
	saved      map[*message]*message
}

// touch saves m's content for the open view, if any, before a change: every
// change to a message's fields after it is stored goes through touch first.
// Only the first change saves: the view needs the content it was taken
// with.
func (c *cowState) touch(m *message) {
	if c == nil || !c.active || m.serial > c.lastSerial {
		return
	}
	if _, saved := c.saved[m]; saved {
		return
	}
	saved := *m
	c.saved[m] = &saved
}

// errViewOpen is returned when a view is asked for while another is open.
var errViewOpen = errors.New("engine: a snapshot view is open already")

// BeginSnapshot takes a view of the engine's state, to be written by WriteTo
// while commands go on being applied, and released by Release. It must not
// run concurrently with Apply or Restore (it may with Read, NextWake and
// Receivable), nor while another view is open. Its cost is a pass over the
// engine's message lists copying pointers: about 8 bytes per message and
// record held until Release, plus a copy of every message changed meanwhile.
func (e *Engine) BeginSnapshot() (*SnapshotView, error) {
	if e.cow.active {
		return nil, errViewOpen
	}
	v, err := e.captureSnapshot()
	if err != nil {
		return nil, fmt.Errorf("engine: snapshot: %w", err)
	}
	e.cow.gen++
	if e.cow.gen == 0 { // never: 2^32 snapshots; 0 is a zero dedupFreeze's, which names no view
		e.cow.gen = 1
	}
	e.cow.active = true
	e.cow.lastSerial = e.serial
	e.cow.saved = map[*message]*message{}
	if e.heap != nil {
		e.heap.hold()
		v.heap = e.heap
	}
	e.ms.hold()
	v.msHeld = true
	// The deduplication records are shared with the view, not copied
	// (see dedupTable.capture): their tables now leave them alone.
	for _, q := range e.queues {
		if q.fifo {
			q.dedup.freeze(e.cow)
		}
	}
	v.cow, v.gen = e.cow, e.cow.gen
	return v, nil
}

// Release ends the view: the engine stops saving messages for it. It must
// not run concurrently with Apply; the view cannot be written afterwards.
func (v *SnapshotView) Release() {
	if v.cow != nil && v.cow.gen == v.gen {
		v.cow.active = false
		v.cow.saved = nil
	}
	if v.heap != nil {
		v.heap.unhold()
		v.heap = nil
	}
	if v.msHeld {
		v.ms.unhold()
		v.msHeld = false
	}
	v.unmap()
	v.done = true
}

// unmap gives back the memory of the view's arrays; it cannot be written
// afterwards.
func (v *SnapshotView) unmap() {
	for i := range v.queues {
		v.queues[i].msgs.release()
		v.queues[i].serials.release()
	}
	v.queues = nil
}

// Messages returns the number of messages in the view.
func (v *SnapshotView) Messages() int { return v.total }

// captureSnapshot gathers what a snapshot writes, as pointers.
func (e *Engine) captureSnapshot() (*SnapshotView, error) {
	keys := make([]api.QueueKey, 0, len(e.queues))
	for k := range e.queues {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	h, err := e.snapHeader(len(keys))
	if err != nil {
		return nil, err
	}
	v := &SnapshotView{header: h, queues: make([]queueView, 0, len(keys)), ms: e.ms, bodies: e.bodyStore(), external: e.cfg.Bodies != nil, lockBatch: e.cfg.lockBatch()}
	for _, k := range keys {
		q := e.queues[k]
		v.queues = append(v.queues, captureQueue(q))
		v.total += q.stored()
	}
	for _, src := range e.orphanOrder() {
		o := e.orphans[src]
		v.orphans = append(v.orphans, orphanView{
			so: &snapOrphan{Region: src.key.Region, Account: src.key.Account, Name: src.key.Name, Part: src.key.Part, Arn: o.arn,
				Created: src.created, Fifo: o.fifo, OutboxSeq: o.box.seq, Outboxed: len(o.box.entries)},
			entries: slices.Clone(o.box.entries),
		})
	}
	return v, nil
}

// captureQueue gathers one queue's section: its header, copied, and its
// records, as pointers in the order they are written.
func captureQueue(q *queue) queueView {
	sq := &snapQueue{
		Account: q.key.Account, Name: q.key.Name, Arn: q.arn, Fifo: q.fifo,
		Attrs:     snapAttrsOf(&q.attrs),
		CreatedAt: q.createdAt, ModifiedAt: q.modifiedAt, HandleTag: q.handleTag,
		Purged: q.purged, PurgedAt: q.purgedAt, LastSeq: q.lastSeq,
		PrevDedupScope: q.prevDedupScope, DedupScopeChanged: q.dedupScopeChanged,
		Messages: q.stored(),
		Part:     q.key.Part,
	}
	if q.split {
		sq.Split, sq.Lo, sq.Hi = true, q.lo, q.hi
	}
	// Attribute values are replaced, never changed in place, but the
	// list is a slice the view must not share.
	sq.Attrs.AllowSourceQueueArns = slices.Clone(sq.Attrs.AllowSourceQueueArns)
	for _, k := range slices.Sorted(maps.Keys(q.tags)) {
		sq.Tags = append(sq.Tags, snapTag{Key: k, Value: q.tags[k]})
	}
	for _, t := range q.tasks {
		sq.Tasks = append(sq.Tasks, snapTaskOf(t))
	}
	sq.Fence, sq.MovedIn = q.fence, q.movedIn
	sq.OutboxSeq, sq.Outboxed, sq.RedriveRemote = q.outbox.seq, len(q.outbox.entries), q.redriveRemote
	sq.RemoteSources = snapKeysOf(q.remoteSources, nil, q.key)
	for _, src := range slices.SortedFunc(maps.Keys(q.taken), compareSources) {
		r := q.taken[src]
		sq.Taken = append(sq.Taken, snapTaken{Region: src.key.Region, Account: src.key.Account, Name: src.key.Name, Part: src.key.Part,
			Created: src.created, Through: r.through, At: r.at})
	}
	for _, p := range q.past {
		sp := snapPastTag{Tag: p.tag, Until: p.until}
		for _, old := range slices.Sorted(maps.Keys(p.serials)) {
			sp.Old = append(sp.Old, old)
			sp.New = append(sp.New, p.serials[old])
		}
		sq.Past = append(sq.Past, sp)
	}
	arena := q.ms.arena
	qv := queueView{sq: sq, msgs: newPackedSeq(q.stored(), arena.outside()), outbox: slices.Clone(q.outbox.entries)}
	for m := q.arrivalHead; m != nil; m = m.anext {
		qv.msgs.add(arena.placeOf(m))
	}
	qv.arrival = qv.msgs.len()
	if len(q.aged.items) > 0 {
		aged := slices.Clone(q.aged.items) // the heap is shared with readers: sort a copy
		slices.SortFunc(aged, func(a, b *message) int {
			return cmp.Or(cmp.Compare(a.enqueuedAt, b.enqueuedAt), cmp.Compare(a.serial, b.serial))
		})
		for _, m := range aged {
			qv.msgs.add(arena.placeOf(m))
		}
	}
	qv.msgs.settle()
	// The expiry logs are rings whose buffers later sends overwrite: copy.
	qv.dedups = q.dedup.capture()
	qv.attempts = slices.Clone(liveRecords(q.attemptLog.live(), len(q.attempts), func(r *attemptRecord) bool { return q.attempts[r.id] == r }))
	sq.Dedups, sq.Attempts = qv.dedups.live, len(qv.attempts)
	if !q.fifo {
		qv.serials = newPackedSeq(q.stored(), arena.outside())
		for _, id := range slices.Sorted(maps.Keys(q.tenants)) {
			t := q.tenants[id]
			start := qv.serials.len()
			for m := t.head; m != nil; m = m.next {
				qv.serials.add(m.serial)
			}
			o := tenantOrder{id: t.id, n: qv.serials.len() - start}
			sq.Ordered += o.n
			qv.orders = append(qv.orders, o)
		}
		qv.serials.settle()
	}
	return qv
}

// WriteTo writes the view as a snapshot to w (see Snapshot for the
// format). Commands may be applied meanwhile, provided lock excludes them:
// WriteTo holds it while it reads messages, a chunk's worth at most, and
// not while it encodes or writes. It returns the bytes written.
func (v *SnapshotView) WriteTo(w io.Writer, lock sync.Locker) (int64, error) {
	cw := &countWriter{w: w}
	err := v.write(cw, lock)
	return cw.n, err
}

// noLock is the lock of a view that nothing changes while it is written.
type noLock struct{}

func (noLock) Lock()   {}
func (noLock) Unlock() {}

func (v *SnapshotView) write(w io.Writer, lock sync.Locker) error {
	if v.done {
		return errors.New("engine: snapshot: the view was released")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := &crcWriter{w: bw}
	var pre [len(snapMagic) + 4]byte
	copy(pre[:], snapMagic)
	version := uint32(snapVersion)
	if v.byRef {
		version = snapVersionHeads
	}
	binary.BigEndian.PutUint32(pre[len(snapMagic):], version)
	if _, err := cw.Write(pre[:]); err != nil {
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	enc := gob.NewEncoder(cw)
	if err := enc.Encode(v.header); err != nil {
		return fmt.Errorf("engine: snapshot: header: %w", err)
	}
	for i := range v.queues {
		qv := &v.queues[i]
		if err := v.writeQueue(enc, cw, qv, lock); err != nil {
			return fmt.Errorf("engine: snapshot: queue %s/%s: %w", qv.sq.Account, qv.sq.Name, err)
		}
	}
	for _, o := range v.orphans {
		if err := enc.Encode(o.so); err != nil {
			return fmt.Errorf("engine: snapshot: outbox of deleted queue %s: %w", o.so.Name, err)
		}
		if err := v.writeOutbox(enc, o.entries, lock); err != nil {
			return fmt.Errorf("engine: snapshot: outbox of deleted queue %s: %w", o.so.Name, err)
		}
	}
	if err := enc.Encode(&snapTrailer{Queues: len(v.queues), Messages: v.total}); err != nil {
		return fmt.Errorf("engine: snapshot: trailer: %w", err)
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], cw.sum)
	if _, err := bw.Write(sum[:]); err != nil {
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	return nil
}

// writeQueue writes one queue's section: its header, then its records in
// chunks. Messages are read under lock; the other records never change.
func (v *SnapshotView) writeQueue(enc *gob.Encoder, raw io.Writer, qv *queueView, lock sync.Locker) error {
	if err := enc.Encode(qv.sq); err != nil {
		return err
	}
	cw := chunkWriter{enc: enc, raw: raw, msgs: recordWriter{ms: v.ms, bodies: v.bodies, byRef: v.byRef}}
	places := qv.msgs.iter()
	for i := 0; i < qv.msgs.len(); {
		lock.Lock()
		for k := 0; i < qv.msgs.len() && !cw.full() && k < v.lockBatch; i, k = i+1, k+1 {
			cw.message(v.asTaken(v.ms.arena.at(places.next())), i >= qv.arrival)
		}
		lock.Unlock()
		if err := cw.msgs.err; err != nil {
			return fmt.Errorf("queue %s: %w", qv.sq.Name, err)
		}
		if cw.full() {
			if err := cw.flush(); err != nil {
				return err
			}
		}
	}
	if err := qv.dedups.each(cw.dedupRecord); err != nil {
		return err
	}
	for _, r := range qv.attempts {
		if err := cw.attempt(r); err != nil {
			return err
		}
	}
	serials := qv.serials.iter()
	for _, o := range qv.orders {
		for range o.n {
			if err := cw.order(o.id, serials.next()); err != nil {
				return err
			}
		}
	}
	if err := cw.flush(); err != nil {
		return err
	}
	return v.writeOutbox(enc, qv.outbox, lock)
}

// writeOutbox writes an outbox's entries in snapOutboxChunk values of a
// bounded size, each message as a record of format version 2 (outbox.go),
// read under lock as writeQueue reads records.
func (v *SnapshotView) writeOutbox(enc *gob.Encoder, entries []outboxEntry, lock sync.Locker) error {
	w := recordWriter{ms: v.ms, bodies: v.bodies}
	for len(entries) > 0 {
		var c snapOutboxChunk
		size := 0
		lock.Lock()
		for len(entries) > 0 && len(c.Entries) < snapChunkSize && size < snapChunkBytes {
			en := entries[0]
			entries = entries[1:]
			w.buf = nil
			if en.m != nil {
				w.message(v.asTaken(en.m), false)
			}
			size += len(w.buf)
			c.Entries = append(c.Entries, snapOutboxEntry{Seq: en.seq, DestRegion: en.dest.Region, DestAccount: en.dest.Account,
				DestName: en.dest.Name, Kind: uint8(en.kind), Record: w.buf})
		}
		lock.Unlock()
		if w.err != nil {
			return fmt.Errorf("outbox: %w", w.err)
		}
		if err := enc.Encode(&c); err != nil {
			return err
		}
	}
	return nil
}

// defaultViewLockBatch is the most messages WriteTo reads under one hold
// of its lock: a few tens of microseconds of Apply's time
// (Config.lockBatch: tests lower it to apply commands between any two
// messages).
const defaultViewLockBatch = 256

// asTaken returns m as it was when the view was taken. The caller holds
// the view's lock.
func (v *SnapshotView) asTaken(m *message) *message {
	if v.cow == nil || v.cow.gen != v.gen || len(v.cow.saved) == 0 {
		return m
	}
	if s := v.cow.saved[m]; s != nil {
		return s
	}
	return m
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
