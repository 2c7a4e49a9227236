//go:build !linux || race

package engine

import "unsafe"

// chunkMemory is, on systems other than Linux, a slice of records on the
// garbage-collected heap: correct, without the savings of mapped memory.
//
// Builds with the race detector use it too: the detector checks only
// memory in the Go heap and data sections, so a race on a record in
// mapped memory would pass unseen. Under -race every access to a record
// or to a snapshot view's arrays is checked; the mapped arena itself is
// tested by the package's tests without -race and by every test that runs
// a built fifoq binary.
type chunkMemory []message

// chunkMemoryUnscanned says that records in chunk memory are scanned by
// the collector, which must never find garbage in their pointers.
const chunkMemoryUnscanned = false

func mapChunk(size int) chunkMemory {
	return make([]message, size/int(unsafe.Sizeof(message{})))
}

func (c chunkMemory) base() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(c)) }

func (c chunkMemory) release() { clear(c) }

func (c chunkMemory) unmap() {}

func registerArenaCleanup(*msgStore, *msgArena) {}

// mapSlice returns an empty slice of capacity n on the heap.
func mapSlice[T any](n int) ([]T, chunkMemory) { return make([]T, 0, n), nil }
