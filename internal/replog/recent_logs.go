package replog

import (
	"sync"

	"github.com/hashicorp/raft"
)

// recentLogs keeps the entries last appended to the log in memory, so
// that Raft's reads of them come from there instead of the disk. Raft
// reads back every entry it has just appended: a leader once for each
// follower it sends the entry to (and once more for the entry before,
// whose term the follower checks), a follower to apply it. From raft-wal
// each such read is a pread of the segment file and a copy: on a loaded
// 3-node cluster about 7 % of the leader's CPU went there.
//
// It is bounded by count and by bytes, so that the memory it holds stays
// small beside the memory budget whatever the entries' sizes, and an
// entry too large for it is simply not kept (hashicorp/raft's LogCache
// is bounded by count alone, and entries may be megabytes). Only a
// cluster's members use it (opening.logStore). It sits beneath
// storeGate: an entry is kept only once the store beneath has taken it,
// and a deletion (a follower's log cut back to its leader's, a
// compaction) forgets everything, as the entries' indexes may then be
// reused.
type recentLogs struct {
	raft.LogStore

	mu    sync.Mutex
	ring  []*raft.Log // by index modulo len(ring); nil where none is kept
	bytes int         // the Data bytes of the entries in ring
	limit int         // at most this many bytes of Data in ring
}

// Bounds of recentLogs: enough for the entries in flight to every
// follower of a busy leader, which are a few at a time.
const (
	recentLogsCount = 64
	recentLogsBytes = 8 << 20
)

func newRecentLogs(store raft.LogStore) *recentLogs {
	return &recentLogs{LogStore: store, ring: make([]*raft.Log, recentLogsCount), limit: recentLogsBytes}
}

// GetLog implements raft.LogStore.
func (r *recentLogs) GetLog(index uint64, log *raft.Log) error {
	r.mu.Lock()
	kept := r.ring[index%uint64(len(r.ring))]
	r.mu.Unlock()
	if kept != nil && kept.Index == index {
		// Raft reads an entry's fields and never writes its Data.
		*log = *kept
		return nil
	}
	return r.LogStore.GetLog(index, log)
}

// StoreLog implements raft.LogStore.
func (r *recentLogs) StoreLog(log *raft.Log) error {
	return r.StoreLogs([]*raft.Log{log})
}

// StoreLogs implements raft.LogStore.
func (r *recentLogs) StoreLogs(logs []*raft.Log) error {
	if err := r.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, log := range logs {
		r.keep(log)
	}
	return nil
}

// keep puts a copy of log in the ring in place of the entry at its slot,
// then drops the oldest entries while the ring holds more bytes than its
// limit. A copy, because a leader's *raft.Log points into the future of
// its Apply, which holds the state machine's answer (a receive's message
// bodies, say): kept, the pointer would keep all of that alive.
func (r *recentLogs) keep(log *raft.Log) {
	if len(log.Data) > r.limit/4 {
		return
	}
	slot := log.Index % uint64(len(r.ring))
	if old := r.ring[slot]; old != nil {
		r.bytes -= len(old.Data)
	}
	kept := *log
	r.ring[slot] = &kept
	r.bytes += len(log.Data)
	for i := log.Index + 1; r.bytes > r.limit && i < log.Index+uint64(len(r.ring)); i++ {
		// The oldest entries follow the newest in the ring's order.
		s := i % uint64(len(r.ring))
		if old := r.ring[s]; old != nil {
			r.bytes -= len(old.Data)
			r.ring[s] = nil
		}
	}
}

// DeleteRange implements raft.LogStore.
func (r *recentLogs) DeleteRange(min, max uint64) error {
	r.mu.Lock()
	clear(r.ring)
	r.bytes = 0
	r.mu.Unlock()
	return r.LogStore.DeleteRange(min, max)
}

// IsMonotonic implements raft.MonotonicLogStore with the answer of the
// store beneath: raft-wal's must reach Raft through every wrapper (see
// storeGate).
func (r *recentLogs) IsMonotonic() bool {
	m, ok := r.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
