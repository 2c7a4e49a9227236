package engine

import (
	"encoding/binary"
	"sync/atomic"
)

// packedSeq is a sequence of integers kept as zig-zag varint differences
// from the one before, in memory mapped outside the heap (mapSlice). A
// snapshot view holds two entries a message for as long as the snapshot
// takes to write (the message's place in the arena, and a standard queue's
// visible order by serial), and both mostly climb by small steps in a
// backlog: packed, an entry costs a byte or two, where a pointer and a
// serial cost 16.
type packedSeq struct {
	buf  []byte
	mem  chunkMemory
	last uint64
	n    int
	// counted is what settle added to counter: the bytes written, the
	// only pages of the mapping ever touched.
	counted int
	counter *atomic.Int64
}

// newPackedSeq returns an empty sequence with room for n entries, which
// counts the memory it holds outside the heap in counter.
func newPackedSeq(n int, counter *atomic.Int64) packedSeq {
	buf, mem := mapSlice[byte](n * binary.MaxVarintLen64)
	return packedSeq{buf: buf, mem: mem, counter: counter}
}

// add appends v. The difference wraps as two's complement, so that any
// v follows any other.
func (s *packedSeq) add(v uint64) {
	s.buf = binary.AppendVarint(s.buf, int64(v-s.last))
	s.last = v
	s.n++
}

// settle counts the bytes written as memory held outside the heap, once
// the sequence is complete; release takes them off.
func (s *packedSeq) settle() {
	s.counted = len(s.buf)
	countOutside(s.counter, s.counted)
}

// release gives back the sequence's memory; it cannot be read afterwards.
func (s *packedSeq) release() {
	s.mem.unmap()
	if s.counted != 0 {
		countOutside(s.counter, -s.counted)
	}
	*s = packedSeq{}
}

// len returns the number of entries.
func (s *packedSeq) len() int { return s.n }

// packedIter reads a packedSeq's entries in order.
type packedIter struct {
	buf  []byte
	last uint64
}

// iter returns an iterator at the first entry.
func (s *packedSeq) iter() packedIter { return packedIter{buf: s.buf} }

// next returns the next entry. The caller counts the entries.
func (it *packedIter) next() uint64 {
	d, k := binary.Varint(it.buf)
	it.buf = it.buf[k:]
	it.last += uint64(d)
	return it.last
}
