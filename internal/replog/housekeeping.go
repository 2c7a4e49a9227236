package replog

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Housekeeping: snapshots by size, beside Raft's own by entry count, and
// the body files that only a snapshot held, given back once a newer one is
// taken.

// snapshotLoop takes a snapshot whenever the fsm reports that the entries
// applied since the last one passed SnapshotBytes. Raft itself snapshots
// by entry count (SnapshotEntries); this bounds the log by size too, so
// that a restart never replays more than that many bytes. It also takes
// one when body files that only the newest snapshot needs hold much of
// the body store (bodies.heldForSnapshot), so that their space comes back.
func (l *Raft) snapshotLoop() {
	defer l.wg.Done()
	every := l.cfg.tidyEvery
	if every == 0 {
		every = snapshotForSpaceEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-l.snapReq:
			l.snapshot("size")
		case <-tick.C:
			if l.tidyBodies(true) {
				l.snapshot("body store space")
			}
		case <-l.quit:
			return
		}
	}
}

// snapshot takes a snapshot (SnapshotNow), logging a failure with why it
// was asked for.
func (l *Raft) snapshot(why string) {
	if err := l.SnapshotNow(); err != nil {
		l.logger.Warn("snapshot failed", "for", why, "err", err)
	}
}

// SnapshotNow takes a snapshot of everything applied so far, unless the
// newest one holds it already. A data dir just restored from a backup
// takes one before it is served: Raft applies the entries after its
// newest snapshot only once the node leads again, and until then the
// node would serve the backup's state as the snapshot installed it (its
// map naming the original cluster's members), not what the restore
// applied after it.
//
// Once one is taken, the body files only the one before needed are
// removed: on a quiet node no apply would come to remove them.
func (l *Raft) SnapshotNow() error {
	if err := l.raft.Snapshot().Error(); err != nil {
		if errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return nil
		}
		return err
	}
	l.tidyBodies(false)
	return nil
}

// tidyBodies removes the body files nothing refers to, reports the store
// (with no apply to do either, on a quiet node), and says whether the
// files kept only for the newest snapshot are worth a new one. With look,
// the loop's look every snapshotForSpaceEvery, it also gives the store's
// buffers back if the store was quiet since the last look; a snapshot's
// tidying is no look, so that the buffers of a store appended to a moment
// ago stay. A failure to remove a file or to write what the buffers
// gathered is a storage fault: the node stops.
func (l *Raft) tidyBodies(look bool) (worth bool) {
	b := l.fsm.bodies
	if b == nil {
		return false
	}
	l.fsm.mu.Lock()
	worth, err := b.heldForSnapshot()
	if err == nil && look {
		// Holding the fsm's write lock, this goroutine is the store's
		// appender for the moment.
		err = b.store.ReleaseIfIdle()
	}
	b.report()
	l.fsm.mu.Unlock()
	if err != nil {
		b.failed.CompareAndSwap(nil, &err)
		l.fsm.faults.fail("write the body store", err)
		return false
	}
	return worth
}
