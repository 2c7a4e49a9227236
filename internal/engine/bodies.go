package engine

import (
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

// keepBody stores body as m's. The message attributes (attrs, if any) go
// with it: the store keeps a payload of their encoding (the attribute
// section of a snapshot's message record, see snapshot_codec.go) followed
// by the body, and keepBody returns the encoding's length, for m's ext;
// the caller then keeps no attributes in m. A message's memory is so
// independent of its attributes as well.
func (e *Engine) keepBody(m *message, body string, attrs map[string]api.MessageAttributeValue) (storedAttrs uint32) {
	if len(attrs) == 0 {
		m.ref = e.bodyStore().Put(body)
		return 0
	}
	e.attrBuf.buf = e.attrBuf.buf[:0]
	e.attrBuf.attrs(attrs)
	m.ref = putPayload(e.bodyStore(), e.attrBuf.buf, body)
	return uint32(len(e.attrBuf.buf))
}

// putPayload keeps in s the payload of a message whose attributes are
// kept with its body: their encoding, section, then the body.
func putPayload(s BodyStore, section []byte, body string) BodyRef {
	var b strings.Builder
	b.Grow(len(section) + len(body))
	b.Write(section)
	b.WriteString(body)
	return s.Put(b.String())
}

// storedPayload returns m's body and, if the store keeps m's attributes
// with it, their encoding (section; "" if not), read from the store.
func storedPayload(s BodyStore, ms *msgStore, m *message) (section, body string, err error) {
	p, err := s.Get(m.ref)
	if err != nil {
		return "", "", err
	}
	return splitPayload(p, ms.storedAttrs(m))
}

// payloadOf returns m's body and message attributes, the attributes read
// from the store if they are kept there.
func payloadOf(s BodyStore, ms *msgStore, m *message) (string, map[string]api.MessageAttributeValue, error) {
	section, body, err := storedPayload(s, ms, m)
	switch {
	case err != nil:
		return "", nil, err
	case section == "":
		return body, ms.attrs(m), nil
	}
	r := recordReader{buf: []byte(section)}
	attrs := r.attrs()
	if r.err == nil && len(r.buf) > 0 {
		r.err = errShortRecord
	}
	if r.err != nil {
		return "", nil, fmt.Errorf("engine: the message attributes of body %v: %w", m.ref, r.err)
	}
	return body, attrs, nil
}

// bodyOf returns m's body, read from the store.
func bodyOf(s BodyStore, ms *msgStore, m *message) (string, error) {
	_, body, err := storedPayload(s, ms, m)
	return body, err
}

// splitPayload cuts a payload kept in a store into the encoding of the
// message attributes, its first n bytes, and the body.
func splitPayload(p string, n uint32) (section, body string, err error) {
	if uint64(n) > uint64(len(p)) {
		return "", "", fmt.Errorf("engine: a payload of %d bytes cannot start with %d bytes of message attributes", len(p), n)
	}
	return p[:n], p[n:], nil
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
	for _, q := range e.queues {
		q.eachMessage(func(m *message) {
			if m.ref.File != 0 {
				fn(m.ref)
			}
		})
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
	stopped := false
	for _, q := range e.queues {
		q.eachMessage(func(m *message) {
			if stopped || m.ref.File != file {
				return
			}
			ref, ok, stop := move(m.ref)
			if ok {
				m.ref = ref
			}
			stopped = stop
		})
		if stopped {
			return
		}
	}
}
