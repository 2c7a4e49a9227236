package replog

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// write is one WriteAt a recordingFile saw.
type write struct {
	off, n int64
	zeros  bool
}

// recordingFile is a WritableFile that records its writes.
type recordingFile struct {
	types.WritableFile
	writes []write
}

func (r *recordingFile) WriteAt(p []byte, off int64) (int, error) {
	r.writes = append(r.writes, write{off: off, n: int64(len(p)), zeros: !bytes.ContainsFunc(p, func(c rune) bool { return c != 0 })})
	return len(p), nil
}

// TestZeroAheadWrites checks which writes a segment file gets: each data
// write as it was, and zeros after a write only when the write passes the
// zeroed part, up to zeroAheadChunk past it and never past the file's size.
func TestZeroAheadWrites(t *testing.T) {
	const size = 2*zeroAheadChunk + 200
	rec := &recordingFile{}
	f := &zeroAheadFile{WritableFile: rec, size: size}
	steps := []struct {
		off, n int64
		zeros  []write // the zero writes that follow the data write
	}{
		// The first write zeroes the chunk after it.
		{0, 100, []write{{100, zeroAheadChunk, true}}},
		// Writes inside the zeroed part add nothing.
		{100, 1000, nil},
		{1100, zeroAheadChunk - 1000, nil},
		// One that passes it zeroes the next chunk from its end.
		{zeroAheadChunk + 100, 50, []write{{zeroAheadChunk + 150, zeroAheadChunk, true}}},
		// The next one to pass it is near the end: zeros stop at the size.
		{2*zeroAheadChunk + 140, 20, []write{{2*zeroAheadChunk + 160, 40, true}}},
		// Up to the end: nothing left to zero.
		{2*zeroAheadChunk + 160, 40, nil},
	}
	for i, s := range steps {
		rec.writes = nil
		if _, err := f.WriteAt(bytes.Repeat([]byte{7}, int(s.n)), s.off); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want := append([]write{{s.off, s.n, false}}, s.zeros...)
		if !slices.Equal(rec.writes, want) {
			t.Fatalf("step %d: writes %+v, want %+v", i, rec.writes, want)
		}
	}
}

// TestZeroAheadShortFile checks that zeros never extend a file: a write
// close to the end zeroes only up to the file's size.
func TestZeroAheadShortFile(t *testing.T) {
	rec := &recordingFile{}
	f := &zeroAheadFile{WritableFile: rec, size: 4096}
	if _, err := f.WriteAt(make([]byte, 96)[:96], 0); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 2 || rec.writes[1] != (write{96, 4000, true}) {
		t.Fatalf("writes %+v, want the data then zeros over bytes 96-4095", rec.writes)
	}
}

// TestZeroAheadLogReadsBack writes a log through the zero-filling file
// system, with segments small enough to rotate, and reads it back with
// raft-wal's own file system after a restart: the files are the same
// format, and every entry is there.
func TestZeroAheadLogReadsBack(t *testing.T) {
	dir := t.TempDir()
	open := func(vfs types.VFS) (*raftwal.WAL, *metadb.BoltMetaDB) {
		meta := &metadb.BoltMetaDB{}
		w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(64<<10),
			raftwal.WithSegmentFiler(segment.NewFiler(dir, vfs)))
		if err != nil {
			t.Fatalf("open log: %v", err)
		}
		return w, meta
	}
	w, meta := open(zeroAheadFS{walfs.New()})
	const n = 300
	for i := uint64(1); i <= n; i++ {
		if err := w.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, 500)}}); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	w.Close()
	meta.Close()
	segments, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	if len(segments) < 2 {
		t.Fatalf("%d segment files; the test wants the log to rotate", len(segments))
	}

	// Reopened with zeros ahead (the tail is reopened for writing) and
	// then with the plain file system: both read every entry, and take
	// more after them.
	last := uint64(n)
	for _, vfs := range []types.VFS{zeroAheadFS{walfs.New()}, walfs.New()} {
		w, meta = open(vfs)
		for i := uint64(1); i <= n; i++ {
			var got raft.Log
			if err := w.GetLog(i, &got); err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if !bytes.Equal(got.Data, bytes.Repeat([]byte{byte(i)}, 500)) {
				t.Fatalf("entry %d reads back different", i)
			}
		}
		last++
		if err := w.StoreLogs([]*raft.Log{{Index: last, Term: 1, Type: raft.LogCommand, Data: []byte("more")}}); err != nil {
			t.Fatalf("store after reopen: %v", err)
		}
		w.Close()
		meta.Close()
	}
}
