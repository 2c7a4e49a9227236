package replog

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// DefaultCloseTimeout is how long Close waits for the log to stop before
// giving up on it.
const DefaultCloseTimeout = 10 * time.Second

// ErrCloseTimeout is returned by Close when the log did not stop within
// RaftConfig.CloseTimeout: a disk write (fsync) or an apply of the state
// machine never returned. The caller can still exit: every command that was
// waiting has been answered, and the operating system releases the data
// directory with the process.
var ErrCloseTimeout = errors.New("command log did not stop in time")

// Close implements Log: it stops taking commands, waits for the entries in
// flight, takes no final snapshot (the log holds everything) and releases
// the data directory.
//
// Close returns within RaftConfig.CloseTimeout, even when a disk write or
// the state machine never returns (Raft's own shutdown waits for both, with
// no bound). Past that deadline, every request still waiting for an outcome
// is answered ServiceUnavailable (its command may or may not be applied),
// Raft is told to stop, and Close returns an error wrapping ErrCloseTimeout.
// The rest of the shutdown goes on in the background: if the hung call ever
// returns, the log's goroutines end and the directory is released.
func (l *Raft) Close() error {
	l.closeOnce.Do(func() {
		l.handOver()
		close(l.quit)
		go l.shutdown()
		timer := time.NewTimer(l.cfg.CloseTimeout)
		defer timer.Stop()
		select {
		case <-l.closed:
			l.closeErr = l.closeWork
		case <-timer.C:
			// Answer every waiting request now rather than when (if
			// ever) the hung call returns, and stop what in Raft can
			// still stop.
			l.markStopped()
			l.shutdownRaft()
			l.logger.Error("command log did not stop in time: a disk write or the state machine is hung; giving up on it", "timeout", l.cfg.CloseTimeout)
			l.closeErr = fmt.Errorf("%w (%v): a disk write or an apply of the state machine has not returned; the data directory %s stays locked until the process exits", ErrCloseTimeout, l.cfg.CloseTimeout, l.cfg.Dir)
		}
	})
	return l.closeErr
}

// handOverTimeout bounds how long Close waits for another member to take
// the leadership over.
const handOverTimeout = 2 * time.Second

// handOver gives this node's leadership to another member before the node
// stops, as etcd does on a graceful stop: the others elect the successor
// at once instead of waiting out an election timeout after the leader's
// heartbeats stop, which would hold every write in the cluster up for
// that long. A command that arrives meanwhile is refused without being
// appended (this node no longer leads), and its client retries.
func (l *Raft) handOver() {
	if l.cluster == nil || l.faults.err() != nil || l.raft.State() != raft.Leader {
		return
	}
	// Close calls this before it closes quit, so only the timeout ends
	// the wait early.
	if err := l.transferLeadership(handOverTimeout); err != nil {
		l.logger.Warn("leadership not handed over before stopping", "err", err)
		return
	}
	l.handedOver.Store(true)
	l.logger.Info("handed leadership over before stopping")
}

// shutdown is Close's work: let the entries in flight finish, stop Raft
// and wait for it, answer what is left, and release the WAL and the data
// directory. It closes l.closed when done.
func (l *Raft) shutdown() {
	defer close(l.closed)
	l.wg.Wait()
	var err error
	down := l.shutdownRaft()
	stopped := make(chan error, 1)
	go func() { stopped <- down.Error() }()
	var werr error
	select {
	case werr = <-stopped:
	case <-time.After(cutNetworkAfter):
		l.cutNetwork()
		werr = <-stopped
	}
	if werr != nil {
		err = fmt.Errorf("stop raft: %w", werr)
	}
	l.raft.DeregisterObserver(l.raftObs)
	l.stopCluster()
	// An Apply that raced with close(quit) may have queued its command
	// after the batcher's last look: answer it, then release any wait
	// still open.
	l.drain()
	l.markStopped()
	l.stable.close() // a heartbeat still on the transport's goroutine writes nothing now
	if werr := l.wal.Close(); werr != nil && err == nil {
		err = fmt.Errorf("close log: %w", werr)
	}
	l.lock.release()
	l.closeWork = err
}

// cutNetworkAfter is how long Close lets Raft stop on its own before it
// cuts the group's connections (cutNetwork): a stop with every member
// reachable takes milliseconds and is left as it was.
const cutNetworkAfter = time.Second

// cutNetwork closes the group's connections to the other nodes, and its
// dials in progress, when Raft was told to stop and has not yet: Raft's
// shutdown waits for its RPCs, and an RPC to a node cut off by a
// partition would hold it for the transport's whole timeout (10 s), past
// Close's. What the RPCs carried is as a crash leaves it: an entry not
// yet replicated is not acknowledged either. A node's first group closes
// the node's port (its shards have closed before it); a shard closes its
// own streams.
func (l *Raft) cutNetwork() {
	if l.cluster == nil {
		return
	}
	if l.host == nil {
		l.cluster.mux.Close()
		return
	}
	l.cluster.trans.Close()
}

// markStopped closes stopped, once: no outcome can come any more.
func (l *Raft) markStopped() { l.stopOnce.Do(func() { close(l.stopped) }) }

// shutdownRaft asks Raft to stop, once, and returns the future that waits
// for it. Raft's Shutdown only starts the stop; a second call would return
// a future that waits for nothing, so the first one is kept for whoever
// waits.
func (l *Raft) shutdownRaft() raft.Future {
	l.raftDownOnce.Do(func() { l.raftDown = l.raft.Shutdown() })
	return l.raftDown
}
