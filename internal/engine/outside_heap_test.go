package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/fifoq/fifoq/internal/api"
)

// TestArenaCountsOutsideHeap: the memory an arena holds outside the heap
// is counted as its chunks are mapped, emptied and given back, reused and
// unmapped, so that a memory budget sees a backlog whose records are
// nowhere in the Go runtime's metrics.
func TestArenaCountsOutsideHeap(t *testing.T) {
	if !chunkMemoryUnscanned {
		t.Skip("records are on the Go heap in this build (the race detector, or not Linux): the runtime counts them")
	}
	var counter atomic.Int64
	a := &msgArena{counter: &counter}
	resident := func() int64 {
		var n int64
		for _, c := range a.chunks {
			if !c.released {
				n += int64(c.bytes())
			}
		}
		return n
	}
	check := func(when string) {
		t.Helper()
		if got, want := counter.Load(), resident(); got != want {
			t.Fatalf("%s: %d bytes counted outside the heap, and the chunks not given back hold %d", when, got, want)
		}
	}
	fill := func() []*message {
		ms := make([]*message, 20_000)
		for i := range ms {
			ms[i] = a.alloc()
		}
		return ms
	}
	ms := fill()
	check("after 20,000 records")
	full := counter.Load()
	if min := int64(len(ms)) * int64(unsafe.Sizeof(message{})); full < min {
		t.Fatalf("%d bytes counted for %d records of %d bytes", full, len(ms), unsafe.Sizeof(message{}))
	}
	for _, m := range ms {
		a.free(m)
	}
	check("after every record was freed")
	if got, want := counter.Load(), int64(a.chunks[0].bytes()); got != want {
		t.Fatalf("a drained arena counts %d bytes; only its lowest chunk (%d bytes) keeps its pages", got, want)
	}
	fill()
	check("after the records were taken again")
	if counter.Load() != full {
		t.Fatalf("the same records taken again count %d bytes, first %d", counter.Load(), full)
	}
	a.unmapAll()
	if counter.Load() != 0 {
		t.Fatalf("%d bytes still counted once every chunk is unmapped", counter.Load())
	}
}

// TestSnapshotViewCountsOutsideHeap: a snapshot view's packed arrays are
// counted outside the heap while it is open, and no longer once it is
// released or written by Engine.Snapshot.
func TestSnapshotViewCountsOutsideHeap(t *testing.T) {
	if !chunkMemoryUnscanned {
		t.Skip("a view's arrays are on the Go heap in this build (the race detector, or not Linux): the runtime counts them")
	}
	h := newHarness(t)
	std := h.createQueue("std", nil)
	fifo := h.fifoQueue("jobs.fifo", nil)
	for i := range 2000 {
		h.send(std, &api.SendMessageRequest{MessageBody: "b"})
		h.sendFIFO(fifo, "b", "g", string(rune('a'+i%26))+strings.Repeat("x", i%7)+fmt.Sprint(i))
	}
	// From here on no record is taken or freed, so the local counter sees
	// the view's arrays alone; the records, counted globally, stay so.
	var counter atomic.Int64
	h.e.ms.arena.counter = &counter
	defer func() { h.e.ms.arena.counter = nil }()
	v, err := h.e.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Two entries a standard message (place, order), one a FIFO one:
	// a byte or two each, as they climb by one.
	if n := counter.Load(); n < 6000 || n > 6000*binary.MaxVarintLen64 {
		t.Fatalf("an open view of 4,000 messages counts %d bytes outside the heap", n)
	}
	v.Release()
	if n := counter.Load(); n != 0 {
		t.Fatalf("%d bytes still counted after the view was released", n)
	}
	if err := h.e.Snapshot(&bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if n := counter.Load(); n != 0 {
		t.Fatalf("%d bytes still counted after Engine.Snapshot", n)
	}
}
