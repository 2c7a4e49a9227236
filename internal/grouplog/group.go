package grouplog

import (
	"github.com/hashicorp/raft"
)

// Group is one group's log in a Log: a raft.LogStore and raft.StableStore
// of its own to hashicorp/raft. Its writes wait for the Log's writer,
// which makes them durable with those of every other group waiting then.
type Group struct {
	log *Log
	id  uint64
}

var (
	_ raft.LogStore          = (*Group)(nil)
	_ raft.StableStore       = (*Group)(nil)
	_ raft.MonotonicLogStore = (*Group)(nil)
)

// ID returns the group's id in its Log.
func (g *Group) ID() uint64 { return g.id }

// FirstIndex implements raft.LogStore: 0 for an empty log.
func (g *Group) FirstIndex() (uint64, error) {
	first, _, err := g.log.bounds(g.id)
	return first, err
}

// LastIndex implements raft.LogStore: 0 for an empty log.
func (g *Group) LastIndex() (uint64, error) {
	_, last, err := g.log.bounds(g.id)
	return last, err
}

// GetLog implements raft.LogStore.
func (g *Group) GetLog(index uint64, log *raft.Log) error {
	if _, _, err := g.log.bounds(g.id); err != nil {
		return err
	}
	return g.log.getLog(g.id, index, log)
}

// StoreLog implements raft.LogStore.
func (g *Group) StoreLog(log *raft.Log) error {
	return g.StoreLogs([]*raft.Log{log})
}

// StoreLogs implements raft.LogStore: the entries must follow the log's
// last (any index, if it is empty), in order; they are durable when it
// returns.
func (g *Group) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	for i := 1; i < len(logs); i++ {
		if logs[i].Index != logs[i-1].Index+1 {
			return errNotContiguous(g.id, logs[i-1].Index, logs[i].Index)
		}
	}
	return g.log.submit(record{kind: kindAppend, group: g.id, entries: logs})
}

// DeleteRange implements raft.LogStore: min..max, inclusive, must be a
// prefix or a suffix of the log (or all of it), as Raft deletes.
func (g *Group) DeleteRange(min, max uint64) error {
	return g.log.submit(record{kind: kindDelete, group: g.id, min: min, max: max})
}

// IsMonotonic implements raft.MonotonicLogStore: Raft empties the log
// rather than leave a gap in it when it installs a snapshot past its end.
func (g *Group) IsMonotonic() bool { return true }

// Set implements raft.StableStore, in the WAL's stable store under a key
// of the group's own.
func (g *Group) Set(key, val []byte) error {
	if err := g.open(); err != nil {
		return err
	}
	return g.log.wal.Set(stableKey(g.id, key), val)
}

// Get implements raft.StableStore.
func (g *Group) Get(key []byte) ([]byte, error) {
	if err := g.open(); err != nil {
		return nil, err
	}
	return g.log.wal.Get(stableKey(g.id, key))
}

// SetUint64 implements raft.StableStore.
func (g *Group) SetUint64(key []byte, val uint64) error {
	if err := g.open(); err != nil {
		return err
	}
	return g.log.wal.SetUint64(stableKey(g.id, key), val)
}

// GetUint64 implements raft.StableStore.
func (g *Group) GetUint64(key []byte) (uint64, error) {
	if err := g.open(); err != nil {
		return 0, err
	}
	return g.log.wal.GetUint64(stableKey(g.id, key))
}

// open returns ErrClosed once the Log is closed.
func (g *Group) open() error {
	_, _, err := g.log.bounds(g.id)
	return err
}
