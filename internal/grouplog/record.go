package grouplog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Kinds of record, the first byte of a WAL entry's data.
const (
	kindAppend byte = 1 // a group's entries, following its last
	kindCopy   byte = 2 // a group's entries it holds already, copied forward
	kindDelete byte = 3 // a group's entries min..max removed
	kindDrop   byte = 4 // every entry of a group removed
)

// record is one WAL entry's data: what it does to one group.
type record struct {
	kind     byte
	group    uint64
	entries  []*raft.Log // kindAppend, kindCopy: ascending, contiguous
	min, max uint64      // kindDelete
}

// encode returns rec's bytes: the kind, the group, then for an append or
// a copy the count of entries and each entry (index, term, type, data,
// extensions, appended-at in Unix nanoseconds), for a deletion its range.
// Integers are uvarints (the time a varint), byte strings length-prefixed.
func (rec record) encode() []byte {
	size := 1 + binary.MaxVarintLen64
	for _, e := range rec.entries {
		size += 5*binary.MaxVarintLen64 + 1 + len(e.Data) + len(e.Extensions)
	}
	b := make([]byte, 0, size)
	b = append(b, rec.kind)
	b = binary.AppendUvarint(b, rec.group)
	switch rec.kind {
	case kindAppend, kindCopy:
		b = binary.AppendUvarint(b, uint64(len(rec.entries)))
		for _, e := range rec.entries {
			b = binary.AppendUvarint(b, e.Index)
			b = binary.AppendUvarint(b, e.Term)
			b = append(b, byte(e.Type))
			b = binary.AppendUvarint(b, uint64(len(e.Data)))
			b = append(b, e.Data...)
			b = binary.AppendUvarint(b, uint64(len(e.Extensions)))
			b = append(b, e.Extensions...)
			var at int64
			if !e.AppendedAt.IsZero() {
				at = e.AppendedAt.UnixNano()
			}
			b = binary.AppendVarint(b, at)
		}
	case kindDelete:
		b = binary.AppendUvarint(b, rec.min)
		b = binary.AppendUvarint(b, rec.max)
	}
	return b
}

// split returns rec as the records the WAL holds it in: an append or a
// copy of several entries as one record each, anything else as itself.
func (rec record) split() []record {
	if (rec.kind != kindAppend && rec.kind != kindCopy) || len(rec.entries) <= 1 {
		return []record{rec}
	}
	out := make([]record, len(rec.entries))
	for i, e := range rec.entries {
		out[i] = record{kind: rec.kind, group: rec.group, entries: []*raft.Log{e}}
	}
	return out
}

// errDamaged is what a record that encode did not write decodes to.
var errDamaged = errors.New("damaged record")

// decodeRecord reads a record that encode wrote. The entries' data and
// extensions are slices of b.
func decodeRecord(b []byte) (record, error) {
	d := decoder{b: b}
	var rec record
	rec.kind = d.byte()
	rec.group = d.uvarint()
	switch rec.kind {
	case kindAppend, kindCopy:
		n := d.uvarint()
		if n > uint64(len(b)) { // every entry takes at least a byte
			return rec, fmt.Errorf("%w: %d entries in %d bytes", errDamaged, n, len(b))
		}
		rec.entries = make([]*raft.Log, 0, n)
		for range n {
			e := &raft.Log{Index: d.uvarint(), Term: d.uvarint(), Type: raft.LogType(d.byte())}
			e.Data = d.bytes()
			e.Extensions = d.bytes()
			if at := d.varint(); at != 0 {
				e.AppendedAt = time.Unix(0, at)
			}
			if k := len(rec.entries); d.err == nil && k > 0 && e.Index != rec.entries[k-1].Index+1 {
				return rec, fmt.Errorf("%w: entry %d follows %d", errDamaged, e.Index, rec.entries[k-1].Index)
			}
			rec.entries = append(rec.entries, e)
		}
	case kindDelete:
		rec.min, rec.max = d.uvarint(), d.uvarint()
	case kindDrop:
	default:
		if d.err == nil {
			return rec, fmt.Errorf("%w: kind %d", errDamaged, rec.kind)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes past its end", errDamaged, len(d.b))
	}
	return rec, d.err
}

// decoder reads a record's fields, keeping the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: cut short", errDamaged)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	if n == 0 {
		return nil
	}
	return v
}

// errNotContiguous says a write's entries skip or repeat an index.
func errNotContiguous(group, prev, next uint64) error {
	return fmt.Errorf("grouplog: group %d: entry %d follows %d in one write", group, next, prev)
}
