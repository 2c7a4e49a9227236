//go:build race

package engine

import "testing"

// TestRaceBuildKeepsRecordsInTheHeap: the race detector checks only memory
// in the Go heap and data sections, so under -race the records and a
// snapshot view's arrays must be there (arena_heap.go), or a race on them
// would pass unseen.
func TestRaceBuildKeepsRecordsInTheHeap(t *testing.T) {
	if chunkMemoryUnscanned {
		t.Fatal("this race build keeps message records in mapped memory, which the race detector does not check")
	}
}
