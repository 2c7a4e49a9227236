package bodystore

import (
	"os"
	"path/filepath"
	"strings"
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
