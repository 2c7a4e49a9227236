package engine

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Where a message's body lives. A message keeps a BodyRef: a fixed 12
// bytes, whatever the body's size. With a BodyStore (fifoq's durable log
// gives the engine one) the body is on disk, so that a backlog is bounded
// by disk rather than memory; without one, in the engine's own table in
// memory (heapBodies). The engine's behaviour does not depend on where
// bodies live; only the bytes read back go into results and snapshots.

// BodyRef names a body kept by a BodyStore. File 0 names none.
type BodyRef struct {
	File, Off, Len uint32
}

// BodyStore keeps message bodies outside the engine.
//
// Put is called while a command is applied, and must not fail the
// command: a store that cannot write must stop its node by other means
// (the command log does, seeing the store's error after the command). Get
// may be called concurrently with Put, Get and Release: by reads, and by
// a snapshot being written. A body a snapshot view may still write must
// stay readable until the view is released, even once released here.
type BodyStore interface {
	// Put keeps body and returns its reference.
	Put(body string) BodyRef
	// Get returns the body ref names, or an error if it cannot be read
	// back exactly (a damaged record is never returned as a body).
	Get(ref BodyRef) (string, error)
	// Release says that no message refers to ref any more.
	Release(ref BodyRef)
}

// SetBodyStore makes the engine keep the bodies of its messages in s. It
// must be called before the engine holds a message (before the first send
// and before a restore), and only once.
func (e *Engine) SetBodyStore(s BodyStore) {
	if e.heap != nil && len(e.heap.slots) > 0 {
		panic("engine: SetBodyStore on an engine that holds messages")
	}
	e.cfg.Bodies, e.heap = s, nil
	for _, q := range e.queues {
		q.bodies = s
	}
}

// bodyStore returns where the engine keeps its bodies: Config.Bodies, or
// its own table in memory.
func (e *Engine) bodyStore() BodyStore {
	if e.cfg.Bodies != nil {
		return e.cfg.Bodies
	}
	return e.heap
}

// A message's payload, what the BodyStore keeps for it, is
//
//	head: the MessageId's 16 bytes if it is a canonical UUID (zero if
//	  not: the message's msgExt then holds it), MD5OfBody's 16 bytes,
//	  and the MessageDeduplicationId (FIFO; a uvarint length, then its
//	  bytes: a single 0 byte on a standard queue)
//	the encoding of the message attributes (the attribute section of a
//	  snapshot's message record, see snapshot_codec.go), if it has any:
//	  msgExt.storedAttrs bytes
//	the body
//
// so that neither the message's memory nor its record depends on its
// attributes or its ids: the head is read with the body, which a receive
// reads anyway, and what only a receive or an inspection shows is not
// kept in memory. A message restored from a snapshot of format 3, whose
// store wrote no head, is the exception: its msgExt holds the head
// instead (msgExt.head).
const payloadHeadMin = 33

// msgHead is what a message's payload begins with: its MessageId (if a
// canonical UUID), MD5OfBody and MessageDeduplicationId.
type msgHead struct {
	uuid, md5 [16]byte
	dedupID   string
}

// payload is a message's payload as read back, split.
type payload struct {
	head    msgHead
	section string // the message attributes' encoding, "" if none
	body    string
}

// keepBody stores m's payload: head, the encoding of attrs and body. It
// returns the encoding's length, for m's msgExt.
func (e *Engine) keepBody(m *message, head msgHead, body string, attrs map[string]api.MessageAttributeValue) (storedAttrs uint32) {
	e.attrBuf.buf = e.attrBuf.buf[:0]
	if len(attrs) > 0 {
		e.attrBuf.attrs(attrs)
	}
	m.ref = putPayload(e.bodyStore(), head, e.attrBuf.buf, body)
	return uint32(len(e.attrBuf.buf))
}

// putPayload keeps in s the payload of head, section (the encoding of the
// message attributes) and body.
func putPayload(s BodyStore, head msgHead, section []byte, body string) BodyRef {
	var b strings.Builder
	b.Grow(payloadHeadMin + binary.MaxVarintLen64 + len(head.dedupID) + len(section) + len(body))
	b.Write(head.uuid[:])
	b.Write(head.md5[:])
	var n [binary.MaxVarintLen64]byte
	b.Write(binary.AppendUvarint(n[:0], uint64(len(head.dedupID))))
	b.WriteString(head.dedupID)
	b.Write(section)
	b.WriteString(body)
	return s.Put(b.String())
}

// readPayload reads m's payload back from s.
func readPayload(s BodyStore, ms *msgStore, m *message) (payload, error) {
	p, err := s.Get(m.ref)
	if err != nil {
		return payload{}, err
	}
	x := ms.ext(m)
	out, err := splitPayload(p, x.head == nil, x.storedAttrs)
	if x.head != nil {
		out.head = *x.head
	}
	return out, err
}

// splitPayload cuts a payload into its parts: its head, if it has one
// (withHead), the n bytes after it (the message attributes' encoding) and
// the body.
func splitPayload(p string, withHead bool, n uint32) (payload, error) {
	var out payload
	if withHead {
		if len(p) < payloadHeadMin {
			return payload{}, fmt.Errorf("engine: a payload of %d bytes is shorter than its head", len(p))
		}
		copy(out.head.uuid[:], p[:16])
		copy(out.head.md5[:], p[16:32])
		idLen, k := binary.Uvarint([]byte(p[32:min(len(p), 32+binary.MaxVarintLen32)]))
		if k <= 0 || idLen > uint64(len(p)-32-k) {
			return payload{}, fmt.Errorf("engine: a payload of %d bytes cannot hold its head", len(p))
		}
		at := 32 + k
		out.head.dedupID = p[at : at+int(idLen)]
		p = p[at+int(idLen):]
	}
	if uint64(n) > uint64(len(p)) {
		return payload{}, fmt.Errorf("engine: a payload of %d bytes cannot hold %d bytes of message attributes", len(p), n)
	}
	out.section, out.body = p[:n], p[n:]
	return out, nil
}

// payloadOf reads m's payload back from s, and decodes its message
// attributes: those kept in m's msgExt if the payload holds none.
func payloadOf(s BodyStore, ms *msgStore, m *message) (payload, map[string]api.MessageAttributeValue, error) {
	p, err := readPayload(s, ms, m)
	switch {
	case err != nil:
		return payload{}, nil, err
	case p.section == "":
		return p, ms.attrs(m), nil
	}
	r := recordReader{buf: []byte(p.section)}
	attrs := r.attrs()
	if r.err == nil && len(r.buf) > 0 {
		r.err = errShortRecord
	}
	if r.err != nil {
		return payload{}, nil, fmt.Errorf("engine: the message attributes of body %v: %w", m.ref, r.err)
	}
	return p, attrs, nil
}

// dropBody ends m, which is leaving the engine and is in no queue: it
// tells the store that m no longer refers to its body, and frees m.
func (e *Engine) dropBody(m *message) {
	if m.ref.File != 0 {
		e.bodyStore().Release(m.ref)
	}
	e.ms.freeMessage(m)
}

// dropBodies is dropBody for every message of q, which is being emptied
// or deleted: its lists and indexes must be reset or dropped afterwards.
func (e *Engine) dropBodies(q *queue) {
	q.eachMessage(e.dropBody)
}

// eachMessage calls fn for every message of q, in no particular order:
// the arrival list, then the aged heap. fn may free the message.
func (q *queue) eachMessage(fn func(*message)) {
	for m := q.arrivalHead; m != nil; {
		next := m.anext
		fn(m)
		m = next
	}
	for _, m := range q.aged.items {
		fn(m)
	}
}

// BodyRefs calls fn with the reference of every stored body: what a store
// counts as live after the engine's state was replaced by a restore.
func (e *Engine) BodyRefs(fn func(BodyRef)) {
	e.eachStoredMessage(func(m *message) bool {
		if m.ref.File != 0 {
			fn(m.ref)
		}
		return true
	})
}

// eachStoredMessage calls fn for every message the engine holds: in its
// queues, and in their outboxes and those of deleted queues (outbox.go),
// until fn returns false.
func (e *Engine) eachStoredMessage(fn func(*message) bool) {
	stopped := false
	for _, q := range e.queues {
		q.eachMessage(func(m *message) {
			if !stopped {
				stopped = !fn(m)
			}
		})
		for _, en := range q.outbox.entries {
			if stopped {
				return
			}
			if en.m != nil {
				stopped = !fn(en.m)
			}
		}
		if stopped {
			return
		}
	}
	for _, o := range e.orphans {
		for _, en := range o.box.entries {
			if en.m != nil && !fn(en.m) {
				return
			}
		}
	}
}

// TakeBodyError returns the first error of reading a body back while the
// commands applied since the last call built their results, and forgets
// it. The messages concerned were received all the same (the engine's
// state does not depend on a body's bytes); the caller answers the command
// with an error instead of a wrong or empty body.
func (e *Engine) TakeBodyError() error {
	err := e.bodyErr
	e.bodyErr = nil
	return err
}

// MoveBodies gives every message whose body is kept in file of the store
// the reference move returns for it, until move says stop: how a store
// moves the live bodies out of a mostly dead file, to remove it. move is
// called with the message's reference, and returns its new one (the body
// copied) or ok false to leave it. The engine's behaviour does not change:
// only where its bodies are read from.
//
// The caller excludes commands and reads, and writes no snapshot view
// meanwhile: a view taken before would write the new references, which it
// may not be able to read back.
func (e *Engine) MoveBodies(file uint32, move func(BodyRef) (moved BodyRef, ok, stop bool)) {
	e.eachStoredMessage(func(m *message) bool {
		if m.ref.File != file {
			return true
		}
		ref, ok, stop := move(m.ref)
		if ok {
			m.ref = ref
		}
		return !stop
	})
}
