package replog

import (
	"errors"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// Reads: a read runs on the engine under the fsm's read lock, and a
// clustered read first makes sure this node's state holds everything
// acknowledged before it (ReadBarrier, applied).

// Read implements Log.
func (l *Raft) Read(fn func(e *engine.Engine)) {
	l.fsm.mu.RLock()
	defer l.fsm.mu.RUnlock()
	fn(l.fsm.eng)
}

// applied reports whether the engine holds every command of the log up to
// index. Raft's AppliedIndex alone does not say so: Raft counts an entry
// applied as soon as it hands it to the goroutine that applies entries,
// before the engine has it. The entries past the last command the engine
// holds are therefore looked at: any command among them is still on its
// way (or, right after a restore, in the snapshot restored); entries of
// other kinds (Raft's no-ops, membership changes) change no state.
func (l *Raft) applied(index uint64) bool {
	if l.raft.AppliedIndex() < index {
		return false
	}
	done := l.fsm.applied.Load()
	for i := index; i > done; i-- {
		var entry raft.Log
		if err := l.wal.GetLog(i, &entry); errors.Is(err, raft.ErrLogNotFound) {
			// Compacted: a snapshot of the engine holds it, taken here or
			// restored before Raft counted its entries applied.
			return true
		} else if err != nil {
			return false
		}
		if entry.Type == raft.LogCommand {
			return l.fsm.restored.Load() && i <= l.newestSnapshotIndex()
		}
	}
	return true
}

// newestSnapshotIndex is the index of the newest snapshot on this node, or
// 0 when there is none or the store cannot be read.
func (l *Raft) newestSnapshotIndex() uint64 {
	list, err := l.snaps.List()
	if err != nil || len(list) == 0 {
		return 0
	}
	return list[0].Index
}
