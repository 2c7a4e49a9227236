package replog

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A restore at start builds the whole state at once: hundreds of MB of
// objects, all of them live to the end. A garbage collector running at the
// default pace meanwhile marks the growing heap again and again (at 4, 8,
// 16 ... MB), about as much work as the restore itself, for nothing to
// free: the restore's own garbage is one reused chunk buffer (engine
// snapshot format 2). So the start holds the collector off while it
// restores, within a budget: heapBudget beyond the heap at the start.
// Should the heap pass it (an old snapshot format, whose reading makes a
// snapshot's worth of garbage, or a state that takes much more memory than
// its snapshot), the collector is let go at once, at its usual pace.
//
// Only the start does this, when nothing else runs in the process yet: a
// snapshot installed from a leader is restored while requests are served,
// and their garbage must be collected.

// restoreHeapBudget is the heap growth allowed with the collector held off
// while a snapshot of size bytes is restored. A restored state takes about
// 1.6 bytes of heap per snapshot byte (1,000,000 queued 200-byte messages
// with their deduplication records: 416 MB of snapshot, 680 MB of heap);
// the slack covers small snapshots. limit, if more than 0, bounds it
// (RaftConfig.RestoreHeapBytes).
func restoreHeapBudget(size, limit int64) uint64 {
	b := 2*uint64(max(size, 0)) + 64<<20
	if limit > 0 {
		b = min(b, uint64(limit))
	}
	return b
}

// withGCHeld runs fn with the garbage collector off until fn returns or the
// heap grows by more than budget bytes, and then restores the collector's
// setting. A collector turned off by the operator (GOGC=off) stays off.
func withGCHeld(budget uint64, fn func() error) error {
	old := debug.SetGCPercent(-1)
	if old < 0 {
		return fn()
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		limit := sample[0].Value.Uint64() + budget
		// At the few hundred MB/s a restore allocates, a 5 ms tick lets
		// the heap pass the limit by a few MB at most.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if metrics.Read(sample); sample[0].Value.Uint64() > limit {
				debug.SetGCPercent(old)
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
		debug.SetGCPercent(old)
	}()
	return fn()
}
