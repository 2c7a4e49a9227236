package backup

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/frozentest"
)

// regenerate rewrites the fixture of the current backup format; older
// versions' fixtures are never rewritten (testdata/README.md).
var regenerate = flag.Bool("backup.regenerate", false, "write the fixture of the current backup format into testdata")

// TestFrozenBackupFormat reads the committed backup of every format
// version with today's code: the header must decode field by field to
// what the fifoq that wrote it wrote (vN.json), and the snapshot to the
// same bytes (the command log's snapshot frame, frozen in
// internal/replog/testdata/snapshots).
func TestFrozenBackupFormat(t *testing.T) {
	name := filepath.Join("testdata", "v1")
	snap, err := os.ReadFile(filepath.Join("..", "replog", "testdata", "snapshots", "frame-v3.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if *regenerate {
		// The header as replog.Raft.Backup fills it, with a fixed time.
		hdr := Header{Created: time.Date(2026, 11, 27, 12, 0, 0, 123456789, time.UTC), Node: "n1", Version: "v0.9.0-frozen",
			Index: 4242, Term: 7, Size: int64(len(snap)), Messages: 5}
		var b bytes.Buffer
		if _, err := Write(&b, hdr, bytes.NewReader(snap)); err != nil {
			t.Fatal(err)
		}
		for path, data := range map[string][]byte{name + ".bin": b.Bytes(), name + ".json": frozentest.JSON(hdr)} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := os.ReadFile(name + ".bin")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	hdr, r, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("today's fifoq cannot read a backup an older one wrote: %v", err)
	}
	if d, err := frozentest.Diff(want, frozentest.JSON(hdr)); err != nil || d != "" {
		t.Errorf("%s's header decodes differently than it was written (%v):\n%s", name, err, d)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, snap) {
		t.Errorf("%s holds another snapshot than the one it was written with", name)
	}
}
