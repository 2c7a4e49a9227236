package replog

import (
	"errors"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// storeGate is the log store Raft is given on every node: it passes each
// call to the store beneath and, once a write of entries returns without
// error, tells each entry this node's batcher handed to Raft that it is on
// disk (entry.markStored), so that the next entry can leave while this one
// is still being applied (see maxInflightEntries). An error of a write or
// a deletion is a storage fault, which stops the node (fault.go).
//
// Raft writes the leader's entries with the very byte slices the batcher
// gave it, which is how the entry is found (fsm.peek; the contract, and
// what happens should Raft copy them, is at fsm.hold); entries written on
// a follower, or read back at start, are not held and pass untouched.
type storeGate struct {
	raft.LogStore
	fsm    *fsm
	faults *faultStop
	// snaps is Raft's snapshot store, and restores says when the state
	// machine last restored a snapshot: what keepAfterInstall needs.
	snaps    raft.SnapshotStore
	restores *restoreMark
}

// restoreMark says whether the state machine restored a snapshot since
// the log store last took entries.
type restoreMark struct{ since atomic.Bool }

// restored marks a restore (the state machine's Restore calls it).
func (m *restoreMark) restored() {
	if m != nil {
		m.since.Store(true)
	}
}

// StoreLog implements raft.LogStore.
func (s *storeGate) StoreLog(log *raft.Log) error {
	s.appending()
	if err := s.LogStore.StoreLog(log); err != nil {
		return s.faults.fail("append to the log", err)
	}
	s.stored(log)
	return nil
}

// StoreLogs implements raft.LogStore.
func (s *storeGate) StoreLogs(logs []*raft.Log) error {
	s.appending()
	if err := s.LogStore.StoreLogs(logs); err != nil {
		return s.faults.fail("append to the log", err)
	}
	for _, log := range logs {
		s.stored(log)
	}
	return nil
}

// DeleteRange implements raft.LogStore.
func (s *storeGate) DeleteRange(min, max uint64) error {
	if at, keep := s.keepAfterInstall(min, max); keep {
		if s.holdsMembership(at+1, max) && s.faults != nil {
			s.faults.halt(errMembershipPastInstall)
		}
		return nil
	}
	if err := s.LogStore.DeleteRange(min, max); err != nil {
		return s.faults.fail("remove log entries", err)
	}
	return nil
}

// appending clears the restore mark: entries taken after a restore.
func (s *storeGate) appending() {
	if s.restores != nil {
		s.restores.since.Store(false)
	}
}

// keepAfterInstall reports whether DeleteRange(min, max) is hashicorp/raft
// emptying the log just after a follower installed a snapshot (its
// removeOldLogs, for a monotonic store) of a log that runs past the
// snapshot and holds the snapshot's last entry, and keeps the log if so.
//
// Raft's rule for an installed snapshot keeps such a log (its entries up
// to the snapshot's are the leader's, by the log matching property; those
// after it are checked against the leader's as they are sent again).
// hashicorp/raft empties it, yet keeps its own count of the log's last
// entry, the old one past the snapshot; the follower then takes the
// leader's next entries after that count, and on the next commit panics
// reading the entries in between, which it no longer has (hashicorp/raft
// issue #697). Kept, the log is what Raft counts. It returns the
// snapshot's index.
//
// hashicorp/raft reads a membership change only from an entry new to the
// log, or from the log when it starts: one in the log kept past the
// snapshot it would not see, and it would go on with the snapshot's
// membership. So a log kept with one stops the node
// (errMembershipPastInstall), for its restart to read it.
//
// It is that call only: the whole log deleted, after the state machine
// restored a snapshot and before the store took another entry, the
// newest snapshot's last entry inside the log and not its last, with the
// snapshot's term. A deletion of a conflicting suffix that happens to be
// the whole log cannot look so: the log agrees with the leader up to the
// snapshot's entry, so a conflict lies after it, not at the log's first.
// A restore the operator asked for (raft.Restore) sets Raft's count to
// its snapshot's index, past the log's end, and the log is emptied.
func (s *storeGate) keepAfterInstall(min, max uint64) (uint64, bool) {
	if s.snaps == nil || s.restores == nil || !s.restores.since.Load() {
		return 0, false
	}
	first, err := s.LogStore.FirstIndex()
	if err != nil || first == 0 || min > first {
		return 0, false
	}
	last, err := s.LogStore.LastIndex()
	if err != nil || max != last {
		return 0, false
	}
	metas, err := s.snaps.List()
	if err != nil || len(metas) == 0 {
		return 0, false
	}
	snap := metas[0]
	if snap.Index < first || snap.Index >= last {
		return 0, false
	}
	var at raft.Log
	if err := s.LogStore.GetLog(snap.Index, &at); err != nil || at.Term != snap.Term {
		return 0, false
	}
	return snap.Index, true
}

// holdsMembership reports whether the log's entries from..to hold a
// membership change (or could not be read).
func (s *storeGate) holdsMembership(from, to uint64) bool {
	for i := from; i <= to; i++ {
		var e raft.Log
		if err := s.LogStore.GetLog(i, &e); err != nil || e.Type == raft.LogConfiguration {
			return true
		}
	}
	return false
}

// errMembershipPastInstall stops a node that kept its log past a snapshot
// it installed, with a membership change in it (keepAfterInstall).
var errMembershipPastInstall = errors.New("a group of this node kept its log past a snapshot it installed, and the log holds a membership change that hashicorp/raft reads only when it starts (its issue #697): restart the node")

// stored marks the held entry whose bytes log carries as on disk.
func (s *storeGate) stored(log *raft.Log) {
	if log.Type != raft.LogCommand || s.fsm == nil {
		return
	}
	if e := s.fsm.peek(log.Data); e != nil {
		e.markStored()
	}
}

// IsMonotonic implements raft.MonotonicLogStore with the answer of the
// store beneath. raft-wal refuses an entry that does not follow the last
// one, so after a follower installs a snapshot Raft must remove its old
// entries rather than leave a gap before the next: without this, the
// follower refused every entry after the snapshot ("non-monotonic log
// entries") and never caught up.
func (s *storeGate) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
