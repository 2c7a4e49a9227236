package replog

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	raftwal "github.com/fifoq/fifoq/internal/third_party/raftwal"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/metadb"
)

// TestWALTailTruncationSurvivesRestart is the defect internal/third_party/raftwal
// is patched for (FIFOQ-PATCH.md there): a follower whose last entries a
// new leader overwrites truncates its log's tail, which marks the tail
// segment sealed; unpatched, the segment had no index block on disk and
// the node could not start again ("sealed segment has no index block").
func TestWALTailTruncationSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *closingWAL {
		t.Helper()
		meta := &metadb.BoltMetaDB{}
		w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta))
		if err != nil {
			meta.Close()
			t.Fatalf("open the log: %v", err)
		}
		return &closingWAL{WAL: w, meta: meta}
	}
	w := open()
	var logs []*raft.Log
	for i := uint64(1); i <= 20; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
	}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	// A new leader's entries replace 18..20 (raft deletes the conflicting
	// suffix, then stores its own).
	if err := w.DeleteRange(18, 20); err != nil {
		t.Fatal(err)
	}
	if err := w.StoreLogs([]*raft.Log{{Index: 18, Term: 2, Type: raft.LogCommand, Data: []byte("entry 18 of term 2")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Unpatched, the reopen (raft.NewRaft's first read) fails here.
	w = open()
	defer w.Close()
	last, err := w.LastIndex()
	if err != nil || last != 18 {
		t.Fatalf("LastIndex = %d, %v; want 18", last, err)
	}
	for i := uint64(1); i <= 18; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d) after restart: %v", i, err)
		}
		want := fmt.Sprintf("entry %d", i)
		if i == 18 {
			want = "entry 18 of term 2"
		}
		if string(l.Data) != want {
			t.Fatalf("entry %d = %q, want %q", i, l.Data, want)
		}
	}
}
