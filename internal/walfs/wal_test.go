package walfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	raftwal "github.com/fifoq/fifoq/internal/third_party/raftwal"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/metadb"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/segment"
)

// openWAL opens raft-wal in dir on a walfs, with small segments so that a
// test goes through several.
func openWAL(t *testing.T, dir string) (*raftwal.WAL, *FS, func()) {
	t.Helper()
	fs, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(dir, raftwal.WithSegmentFiler(segment.NewFiler(dir, fs)), raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(1<<20))
	if err != nil {
		fs.Close()
		t.Fatal(err)
	}
	return w, fs, func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
		meta.Close()
		if err := fs.Close(); err != nil {
			t.Error(err)
		}
	}
}

func entry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte(fmt.Sprintf("%08d", i)), 512)}
}

func checkEntries(t *testing.T, w *raftwal.WAL, last uint64) {
	t.Helper()
	for i := uint64(1); i <= last; i++ {
		var got raft.Log
		if err := w.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if want := entry(i); !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("entry %d differs", i)
		}
	}
	if idx, err := w.LastIndex(); err != nil || idx != last {
		t.Fatalf("last index %d, %v; want %d", idx, err, last)
	}
}

// TestWALOnSpareSegments: raft-wal writes through segments made from
// spares, and everything written reads back after a clean restart and
// after a crash (the directory copied as it is, the WAL never closed:
// raft-wal must recover the tail of a segment that was a spare, whose
// unwritten part is zeros).
func TestWALOnSpareSegments(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	w, fs, closeWAL := openWAL(t, dir)
	const n = 1200 // 4 KiB each: about five 1 MiB segments
	for i := uint64(1); i <= n; i++ {
		if err := w.StoreLogs([]*raft.Log{entry(i)}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			fs.waitSpare() // let each spare be ready before the rotation that takes it
		}
	}
	if st := fs.Stats(); st.SparesUsed < 3 || st.SparesFailed != 0 {
		t.Fatalf("stats %+v: spares were not used", st)
	}
	// The first segment, made without a spare, was zeroed in place.
	if st := fs.Stats(); st.ZeroedAhead == 0 || st.AheadFailed != 0 {
		t.Fatalf("stats %+v: the first segment was not zeroed in place", st)
	}
	checkEntries(t, w, n)

	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	closeWAL()

	w2, _, close2 := openWAL(t, dir)
	checkEntries(t, w2, n)
	close2()

	w3, _, close3 := openWAL(t, crashed)
	defer close3()
	checkEntries(t, w3, n)
	if err := w3.StoreLogs([]*raft.Log{entry(n + 1)}); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	checkEntries(t, w3, n+1)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
