package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// BenchmarkSnapshotViewBytes reports the memory an open snapshot view
// holds outside the heap for each message of a standard backlog of
// 200,000 messages in 10 tenants: every message's place in the arena and
// every visible one's serial, packed as varint differences. "in-order" is
// the backlog as sent into a fresh engine; "scattered" is the same after
// every message was received, a random half deleted, the other half made
// visible again, and 100,000 more sent: the new messages take freed
// records all over the arena, and the visible lists are out of serial
// order.
//
//	go test ./internal/engine -run '^$' -bench SnapshotViewBytes -benchtime 1x
func BenchmarkSnapshotViewBytes(b *testing.B) {
	if !chunkMemoryUnscanned {
		b.Skip("a view's arrays are on the Go heap in this build (the race detector, or not Linux)")
	}
	const n = 200_000
	for _, scattered := range []bool{false, true} {
		name := "in-order"
		if scattered {
			name = "scattered"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				e := buildLargeEngineWith(b, Config{Region: testRegion, Bodies: &discardBodies{}}, "standard", n)
				if scattered {
					scatterBacklog(b, e, n)
				}
				var counter atomic.Int64
				e.ms.arena.counter = &counter
				v, err := e.BeginSnapshot()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(counter.Load())/float64(v.Messages()), "view-B/msg")
				v.Release()
				e.ms.arena.counter = nil
			}
		})
	}
}

// scatterBacklog receives the n messages of buildLargeEngine's standard
// queue, deletes a random half, makes the rest visible again and sends as
// many as it deleted.
func scatterBacklog(b *testing.B, e *Engine, n int) {
	q := api.QueueKey{Account: testAccount, Name: "big"}
	now := t0 + int64(time.Hour)
	apply := func(req api.Request, ids ...string) api.Response {
		now += int64(time.Microsecond)
		resp, err := e.Apply(&Command{Time: now, Caller: testAccount, Queue: q, Request: req, MessageIDs: ids, Entropy: uint64(now)})
		if err != nil {
			b.Fatalf("%s: %v", req.Action(), err)
		}
		return resp
	}
	// In rounds, since at most 120,000 messages may be in flight: each
	// round receives 20,000 and deletes a random half of them.
	rng := rand.New(rand.NewPCG(7, 8))
	ten, vis, zero := 10, 3600, 0
	var kept []string
	for got := 0; got < n; {
		var round []string
		for len(round) < 20_000 && got < n {
			res := apply(&api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &ten, VisibilityTimeout: &vis}).(*api.ReceiveMessageResult)
			if len(res.Messages) == 0 {
				b.Fatalf("received %d of %d", got, n)
			}
			for _, m := range res.Messages {
				round = append(round, m.ReceiptHandle)
			}
			got += len(res.Messages)
		}
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		for _, h := range round[:len(round)/2] {
			apply(&api.DeleteMessageRequest{QueueUrl: q.Path(), ReceiptHandle: h})
		}
		kept = append(kept, round[len(round)/2:]...)
	}
	for _, h := range kept {
		apply(&api.ChangeMessageVisibilityRequest{QueueUrl: q.Path(), ReceiptHandle: h, VisibilityTimeout: &zero})
	}
	for i := range n / 2 {
		apply(&api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "again", MessageGroupId: "t" + strconv.Itoa(i%10)},
			fmt.Sprintf("%08x-0000-4000-9000-%012x", i, i))
	}
}
