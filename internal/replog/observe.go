package replog

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Observer is told what the Raft log does, so that it can be measured
// (fifoq's metrics implement it). Its methods are called on the log's own
// goroutines, some of them while commands wait: they must return quickly
// and must not call back into the log.
type Observer interface {
	// GroupCommitted reports one log entry written by the group-commit
	// batcher and applied: the number of commands it carried, and the time
	// from handing it to Raft until it was applied, the fsync included.
	GroupCommitted(commands int, took time.Duration)
	// SnapshotDone reports a snapshot of the state written to disk, or
	// restored from it at start, at the given time.
	SnapshotDone(at time.Time)
	// SegmentCreated reports a new segment file of the log: made from a
	// spare written ahead with zeros, or allocated when none was ready
	// (see internal/walfs).
	SegmentCreated(fromSpare bool)
	// DiskFull reports writes refused, without being appended, because
	// the data dir's disk had less free space than MinFreeBytes.
	DiskFull(refused int)
	// BodyStore reports the body store's files (bodies.go): how many, their
	// bytes, and the bytes of bodies still referenced. It is called about
	// once a second while entries are applied, and after a restore.
	BodyStore(files int, bytes, live int64)
	// BodiesMoved reports bytes of live bodies moved out of mostly dead
	// files, so that the files can be removed.
	BodiesMoved(bytes int64)
}

// observeCommit reports a group commit to the observer, if there is one.
func (l *Raft) observeCommit(commands int, took time.Duration) {
	if l.cfg.Observer != nil {
		l.cfg.Observer.GroupCommitted(commands, took)
	}
}

// observeSegment reports a new segment file to the observer, if any.
func observeSegment(o Observer) func(fromSpare bool) {
	if o == nil {
		return nil
	}
	return o.SegmentCreated
}

// observeSnapshot reports a snapshot written or restored now.
func (f *fsm) observeSnapshot() {
	if f.observer != nil {
		f.observer.SnapshotDone(time.Now())
	}
}

// Ready reports whether the log can take writes now, and if not, why: it
// must be open, this node must lead its cluster (or, in a networked
// cluster, follow a leader it heard from recently), no log entry may have
// failed to apply, and the disk guard (MinFreeBytes) must allow writes.
// It is what a readiness probe asks; it changes nothing but the disk
// guard's view of free space, which a write would refresh the same way.
func (l *Raft) Ready() error {
	select {
	case <-l.quit:
		return ErrClosed
	default:
	}
	if l.faults.err() != nil {
		return errors.New(l.faults.summary())
	}
	if l.cluster != nil {
		if why := l.cluster.clockOff.Load(); why != nil {
			return errors.New("this node's clock is off the cluster's: " + *why)
		}
	}
	if _, err := l.fsm.failure(); err != nil {
		// The details (file, entry) are in the server's log, not here:
		// readiness is answered to anyone who asks.
		return errors.New("the log stopped at an entry it cannot apply (see the server log)")
	}
	if st := l.raft.State(); st != raft.Leader {
		// A cluster's follower is ready while it can forward to a leader.
		if err := l.followerReady(); err != nil {
			return err
		}
	}
	if err := l.checkDiskSpace(); err != nil {
		return errors.New("the disk is almost full: writes are refused")
	}
	return nil
}
