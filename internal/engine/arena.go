package engine

import (
	"cmp"
	"slices"
	"unsafe"
)

// msgArena hands out message records from chunks of memory outside the
// garbage-collected heap on Linux (see msgstore.go, and chunkMemory for
// where the memory comes from). A chunk's free records are on a list of
// its own, and records are taken from the lowest chunk that has one, so
// that as a backlog drains the highest chunks empty first; an empty chunk
// gives its memory back to the operating system and keeps its address
// range.
type msgArena struct {
	chunks []*msgChunk
	byAddr []int // indexes of chunks, in the order of their addresses
	lowest int   // no chunk below it has a free record
	live   int   // records handed out and not freed
}

// msgChunk is one chunk of records.
type msgChunk struct {
	mem   chunkMemory
	start uintptr   // the address of recs[0]: a record finds its chunk by its address (chunkOf)
	recs  []message // in mem
	free  *message  // freed records, linked through next
	used  int       // recs[used:] were never handed out since the chunk was last empty
	live  int
}

const (
	// The first chunk holds firstChunkRecords, and each new one twice the
	// last up to maxChunkRecords (about 1 MiB), so that a small engine
	// maps little and a large one has few chunks.
	firstChunkRecords = 64
	maxChunkRecords   = 1 << 20 / int(unsafe.Sizeof(message{}))
)

// alloc returns a zeroed record.
func (a *msgArena) alloc() *message {
	for ; a.lowest < len(a.chunks); a.lowest++ {
		if c := a.chunks[a.lowest]; c.live < len(c.recs) {
			break
		}
	}
	if a.lowest == len(a.chunks) {
		n := maxChunkRecords
		if k := len(a.chunks); k < 20 {
			n = min(firstChunkRecords<<k, maxChunkRecords)
		}
		mem := mapChunk(n * int(unsafe.Sizeof(message{})))
		c := &msgChunk{mem: mem, start: uintptr(mem.base()), recs: unsafe.Slice((*message)(mem.base()), n)}
		a.chunks = append(a.chunks, c)
		i, _ := slices.BinarySearchFunc(a.byAddr, c.start, func(k int, p uintptr) int { return cmp.Compare(a.chunks[k].start, p) })
		a.byAddr = slices.Insert(a.byAddr, i, len(a.chunks)-1)
	}
	c := a.chunks[a.lowest]
	var m *message
	if c.free != nil {
		m, c.free = c.free, c.free.next
		*m = message{}
	} else {
		m = &c.recs[c.used]
		c.used++
	}
	c.live++
	a.live++
	return m
}

// chunkOf returns the index of the chunk that holds m. A record keeps no
// chunk number of its own: the chunks are few (a few thousand for tens of
// millions of records), so a search by address costs less than the 4
// bytes a record would spend on it.
func (a *msgArena) chunkOf(m *message) int {
	p := uintptr(unsafe.Pointer(m))
	i, found := slices.BinarySearchFunc(a.byAddr, p, func(k int, p uintptr) int { return cmp.Compare(a.chunks[k].start, p) })
	if !found {
		i-- // the last chunk that starts before m
	}
	if i < 0 || p >= a.chunks[a.byAddr[i]].start+uintptr(len(a.chunks[a.byAddr[i]].recs))*unsafe.Sizeof(message{}) {
		panic("engine: a message record outside the arena")
	}
	return a.byAddr[i]
}

// free returns m to its chunk. m must not be used afterwards.
func (a *msgArena) free(m *message) {
	i := a.chunkOf(m)
	c := a.chunks[i]
	c.live--
	a.live--
	a.lowest = min(a.lowest, i)
	if c.live == 0 && i != a.lowest {
		// Every record of the chunk is free, and records are taken from
		// a lower one: give its memory back (its records read as zero
		// from now on). The chunk records are taken from is kept, so
		// that a queue kept empty by its consumers makes no system call
		// a message.
		c.mem.release()
		c.free, c.used = nil, 0
		return
	}
	// A freed record reads as no message (serial 0), so that a holder of
	// a stale pointer that checks the serial (ExportCursor) never
	// follows the indexes it held; tests fill it with garbage instead.
	if !poisonRecord(m) {
		*m = message{}
	}
	m.next, c.free = c.free, m
}

// mapped returns the bytes of the chunks' mappings, released pages
// included.
func (a *msgArena) mapped() uint64 {
	var n uint64
	for _, c := range a.chunks {
		n += uint64(len(c.recs)) * uint64(unsafe.Sizeof(message{}))
	}
	return n
}

// unmapAll gives every chunk's memory and address range back. Nothing may
// use the arena afterwards: it runs once its store is unreachable.
func (a *msgArena) unmapAll() {
	for _, c := range a.chunks {
		c.mem.unmap()
	}
	a.chunks, a.byAddr = nil, nil
}

// poisonFreed, set by the package's tests, fills freed records with a
// pattern, so that a record used after it was freed shows as garbage
// (serial, times and counts far out of range) instead of as the message it
// was.
var poisonFreed = false

// poisonRecord fills m with the pattern if poisonFreed is set, and
// reports whether it did.
func poisonRecord(m *message) bool {
	if !poisonFreed || !chunkMemoryUnscanned {
		return false
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(m)), unsafe.Sizeof(*m))
	for i := range b {
		b[i] = 0xa5
	}
	return true
}
