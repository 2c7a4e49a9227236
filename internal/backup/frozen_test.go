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
var regenerate = flag.Bool("backup.regenerate", false, "write the fixture of the newest backup format into testdata")

// TestFrozenBackupFormat reads the committed backup of format 1 with
// today's code: the header must decode field by field to what the fifoq
// that wrote it wrote (v1.json), and the snapshot to the same bytes (the
// command log's snapshot frame, frozen in
// internal/replog/testdata/snapshots).
func TestFrozenBackupFormat(t *testing.T) {
	name := filepath.Join("testdata", "v1")
	snap, err := os.ReadFile(filepath.Join("..", "replog", "testdata", "snapshots", "frame-v3.bin"))
	if err != nil {
		t.Fatal(err)
	}
	data, want := readFixture(t, name)
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

// TestFrozenGroupsBackupFormat reads the committed backup of several
// groups (format 2) with today's code: its header and its parts' headers
// must decode field by field to what was written (v2.json), and each part
// to the snapshot it was written with (the frozen snapshot frame, cut in
// two parts of different lengths).
func TestFrozenGroupsBackupFormat(t *testing.T) {
	name := filepath.Join("testdata", "v2")
	frame, err := os.ReadFile(filepath.Join("..", "replog", "testdata", "snapshots", "frame-v3.bin"))
	if err != nil {
		t.Fatal(err)
	}
	snaps := map[uint32][]byte{2: frame[:len(frame)/3], 0: frame}
	type frozen struct {
		File  Header   `json:"file"`
		Parts []Header `json:"parts"`
	}
	if *regenerate {
		at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
		want := frozen{File: Header{Created: at, Node: "n1", Version: "v0.9.0-frozen", Region: "us-east-1", Groups: []uint32{2, 0}}}
		var b bytes.Buffer
		if err := WriteGroupsHeader(&b, want.File); err != nil {
			t.Fatal(err)
		}
		for i, id := range want.File.Groups {
			hdr := Header{Created: at, Node: "n1", Version: "v0.9.0-frozen", Region: "us-east-1", Shard: id,
				Index: uint64(100 + i), Term: 3, Size: int64(len(snaps[id])), Messages: int64(i + 1)}
			if _, err := Write(&b, hdr, bytes.NewReader(snaps[id])); err != nil {
				t.Fatal(err)
			}
			want.Parts = append(want.Parts, hdr)
		}
		for path, data := range map[string][]byte{name + ".bin": b.Bytes(), name + ".json": frozentest.JSON(want)} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, want := readFixture(t, name)
	f, err := Open(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("today's fifoq cannot open a backup of several groups an older one wrote: %v", err)
	}
	got := frozen{File: f.Header}
	for {
		hdr, r, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, snaps[hdr.Shard]) {
			t.Errorf("%s's part of group %d holds another snapshot than the one it was written with", name, hdr.Shard)
		}
		got.Parts = append(got.Parts, hdr)
	}
	if d, err := frozentest.Diff(want, frozentest.JSON(got)); err != nil || d != "" {
		t.Errorf("%s's headers decode differently than they were written (%v):\n%s", name, err, d)
	}
}

// readFixture reads a frozen backup (name.bin) and its headers as written
// (name.json).
func readFixture(t *testing.T, name string) (data, headers []byte) {
	t.Helper()
	data, err := os.ReadFile(name + ".bin")
	if err != nil {
		t.Fatal(err)
	}
	headers, err = os.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return data, headers
}
