package replog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
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
	t.Run("entries", func(t *testing.T) { installPastTheLog(t, false) })
	// A membership change in the log kept past the snapshot, which
	// hashicorp/raft would not read: the node stops, for its restart to
	// read it.
	t.Run("membership", func(t *testing.T) { installPastTheLog(t, true) })
}

// installPastTheLog has a follower whose log holds entries 1..20 (entry
// 15 a membership change, if membership) install a snapshot at 12, then
// take entries after 20 and their commit.
func installPastTheLog(t *testing.T, membership bool) {
	mark := &restoreMark{}
	snaps := raft.NewInmemSnapshotStore()
	faults := newFaultStop(slog.New(slog.DiscardHandler), t.TempDir())
	store := &storeGate{LogStore: monotonicStore{raft.NewInmemStore()}, snaps: snaps, restores: mark, faults: faults}
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
	r, err := raft.NewRaft(conf, fsm, store, raft.NewInmemStore(), snaps, ftrans)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()

	servers := raft.Configuration{Servers: []raft.Server{{ID: "l", Address: "l"}, {ID: "f", Address: "f"}}}
	entries := func(from, to uint64) []*raft.Log {
		var out []*raft.Log
		for i := from; i <= to; i++ {
			e := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte("x")}
			if membership && i == 15 {
				e.Type, e.Data = raft.LogConfiguration, raft.EncodeConfiguration(servers)
			}
			out = append(out, e)
		}
		return out
	}
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("l"), Addr: []byte("l")}
	appendEntries := func(prev uint64, es []*raft.Log, commit uint64) {
		t.Helper()
		req := &raft.AppendEntriesRequest{RPCHeader: header, Term: 1, PrevLogEntry: prev, PrevLogTerm: 1, Entries: es, LeaderCommitIndex: commit}
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
	req := &raft.InstallSnapshotRequest{RPCHeader: header, SnapshotVersion: raft.SnapshotVersionMax,
		Term: 1, LastLogIndex: 12, LastLogTerm: 1, Configuration: raft.EncodeConfiguration(servers), ConfigurationIndex: 1, Size: int64(data.Len())}
	var sresp raft.InstallSnapshotResponse
	if err := ltrans.InstallSnapshot("f", "f", req, &sresp, &data); err != nil || !sresp.Success {
		t.Fatalf("install the snapshot: success %v, %v", sresp.Success, err)
	}
	for i := uint64(12); i <= 20; i++ {
		var e raft.Log
		if err := store.GetLog(i, &e); err != nil {
			t.Fatalf("entry %d after the install: %v", i, err)
		}
	}
	if membership {
		if !errors.Is(faults.err(), errMembershipPastInstall) {
			t.Fatalf("a log kept with a membership change past the snapshot: the node's fault is %v, want errMembershipPastInstall", faults.err())
		}
		return
	}
	if err := faults.err(); err != nil {
		t.Fatalf("the node stopped: %v", err)
	}

	// The leader sends what follows its snapshot; the follower holds
	// 13..20 already, takes 21 and 22, and the commit applies 13..22.
	appendEntries(12, entries(13, 22), 22)
	waitFor(t, "the follower applies 22", func() bool { return r.AppliedIndex() == 22 })
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
