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
// to them instead of carrying them (format version 3): what the node that
// keeps the store writes for itself, so that a snapshot of a backlog of
// many GiB costs the records of its messages, not a copy of its bodies,
// and a restart finds the bodies where they are. Such a snapshot is only
// good beside the store it refers to: InlineBodies turns it into one of
// version 2, with the bodies in it, for another node or a file that
// leaves this one.
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
// Everything else is as in version 2. A writer fills a chunk by the bytes
// its records would take with their bodies in them, so that the chunks of
// the version 2 snapshot InlineBodies makes are no larger than a writer
// of version 2 would have made them.
const snapVersionRefs = 3

// The kinds of a version 3 record's body field.
const (
	bodyInline        byte = 0
	bodyByRef         byte = 1
	bodyAndAttrsByRef byte = 2
)

// BodiesByReference makes the view write the bodies its engine keeps in
// a BodyStore as references (format version 3), not their bytes. It is
// called before WriteTo. The snapshot can then only be restored into an
// engine whose store still holds those bodies.
func (v *SnapshotView) BodiesByReference() {
	if v.external {
		v.byRef = true
	}
}

// InlineBodies copies the snapshot src to dst, putting the bodies a
// snapshot of format version 3 refers to back into it: dst is a snapshot
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
	in := inliner{dec: gob.NewDecoder(cr), enc: gob.NewEncoder(cw), cr: cr, raw: cw, get: get}
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
// rewriting message records from version 3 to version 2.
type inliner struct {
	dec  *gob.Decoder
	enc  *gob.Encoder
	cr   *crcReader // the stream dec reads, for the packed records
	raw  io.Writer  // the stream enc writes to, for the packed records
	get  func(BodyRef) (string, error)
	data chunkDataReader
	out  recordWriter
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
		rr := recordReader{buf: recs, version: snapVersionRefs}
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
	return nil
}

// message rewrites one message record from rr into in.out.
func (in *inliner) message(rr *recordReader) error {
	head := rr.raw()
	f, err := rr.bodyField()
	if err != nil {
		return err
	}
	body, section := f.body, ""
	if f.ref.File != 0 {
		p, err := in.get(f.ref)
		if err != nil {
			return err
		}
		if section, body, err = splitPayload(p, f.attrs); err != nil {
			return err
		}
	}
	tail := rr.raw()
	if rr.err != nil {
		return rr.err
	}
	in.out.buf = append(in.out.buf, head...)
	in.out.str(body)
	in.out.buf = append(in.out.buf, section...)
	in.out.buf = append(in.out.buf, tail...)
	return nil
}
