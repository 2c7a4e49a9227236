package engine

import (
	"errors"
	"runtime"
	"testing"
)

// BenchmarkQueuedMessageMemory reports the memory a queued message takes
// in the engine when its body is in a body store, as on the durable log:
// the message record and what indexes it, without the body. 1,000,000
// messages of 200-byte bodies (buildLargeEngine's: FIFO in 1,000 groups
// with its deduplication records expired, standard in 10 tenants). It
// reports the garbage-collected heap in use after two GCs (heap-B/msg),
// the record arena's chunks mapped outside it (arena-B/msg), and their
// sum (B/msg): the heap costs about twice as much RSS as it holds (the
// collector's headroom), the arena what it maps.
//
//	go test ./internal/engine -run '^$' -bench QueuedMessageMemory -benchtime 1x
func BenchmarkQueuedMessageMemory(b *testing.B) {
	const n = 1_000_000
	for _, kind := range []string{"fifo", "standard"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				base := heapInUse()
				e := buildLargeEngineWith(b, Config{Region: testRegion, Bodies: &discardBodies{}}, kind, n)
				live := heapInUse() - base
				arena := e.ms.arena.mapped()
				runtime.KeepAlive(e)
				b.ReportMetric(float64(live)/n, "heap-B/msg")
				b.ReportMetric(float64(arena)/n, "arena-B/msg")
				b.ReportMetric(float64(live+arena)/n, "B/msg")
			}
		})
	}
}

// discardBodies is a BodyStore that keeps nothing: references it hands
// out name no bytes, so that a benchmark measures what the engine keeps.
type discardBodies struct{ n uint32 }

func (s *discardBodies) Put(body string) BodyRef {
	s.n++
	return BodyRef{File: 1, Off: s.n, Len: uint32(len(body))}
}

func (s *discardBodies) Get(BodyRef) (string, error) {
	return "", errors.New("discardBodies keeps no body")
}

func (s *discardBodies) Release(BodyRef) {}
