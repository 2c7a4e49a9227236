package replog

import (
	"sync"

	"github.com/hashicorp/raft"
)

// stableGate is the stable store (current term, vote) a group's Raft
// writes, closed before the store beneath it. hashicorp/raft handles a
// heartbeat on the transport's goroutine (its fast path), which its
// Shutdown does not wait for, and panics ("failed to save current term")
// if the term it raises cannot be written, as it cannot once the store is
// closed. Once closed, the gate drops such late writes: Raft has stopped
// and acts on nothing more, and a raised term, the only write on that
// path, need not outlive it (a restart reads the older term and learns
// the newer one from its peers; no vote is cast on that path, and a vote
// is the write Raft's safety needs durable).
type stableGate struct {
	raft.StableStore
	mu     sync.RWMutex
	closed bool
}

// Set implements raft.StableStore.
func (g *stableGate) Set(key, val []byte) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.StableStore.Set(key, val)
}

// SetUint64 implements raft.StableStore.
func (g *stableGate) SetUint64(key []byte, val uint64) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.StableStore.SetUint64(key, val)
}

// close drops every later write, once those under way have returned:
// called after Raft stopped, before the store beneath is closed.
func (g *stableGate) close() {
	if g == nil {
		return // a Raft made by hand in a test
	}
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
