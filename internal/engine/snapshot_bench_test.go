package engine

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// BenchmarkSnapshotRestore1M snapshots an engine holding 1,000,000 queued
// messages with 200-byte bodies, and restores the snapshot into a new
// engine. It reports the snapshot's size per message, the time of each
// half, and the heap in use per message after the restore (after a GC),
// next to that of the engine that received the messages by Apply:
//
//	go test ./internal/engine/ -run '^$' -bench SnapshotRestore1M -benchtime 1x
//
// fifo: 1000 groups, deduplication records expired; fifo+dedup: the same
// with the 1,000,000 deduplication records of the last 5 minutes kept;
// standard: 10 fair-queue tenants. view-pause-ms is the time BeginSnapshot
// holds the engine (what Apply waits for when a snapshot is taken),
// view-write-ms the time the view then takes to write, concurrently with
// Apply.
func BenchmarkSnapshotRestore1M(b *testing.B) {
	const n = 1_000_000
	for _, kind := range []string{"fifo", "fifo+dedup", "standard"} {
		b.Run(kind, func(b *testing.B) {
			heapBase := heapInUse()
			src := buildLargeEngine(b, kind, n)
			liveHeap := heapInUse() - heapBase
			var size countingWriter
			if err := src.Snapshot(&size); err != nil {
				b.Fatal(err)
			}
			snap := bytes.NewBuffer(make([]byte, 0, size))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				snap.Reset()
				if err := src.Snapshot(snap); err != nil {
					b.Fatal(err)
				}
			}
			snapTime := time.Since(start)
			// The same snapshot through a view: the pause is what Apply
			// waits for (BeginSnapshot), the rest is written meanwhile.
			var pause, write time.Duration
			for range b.N {
				start := time.Now()
				v, err := src.BeginSnapshot()
				if err != nil {
					b.Fatal(err)
				}
				pause += time.Since(start)
				start = time.Now()
				var sink countingWriter
				if _, err := v.WriteTo(&sink, noLock{}); err != nil {
					b.Fatal(err)
				}
				write += time.Since(start)
				v.Release()
			}
			// Restore with the source engine gone, as on a replica that
			// starts from a snapshot.
			src = nil
			var restoreTime time.Duration
			var restoredHeap uint64
			for range b.N {
				before := heapInUse()
				dst := New(Config{Region: testRegion})
				start := time.Now()
				if err := dst.Restore(bytes.NewReader(snap.Bytes())); err != nil {
					b.Fatal(err)
				}
				restoreTime += time.Since(start)
				restoredHeap = heapInUse() - before
				runtime.KeepAlive(dst)
			}
			b.ReportMetric(float64(size)/n, "snapshot-B/msg")
			b.ReportMetric(float64(snapTime.Milliseconds())/float64(b.N), "snapshot-ms")
			b.ReportMetric(float64(pause.Microseconds())/1000/float64(b.N), "view-pause-ms")
			b.ReportMetric(float64(write.Milliseconds())/float64(b.N), "view-write-ms")
			b.ReportMetric(float64(restoreTime.Milliseconds())/float64(b.N), "restore-ms")
			b.ReportMetric(float64(restoredHeap)/n, "restored-heap-B/msg")
			b.ReportMetric(float64(liveHeap)/n, "live-heap-B/msg")
		})
	}
}

// BenchmarkSnapshotPause1M times BeginSnapshot alone (one op: take a view
// and release it) on an engine holding 1,000,000 queued messages: the time
// a snapshot holds up Apply.
//
//	go test ./internal/engine/ -run '^$' -bench SnapshotPause1M -benchtime 20x
func BenchmarkSnapshotPause1M(b *testing.B) {
	for _, kind := range []string{"fifo", "fifo+dedup", "standard"} {
		b.Run(kind, func(b *testing.B) {
			e := buildLargeEngine(b, kind, 1_000_000)
			runtime.GC()
			b.ResetTimer()
			for range b.N {
				v, err := e.BeginSnapshot()
				if err != nil {
					b.Fatal(err)
				}
				v.Release()
			}
		})
	}
}

// buildLargeEngine sends n messages with distinct 200-byte bodies, ids and
// deduplication ids, one command per microsecond.
func buildLargeEngine(b *testing.B, kind string, n int) *Engine {
	b.Helper()
	return buildLargeEngineWith(b, Config{Region: testRegion}, kind, n)
}

// buildLargeEngineWith is buildLargeEngine for an engine of configuration
// cfg.
func buildLargeEngineWith(b *testing.B, cfg Config, kind string, n int) *Engine {
	b.Helper()
	e := New(cfg)
	fifo := kind != "standard"
	name := "big"
	attrs := map[string]string{}
	if fifo {
		name, attrs[api.AttrFifoQueue] = "big.fifo", "true"
	}
	q := api.QueueKey{Account: testAccount, Name: name}
	now := t0
	apply := func(req api.Request, ids []string) {
		now += int64(time.Microsecond)
		if _, err := e.Apply(&Command{Time: now, Caller: testAccount, Queue: q, Request: req, MessageIDs: ids, Entropy: uint64(now)}); err != nil {
			b.Fatalf("%s: %v", req.Action(), err)
		}
	}
	apply(&api.CreateQueueRequest{QueueName: name, Attributes: attrs}, nil)
	pad := string(bytes.Repeat([]byte("x"), 200))
	for i := range n {
		req := &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: fmt.Sprintf("%07d", i) + pad[7:]}
		if fifo {
			req.MessageGroupId = "g" + strconv.Itoa(i%1000)
			req.MessageDeduplicationId = "d" + strconv.Itoa(i)
		} else {
			req.MessageGroupId = "t" + strconv.Itoa(i%10)
		}
		apply(req, []string{fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)})
	}
	if kind == "fifo" {
		now += int64(api.DeduplicationInterval)
		apply(&TickRequest{}, nil)
	}
	return e
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// countingWriter counts the bytes written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
