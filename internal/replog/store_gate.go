package replog

import "github.com/hashicorp/raft"

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
}

// StoreLog implements raft.LogStore.
func (s *storeGate) StoreLog(log *raft.Log) error {
	if err := s.LogStore.StoreLog(log); err != nil {
		return s.faults.fail("append to the log", err)
	}
	s.stored(log)
	return nil
}

// StoreLogs implements raft.LogStore.
func (s *storeGate) StoreLogs(logs []*raft.Log) error {
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
	if err := s.LogStore.DeleteRange(min, max); err != nil {
		return s.faults.fail("remove log entries", err)
	}
	return nil
}

// stored marks the held entry whose bytes log carries as on disk.
func (s *storeGate) stored(log *raft.Log) {
	if log.Type != raft.LogCommand {
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
