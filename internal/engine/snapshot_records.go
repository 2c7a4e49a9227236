package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Reading a queue's chunks of records and adding them to the queue being
// restored (see snapshot_restore.go).

// readChunk reads the next chunk of a queue's records into b and decodes
// its message and deduplication records. got counts the records read so
// far, against the counts sq announces. It touches no queue, so that it can
// run ahead of applyChunk (see records).
func (rs *restorer) readChunk(b *chunkBatch, sq *snapQueue, got *queueLoad) error {
	c := &b.c
	if rs.version == 1 {
		if err := rs.decodeChunkV1(c); err != nil {
			return err
		}
	} else {
		// Gob leaves alone the fields a value does not carry: start from
		// zero, as the records are read beside the value, into b.data.
		*c = snapChunk{}
		if err := rs.dec.Decode(c); err != nil {
			return fmt.Errorf("decoding records: %w", err)
		}
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
	rr := recordReader{buf: c.MessageData, bodies: rs.e.bodyStore(), external: rs.e.cfg.Bodies != nil, version: rs.version}
	for i := range c.Messages {
		var d decodedMessage
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
		if a := &c.Attempts[i]; rs.install != nil {
			if a.Tag == 0 {
				// The retry hands out the handles the receive did.
				a.Tag, a.Handles = rs.install.tag, slices.Clone(a.Serials)
			}
			rs.install.resolveAll(a.Serials)
		}
		if err := restoreAttempt(q, &c.Attempts[i], ld); err != nil {
			return fmt.Errorf("attempt record %d: %w", ld.attempts, err)
		}
		ld.attempts++
	}
	for i := range c.Orders {
		o := &c.Orders[i]
		if rs.install != nil {
			rs.install.resolveAll(o.Serials)
		}
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
	m := &d.m
	if rs.install != nil {
		m.serial = rs.reserial(m.serial)
	}
	switch {
	case m.serial == 0 || m.serial > rs.e.serial:
		return fmt.Errorf("serial %d out of range (latest %d)", m.serial, rs.e.serial)
	case m.state > stateInflight:
		return fmt.Errorf("unknown state %d", m.state)
	case q.fifo && d.aged:
		return errors.New("aged message in a FIFO queue") // FIFO arrival order is each group's order
	case q.fifo && (m.seq == 0 || m.seq > q.lastSeq):
		return fmt.Errorf("sequence number %d out of range (the queue's last is %d)", m.seq, q.lastSeq)
	case q.fifo && q.groups[string(d.group)] != nil && m.seq <= q.groups[string(d.group)].tail.seq:
		// A queue's arrival list is in sequence order but for one merged
		// from partitions (split.go), whose lists are merged in time
		// order: each group's messages come from one of them.
		return fmt.Errorf("sequence number %d out of order in its group", m.seq)
	case !d.aged && q.arrivalTail != nil && m.enqueuedAt < q.arrivalTail.enqueuedAt:
		return errors.New("arrival list out of time order")
	}
	m = rs.e.ms.adopt(m, d.group, d.sender, d.recv)
	rs.e.ms.setExt(m, newMsgExt(d.id, msgExt{
		attrs:       d.attrs,
		storedAttrs: d.storedAttrs,
		md5Attrs:    d.md5Attrs,
		traceHeader: d.traceHeader,
		dlqSource:   rs.intern(d.dlqSource),
		head:        d.head,
		sentBefore:  m.enqueuedAt - d.sentAt,
	}))
	// Serials are checked unique across queues at the end (rs.serials).
	if q.ms.handleable(m) {
		q.handles[m.serial] = m
	}
	if !q.fifo && m.state == stateVisible {
		ld.visible = append(ld.visible, m)
	}
	rs.serials = append(rs.serials, m.serial)
	if d.aged {
		q.aged.Push(m)
	} else {
		q.appendArrival(m)
	}
	q.countStored(m)
	// The group's id is shared by its messages, as when they were sent.
	if q.fifo {
		g := q.groups[string(d.group)]
		if g == nil {
			g = q.fifoGroupOf(string(d.group))
		}
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
	case (a.Tag != 0) != (a.Handles != nil) || (a.Tag != 0 && len(a.Handles) != len(a.Serials)):
		return errors.New("a record from before a move needs a tag and a handle serial per message")
	case ld.attempts > 0 && a.At < ld.lastAttempt:
		return errors.New("out of time order")
	}
	ld.lastAttempt = a.At
	r := &attemptRecord{id: a.ID, at: a.At, serials: a.Serials, nonces: a.Nonces, tag: a.Tag, handles: a.Handles}
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
		case q.ms.group(m) != t.id || m.state != stateVisible:
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
