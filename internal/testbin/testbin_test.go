package testbin

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInputsCoverTheBinary checks that what Track opens covers the sources
// a change to which must rerun the tests of the binary: fifoq's own
// packages, the patched raft-wal under internal/third_party/raftwal, the console's
// embedded assets, and the module's go.mod and go.sum; and no test files.
func TestInputsCoverTheBinary(t *testing.T) {
	files, err := inputs(nil)
	if err != nil {
		t.Fatal(err)
	}
	// go list names files by absolute path; the module root is two levels
	// up from this package.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rel := make([]string, 0, len(files))
	for _, f := range files {
		r, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, filepath.ToSlash(r))
	}
	for _, want := range []string{
		"go.mod", "go.sum",
		"cmd/fifoq/main.go",
		"internal/replog/raft.go",
		"internal/server/receive.go",
		"internal/third_party/raftwal/wal.go",
		"internal/third_party/raftwal/segment/writer.go",
		"internal/console/assets/app.js",
	} {
		if !slices.Contains(rel, want) {
			t.Errorf("Track would not open %s", want)
		}
	}
	for _, f := range rel {
		if strings.HasSuffix(f, "_test.go") {
			t.Errorf("Track would open the test file %s", f)
		}
		if strings.HasPrefix(f, "..") {
			t.Errorf("Track would open %s, outside the module", f)
		}
	}
}
