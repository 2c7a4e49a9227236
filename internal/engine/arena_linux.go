//go:build linux && !race

package engine

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// chunkMemory is a private anonymous memory mapping: memory the garbage
// collector neither counts nor scans.
type chunkMemory []byte

// chunkMemoryUnscanned says that records in chunk memory are not seen by
// the collector, so a freed one may be overwritten with any bytes.
const chunkMemoryUnscanned = true

// mapChunk maps size bytes, zeroed.
func mapChunk(size int) chunkMemory {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		// As the runtime does when the heap cannot grow: the memory
		// budget (memguard) refuses sends well before this.
		panic(fmt.Sprintf("engine: cannot map %d bytes for message records: %v", size, err))
	}
	return b
}

func (c chunkMemory) base() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(c)) }

// release gives the pages back to the operating system; they read as zero
// when next touched. The address range stays mapped, so that a stale
// pointer to a freed record can never come to point into the Go heap.
func (c chunkMemory) release() {
	_ = syscall.Madvise(c, syscall.MADV_DONTNEED) // advice: nothing to do if refused
}

// unmap removes the mapping.
func (c chunkMemory) unmap() {
	_ = syscall.Munmap(c) // only EINVAL, for a range that is not a mapping
}

// registerArenaCleanup unmaps a's chunks once s is unreachable: an engine
// replaced by a restore, or dropped, leaves no mapping behind.
func registerArenaCleanup(s *msgStore, a *msgArena) {
	runtime.AddCleanup(s, (*msgArena).unmapAll, a)
}

// mapSlice returns an empty slice of capacity n in memory mapped outside
// the heap, and the mapping, to unmap once nothing uses the slice: for the
// arrays a snapshot view holds, one entry a message, so that the collector
// neither scans them nor lets them double in its headroom. A T may point
// to message records, never into the heap.
func mapSlice[T any](n int) ([]T, chunkMemory) {
	if n == 0 {
		return nil, nil
	}
	var t T
	mem := mapChunk(n * int(unsafe.Sizeof(t)))
	return unsafe.Slice((*T)(mem.base()), n)[:0], mem
}
