package bodystore

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// openBodyFiles counts the descriptors this process holds open on files
// of dir, from /proc/self/fd.
func openBodyFiles(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count open files: %v", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestOpenFilesAreBounded: a store of many more files than it may keep
// open (a backlog of bodies many times its file size) holds no more than
// DefaultOpenFiles descriptors, and the files it closed still sync, read,
// and are removed, truncated and reopened as before.
// One descriptor a file
// ran a server with a small file size out of descriptors ("too many open
// files", a storage fault) once its live bodies passed a few hundred
// files.
func TestOpenFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	const files = 3 * DefaultOpenFiles
	s := open(t, dir, 4<<10)
	var refs []Ref
	var bodies [][]byte
	for i := 0; len(refs) == 0 || refs[len(refs)-1].File < files; i++ {
		b := body(i, 1000)
		ref, err := s.Append(string(b))
		if err != nil {
			t.Fatal(err)
		}
		refs, bodies = append(refs, ref), append(bodies, b)
	}
	if n := openBodyFiles(t, dir); n > DefaultOpenFiles {
		t.Fatalf("%d files written: %d open, more than %d", files, n, DefaultOpenFiles)
	}
	// The files closed are synced (the store is not synced as it is
	// written, only before a snapshot refers to it), and read.
	if _, err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs {
		mustRead(t, s, ref, bodies[i])
	}
	if n := openBodyFiles(t, dir); n > DefaultOpenFiles {
		t.Fatalf("%d files synced and read: %d open, more than %d", files, n, DefaultOpenFiles)
	}
	if err := s.Remove(refs[0].File); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, name(refs[0].File))); !os.IsNotExist(err) {
		t.Fatalf("a removed file is still there: %v", err)
	}
	mid := refs[len(refs)/2]
	if err := s.TruncateAfter(Position{File: mid.File, Off: mid.Off}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(t, dir, 4<<10)
	if n := openBodyFiles(t, dir); n > 1 {
		t.Fatalf("a store of %d files opened with %d of them open", len(s2.Stats()), n)
	}
	for i, ref := range refs[:len(refs)/2] {
		if ref.File == refs[0].File {
			continue
		}
		mustRead(t, s2, ref, bodies[i])
	}
	if n := openBodyFiles(t, dir); n > DefaultOpenFiles {
		t.Fatalf("reopened and read: %d open, more than %d", n, DefaultOpenFiles)
	}
}

// TestHandlesUnderConcurrentUse reads from many goroutines while the
// appender appends, syncs and removes old files, with room for only four
// open files, so that files are closed and opened again under the readers
// all the time (run it with -race): every read returns its body, and no
// more files stay open than the bound and the files in use.
func TestHandlesUnderConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4<<10)
	s.handles.max = 4
	type rec struct {
		ref Ref
		i   int
	}
	var mu sync.RWMutex // readers share it; the appender takes it to change live
	var live []rec
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			var buf []byte
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.RLock()
				if len(live) == 0 {
					mu.RUnlock()
					continue
				}
				x := live[rng.IntN(len(live))]
				// Read under mu: the appender removes files only while it
				// holds mu, after dropping their records from live.
				got, err := s.Read(x.ref, buf)
				mu.RUnlock()
				if err != nil {
					t.Errorf("read %+v: %v", x.ref, err)
					return
				}
				if !bytes.Equal(got, body(x.i, 500)) {
					t.Errorf("read %+v: not the body appended", x.ref)
					return
				}
				buf = got
				reads.Add(1)
			}
		}()
	}
	for i := range 3000 {
		ref, err := s.Append(string(body(i, 500)))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		live = append(live, rec{ref, i})
		mu.Unlock()
		if i%100 == 99 {
			if _, err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			// Drop the oldest files' records and remove the files.
			mu.Lock()
			cut := live[len(live)/2].ref.File
			var keep []rec
			for _, x := range live {
				if x.ref.File >= cut {
					keep = append(keep, x)
				}
			}
			live = keep
			for _, st := range s.Stats() {
				if st.ID < cut && !st.Active {
					if err := s.Remove(st.ID); err != nil {
						mu.Unlock()
						t.Fatal(err)
					}
				}
			}
			mu.Unlock()
		}
	}
	close(stop)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read ran beside the appends")
	}
	if n := openBodyFiles(t, dir); n > 4 {
		t.Fatalf("%d files open with room for 4", n)
	}
}
