package replog

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// countFSM is a state machine that keeps the index of the last entry it
// applied; its snapshot is that index.
type countFSM struct {
	mu       sync.Mutex
	applied  uint64
	restores *restoreMark
}

func (f *countFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = l.Index
	return nil
}

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return countSnapshot(f.applied), nil
}

func (f *countFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	f.applied = binary.BigEndian.Uint64(b[:])
	f.mu.Unlock()
	f.restores.restored()
	return nil
}

type countSnapshot uint64

func (s countSnapshot) Persist(sink raft.SnapshotSink) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(s))
	if _, err := sink.Write(b[:]); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (countSnapshot) Release() {}

// TestInstalledSnapshotKeepsTheLogAfterIt: a follower whose log runs past
// the snapshot its leader sends it, and agrees with it there (a leader
// that lost track of it, as one whose appends to it timed out in flight
// does), installs the snapshot and keeps its log. hashicorp/raft empties
// a monotonic store after an install (removeOldLogs) but keeps its own
// count of the log's last entry, so that, emptied, the follower takes the
// leader's next entries after that count and panics on the next commit,
// reading an entry it no longer has (hashicorp/raft issue #697; an
// in-memory soak's members crashed so at its 640th move).
func TestInstalledSnapshotKeepsTheLogAfterIt(t *testing.T) {
	mark := &restoreMark{}
	snaps := raft.NewInmemSnapshotStore()
	store := &storeGate{LogStore: monotonicStore{raft.NewInmemStore()}, snaps: snaps, restores: mark}
	fsm := &countFSM{restores: mark}
	_, ftrans := raft.NewInmemTransport("f")
	_, ltrans := raft.NewInmemTransport("l")
	ftrans.Connect("l", ltrans)
	ltrans.Connect("f", ftrans)
	conf := raft.DefaultConfig()
	conf.LocalID = "f"
	conf.HeartbeatTimeout = 10 * time.Second
	conf.ElectionTimeout = 10 * time.Second
	conf.LeaderLeaseTimeout = 10 * time.Second
	conf.Logger = nil
	r, err := raft.NewRaft(conf, fsm, store, raft.NewInmemStore(), snaps, ftrans)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()

	entries := func(from, to uint64) []*raft.Log {
		var out []*raft.Log
		for i := from; i <= to; i++ {
			out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte("x")})
		}
		return out
	}
	appendEntries := func(prev uint64, es []*raft.Log, commit uint64) {
		t.Helper()
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("l"), Addr: []byte("l")}, Term: 1,
			PrevLogEntry: prev, PrevLogTerm: 1, Entries: es, LeaderCommitIndex: commit}
		if prev == 0 {
			req.PrevLogTerm = 0
		}
		var resp raft.AppendEntriesResponse
		if err := ltrans.AppendEntries("f", "f", req, &resp); err != nil || !resp.Success {
			t.Fatalf("append after %d: success %v, %v", prev, resp.Success, err)
		}
	}
	// The follower holds entries 1..20, of which 10 are committed.
	appendEntries(0, entries(1, 20), 10)
	waitFor(t, "the follower applies 10", func() bool { return r.AppliedIndex() == 10 })

	// The leader sends it its snapshot at 12.
	var data bytes.Buffer
	_ = binary.Write(&data, binary.BigEndian, uint64(12))
	servers := raft.Configuration{Servers: []raft.Server{{ID: "l", Address: "l"}, {ID: "f", Address: "f"}}}
	req := &raft.InstallSnapshotRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("l"), Addr: []byte("l")}, SnapshotVersion: raft.SnapshotVersionMax,
		Term: 1, LastLogIndex: 12, LastLogTerm: 1, Configuration: raft.EncodeConfiguration(servers), ConfigurationIndex: 1, Size: int64(data.Len())}
	var sresp raft.InstallSnapshotResponse
	if err := ltrans.InstallSnapshot("f", "f", req, &sresp, &data); err != nil || !sresp.Success {
		t.Fatalf("install the snapshot: success %v, %v", sresp.Success, err)
	}

	// Its log still ends at 20: the leader's next entries follow it, and
	// their commit applies 13..22.
	appendEntries(20, entries(21, 22), 22)
	waitFor(t, "the follower applies 22", func() bool { return r.AppliedIndex() == 22 })
	for i := uint64(13); i <= 22; i++ {
		var e raft.Log
		if err := store.GetLog(i, &e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
}

// waitFor waits up to 10 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
