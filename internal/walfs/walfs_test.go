package walfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fifoq/fifoq/internal/third_party/raftwal/types"
)

// TestMain fails the tests if a spare's goroutine outlives its FS.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testSize = 8 << 20

func newFS(t *testing.T, dir string) *FS {
	t.Helper()
	fs, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fs.Close(); err != nil {
			t.Error(err)
		}
	})
	return fs
}

// needSpares skips a test of spares where walfs prepares none.
func needSpares(t *testing.T) {
	t.Helper()
	if !sparesSupported {
		t.Skip("spares are prepared on Linux only")
	}
}

// create creates name in dir through fs, and closes it when the test ends.
func create(t *testing.T, fs *FS, dir, name string, size int64) types.WritableFile {
	t.Helper()
	f, err := fs.Create(dir, name, uint64(size))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// waitSpare waits until no spare is being prepared.
func (fs *FS) waitSpare() { fs.wg.Wait() }

// fillPastHalf creates a.wal of size bytes in dir and writes its last
// byte, which asks for a spare; the caller closes the file.
func fillPastHalf(t *testing.T, fs *FS, dir string, size int64) types.WritableFile {
	t.Helper()
	a, err := fs.Create(dir, "a.wal", uint64(size))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte{1}, size-1); err != nil {
		t.Fatal(err)
	}
	return a
}

// noSpare fails the test if a spare file is in dir.
func noSpare(t *testing.T, dir, why string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, SpareName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: %v", why, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func allZero(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("%s: byte %d is not zero", path, i)
	}
}

// TestFirstSegmentIsPreallocated: with no spare ready, Create makes the
// file as raft-wal does (full size) and writes in its first half ask for
// no spare.
func TestFirstSegmentIsPreallocated(t *testing.T) {
	dir := t.TempDir()
	fs := newFS(t, dir)
	f := create(t, fs, dir, "a.wal", testSize)
	if got := fileSize(t, filepath.Join(dir, "a.wal")); got != testSize {
		t.Fatalf("size %d, want %d", got, testSize)
	}
	if _, err := f.WriteAt([]byte("hello"), testSize/2-5); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.waitSpare()
	noSpare(t, dir, "a spare was prepared for a segment less than half full")
	if got := fs.Stats(); got.FallbackFiles != 1 || got.SparesUsed+got.SparesFailed+got.SparesSkipped+got.AheadFailed != 0 {
		t.Fatalf("stats %+v", got)
	}
}

// TestZeroAheadKeepsWrites: a preallocated segment is zeroed in place
// while it is being written, and every byte written before, during and
// after the zeroing reads back; the rest of the segment reads as zeros
// and was all zeroed.
func TestZeroAheadKeepsWrites(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	fs := newFS(t, dir)
	f := create(t, fs, dir, "a.wal", testSize)
	var want []byte
	write := func(upTo int64) {
		t.Helper()
		for int64(len(want)) < upTo {
			rec := bytes.Repeat([]byte(fmt.Sprintf("<%07d>", len(want))), 300)
			if _, err := f.WriteAt(rec, int64(len(want))); err != nil {
				t.Fatal(err)
			}
			want = append(want, rec...)
		}
	}
	// Past a sixteenth: the zeroing starts. Let it write its first chunk
	// before writing on, so that it has written zeros past what was
	// written then, where the next writes go.
	write(testSize/aheadStart + 1)
	deadline := time.Now().Add(10 * time.Second)
	for fs.Stats().ZeroedAhead == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no zeroing: %+v", fs.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	write(testSize / 4)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	write(testSize * 3 / 8)
	fs.waitSpare() // the zeroing ends at the segment's end
	if st := fs.Stats(); st.AheadFailed != 0 || st.ZeroedAhead < testSize*5/8-aheadWrite {
		t.Fatalf("stats %+v: want at least %d bytes zeroed ahead", st, testSize*5/8-aheadWrite)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != testSize {
		t.Fatalf("size %d, want %d", len(got), testSize)
	}
	if i := firstDiff(got[:len(want)], want); i >= 0 {
		t.Fatalf("byte %d of what was written reads %q, want %q", i, got[i], want[i])
	}
	if i := bytes.IndexFunc(got[len(want):], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("byte %d past the writes is not zero", len(want)+i)
	}
}

// TestZeroAheadStopsAtNextSegment: creating the next segment stops the
// zeroing of the one before, which raft-wal has sealed.
func TestZeroAheadStopsAtNextSegment(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	fs := newFS(t, dir)
	a := create(t, fs, dir, "a.wal", testSize)
	if _, err := a.WriteAt([]byte{1}, testSize/aheadStart); err != nil {
		t.Fatal(err)
	}
	create(t, fs, dir, "b.wal", testSize)
	fs.waitSpare()
	if st := fs.Stats(); st.ZeroedAhead >= testSize-testSize/aheadStart-aheadWrite {
		t.Fatalf("stats %+v: the sealed segment was zeroed to its end", st)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// TestSpareBecomesNextSegment: a write past half a segment prepares a
// zeroed spare of the same size, and the next Create renames that very
// file into place.
func TestSpareBecomesNextSegment(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	var created []bool
	fs, err := New(dir, 0, func(fromSpare bool) { created = append(created, fromSpare) })
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	a := create(t, fs, dir, "a.wal", testSize)
	if _, err := a.WriteAt([]byte("past half"), testSize/2); err != nil {
		t.Fatal(err)
	}
	fs.waitSpare()
	spare := filepath.Join(dir, SpareName)
	if got := fileSize(t, spare); got != testSize {
		t.Fatalf("spare size %d, want %d", got, testSize)
	}
	allZero(t, spare)
	spareInfo, err := os.Stat(spare)
	if err != nil {
		t.Fatal(err)
	}
	// raft-wal lists only names ending in .wal as segments.
	if filepath.Ext(SpareName) == ".wal" {
		t.Fatalf("spare name %q would be taken for a segment", SpareName)
	}

	b := create(t, fs, dir, "b.wal", testSize)
	bInfo, err := os.Stat(filepath.Join(dir, "b.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(spareInfo, bInfo) {
		t.Fatal("the new segment is not the spare")
	}
	if name := b.(*segmentFile).Name(); name != filepath.Join(dir, "b.wal") {
		t.Fatalf("the segment's file is named %q", name)
	}
	noSpare(t, dir, "spare still there after use")
	if _, err := b.WriteAt([]byte("entry"), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := b.ReadAt(got, 0); err != nil || string(got) != "entry" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if st := fs.Stats(); st.SparesUsed != 1 || st.FallbackFiles != 1 || st.SparesFailed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if len(created) != 2 || created[0] || !created[1] {
		t.Fatalf("onCreate told %v, want [false true]", created)
	}
}

// TestSpareOfAnotherSizeIsDropped: a spare is used only for a segment of
// its own size.
func TestSpareOfAnotherSizeIsDropped(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	fs := newFS(t, dir)
	defer fillPastHalf(t, fs, dir, testSize).Close()
	fs.waitSpare()
	create(t, fs, dir, "b.wal", testSize/2)
	if got := fileSize(t, filepath.Join(dir, "b.wal")); got != testSize/2 {
		t.Fatalf("size %d, want %d", got, testSize/2)
	}
	noSpare(t, dir, "the spare of another size was kept")
	if st := fs.Stats(); st.SparesUsed != 0 || st.FallbackFiles != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCreateNeverReplaces: Create fails on an existing name, with or
// without a spare, and leaves the file alone.
func TestCreateNeverReplaces(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	fs := newFS(t, dir)
	existing := filepath.Join(dir, "b.wal")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Create(dir, "b.wal", testSize); !errors.Is(err, os.ErrExist) {
		t.Fatalf("without a spare: %v, want ErrExist", err)
	}
	defer fillPastHalf(t, fs, dir, testSize).Close()
	fs.waitSpare()
	if _, err := fs.Create(dir, "b.wal", testSize); !errors.Is(err, os.ErrExist) {
		t.Fatalf("with a spare: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep" {
		t.Fatalf("existing file now holds %q", b)
	}
}

// TestNoSpareWhenSpaceIsShort: no spare is prepared unless the file
// system keeps, beside it, another segment and the log's margin.
func TestNoSpareWhenSpaceIsShort(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	free, err := freeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := New(dir, free, nil) // the margin alone is all the space there is
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	defer fillPastHalf(t, fs, dir, testSize).Close()
	fs.waitSpare()
	noSpare(t, dir, "a spare was prepared")
	if st := fs.Stats(); st.SparesSkipped != 1 || st.SparesFailed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestNewRemovesLeftoverSpare: a spare left by an earlier process (perhaps
// half written when it crashed) is removed, never used.
func TestNewRemovesLeftoverSpare(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, SpareName)
	if err := os.WriteFile(leftover, []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := newFS(t, dir)
	noSpare(t, dir, "leftover spare kept")
	create(t, fs, dir, "a.wal", 4096)
	if st := fs.Stats(); st.FallbackFiles != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCloseRemovesSpare: Close removes a ready spare and stops one being
// prepared (goleak in TestMain checks that its goroutine ended).
func TestCloseRemovesSpare(t *testing.T) {
	needSpares(t)
	for _, wait := range []bool{true, false} {
		t.Run(fmt.Sprintf("ready=%v", wait), func(t *testing.T) {
			dir := t.TempDir()
			fs, err := New(dir, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			size := uint64(testSize)
			if !wait {
				size = 1 << 30 // far more than Close lets it write
			}
			defer fillPastHalf(t, fs, dir, int64(size)).Close()
			if wait {
				fs.waitSpare()
			}
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			noSpare(t, dir, "spare left after Close")
			if err := fs.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

// TestReopenedSegmentAsksForSpare: the segment raft-wal reopens at start
// (the tail it was writing) prepares a spare too once past half.
func TestReopenedSegmentAsksForSpare(t *testing.T) {
	needSpares(t)
	dir := t.TempDir()
	fs := newFS(t, dir)
	a, err := fs.Create(dir, "a.wal", testSize)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	w, err := fs.OpenWriter(dir, "a.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("x"), testSize-100); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.waitSpare()
	if got := fileSize(t, filepath.Join(dir, SpareName)); got != testSize {
		t.Fatalf("spare size %d", got)
	}
	r, err := fs.OpenReader(dir, "a.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := make([]byte, 1)
	if _, err := r.ReadAt(b, testSize-100); err != nil && err != io.EOF || b[0] != 'x' {
		t.Fatalf("read %q, %v", b, err)
	}
}
