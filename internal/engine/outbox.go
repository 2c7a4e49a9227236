package engine

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// Messages leaving for a queue that lives in another engine. A cluster
// with shards runs one engine per Raft group, and a queue's dead-letter
// queue may live in another group than the queue itself (the balancer
// moved one of them), as may the queue a message move task returns a
// message to. The engine cannot write into another group's state, so the
// message goes into its queue's outbox instead, in the same apply that
// would have moved it, and a relay outside the engine carries it over:
//
//  1. The relay reads the oldest entries of an outbox (OutboxHeads and
//     OutboxBatch, on the source group's leader) and applies a
//     TakeMessagesRequest in the destination's group: the destination
//     takes each entry whose
//     number is above the highest it has taken from that source
//     (takenRecord), so that a relay that retries after a kill, or a
//     second relay after a leadership change, adds nothing twice.
//  2. The relay then applies a SettleOutboxRequest in the source's group,
//     which drops the entries taken. Should the destination not exist,
//     the relay settles them as Returned: they go back into their queue,
//     which stops sending to that destination.
//
// So a message leaves its queue exactly once in effect, even across kills
// and leadership changes: at least once by the relay's retries, at most
// once by the destination's record. The outbox belongs to the queue, not
// to the engine: it moves with the queue (ExportQueue, InstallQueue), and
// the destination's records of what it took move with the destination.
// A FIFO destination takes entries in outbox order, which is the order in
// which the source let them go.
//
// Whether a dead-letter queue the engine does not hold lives elsewhere is
// known from the moves that parted them (redriveRemote, remoteSources):
// an engine never decides it from a missing queue alone, so an engine
// without shards, where a missing queue is a deleted one, behaves as it
// always has.

// OutboxKind says how a destination takes a message from an outbox.
type OutboxKind uint8

const (
	// OutboxDeadLetter: the message was received maxReceiveCount times in
	// its queue, and goes to the queue's dead-letter queue as deadLetter
	// moves it.
	OutboxDeadLetter OutboxKind = 1
	// OutboxMoveBack: a message move task returns the message from a
	// dead-letter queue to the queue it came from, as moveMessage moves it.
	OutboxMoveBack OutboxKind = 2
	// OutboxUnlink carries no message: the queue names the destination as
	// its dead-letter queue no more (its RedrivePolicy changed, or it was
	// deleted), and the destination forgets it as a source.
	OutboxUnlink OutboxKind = 3
)

// maxOutbox bounds the entries of one queue's outbox. A queue whose
// outbox is full (its destination unreachable for long) leaves its
// messages where they are: a message that would be dead-lettered is
// received again instead, a move task waits.
const maxOutbox = 10_000

// takenLife is how long a destination remembers the highest entry it took
// from a source it has heard nothing from since: far longer than a relay
// retries for.
const takenLife = int64(24 * time.Hour)

// outbox is a queue's messages on their way to queues of other engines.
type outbox struct {
	seq     uint64 // the number of the latest entry; entries are numbered from 1
	entries []outboxEntry
}

// outboxEntry is one message in an outbox. The message is in no queue: it
// keeps its fields, and its body in the engine's store, until it is
// settled. An OutboxUnlink entry has no message.
type outboxEntry struct {
	seq  uint64
	dest api.QueueKey
	kind OutboxKind
	m    *message
}

// outboxSource names one incarnation of a queue that sends to outboxes:
// a queue deleted and created again numbers its entries from 1 again.
// Its creation time tells incarnations apart; two share one only if the
// queue was deleted and created again within one nanosecond of the
// engine's time, which stands still only while a new leader's clock is
// behind its predecessor's (bounded by the cluster's clock checks).
// Entries of the second could then be taken for the first's.
type outboxSource struct {
	key     api.QueueKey
	created int64
}

// takenRecord is what a destination took from one source.
type takenRecord struct {
	through uint64 // the highest entry number taken
	at      int64  // when last taken, for takenLife
}

// orphan is the outbox of a queue deleted while it held entries: they had
// left the queue before it was deleted, and are relayed all the same.
type orphan struct {
	arn  string
	fifo bool
	box  outbox
}

// push adds m to the outbox, bound for dest.
func (o *outbox) push(m *message, dest api.QueueKey, kind OutboxKind) {
	o.seq++
	o.entries = append(o.entries, outboxEntry{seq: o.seq, dest: dest, kind: kind, m: m})
}

// full reports whether the outbox takes no more entries.
func (o *outbox) full() bool { return len(o.entries) >= maxOutbox }

// toOutbox moves m, which is in q, to q's outbox, bound for dest. It
// reports false, leaving m where it is, if the outbox is full.
func (e *Engine) toOutbox(q *queue, m *message, dest api.QueueKey, kind OutboxKind) bool {
	if q.outbox.full() {
		return false
	}
	q.remove(m)
	q.outbox.push(m, dest, kind)
	e.outboxed++
	return true
}

// unlinkRemote tells the dead-letter queue dest, in another engine, that
// q names it no more, through q's outbox (a full outbox leaves dest
// listing q among its sources).
func (e *Engine) unlinkRemote(q *queue, dest api.QueueKey) {
	if !q.outbox.full() {
		q.outbox.push(nil, dest, OutboxUnlink)
		e.outboxed++
	}
	q.redriveRemote = false
}

// TakeMessagesRequest is an internal request: the command's queue takes
// the messages of another engine's queue's outbox (the relay's step 1
// above). Source and Created name the sending queue's incarnation;
// SourceArn is its ARN, which dead-lettered messages carry as
// DeadLetterQueueSourceArn. Entries numbered at or below the highest this
// queue took from that source are taken already, and left alone.
type TakeMessagesRequest struct {
	Source    api.QueueKey    `json:"source"`
	SourceArn string          `json:"sourceArn"`
	Created   int64           `json:"created"`
	Fifo      bool            `json:"fifo"`
	Messages  []OutboxMessage `json:"messages"`
}

// OutboxMessage is one outbox entry in a TakeMessagesRequest: its number,
// its kind, and the message as a snapshot's message record (format
// version 2: the body in it).
type OutboxMessage struct {
	Seq    uint64     `json:"seq"`
	Kind   OutboxKind `json:"kind"`
	Record []byte     `json:"record"`
	// GroupHash is the hash of the message's group (0 for an entry
	// without a message or a group): what a relay routes a split
	// destination's entries by. The destination reads the group from
	// Record, so it is not sent.
	GroupHash uint32 `json:"-"`
}

// SettleOutboxRequest is an internal request: the entries numbered up to
// Through leave the outbox of the command's queue, of the incarnation
// created at Created (the relay's step 2 above). With Returned, their
// destination does not exist: they go back into the queue, and the queue
// stops sending to that destination. An outbox of a queue since deleted
// is settled alike, its returned messages dropped with it.
type SettleOutboxRequest struct {
	Created  int64  `json:"created"`
	Through  uint64 `json:"through"`
	Returned bool   `json:"returned,omitempty"`
}

// The actions of the outbox requests. They are not SQS actions.
const (
	ActionTakeMessages api.Action = "fifoq:TakeMessages"
	ActionSettleOutbox api.Action = "fifoq:SettleOutbox"
)

// Action implements api.Request.
func (*TakeMessagesRequest) Action() api.Action { return ActionTakeMessages }

// Action implements api.Request.
func (*SettleOutboxRequest) Action() api.Action { return ActionSettleOutbox }

// maxTakeMessages bounds the entries of one TakeMessagesRequest.
const maxTakeMessages = 100

// OutboxBatch is a run of one outbox's oldest entries that go to one
// destination, as the relay carries it: Take to apply on Dest, then a
// SettleOutboxRequest through Through on Source.
type OutboxBatch struct {
	Source  api.QueueKey
	Created int64
	Dest    api.QueueKey
	Through uint64
	Take    *TakeMessagesRequest
}

// OutboxHead is an outbox that holds entries: its queue's incarnation,
// and where its oldest entry goes.
type OutboxHead struct {
	Source  api.QueueKey
	Created int64
	Dest    api.QueueKey
}

// OutboxHeads returns every outbox that holds entries, of a queue or of a
// queue since deleted, in a fixed order. It reads no body: a relay reads
// the entries of one at a time (OutboxBatch). Like Snapshot, it changes
// nothing and must not run concurrently with Apply.
func (e *Engine) OutboxHeads() []OutboxHead {
	if e.outboxed == 0 {
		return nil
	}
	var out []OutboxHead
	for _, k := range slices.SortedFunc(maps.Keys(e.queues), compareRegionKeys) {
		if q := e.queues[k]; len(q.outbox.entries) > 0 {
			out = append(out, OutboxHead{Source: k, Created: q.createdAt, Dest: q.outbox.entries[0].dest})
		}
	}
	for _, src := range e.orphanOrder() {
		out = append(out, OutboxHead{Source: src.key, Created: src.created, Dest: e.orphans[src].box.entries[0].dest})
	}
	return out
}

// OutboxBatch returns the run of the oldest entries of the outbox of
// queue source's incarnation created at created that are bound for one
// destination: at most maxTakeMessages entries, and records of at most
// maxBytes bytes past the first; false if that outbox holds none. It
// reads the messages' bodies back from the store. Like Snapshot, it
// changes nothing and must not run concurrently with Apply.
func (e *Engine) OutboxBatch(source api.QueueKey, created int64, maxBytes int) (OutboxBatch, bool, error) {
	src := outboxSource{key: source, created: created}
	var o *outbox
	var arn string
	var fifo bool
	if q := e.queues[source]; q != nil && q.createdAt == created {
		o, arn, fifo = &q.outbox, q.arn, q.fifo
	} else if or := e.orphans[src]; or != nil {
		o, arn, fifo = &or.box, or.arn, or.fifo
	}
	if o == nil || len(o.entries) == 0 {
		return OutboxBatch{}, false, nil
	}
	dest := o.entries[0].dest
	b := OutboxBatch{Source: source, Created: created, Dest: dest,
		Take: &TakeMessagesRequest{Source: source, SourceArn: arn, Created: created, Fifo: fifo}}
	size := 0
	w := recordWriter{ms: e.ms, bodies: e.bodyStore()}
	for _, en := range o.entries {
		if en.dest != dest || len(b.Take.Messages) == maxTakeMessages || (size > 0 && size >= maxBytes) {
			break
		}
		w.buf = nil
		var hash uint32
		if en.m != nil {
			w.message(en.m, false)
			if g := e.ms.group(en.m); g != "" {
				hash = api.GroupHash(g)
			}
		}
		if w.err != nil {
			return OutboxBatch{}, false, fmt.Errorf("engine: outbox of %s: %w", source, w.err)
		}
		size += len(w.buf)
		b.Take.Messages = append(b.Take.Messages, OutboxMessage{Seq: en.seq, Kind: en.kind, Record: w.buf, GroupHash: hash})
		b.Through = en.seq
	}
	return b, true, nil
}

// HasOutbox reports whether some outbox holds entries: whether a relay has
// work. It changes nothing and costs O(1): a server asks at every receive.
func (e *Engine) HasOutbox() bool { return e.outboxed > 0 }

// orphanOrder returns the orphaned outboxes' sources in a fixed order.
func (e *Engine) orphanOrder() []outboxSource {
	return slices.SortedFunc(maps.Keys(e.orphans), compareSources)
}

func compareSources(a, b outboxSource) int {
	return cmp.Or(compareRegionKeys(a.key, b.key), cmp.Compare(a.created, b.created))
}

// snapKeysOf returns the keys of two sets, but self, in key order.
func snapKeysOf(a, b map[api.QueueKey]struct{}, self api.QueueKey) []snapKey {
	var keys []api.QueueKey
	for _, set := range []map[api.QueueKey]struct{}{a, b} {
		for k := range set {
			if k != self && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.SortFunc(keys, compareRegionKeys)
	var out []snapKey
	for _, k := range keys {
		out = append(out, snapKey{Region: k.Region, Account: k.Account, Name: k.Name, Part: k.Part})
	}
	return out
}

// takeMessages applies a TakeMessagesRequest.
func (e *Engine) takeMessages(cmd *Command, r *TakeMessagesRequest, now int64) (api.Response, error) {
	d, err := e.queueAt(cmd.Queue, now)
	if err != nil {
		return nil, err
	}
	switch {
	case len(r.Messages) > maxTakeMessages:
		return nil, api.ErrInvalidParameterValue("At most %d messages are taken at once.", maxTakeMessages)
	case r.Fifo != d.fifo:
		// A queue of the other type took the name since (a redrive
		// joins two queues of one type): the queue the messages were
		// bound for does not exist, and the relay gives them back.
		return nil, api.ErrQueueDoesNotExist()
	case r.Source == d.key:
		return nil, api.ErrInvalidParameterValue("A queue takes no messages from itself.")
	}
	src := outboxSource{key: r.Source, created: r.Created}
	rec := d.taken[src]
	// Decode every record before changing anything, so that a damaged
	// request is refused whole.
	type taking struct {
		d    decodedMessage
		kind OutboxKind
	}
	var take []taking
	last := rec.through
	for i, om := range r.Messages {
		if om.Seq <= last {
			if om.Seq <= rec.through {
				continue
			}
			return nil, api.ErrInvalidParameterValue("Outbox entries out of order at %d.", i)
		}
		if om.Kind != OutboxDeadLetter && om.Kind != OutboxMoveBack && om.Kind != OutboxUnlink {
			return nil, api.ErrInvalidParameterValue("Unknown outbox entry kind %d.", om.Kind)
		}
		last = om.Seq
		var t taking
		t.kind = om.Kind
		if om.Kind == OutboxUnlink {
			if len(om.Record) > 0 {
				return nil, api.ErrInvalidParameterValue("Outbox entry %d unlinks with a message.", om.Seq)
			}
			take = append(take, t)
			continue
		}
		rr := recordReader{buf: om.Record, version: snapVersion}
		if err := rr.messageUnkept(&t.d); err != nil || len(rr.buf) > 0 {
			return nil, api.ErrInvalidParameterValue("Outbox entry %d is damaged: %v", om.Seq, cmp.Or(err, errShortRecord))
		}
		if d.fifo && len(t.d.group) == 0 {
			return nil, api.ErrInvalidParameterValue("Outbox entry %d has no message group for a FIFO queue.", om.Seq)
		}
		if d.split && !d.owns(api.GroupHash(string(t.d.group))) {
			// The relay's map lags a split or merge of the destination:
			// it routes the entry again once its map has caught up.
			lo, hi := d.span()
			return nil, api.ErrServiceUnavailable("Partition %d of queue %s holds the group hashes [%d, %d), not the group of outbox entry %d.", d.key.Part, d.key.Name, lo, hi, om.Seq)
		}
		take = append(take, t)
	}
	e.process(d, now)
	woken := false
	for i := range take {
		if take[i].kind == OutboxUnlink {
			delete(d.remoteSources, r.Source)
			if len(d.remoteSources) == 0 {
				d.remoteSources = nil
			}
			continue
		}
		woken = true
		m := e.adoptOutboxMessage(&take[i].d)
		e.cow.touch(m)
		m.vizChanges = 0
		switch take[i].kind {
		case OutboxDeadLetter:
			// As deadLetter: the receives are kept, the receipt is not.
			rcv := e.ms.recvOf(m)
			e.ms.setRecv(m, recvState{firstAt: rcv.firstAt, at: rcv.at, receives: rcv.receives})
			e.ms.setDLQSource(m, r.SourceArn)
			if d.fifo {
				e.ms.setEnqueuedAt(m, now)
			}
		case OutboxMoveBack:
			// As moveMessage: a new arrival.
			e.ms.setRecv(m, recvState{})
			e.ms.setDLQSource(m, "")
			e.ms.setEnqueuedAt(m, now)
		}
		if d.fifo {
			m.seq = d.nextSeq(now)
		}
		m.visibleAt = now
		d.insert(m, now)
	}
	if last > rec.through {
		if d.taken == nil {
			d.taken = map[outboxSource]takenRecord{}
		}
		d.taken[src] = takenRecord{through: last, at: now}
	} else if rec.through > 0 {
		d.taken[src] = takenRecord{through: rec.through, at: now}
	}
	d.pruneTaken(now)
	if woken {
		e.wake(d.key)
	}
	return api.Empty{}, nil
}

// pruneTaken forgets the sources not heard from for takenLife.
func (q *queue) pruneTaken(now int64) {
	for src, rec := range q.taken {
		if rec.at+takenLife <= now {
			delete(q.taken, src)
		}
	}
}

// adoptOutboxMessage makes a message of this engine from a decoded outbox
// record, with a serial of this engine and its body in this engine's
// store. The caller puts it in a queue.
func (e *Engine) adoptOutboxMessage(d *decodedMessage) *message {
	e.serial++
	d.m.serial = e.serial
	return e.keepDecoded(d, string(d.dlqSource))
}

// keepDecoded makes the message a decoded outbox record holds, with the
// serial d names and dlqSource as its DeadLetterQueueSourceArn, and puts
// its body in the engine's store.
func (e *Engine) keepDecoded(d *decodedMessage, dlqSource string) *message {
	rr := recordReader{bodies: e.bodyStore()}
	rr.keep(d, d.body, d.section)
	m := e.ms.adopt(&d.m, d.group, d.sender, d.recv)
	e.ms.setExt(m, newMsgExt(d.id, msgExt{
		storedAttrs: d.storedAttrs,
		attrs:       d.attrs,
		md5Attrs:    d.md5Attrs,
		traceHeader: d.traceHeader,
		dlqSource:   dlqSource,
		sentBefore:  d.m.enqueuedAt - d.sentAt,
	}))
	return m
}

// settleOutbox applies a SettleOutboxRequest.
func (e *Engine) settleOutbox(cmd *Command, r *SettleOutboxRequest, now int64) (api.Response, error) {
	if e.held(now) {
		return nil, errHeld("settling an outbox")
	}
	src := outboxSource{key: cmd.Queue, created: r.Created}
	if q := e.queues[cmd.Queue]; q != nil && q.createdAt == r.Created {
		gone := q.outbox.settle(r.Through)
		e.outboxed -= len(gone)
		if r.Returned && len(gone) > 0 {
			e.process(q, now)
			for _, en := range gone {
				e.giveBack(q, en, now)
			}
			e.wake(q.key)
			return api.Empty{}, nil
		}
		for _, en := range gone {
			e.endEntry(en)
		}
		return api.Empty{}, nil
	}
	if o := e.orphans[src]; o != nil {
		// Returned or taken, the messages of a deleted queue end here.
		gone := o.box.settle(r.Through)
		e.outboxed -= len(gone)
		for _, en := range gone {
			e.endEntry(en)
		}
		if len(o.box.entries) == 0 {
			delete(e.orphans, src)
		}
	}
	return api.Empty{}, nil
}

// endEntry ends an entry's message, if it has one.
func (e *Engine) endEntry(en outboxEntry) {
	if en.m != nil {
		e.dropBody(en.m)
	}
}

// settle drops the entries numbered up to through, and returns them.
func (o *outbox) settle(through uint64) []outboxEntry {
	n, _ := slices.BinarySearchFunc(o.entries, through+1, func(en outboxEntry, s uint64) int { return cmp.Compare(en.seq, s) })
	gone := slices.Clone(o.entries[:n])
	o.entries = slices.Delete(o.entries, 0, n)
	if len(o.entries) == 0 {
		o.entries = nil
	}
	return gone
}

// giveBack puts an entry whose destination does not exist back into its
// queue q, as a new arrival that keeps its receives (a dead-lettered
// message is then received as if q had no dead-letter queue), and stops
// q sending there.
func (e *Engine) giveBack(q *queue, en outboxEntry, now int64) {
	m := en.m
	if m == nil {
		return // an unlink: the destination is gone anyway
	}
	e.cow.touch(m)
	switch en.kind {
	case OutboxDeadLetter:
		if rp := q.attrs.redrive; rp != nil && rp.key == en.dest {
			q.redriveRemote = false
		}
	case OutboxMoveBack:
		delete(q.remoteSources, en.dest)
	}
	e.ms.setEnqueuedAt(m, now)
	if q.fifo {
		m.seq = q.nextSeq(now)
	}
	m.visibleAt = now
	q.insert(m, now)
}

// orphanOutbox keeps the outbox of q, which is being deleted, if it
// holds entries.
func (e *Engine) orphanOutbox(q *queue) {
	if len(q.outbox.entries) == 0 {
		return
	}
	if e.orphans == nil {
		e.orphans = map[outboxSource]*orphan{}
	}
	e.orphans[outboxSource{key: q.key, created: q.createdAt}] = &orphan{arn: q.arn, fifo: q.fifo, box: q.outbox}
	q.outbox = outbox{}
}

// dropOutbox ends every message of an outbox, whose queue leaves the
// engine by a move: the image took them along.
func (e *Engine) dropOutbox(o *outbox) {
	e.outboxed -= len(o.entries)
	for _, en := range o.entries {
		e.endEntry(en)
	}
	*o = outbox{}
}

// partedFrom records that queue key left the engine by a move: the
// queues here that send to it now send to it through their outboxes, and
// a dead-letter queue here of which it is a source keeps it as a source.
func (e *Engine) partedFrom(q *queue) {
	for src := range e.dlqSources[q.key] {
		if s := e.queues[src]; s != nil && s != q {
			s.redriveRemote = true
		}
	}
	if rp := q.attrs.redrive; rp != nil {
		if d := e.queues[rp.key]; d != nil && d != q {
			if d.remoteSources == nil {
				d.remoteSources = map[api.QueueKey]struct{}{}
			}
			d.remoteSources[q.key] = struct{}{}
		}
	}
}

// joined records that queue q came into the engine by a move: whether its
// dead-letter queue is elsewhere, and which of its sources are here now.
func (e *Engine) joined(q *queue) {
	if rp := q.attrs.redrive; rp != nil {
		q.redriveRemote = rp.key != q.key && e.queues[rp.key] == nil
		if d := e.queues[rp.key]; d != nil {
			delete(d.remoteSources, q.key)
		}
	}
	for src := range q.remoteSources {
		if s := e.queues[src]; s != nil {
			delete(q.remoteSources, src)
			if rp := s.attrs.redrive; rp != nil && rp.key == q.key {
				s.redriveRemote = false
			}
		}
	}
	if len(q.remoteSources) == 0 {
		q.remoteSources = nil
	}
}

// errNoOutbox is returned for outbox state a snapshot holds wrongly.
var errNoOutbox = errors.New("outbox entries out of order")

// maxOutboxSeq bounds the entry numbers a snapshot may give an outbox, far
// above what any queue numbers, so that they never wrap.
const maxOutboxSeq = 1 << 62

// outboxState restores what a queue's section holds of the outbox: its
// entries, which follow its records, and its records of other engines'
// queues.
func (rs *restorer) outboxState(q *queue, sq *snapQueue) error {
	switch {
	case sq.Outboxed < 0 || sq.Outboxed > maxOutbox:
		return fmt.Errorf("%d outbox entries, at most %d are kept", sq.Outboxed, maxOutbox)
	case sq.RedriveRemote && q.attrs.redrive == nil:
		return errors.New("a dead-letter queue elsewhere without a RedrivePolicy")
	}
	q.redriveRemote = sq.RedriveRemote
	for _, k := range sq.RemoteSources {
		if q.remoteSources == nil {
			q.remoteSources = map[api.QueueKey]struct{}{}
		}
		q.remoteSources[api.QueueKey{Region: k.Region, Account: k.Account, Name: k.Name, Part: k.Part}] = struct{}{}
	}
	for _, t := range sq.Taken {
		if q.taken == nil {
			q.taken = map[outboxSource]takenRecord{}
		}
		src := outboxSource{key: api.QueueKey{Region: t.Region, Account: t.Account, Name: t.Name, Part: t.Part}, created: t.Created}
		if _, dup := q.taken[src]; dup || t.Through == 0 {
			return fmt.Errorf("record of what was taken from %s twice, or empty", src.key)
		}
		q.taken[src] = takenRecord{through: t.Through, at: t.At}
	}
	return rs.outboxEntries(&q.outbox, sq.Outboxed, sq.OutboxSeq)
}

// orphan restores one orphaned outbox.
func (rs *restorer) orphan() error {
	var so snapOrphan
	if err := rs.dec.Decode(&so); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	src := outboxSource{key: api.QueueKey{Region: so.Region, Account: so.Account, Name: so.Name, Part: so.Part}, created: so.Created}
	e := rs.e
	switch {
	case e.orphans[src] != nil:
		return fmt.Errorf("%s listed twice", src.key)
	case so.Outboxed <= 0 || so.Outboxed > maxOutbox:
		return fmt.Errorf("%s: %d entries", src.key, so.Outboxed)
	}
	o := &orphan{arn: so.Arn, fifo: so.Fifo}
	if err := rs.outboxEntries(&o.box, so.Outboxed, so.OutboxSeq); err != nil {
		return fmt.Errorf("%s: %w", src.key, err)
	}
	if e.orphans == nil {
		e.orphans = map[outboxSource]*orphan{}
	}
	e.orphans[src] = o
	return nil
}

// outboxEntries reads n outbox entries, numbered up to seq, into o.
func (rs *restorer) outboxEntries(o *outbox, n int, seq uint64) error {
	o.seq = seq
	for len(o.entries) < n {
		var c snapOutboxChunk
		if err := rs.dec.Decode(&c); err != nil {
			return fmt.Errorf("decoding outbox entries: %w", err)
		}
		if len(c.Entries) == 0 || len(c.Entries) > n-len(o.entries) {
			return errors.New("more or fewer outbox entries than announced")
		}
		for _, se := range c.Entries {
			last := uint64(0)
			if k := len(o.entries); k > 0 {
				last = o.entries[k-1].seq
			}
			kind := OutboxKind(se.Kind)
			dest := api.QueueKey{Region: se.DestRegion, Account: se.DestAccount, Name: se.DestName}
			switch {
			case se.Seq <= last || se.Seq > seq || seq > maxOutboxSeq:
				return errNoOutbox
			case dest.Name == "" || dest.Account == "":
				return fmt.Errorf("outbox entry %d names no queue", se.Seq)
			case kind == OutboxUnlink && len(se.Record) == 0:
				o.entries = append(o.entries, outboxEntry{seq: se.Seq, kind: kind, dest: dest})
				rs.e.outboxed++
				continue
			case kind != OutboxDeadLetter && kind != OutboxMoveBack:
				return fmt.Errorf("outbox entry %d: unknown kind %d, or an unlink with a message", se.Seq, se.Kind)
			}
			rr := recordReader{buf: se.Record, version: snapVersion}
			var d decodedMessage
			if err := rr.messageUnkept(&d); err != nil || len(rr.buf) > 0 {
				return fmt.Errorf("outbox entry %d: %v", se.Seq, cmp.Or(err, errShortRecord))
			}
			m, err := rs.outboxMessage(&d)
			if err != nil {
				return fmt.Errorf("outbox entry %d: %w", se.Seq, err)
			}
			o.entries = append(o.entries, outboxEntry{seq: se.Seq, kind: kind, m: m, dest: dest})
			rs.e.outboxed++
		}
	}
	return nil
}

// outboxMessage makes the message of a decoded outbox record: with its
// serial, or, in an install, a serial of the engine.
func (rs *restorer) outboxMessage(d *decodedMessage) (*message, error) {
	e := rs.e
	if rs.install != nil {
		d.m.serial = rs.reserial(d.m.serial)
	}
	if d.m.serial == 0 || d.m.serial > e.serial {
		return nil, fmt.Errorf("serial %d out of range (latest %d)", d.m.serial, e.serial)
	}
	m := e.keepDecoded(d, rs.intern(d.dlqSource))
	rs.serials = append(rs.serials, m.serial)
	rs.outboxed++
	return m, nil
}
