package bodystore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// body returns a body of n bytes that differs from every other (i, n).
func body(i, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), uint64(n)))
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// open opens a store in dir that the test closes at its end.
func open(t *testing.T, dir string, fileSize int64) *Store {
	t.Helper()
	s, err := Open(dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustRead reads ref and checks it holds want.
func mustRead(t *testing.T, s *Store, ref Ref, want []byte) {
	t.Helper()
	got, err := s.Read(ref, nil)
	if err != nil {
		t.Fatalf("read %+v: %v", ref, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %+v: %d bytes, not the %d appended", ref, len(got), len(want))
	}
}

func TestAppendReadAcrossFiles(t *testing.T) {
	s := open(t, t.TempDir(), 64<<10)
	var refs []Ref
	var bodies [][]byte
	for i := range 200 {
		b := body(i, i*97%5000)
		ref, err := s.Append(string(b))
		if err != nil {
			t.Fatal(err)
		}
		refs, bodies = append(refs, ref), append(bodies, b)
	}
	buf := make([]byte, 0, 16)
	for i, ref := range refs {
		got, err := s.Read(ref, buf)
		if err != nil || !bytes.Equal(got, bodies[i]) {
			t.Fatalf("body %d at %+v: %v (%d bytes, want %d)", i, ref, err, len(got), len(bodies[i]))
		}
		buf = got
	}
	st := s.Stats()
	if len(st) < 3 || !st[len(st)-1].Active {
		t.Fatalf("stats %+v: want several files, the last active", st)
	}
	for _, f := range st {
		if f.Size > 64<<10 && f.Size > int64(headerSize+5000) {
			t.Errorf("file %d holds %d bytes, over the file size", f.ID, f.Size)
		}
		if f.Live != f.Size {
			t.Errorf("file %d: %d live of %d, want all live", f.ID, f.Live, f.Size)
		}
	}
	if _, err := s.Append(string(make([]byte, MaxBody+1))); err == nil {
		t.Error("a body over MaxBody was appended")
	}
}

// TestDamageIsReported checks that a record changed on disk, cut short,
// or named by a wrong Ref is reported as damaged, naming the file and
// offset, and never read as a body.
func TestDamageIsReported(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 0)
	a, _ := s.Append(string(body(1, 300)))
	b, _ := s.Append(string(body(2, 300)))
	c, _ := s.Append(string(body(3, 300)))
	// Reopened, the store reads the records from the file, not from the
	// memory that keeps the last ones written.
	s.Close()
	s = open(t, dir, 0)
	path := filepath.Join(dir, name(a.File))

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flip := func(off int64) {
		one := make([]byte, 1)
		f.ReadAt(one, off)
		one[0] ^= 0x40
		f.WriteAt(one, off)
	}
	flip(int64(b.Off) + headerSize + 150) // in b's body
	flip(int64(c.Off) + 5)                // in c's checksum
	for _, tc := range []struct {
		name string
		ref  Ref
	}{
		{"body changed", b},
		{"checksum changed", c},
		{"wrong length", Ref{File: a.File, Off: a.Off, Len: a.Len - 1}},
		{"wrong offset", Ref{File: a.File, Off: a.Off + 1, Len: a.Len}},
		{"past the end", Ref{File: a.File, Off: c.Off + 400, Len: 10}},
	} {
		got, err := s.Read(tc.ref, nil)
		if !errors.Is(err, ErrCorrupt) || got != nil {
			t.Errorf("%s: read = %d bytes, %v; want ErrCorrupt", tc.name, len(got), err)
			continue
		}
		if want := fmt.Sprintf("offset %d", tc.ref.Off); !bytes.Contains([]byte(err.Error()), []byte(want)) || !bytes.Contains([]byte(err.Error()), []byte(name(a.File))) {
			t.Errorf("%s: %v does not name the file and %s", tc.name, err, want)
		}
	}
	mustRead(t, s, a, body(1, 300))
	if _, err := s.Read(Ref{File: 99, Len: 1}, nil); err == nil {
		t.Error("a read from a file that does not exist succeeded")
	}
}

// TestTruncateAfterKeepsWhatWasSynced is a restart: what was appended
// before a synced Position reads back after the store is reopened and cut
// back to it; what came after is gone, and appends go on after it.
func TestTruncateAfterKeepsWhatWasSynced(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var kept []Ref
	for i := range 10 {
		ref, err := s.Append(string(body(i, 1000)))
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, ref)
	}
	pos, err := s.Sync()
	if err != nil {
		t.Fatal(err)
	}
	if pos != s.Position() {
		t.Fatalf("Sync's position %+v, Position %+v", pos, s.Position())
	}
	for i := range 10 { // after the position: a replay appends them again
		if _, err := s.Append(string(body(100+i, 1000))); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	s = open(t, dir, 4096)
	if err := s.TruncateAfter(pos); err != nil {
		t.Fatal(err)
	}
	if s.Position() != pos {
		t.Fatalf("after TruncateAfter(%+v), Position %+v", pos, s.Position())
	}
	for i, ref := range kept {
		mustRead(t, s, ref, body(i, 1000))
	}
	for _, f := range s.Stats() {
		if f.ID > pos.File {
			t.Errorf("file %d, after the position's file %d, is still there", f.ID, pos.File)
		}
	}
	ref, err := s.Append(string(body(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if ref.File < pos.File || ref.File == pos.File && ref.Off < pos.Off {
		t.Fatalf("an append after TruncateAfter(%+v) went to %+v, before it", pos, ref)
	}
	mustRead(t, s, ref, body(7, 7))
}

// TestTruncateToAnEmptyStore is the restart of a node with no snapshot: the
// whole log replays, so every body goes.
func TestTruncateToAnEmptyStore(t *testing.T) {
	s := open(t, t.TempDir(), 1024)
	for i := range 5 {
		s.Append(string(body(i, 600)))
	}
	if err := s.TruncateAfter(Position{}); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); len(st) != 0 {
		t.Fatalf("stats after TruncateAfter(zero): %+v", st)
	}
	ref, err := s.Append(string(body(9, 10)))
	if err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, ref, body(9, 10))
}

// TestLiveBytesAndRewrite checks the accounting that chooses what to
// reclaim, and the reclaiming: live records rewritten out of a mostly dead
// file, which is then removed.
func TestLiveBytesAndRewrite(t *testing.T) {
	s := open(t, t.TempDir(), 8<<10)
	var refs []Ref
	for i := range 20 {
		ref, _ := s.Append(string(body(i, 1000)))
		refs = append(refs, ref)
	}
	first := refs[0].File
	var inFirst []int
	for i, ref := range refs {
		if ref.File == first {
			inFirst = append(inFirst, i)
		}
	}
	// All but one record of the first file die.
	for _, i := range inFirst[1:] {
		s.Release(refs[i])
	}
	st := s.Stats()
	if st[0].ID != first || st[0].Live != headerSize+1000 {
		t.Fatalf("first file %+v: want %d live bytes", st[0], headerSize+1000)
	}
	survivor := inFirst[0]
	moved, _, err := s.Rewrite(refs[survivor], nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Release(refs[survivor])
	if err := s.Remove(first); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, moved, body(survivor, 1000))
	if _, err := s.Read(refs[survivor], nil); err == nil {
		t.Fatal("a record of a removed file still reads")
	}
	if err := s.Remove(s.Position().File); err == nil {
		t.Fatal("the active file was removed")
	}

	// A restored state counts its references again.
	s.ResetLive()
	if err := s.Hold(moved); err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(refs[survivor]); err == nil {
		t.Error("Hold took a reference into a removed file")
	}
	if err := s.Hold(Ref{File: moved.File, Off: moved.Off, Len: 1 << 30}); err == nil {
		t.Error("Hold took a reference past its file's end")
	}
	for _, f := range s.Stats() {
		want := int64(0)
		if f.ID == moved.File {
			want = headerSize + 1000
		}
		if f.Live != want {
			t.Errorf("file %d: %d live bytes after ResetLive and one Hold, want %d", f.ID, f.Live, want)
		}
	}
}

// TestSyncThroughBesideAppends syncs, from another goroutine, the records
// before a position while the appender goes on (go test -race), and
// refuses a position whose records are still gathered in memory.
func TestSyncThroughBesideAppends(t *testing.T) {
	s := open(t, t.TempDir(), 64<<10)
	for i := range 100 {
		if _, err := s.Append(string(body(i, 1000))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SyncThrough(s.Position()); err == nil {
		t.Fatal("SyncThrough took a position whose records are not written")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	p := s.Position()
	done := make(chan error)
	go func() {
		var err error
		for i := range 300 {
			if _, err = s.Append(string(body(i, 1000))); err != nil {
				break
			}
		}
		done <- err
	}()
	if err := s.SyncThrough(p); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id, f := range s.files {
		if id < p.File && f.synced != f.size || id == p.File && f.synced < int64(p.Off) {
			t.Errorf("file %d: %d of %d bytes synced, position %+v", id, f.synced, f.size, p)
		}
	}
}

// TestConcurrentReads runs reads beside the appender, as receives beside
// sends (go test -race).
func TestConcurrentReads(t *testing.T) {
	s := open(t, t.TempDir(), 32<<10)
	refs := make(chan Ref, 1000)
	done := make(chan error)
	go func() {
		var err error
		for ref := range refs {
			var got []byte
			if got, err = s.Read(ref, nil); err == nil && !bytes.Equal(got, body(int(ref.Len), int(ref.Len))) {
				err = fmt.Errorf("%+v read back wrong", ref)
			}
			if err != nil {
				break
			}
		}
		done <- err
	}()
	for i := range 1000 {
		ref, err := s.Append(string(body(i, i)))
		if err != nil {
			t.Fatal(err)
		}
		refs <- ref
	}
	close(refs)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// FuzzDamagedRecords appends bodies, reopens the store, damages the file
// (one byte changed anywhere, or the file cut short anywhere), and reads
// every record back:
// each read must give the body appended or an error, never another body.
// CRC-32C detects every error within 32 consecutive bits, so a one-byte
// change is always caught, in the body, its length or its checksum.
func FuzzDamagedRecords(f *testing.F) {
	f.Add(uint16(3), uint32(0), byte(1), false)
	f.Add(uint16(5), uint32(12), byte(0x80), false)
	f.Add(uint16(7), uint32(100), byte(0), true)
	f.Fuzz(func(t *testing.T, n uint16, at uint32, mask byte, cut bool) {
		dir := t.TempDir()
		s, err := Open(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The store is reopened below: close whichever one is open last,
		// or every input leaks its files and the fuzzer runs out of them.
		defer func() { s.Close() }()
		count := int(n%8) + 1
		refs := make([]Ref, count)
		for i := range refs {
			if refs[i], err = s.Append(string(body(i, int(n)%300+i))); err != nil {
				t.Fatal(err)
			}
		}
		// Reopened, the store reads the records from the file, not from
		// the memory that keeps the last ones written.
		s.Close()
		if s, err = Open(dir, 0); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name(refs[0].File))
		st, _ := os.Stat(path)
		off := int64(at) % (st.Size() + 1)
		if cut {
			if err := os.Truncate(path, off); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if s, err = Open(dir, 0); err != nil {
				t.Fatal(err)
			}
		} else if off < st.Size() && mask != 0 {
			file, _ := os.OpenFile(path, os.O_RDWR, 0)
			one := make([]byte, 1)
			file.ReadAt(one, off)
			one[0] ^= mask
			file.WriteAt(one, off)
			file.Close()
		}
		for i, ref := range refs {
			got, err := s.Read(ref, nil)
			if err == nil && !bytes.Equal(got, body(i, int(n)%300+i)) {
				t.Fatalf("record %d at %+v read back as another body", i, ref)
			}
		}
	})
}

// TestRecentRecordsFromMemory checks the two places a read finds a record
// besides its file: gathered and not yet written, and written last; and
// that records read back the same from the file once they are out of both.
func TestRecentRecordsFromMemory(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 0)
	var refs []Ref
	var bodies [][]byte
	// Past three buffers' worth: some records only on disk, some in the
	// buffer written last, the newest gathered.
	for i := 0; len(refs) == 0 || int64(refs[len(refs)-1].Off) < 3*bufSize; i++ {
		b := body(i, 64<<10)
		ref, err := s.Append(string(b))
		if err != nil {
			t.Fatal(err)
		}
		refs, bodies = append(refs, ref), append(bodies, b)
	}
	if st, _ := os.Stat(filepath.Join(dir, name(refs[0].File))); st.Size() < 2*bufSize || st.Size() > 3*bufSize+bufSize {
		t.Fatalf("the file holds %d bytes of %d appended: want the full buffers written, the last gathered", st.Size(), refs[len(refs)-1].Off)
	}
	for i, ref := range refs {
		mustRead(t, s, ref, bodies[i])
	}
	if _, err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 0)
	for i, ref := range refs {
		mustRead(t, s, ref, bodies[i])
	}
}

// TestReleaseIfIdle checks that a store keeps its buffers while it is
// appended to, gives them back once a look finds nothing appended since
// the one before, and reads the records they held from the file after.
func TestReleaseIfIdle(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	var refs []Ref
	var bodies [][]byte
	add := func(n int) {
		for range n {
			b := body(len(refs), 4<<10)
			ref, err := s.Append(string(b))
			if err != nil {
				t.Fatal(err)
			}
			refs, bodies = append(refs, ref), append(bodies, b)
		}
	}
	buffers := s.BufferBytes
	// Past one buffer's worth: one written and kept, one gathering.
	add(bufSize/(4<<10) + 100)
	if err := s.ReleaseIfIdle(); err != nil {
		t.Fatal(err)
	}
	if buffers() < bufSize {
		t.Fatalf("a store appended to since the last look holds %d bytes of buffers: it gave them back", buffers())
	}
	if err := s.ReleaseIfIdle(); err != nil {
		t.Fatal(err)
	}
	if n := buffers(); n != 0 {
		t.Fatalf("a store idle since the last look still holds %d bytes of buffers", n)
	}
	for i, ref := range refs {
		mustRead(t, s, ref, bodies[i])
	}
	// Appended to again, it gathers again, and keeps what it gathers
	// until a look finds it idle once more.
	add(10)
	if err := s.ReleaseIfIdle(); err != nil {
		t.Fatal(err)
	}
	if buffers() == 0 {
		t.Fatal("a store appended to since the last look gave its buffers back")
	}
	for i, ref := range refs {
		mustRead(t, s, ref, bodies[i])
	}
	if _, err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestGrowBuf: the gathering buffer starts at minBufCap, doubles, keeps
// what it held, and never grows past bufSize plus one record's room
// unless a single record needs more.
func TestGrowBuf(t *testing.T) {
	buf := growBuf(nil, 10)
	if cap(buf) != minBufCap || len(buf) != 0 {
		t.Fatalf("a new buffer: len %d cap %d, want 0 and %d", len(buf), cap(buf), minBufCap)
	}
	buf = append(buf, "kept"...)
	if got := growBuf(buf, 100); cap(got) != cap(buf) || &got[0] != &buf[0] {
		t.Fatal("a buffer with room was copied")
	}
	caps := []int{}
	for cap(buf) < bufSize+minBufCap && len(caps) < 40 {
		buf = growBuf(buf, cap(buf)-len(buf)+1)
		buf = buf[:cap(buf)/2+1]
		caps = append(caps, cap(buf))
	}
	for i := 1; i < len(caps); i++ {
		if caps[i] != 2*caps[i-1] && caps[i] != bufSize+minBufCap {
			t.Fatalf("capacities %v: %d follows %d, neither its double nor the cap", caps, caps[i], caps[i-1])
		}
	}
	if c := caps[len(caps)-1]; c != bufSize+minBufCap {
		t.Fatalf("capacities %v: the last is not bufSize plus one record's room", caps)
	}
	if string(buf[:4]) != "kept" {
		t.Fatalf("growing lost what the buffer held: %q", buf[:4])
	}
	if got := growBuf(buf[:bufSize], 2*bufSize); cap(got) < 3*bufSize {
		t.Fatalf("room for a record of %d past %d bytes: cap %d", 2*bufSize, bufSize, cap(got))
	}
}
