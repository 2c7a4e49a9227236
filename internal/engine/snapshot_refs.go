package engine

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
)

// A snapshot of an engine that keeps its bodies in a BodyStore may refer
// to them instead of carrying them (format versions 3 and 4): what the
// node that keeps the store writes for itself, so that a snapshot of a
// backlog of many GiB costs the records of its messages, not a copy of
// its bodies, and a restart finds the bodies where they are. Such a
// snapshot is only good beside the store it refers to: InlineBodies turns
// it into one of version 2, with the bodies in it, for another node or a
// file that leaves this one.
//
// A version 3 message record is the version 2 record cut around its body,
// so that the body can be put back without decoding the rest:
//
//	head bytes (serial uvarint, id string)
//	kind byte: bodyInline, then the body string;
//	           or bodyByRef, then File, Off, Len uvarints (a BodyRef);
//	           or bodyAndAttrsByRef, then File, Off, Len and attrs uvarints
//	tail bytes (the fields after the body, as in version 2)
//
// A BodyRef names the payload the store keeps for the message: its body,
// or, with bodyAndAttrsByRef, the encoding of its message attributes (the
// attribute section of a version 2 record, attrs bytes) followed by its
// body. The tail of such a record begins after the attribute section, so
// that the payload's first attrs bytes put back in front of it make the
// version 2 tail.
//
// Version 4 adds a kind, for the payloads that begin with the message's
// MessageId, MD5OfBody and MessageDeduplicationId (see msgHead), as every
// payload the engine writes now does:
//
//	head bytes (serial uvarint, id string)
//	kind byte: bodyPayloadByRef, then File, Off, Len and attrs uvarints
//	tail bytes: the fields after MD5OfBody up to the group id
//	tail bytes: the fields after the MessageDeduplicationId
//
// The payload is the head, attrs bytes of message attributes (possibly
// none), and the body. The record's head names the MessageId only if it
// is not a canonical UUID (an empty id string if it is), and its tail is
// cut around the MessageDeduplicationId: InlineBodies puts the MessageId,
// the attribute section, MD5OfBody and the MessageDeduplicationId back
// from the payload. Records of the other kinds are as in version 3: a
// message restored from a version 3 snapshot keeps a payload without a
// head.
//
// Everything else is as in version 2. A writer fills a chunk by the bytes
// its records would take with their bodies in them, so that the chunks of
// the version 2 snapshot InlineBodies makes are no larger than a writer
// of version 2 would have made them.
const (
	snapVersionRefs  = 3
	snapVersionHeads = 4
)

// The kinds of a version 3 or 4 record's body field.
const (
	bodyInline        byte = 0
	bodyByRef         byte = 1
	bodyAndAttrsByRef byte = 2
	bodyPayloadByRef  byte = 3 // version 4
)

// messageByRef writes the record of a message whose body is kept in the
// store without its MessageId and MD5OfBody (head): a message restored
// from a snapshot of format 3 by reference. Its body field refers to the
// payload, which holds the message attributes too if the store keeps
// them; the tail then lacks them.
func (w *recordWriter) messageByRef(m *message, head *msgHead, aged bool) {
	w.beginBytes()
	w.head(m.serial, w.ms.messageID(m, *head))
	w.endBytes()
	n := w.ms.storedAttrs(m)
	if n > 0 {
		w.byte(bodyAndAttrsByRef)
	} else {
		w.byte(bodyByRef)
	}
	w.ref(m.ref)
	if n > 0 {
		w.uvarint(uint64(n))
	}
	w.beginBytes()
	if n == 0 {
		w.attrs(w.ms.attrs(m))
	}
	w.md5Body(head.md5)
	w.rest(m, head.dedupID, aged)
	w.endBytes()
}

// messageByPayload writes the version 4 record of a message whose payload
// in the store holds its head and attributes: the record's head names the
// MessageId only if it is not a canonical UUID, and its tail lacks the
// attributes and MD5OfBody.
func (w *recordWriter) messageByPayload(m *message, aged bool) {
	w.beginBytes()
	w.uvarint(m.serial)
	if id := w.ms.ext(m).otherID; id != nil {
		w.str(*id)
	} else {
		w.str("")
	}
	w.endBytes()
	w.byte(bodyPayloadByRef)
	w.ref(m.ref)
	w.uvarint(uint64(w.ms.storedAttrs(m)))
	w.beginBytes()
	w.restBeforeDedup(m)
	w.endBytes()
	w.beginBytes()
	w.restAfterDedup(m, aged)
	w.endBytes()
}

// ref writes a BodyRef, counting its bytes as a chunk's once its bodies
// are inline: a writer by reference fills a chunk so that a snapshot
// InlineBodies makes has chunks of about snapChunkBytes.
func (w *recordWriter) ref(r BodyRef) {
	w.uvarint(uint64(r.File))
	w.uvarint(uint64(r.Off))
	w.uvarint(uint64(r.Len))
	w.inlined += int(r.Len)
}

// bodyField is the body field of a version 3 or 4 message record: the
// body, or the reference of the payload a store keeps (ref.File not 0),
// whose first attrs bytes (after its head, for bodyPayloadByRef) are the
// message attributes.
type bodyField struct {
	kind  byte
	body  string
	ref   BodyRef
	attrs uint32
}

// bodyField reads the body field of a version 3 or 4 message record.
func (r *recordReader) bodyField() (bodyField, error) {
	f := bodyField{kind: r.byte()}
	switch {
	case r.err != nil:
		return f, r.err
	case f.kind == bodyInline:
		f.body = r.str()
		return f, r.err
	case f.kind == bodyByRef || f.kind == bodyAndAttrsByRef || f.kind == bodyPayloadByRef:
		f.ref = BodyRef{File: r.uint32(), Off: r.uint32(), Len: r.uint32()}
		if f.kind != bodyByRef {
			f.attrs = r.uint32()
		}
		switch {
		case r.err != nil:
			return bodyField{}, r.err
		case f.ref.File == 0:
			return bodyField{}, errors.New("a body reference to no file")
		case f.kind == bodyAndAttrsByRef && (f.attrs == 0 || f.attrs > f.ref.Len):
			return bodyField{}, fmt.Errorf("%d bytes of message attributes in a payload of %d", f.attrs, f.ref.Len)
		case f.kind == bodyPayloadByRef && (f.ref.Len < payloadHeadMin || f.attrs > f.ref.Len-payloadHeadMin):
			return bodyField{}, fmt.Errorf("%d bytes of message attributes and a head in a payload of %d", f.attrs, f.ref.Len)
		}
		return f, nil
	default:
		return f, fmt.Errorf("body field of kind %d", f.kind)
	}
}

// BodiesByReference makes the view write the bodies its engine keeps in
// a BodyStore as references (format version 4), not their bytes. It is
// called before WriteTo. The snapshot can then only be restored into an
// engine whose store still holds those bodies.
func (v *SnapshotView) BodiesByReference() {
	if v.external {
		v.byRef = true
	}
}

// InlineBodies copies the snapshot src to dst, putting the bodies a
// snapshot of format version 3 or 4 refers to back into it: dst is a snapshot
// of version 2 of the same state, which any engine restores. get reads a
// body back; an error from it stops the copy. A snapshot of an older
// version is copied as it is. Memory used is a chunk's worth, whatever the
// snapshot's size. src's checksum is checked, and dst gets its own.
func InlineBodies(dst io.Writer, src io.Reader, get func(BodyRef) (string, error)) error {
	br := bufio.NewReaderSize(src, 64<<10)
	cr := &crcReader{r: br}
	pre, version, err := readSnapPrefix(cr)
	if err != nil {
		return fmt.Errorf("engine: inline bodies: %w", err)
	}
	if version < snapVersionRefs {
		if _, err := dst.Write(pre[:]); err != nil {
			return err
		}
		_, err := io.Copy(dst, br)
		return err
	}
	bw := bufio.NewWriterSize(dst, 64<<10)
	cw := &crcWriter{w: bw}
	binary.BigEndian.PutUint32(pre[len(snapMagic):], snapVersion)
	if _, err := cw.Write(pre[:]); err != nil {
		return err
	}
	in := inliner{dec: gob.NewDecoder(cr), enc: gob.NewEncoder(cw), cr: cr, raw: cw, get: get, version: version}
	if err := in.copy(); err != nil {
		return fmt.Errorf("engine: inline bodies: %w", err)
	}
	var want [4]byte
	if _, err := io.ReadFull(br, want[:]); err != nil {
		return fmt.Errorf("engine: inline bodies: reading the checksum: %w", err)
	}
	if stored := binary.BigEndian.Uint32(want[:]); stored != cr.sum {
		return fmt.Errorf("engine: inline bodies: checksum mismatch over byte offsets 0-%d: stored %08x, computed %08x: the snapshot is corrupt", cr.n, stored, cr.sum)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return errors.New("engine: inline bodies: data after the end of the snapshot")
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], cw.sum)
	if _, err := bw.Write(sum[:]); err != nil {
		return err
	}
	return bw.Flush()
}

// inliner copies a snapshot's gob values and records from dec to enc,
// rewriting message records from version 3 or 4 to version 2.
type inliner struct {
	version uint32 // of the snapshot read
	dec     *gob.Decoder
	enc     *gob.Encoder
	cr      *crcReader // the stream dec reads, for the packed records
	raw     io.Writer  // the stream enc writes to, for the packed records
	get     func(BodyRef) (string, error)
	data    chunkDataReader
	out     recordWriter
}

func (in *inliner) copy() error {
	var h snapHeader
	if err := in.value(&h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	for i := range h.Queues {
		if err := in.queue(); err != nil {
			return fmt.Errorf("queue %d: %w", i, err)
		}
	}
	for i := range h.Orphans {
		var so snapOrphan
		if err := in.value(&so); err != nil {
			return fmt.Errorf("orphaned outbox %d: %w", i, err)
		}
		if err := in.outbox(so.Outboxed); err != nil {
			return fmt.Errorf("orphaned outbox %d: %w", i, err)
		}
	}
	var tr snapTrailer
	if err := in.value(&tr); err != nil {
		return fmt.Errorf("trailer: %w", err)
	}
	return nil
}

// value copies one gob value of v's type.
func (in *inliner) value(v any) error {
	if err := in.dec.Decode(v); err != nil {
		return err
	}
	return in.enc.Encode(v)
}

// queue copies one queue's section: its header and its chunks.
func (in *inliner) queue() error {
	var sq snapQueue
	if err := in.value(&sq); err != nil {
		return err
	}
	var msgs, dedups, attempts, ordered int
	for msgs < sq.Messages || dedups < sq.Dedups || attempts < sq.Attempts || ordered < sq.Ordered {
		var c snapChunk
		if err := in.dec.Decode(&c); err != nil {
			return fmt.Errorf("queue %s: decoding records: %w", sq.Name, err)
		}
		if c.Messages < 0 || c.Dedups < 0 || c.Messages+c.Dedups+len(c.Attempts)+len(c.Orders) == 0 {
			return fmt.Errorf("queue %s: an empty chunk or a negative count", sq.Name)
		}
		recs, dedupData, err := in.data.read(in.cr)
		if err != nil {
			return fmt.Errorf("queue %s: %w", sq.Name, err)
		}
		in.out.buf = in.out.buf[:0]
		rr := recordReader{buf: recs, version: in.version}
		for i := range c.Messages {
			if err := in.message(&rr); err != nil {
				return fmt.Errorf("queue %s: message %d: %w", sq.Name, msgs+i, err)
			}
		}
		if len(rr.buf) > 0 {
			return fmt.Errorf("queue %s: unread bytes after the message records", sq.Name)
		}
		if err := in.enc.Encode(&c); err != nil {
			return err
		}
		if err := writeChunkData(in.raw, in.out.buf, dedupData); err != nil {
			return err
		}
		msgs, dedups, attempts = msgs+c.Messages, dedups+c.Dedups, attempts+len(c.Attempts)
		for _, o := range c.Orders {
			ordered += len(o.Serials)
		}
	}
	return in.outbox(sq.Outboxed)
}

// outbox copies n outbox entries, whose records are always of version 2
// (outbox.go).
func (in *inliner) outbox(n int) error {
	for n > 0 {
		var c snapOutboxChunk
		if err := in.value(&c); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		if len(c.Entries) == 0 || len(c.Entries) > n {
			return errors.New("outbox: more or fewer entries than announced")
		}
		n -= len(c.Entries)
	}
	return nil
}

// message rewrites one message record from rr into in.out.
func (in *inliner) message(rr *recordReader) error {
	head := rr.raw()
	f, err := rr.bodyField()
	switch {
	case err != nil:
		return err
	case f.kind == bodyPayloadByRef && in.version < snapVersionHeads:
		return fmt.Errorf("a body field of kind %d in a snapshot of format %d", f.kind, in.version)
	}
	p := payload{body: f.body}
	if f.ref.File != 0 {
		b, err := in.get(f.ref)
		if err != nil {
			return err
		}
		if p, err = splitPayload(b, f.kind == bodyPayloadByRef, f.attrs); err != nil {
			return err
		}
	}
	tail := rr.raw()
	var afterDedup []byte
	if f.kind == bodyPayloadByRef {
		afterDedup = rr.raw()
	}
	if rr.err != nil {
		return rr.err
	}
	if f.kind != bodyPayloadByRef {
		in.out.buf = append(in.out.buf, head...)
		in.out.str(p.body)
		in.out.buf = append(in.out.buf, p.section...)
		in.out.buf = append(in.out.buf, tail...)
		return nil
	}
	// The MessageId, the attribute section, MD5OfBody and the
	// MessageDeduplicationId come from the payload.
	hr := recordReader{buf: head}
	serial, id := hr.headRaw()
	if hr.err == nil && len(hr.buf) > 0 {
		hr.err = errors.New("unread bytes after the message's id")
	}
	if hr.err != nil {
		return hr.err
	}
	in.out.uvarint(serial)
	if len(id) > 0 {
		in.out.bytes(id)
	} else {
		in.out.str(msgID{uuid: p.head.uuid}.String())
	}
	in.out.str(p.body)
	if p.section == "" {
		in.out.attrs(nil)
	}
	in.out.buf = append(in.out.buf, p.section...)
	in.out.md5Body(p.head.md5)
	in.out.buf = append(in.out.buf, tail...)
	in.out.str(p.head.dedupID)
	in.out.buf = append(in.out.buf, afterDedup...)
	return nil
}
