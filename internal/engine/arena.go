package engine

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unsafe"
)

// msgArena hands out message records from chunks of memory outside the
// garbage-collected heap on Linux, except under the race detector (see
// msgstore.go, and chunkMemory for where the memory comes from). A
// chunk's free records are on a list of its own, and records are taken
// from the lowest chunk that has one, so that as a backlog drains the
// highest chunks empty first; an empty chunk gives its memory back to the
// operating system and keeps its address range.
type msgArena struct {
	chunks []*msgChunk
	byAddr []int // indexes of chunks, in the order of their addresses
	// hint is the chunk chunkOf or at found last: the next record is
	// likely in it. Atomic, as readers under the log's read lock (a
	// move's export, a snapshot being written) look up records at once;
	// a hint another reader changed is only a worse guess, which both
	// check before they use it.
	hint   atomic.Int64
	lowest int // no chunk below it has a free record
	live   int // records handed out and not freed
	// counter is where the arena counts the memory it holds outside the
	// heap: outsideHeap if nil (a test gives one of its own).
	counter *atomic.Int64
}

// msgChunk is one chunk of records.
type msgChunk struct {
	mem   chunkMemory
	start uintptr   // the address of recs[0]: a record finds its chunk by its address (chunkOf)
	first int       // the place of recs[0] among all the arena's records (placeOf)
	recs  []message // in mem
	free  *message  // freed records, linked through next
	used  int       // recs[used:] were never handed out since the chunk was last empty
	live  int
	// released says its pages were given back (every record free) and
	// not touched since: they are not counted in outsideHeap.
	released bool
}

// outsideHeap is the memory the engines of this process hold outside the
// Go heap, in bytes: the chunks of their arenas, except those given back,
// and their snapshot views' packed arrays. The runtime's memory metrics
// do not see it; OutsideHeapBytes reports it to whoever keeps the
// process inside a memory budget.
var outsideHeap atomic.Int64

// OutsideHeapBytes returns the memory the engines of this process hold
// outside the Go heap (message records, snapshot views' arrays): memory
// the process uses that the Go runtime's memory metrics and soft limit do
// not count. It is 0 where records are on the heap (not Linux, or a build
// with the race detector).
func OutsideHeapBytes() int64 { return outsideHeap.Load() }

// outsideHeapWatch is the function WatchOutsideHeap set, or nil.
var outsideHeapWatch atomic.Pointer[func(int64)]

// WatchOutsideHeap makes fn be called with OutsideHeapBytes every time it
// changes, from the goroutine that changed it: once a chunk of records is
// mapped or given back, a snapshot view's arrays made or dropped. A
// memory budget's keeper needs it at once, not at its next sample: a
// start restores hundreds of MB of records in a fraction of a second,
// while the runtime's soft limit does not count them. fn must be quick
// and must not call into the engine. nil stops the calls.
func WatchOutsideHeap(fn func(total int64)) {
	if fn == nil {
		outsideHeapWatch.Store(nil)
		return
	}
	outsideHeapWatch.Store(&fn)
}

// outside returns the counter of the memory a holds outside the heap.
func (a *msgArena) outside() *atomic.Int64 {
	if a.counter == nil {
		return &outsideHeap
	}
	return a.counter
}

// countOutside adds n bytes of chunk memory to counter (takes them off if
// n is negative), if chunk memory is outside the heap.
func countOutside(counter *atomic.Int64, n int) {
	if !chunkMemoryUnscanned {
		return
	}
	total := counter.Add(int64(n))
	if counter != &outsideHeap {
		return
	}
	if fn := outsideHeapWatch.Load(); fn != nil {
		(*fn)(total)
	}
}

// bytes returns the size of c's records.
func (c *msgChunk) bytes() int { return len(c.recs) * int(unsafe.Sizeof(message{})) }

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
		if k := len(a.chunks); k > 0 {
			c.first = a.chunks[k-1].first + len(a.chunks[k-1].recs)
		}
		a.chunks = append(a.chunks, c)
		countOutside(a.outside(), c.bytes())
		i, _ := slices.BinarySearchFunc(a.byAddr, c.start, func(k int, p uintptr) int { return cmp.Compare(a.chunks[k].start, p) })
		a.byAddr = slices.Insert(a.byAddr, i, len(a.chunks)-1)
	}
	c := a.chunks[a.lowest]
	if c.released {
		// Its pages come back as its records are written.
		c.released = false
		countOutside(a.outside(), c.bytes())
	}
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
	if h := int(a.hint.Load()); h < len(a.chunks) && a.chunks[h].holds(p) {
		return h
	}
	i, found := slices.BinarySearchFunc(a.byAddr, p, func(k int, p uintptr) int { return cmp.Compare(a.chunks[k].start, p) })
	if !found {
		i-- // the last chunk that starts before m
	}
	if i < 0 || !a.chunks[a.byAddr[i]].holds(p) {
		panic("engine: a message record outside the arena")
	}
	a.hint.Store(int64(a.byAddr[i]))
	return a.byAddr[i]
}

// holds reports whether address p is in c's records.
func (c *msgChunk) holds(p uintptr) bool {
	return p >= c.start && p < c.start+uintptr(len(c.recs))*unsafe.Sizeof(message{})
}

// placeOf returns m's place among all the arena's records: its chunk's
// first place plus its index in the chunk. A place names a record for as
// long as the arena lives (at returns it), in a number that climbs by one
// from a record to the next allocated from a fresh chunk.
func (a *msgArena) placeOf(m *message) uint64 {
	c := a.chunks[a.chunkOf(m)]
	return uint64(c.first) + uint64((uintptr(unsafe.Pointer(m))-c.start)/unsafe.Sizeof(message{}))
}

// at returns the record at place p (see placeOf).
func (a *msgArena) at(p uint64) *message {
	i := int(a.hint.Load())
	if c := a.chunks[i]; p < uint64(c.first) || p >= uint64(c.first+len(c.recs)) {
		var found bool
		i, found = slices.BinarySearchFunc(a.chunks, p, func(c *msgChunk, p uint64) int { return cmp.Compare(uint64(c.first), p) })
		if !found {
			i--
		}
		a.hint.Store(int64(i))
	}
	return &a.chunks[i].recs[p-uint64(a.chunks[i].first)]
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
		c.free, c.used, c.released = nil, 0, true
		countOutside(a.outside(), -c.bytes())
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
		if !c.released {
			countOutside(a.outside(), -c.bytes())
		}
	}
	a.chunks, a.byAddr = nil, nil
	a.hint.Store(0)
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
