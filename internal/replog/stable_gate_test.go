package replog

import (
	"errors"
	"testing"
)

// closingStable is a stable store that fails every write once closed, as
// the WAL's does.
type closingStable struct {
	vals   map[string]uint64
	closed bool
}

func (c *closingStable) Set(key, val []byte) error {
	if c.closed {
		return errors.New("closed")
	}
	c.vals[string(key)] = uint64(len(val))
	return nil
}

func (c *closingStable) Get(key []byte) ([]byte, error) { return nil, nil }

func (c *closingStable) SetUint64(key []byte, val uint64) error {
	if c.closed {
		return errors.New("closed")
	}
	c.vals[string(key)] = val
	return nil
}

func (c *closingStable) GetUint64(key []byte) (uint64, error) { return c.vals[string(key)], nil }

// TestStableGateDropsWritesAfterClose: a write that reaches the stable
// store after the group closed it (a heartbeat on hashicorp/raft's fast
// path, which its Shutdown does not wait for) returns without error and
// changes nothing, where the store beneath would fail it and Raft would
// panic; before, writes go through.
func TestStableGateDropsWritesAfterClose(t *testing.T) {
	under := &closingStable{vals: map[string]uint64{}}
	g := &stableGate{StableStore: under}
	if err := g.SetUint64([]byte("CurrentTerm"), 3); err != nil || under.vals["CurrentTerm"] != 3 {
		t.Fatalf("a write before close: %v, stored %d", err, under.vals["CurrentTerm"])
	}
	g.close()
	under.closed = true
	if err := g.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatalf("a write after close failed: %v (hashicorp/raft panics on it)", err)
	}
	if err := g.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatalf("a write after close failed: %v", err)
	}
	if under.vals["CurrentTerm"] != 3 {
		t.Fatalf("a write after close reached the store: term %d", under.vals["CurrentTerm"])
	}
}
