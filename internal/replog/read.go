package replog

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
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

// ReadBarrier returns once this node may answer a read from its state with
// everything acknowledged anywhere before the call visible in it (a
// linearizable read): it leads, is confirmed leader by a majority after
// the call began, and has applied every entry committed when it began.
// A cluster of one is always current.
func (l *Raft) ReadBarrier(ctx context.Context) error {
	if l.cluster == nil {
		return nil
	}
	if !l.Leading() {
		return api.ErrServiceUnavailable("This node does not lead the cluster now; retry.")
	}
	index := l.raft.CommitIndex()
	if l.beats != nil {
		// The check waits on a round of heartbeats: sent at once, not
		// gathered with other shards'.
		defer l.beats.verifying()()
	}
	if err := l.raft.VerifyLeader().Error(); err != nil {
		return api.ErrServiceUnavailable("This node could not confirm its leadership (%v); retry.", err)
	}
	return l.awaitApplied(ctx, index)
}

// awaitApplied waits until the engine holds every entry up to index.
func (l *Raft) awaitApplied(ctx context.Context, index uint64) error {
	for !l.applied(index) {
		select {
		case <-ctx.Done():
			return api.ErrServiceUnavailable("The request ended before this node caught up: %v", ctx.Err())
		case <-l.stopped:
			return api.ErrServiceUnavailable("The command log stopped.")
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// SetAvailableHook implements Log.
func (l *Raft) SetAvailableHook(fn func(api.QueueKey)) { l.fsm.eng.SetAvailableHook(fn) }

// CaughtUp waits until this node has applied every entry it knows to be
// committed: on a follower, what the leader had committed as of its last
// message. It is weaker than ReadBarrier (a write the leader committed a
// moment ago may not be known here yet) and needs no leader: it is how a
// node lists the queues of shards it does not lead.
func (l *Raft) CaughtUp(ctx context.Context) error {
	return l.awaitApplied(ctx, l.raft.CommitIndex())
}
