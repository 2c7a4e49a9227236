package engine

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// The two kinds of records a snapshot holds by the million, messages and
// deduplication records, are not gob values but packed binary records in
// a chunk's byte slices: gob's reflection costs about 1 µs a message each
// way, four times what this encoding does, and a snapshot view's writer
// holds the engine's lock (stalling Apply) while it encodes messages.
//
// A message keeps its MessageId, MD5OfBody and deduplication id in its
// payload's head (bodies.go), and its rarely set fields in compact forms
// (message_compact.go); records carry them as strings, as they always
// have, so the layout is independent of the memory layout.
//
// Integers are varints (encoding/binary: Uvarint, or zig-zag Varint for
// signed values); a string or byte slice is its length as a uvarint, then
// its bytes; a list is its length as a uvarint, then its items. Version 2:
//
//	message:
//	  serial uvarint, id string, body string,
//	  attributes: count, then per attribute in name order:
//	    name string, dataType string, flags byte (1: has StringValue),
//	    stringValue string, binaryValue bytes,
//	    stringListValues list of string, binaryListValues list of bytes
//	  md5Body string, md5Attrs string, traceHeader string, sender string,
//	  size varint, group string, dedupID string, seq uvarint,
//	  sentAt varint, enqueuedAt varint, dlqSource string,
//	  state byte (0 visible, 1 delayed, 2 in flight), flags byte (1: aged),
//	  visibleAt varint, receives varint, firstRecvAt varint,
//	  receivedAt varint, nonce uvarint, vizChanges varint
//	deduplication record:
//	  key bytes (16: see dedupKeyOf), at varint, messageID string, seq uvarint
//
// Version 1 differs in the deduplication record only (snapshot_v1.go).
const flagHasString, flagAged = 1, 1

// recordWriter appends binary records to buf.
type recordWriter struct {
	buf []byte
	ms  *msgStore // the records' store
	// bodies is where the messages' bodies are kept, if not in them; err
	// the first error reading one back.
	bodies BodyStore
	err    error
	// byRef writes message records of version 3, with the references of
	// bodies kept in the store instead of their bytes; inlined counts the
	// bytes of the bodies so referred to, and scratch is a buffer for
	// the parts of a record.
	byRef   bool
	inlined int
	scratch []byte
}

func (w *recordWriter) uvarint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *recordWriter) varint(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }
func (w *recordWriter) byte(b byte)      { w.buf = append(w.buf, b) }

func (w *recordWriter) str(s string) {
	w.uvarint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *recordWriter) bytes(b []byte) {
	w.uvarint(uint64(len(b)))
	w.buf = append(w.buf, b...)
}

func (w *recordWriter) message(m *message, aged bool) {
	if w.byRef && m.ref.File != 0 {
		switch x := w.ms.ext(m); {
		case x.head != nil:
			w.messageByRef(m, x.head, aged)
			return
		case len(x.attrs) == 0:
			w.messageByPayload(m, aged)
			return
		}
	}
	p := w.payload(m)
	id := w.ms.messageID(m, p.head)
	if !w.byRef {
		w.head(m.serial, id)
		w.str(p.body)
		w.attrSection(m, p.section)
		w.md5Body(p.head.md5)
		w.rest(m, p.head.dedupID, aged)
		return
	}
	// Version 3 and later: the head and the tail as byte strings around
	// the body field, so that InlineBodies rewrites the body field alone.
	w.beginBytes()
	w.head(m.serial, id)
	w.endBytes()
	w.byte(bodyInline)
	w.str(p.body)
	w.beginBytes()
	w.attrSection(m, p.section)
	w.md5Body(p.head.md5)
	w.rest(m, p.head.dedupID, aged)
	w.endBytes()
}

// beginBytes starts a part of the record that is written as one byte
// string, as the head and the tail of a version 3 record are; endBytes
// ends it.
func (w *recordWriter) beginBytes() {
	w.scratch = w.scratch[:0]
	w.buf, w.scratch = w.scratch, w.buf
}

func (w *recordWriter) endBytes() {
	w.buf, w.scratch = w.scratch, w.buf
	w.bytes(w.scratch)
}

// head writes the fields of a message record before its body.
func (w *recordWriter) head(serial uint64, id msgID) {
	w.uvarint(serial)
	w.uvarint(uint64(id.len()))
	w.buf = id.appendTo(w.buf)
}

// payload returns m's payload, read back from the store.
func (w *recordWriter) payload(m *message) payload {
	p, err := readPayload(w.bodies, w.ms, m)
	if err != nil && w.err == nil {
		w.err = err
	}
	return p
}

// attrSection writes m's message attributes: section, their encoding
// read from the store, if they are kept there.
func (w *recordWriter) attrSection(m *message, section string) {
	if w.ms.storedAttrs(m) > 0 {
		w.buf = append(w.buf, section...)
		return
	}
	w.attrs(w.ms.attrs(m))
}

// attrs writes the attribute section of a message record: the count, then
// each attribute in name order.
func (w *recordWriter) attrs(attrs map[string]api.MessageAttributeValue) {
	w.uvarint(uint64(len(attrs)))
	if len(attrs) == 0 {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		w.str(name)
		w.str(v.DataType)
		if v.StringValue != nil {
			w.byte(flagHasString)
			w.str(*v.StringValue)
		} else {
			w.byte(0)
			w.str("")
		}
		w.bytes(v.BinaryValue)
		w.uvarint(uint64(len(v.StringListValues)))
		for _, s := range v.StringListValues {
			w.str(s)
		}
		w.uvarint(uint64(len(v.BinaryListValues)))
		for _, b := range v.BinaryListValues {
			w.bytes(b)
		}
	}
}

// md5Body writes MD5OfBody, the field of a message record after its
// attributes, as 32 hex digits.
func (w *recordWriter) md5Body(md5 [16]byte) {
	w.uvarint(2 * uint64(len(md5)))
	w.buf = hex.AppendEncode(w.buf, md5[:])
}

// rest writes the fields of a message record after MD5OfBody: those
// before the MessageDeduplicationId (restBeforeDedup), dedupID, and those
// after it.
func (w *recordWriter) rest(m *message, dedupID string, aged bool) {
	w.restBeforeDedup(m)
	w.str(dedupID)
	w.restAfterDedup(m, aged)
}

func (w *recordWriter) restBeforeDedup(m *message) {
	w.str(w.ms.md5Attrs(m))
	w.str(w.ms.traceHeader(m))
	w.str(w.ms.sender(m))
	w.varint(int64(m.size))
	w.str(w.ms.group(m))
}

func (w *recordWriter) restAfterDedup(m *message, aged bool) {
	w.uvarint(m.seq)
	w.varint(w.ms.sentAt(m))
	w.varint(m.enqueuedAt)
	w.str(w.ms.dlqSource(m))
	w.byte(byte(m.state))
	if aged {
		w.byte(flagAged)
	} else {
		w.byte(0)
	}
	w.varint(m.visibleAt)
	w.varint(int64(w.ms.receives(m)))
	w.varint(w.ms.firstRecvAt(m))
	w.varint(w.ms.receivedAt(m))
	w.uvarint(w.ms.nonce(m))
	w.varint(int64(m.vizChanges))
}

func (w *recordWriter) dedup(r *dedupRecord, id msgID) {
	w.bytes(r.key[:])
	w.varint(r.at)
	w.uvarint(uint64(id.len()))
	w.buf = id.appendTo(w.buf)
	w.uvarint(r.seq)
}

var errShortRecord = errors.New("record truncated or malformed")

// recordReader reads binary records from buf. The first error sticks: the
// reading methods then return zero values, and err says what went wrong.
type recordReader struct {
	buf []byte
	err error
	// bodies keeps the bodies of the messages read; external says that it
	// is a BodyStore given to the engine (Config.Bodies), which a record
	// may refer to, rather than the engine's table in memory.
	bodies   BodyStore
	external bool
	// version is the snapshot's format version, for message records.
	version uint32
}

func (r *recordReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.err = errShortRecord
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *recordReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.buf)
	if n <= 0 {
		r.err = errShortRecord
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

// uint32 reads a uvarint that must fit a uint32.
func (r *recordReader) uint32() uint32 {
	v := r.uvarint()
	if uint64(uint32(v)) != v {
		r.err = errShortRecord
		return 0
	}
	return uint32(v)
}

// int32 reads a varint that must fit an int32.
func (r *recordReader) int32() int32 {
	v := r.varint()
	if int64(int32(v)) != v {
		r.err = errShortRecord
		return 0
	}
	return int32(v)
}

func (r *recordReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.buf) == 0 {
		r.err = errShortRecord
		return 0
	}
	b := r.buf[0]
	r.buf = r.buf[1:]
	return b
}

// raw reads a length-prefixed byte string without copying: the result
// aliases the chunk and is valid until the next chunk is decoded.
func (r *recordReader) raw() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.buf)) {
		r.err = errShortRecord
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

func (r *recordReader) str() string { return string(r.raw()) }

// bytes reads a byte slice into new memory; empty reads as nil.
func (r *recordReader) bytes() []byte {
	b := r.raw()
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// count reads a list length, which cannot exceed the bytes left (every
// item takes at least one).
func (r *recordReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.buf)) {
		r.err = errShortRecord
		return 0
	}
	return int(n)
}

// decodedMessage is a message record as read. The fields that many
// messages share (group, sender, dead-letter source) alias the chunk, so
// that the restorer can share one string among them instead of copying.
type decodedMessage struct {
	m                        message // the record's fields but for those below
	dedupID                  string
	recv                     recvState
	group, sender, dlqSource []byte
	aged                     bool
	id                       msgID
	md5                      [16]byte
	// The fields of m.ext, which the restorer makes once dlqSource is
	// interned.
	attrs                 map[string]api.MessageAttributeValue
	storedAttrs           uint32
	md5Attrs, traceHeader string
	sentAt                int64
	head                  *msgHead // if the payload in the store lacks it
	// The body and the encoding of the attributes, read by messageUnkept
	// and not yet in the store.
	body    string
	section []byte
}

// messageUnkept reads a message record of format version 2 into d, which
// must be zero, without putting its body in a store: the caller keeps it
// (recordReader.keep) once it takes the message. Outbox entries travel as
// such records.
func (r *recordReader) messageUnkept(d *decodedMessage) error {
	d.m.serial, d.id = r.head()
	d.body = r.str()
	section, err := r.tail(d, true)
	if len(d.attrs) > 0 {
		d.section = section
	}
	return cmp.Or(err, r.err)
}

// message reads a message record into d, which must be zero.
func (r *recordReader) message(d *decodedMessage) error {
	if r.version < snapVersionRefs {
		d.m.serial, d.id = r.head()
		body := r.str()
		section, err := r.tail(d, true)
		r.keep(d, body, section)
		return cmp.Or(err, r.err)
	}
	head := recordReader{buf: r.raw()}
	var id []byte
	d.m.serial, id = head.headRaw()
	if head.err == nil && len(head.buf) > 0 {
		head.err = errors.New("unread bytes after the message's id")
	}
	f, err := r.bodyField()
	switch {
	case err != nil:
		return err
	case f.kind == bodyPayloadByRef && r.version < snapVersionHeads:
		return fmt.Errorf("a body field of kind %d in a snapshot of format %d", f.kind, r.version)
	case f.ref.File != 0 && !r.external:
		return errors.New("a body kept in a body store this engine does not have")
	case f.ref.File != 0:
		d.m.ref, d.storedAttrs = f.ref, f.attrs
	}
	// The MessageId of a record whose payload holds it is named here only
	// if it is not a canonical UUID.
	if f.kind != bodyPayloadByRef || len(id) > 0 {
		d.id = makeMsgIDBytes(id)
	}
	if f.kind == bodyPayloadByRef {
		return cmp.Or(head.err, r.payloadTail(d))
	}
	tail := recordReader{buf: r.raw()}
	section, err := tail.tail(d, f.kind == bodyInline || f.kind == bodyByRef)
	if err == nil && len(tail.buf) > 0 {
		err = errors.New("unread bytes after the message record")
	}
	if f.kind == bodyInline {
		r.keep(d, f.body, section)
	} else {
		d.head = &msgHead{uuid: d.id.uuid, md5: d.md5, dedupID: d.dedupID}
	}
	return cmp.Or(head.err, r.err, err)
}

// payloadTail reads the tail of a bodyPayloadByRef record: the fields
// after MD5OfBody but the MessageDeduplicationId, as two byte strings,
// those before it and those after it.
func (r *recordReader) payloadTail(d *decodedMessage) error {
	before := recordReader{buf: r.raw()}
	before.restBeforeDedup(d)
	after := recordReader{buf: r.raw()}
	err := after.restAfterDedup(d)
	switch {
	case before.err != nil || r.err != nil:
		return cmp.Or(before.err, r.err)
	case err != nil:
		return err
	case len(before.buf) > 0 || len(after.buf) > 0:
		return errors.New("unread bytes after the message record")
	}
	return nil
}

// head reads the fields of a message record before its body.
func (r *recordReader) head() (serial uint64, id msgID) {
	serial, raw := r.headRaw()
	return serial, makeMsgIDBytes(raw)
}

// headRaw is head, with the MessageId as read.
func (r *recordReader) headRaw() (serial uint64, id []byte) {
	serial = r.uvarint()
	return serial, r.raw()
}

// keep gives d the body read, into the store (there always is one: the
// engine's table in memory if no other) with its head and the message
// attributes (section, their encoding) if it has any.
func (r *recordReader) keep(d *decodedMessage, body string, section []byte) {
	if r.err != nil {
		return
	}
	if len(d.attrs) == 0 {
		section = nil
	}
	d.m.ref = putPayload(r.bodies, msgHead{uuid: d.id.uuid, md5: d.md5, dedupID: d.dedupID}, section, body)
	d.storedAttrs, d.attrs = uint32(len(section)), nil
}

// tail reads the fields of a message record after its body: the message
// attributes, if withAttrs, returning their encoding, then MD5OfBody and
// the rest.
func (r *recordReader) tail(d *decodedMessage, withAttrs bool) (section []byte, err error) {
	if withAttrs {
		start := r.buf
		d.attrs = r.attrs()
		if r.err != nil {
			return nil, r.err
		}
		section = start[:len(start)-len(r.buf)]
	}
	if d.md5, err = r.md5Body(); err != nil {
		return nil, err
	}
	return section, r.rest(d)
}

// md5Body reads MD5OfBody.
func (r *recordReader) md5Body() ([16]byte, error) {
	md5, ok := parseMD5(r.raw())
	if !ok && r.err == nil {
		return md5, errors.New("MD5OfBody is not 32 lowercase hex digits")
	}
	return md5, r.err
}

// attrs reads the attribute section of a message record.
func (r *recordReader) attrs() map[string]api.MessageAttributeValue {
	n := r.count()
	if n == 0 {
		return nil
	}
	attrs := make(map[string]api.MessageAttributeValue, n)
	prev := ""
	for i := range n {
		name := r.str()
		if r.err != nil {
			return nil
		}
		if i > 0 && name <= prev {
			r.err = errors.New("message attributes not in name order")
			return nil
		}
		prev = name
		v := api.MessageAttributeValue{DataType: r.str()}
		flags := r.byte()
		s := r.str()
		if flags&flagHasString != 0 {
			v.StringValue = &s
		}
		v.BinaryValue = r.bytes()
		if k := r.count(); k > 0 {
			v.StringListValues = make([]string, k)
			for j := range k {
				v.StringListValues[j] = r.str()
			}
		}
		if k := r.count(); k > 0 {
			v.BinaryListValues = make([][]byte, k)
			for j := range k {
				v.BinaryListValues[j] = r.bytes()
			}
		}
		attrs[name] = v
	}
	if r.err != nil {
		return nil
	}
	return attrs
}

// rest reads the fields of a message record after MD5OfBody.
func (r *recordReader) rest(d *decodedMessage) error {
	r.restBeforeDedup(d)
	d.dedupID = r.str()
	return r.restAfterDedup(d)
}

func (r *recordReader) restBeforeDedup(d *decodedMessage) {
	d.md5Attrs = r.str()
	d.traceHeader = r.str()
	d.sender = r.raw()
	d.m.size = r.int32()
	d.group = r.raw()
}

func (r *recordReader) restAfterDedup(d *decodedMessage) error {
	m := &d.m
	m.seq = r.uvarint()
	d.sentAt = r.varint()
	m.enqueuedAt = r.varint()
	d.dlqSource = r.raw()
	m.state = msgState(r.byte())
	d.aged = r.byte()&flagAged != 0
	m.visibleAt = r.varint()
	receives := int32(min(max(r.varint(), math.MinInt32), math.MaxInt32))
	firstAt, at := r.varint(), r.varint()
	d.recv = recvState{firstAt: firstAt, at: at, nonce: r.uvarint(), receives: receives}
	m.vizChanges = int16(min(r.int32(), math.MaxInt16))
	return r.err
}

// dedup reads a deduplication record of the given snapshot version.
func (r *recordReader) dedup(version uint32) (d dedupRecord, id msgID, err error) {
	if version == 1 {
		return r.dedupV1()
	}
	if k := r.raw(); len(k) == len(d.key) {
		d.key = dedupKey(k)
	} else if r.err == nil {
		r.err = errShortRecord
	}
	d.at = r.varint()
	id = makeMsgIDBytes(r.raw())
	d.seq = r.uvarint()
	return d, id, r.err
}
