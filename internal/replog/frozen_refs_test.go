package replog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/fifoq/fifoq/internal/engine"
)

// TestFrozenSnapshotFramesWithBodyStore restores the committed snapshot of
// every frame version a node writes for itself, whose bodies stay in its
// body store (frames 4 and 5), beside a copy of the store it was written
// with, as a start does; and puts its bodies back in as a leader does to
// send it to a follower, which restores the result. Both must answer what
// the fifoq that wrote the snapshot answered.
func TestFrozenSnapshotFramesWithBodyStore(t *testing.T) {
	if *regenerate {
		writeRefsFrameFixture(t, filepath.Join("testdata", "snapshots"), fmt.Sprintf("frame-v%d", snapshotFormatVersion))
	}
	for v := snapshotRefsVersion; v <= snapshotFormatVersion; v++ {
		t.Run(fmt.Sprintf("frame-v%d", v), func(t *testing.T) {
			name := filepath.Join("testdata", "snapshots", fmt.Sprintf("frame-v%d", v))
			data, err := os.ReadFile(name + ".bin")
			if err != nil {
				t.Fatalf("no fixture of snapshot frame %d (a new version must add one: -replog.regenerate): %v", v, err)
			}
			if got := binary.BigEndian.Uint32(data[8:12]); got != uint32(v) {
				t.Fatalf("%s.bin is a snapshot of frame %d", name, got)
			}
			fx := readFrameFixture(t, name+".json")

			b := copyFrozenBodies(t, name+".bodies")
			f := &fsm{eng: engine.New(engine.Config{Region: fx.Region, Bodies: b}), bodies: b}
			if err := f.restore(io.NopCloser(bytes.NewReader(data)), true); err != nil {
				t.Fatalf("today's fifoq cannot restore at its start the snapshot an older one wrote: %v", err)
			}
			checkObservations(t, name+" (at a start)", fx, f.eng)

			b = copyFrozenBodies(t, name+".bodies")
			s := &snapshotStore{dir: t.TempDir(), bodies: b}
			_, inlined, err := s.inline(bufio.NewReader(bytes.NewReader(data)))
			if err != nil {
				t.Fatalf("today's fifoq cannot put back the bodies of the snapshot an older one wrote: %v", err)
			}
			follower := &fsm{eng: engine.New(engine.Config{Region: fx.Region})}
			if err := follower.Restore(inlined); err != nil {
				t.Fatalf("the snapshot with its bodies put back does not restore: %v", err)
			}
			checkObservations(t, name+" (sent to a follower)", fx, follower.eng)
		})
	}
}

// copyFrozenBodies opens a copy of the committed body store dir, so that
// a restore, which cuts the store back to its snapshot's position, never
// writes to the fixture.
func copyFrozenBodies(t *testing.T, dir string) *bodies {
	t.Helper()
	to := filepath.Join(t.TempDir(), bodiesDir)
	if err := os.Mkdir(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := openBodies(to, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.store.Close() })
	return b
}

// writeRefsFrameFixture writes the snapshot frame this fifoq writes for
// itself (snapshotFormatVersion), of the state genCommands leave in an
// engine whose bodies are in a store, as name.bin, with the store as
// name.bodies/ and the engine's answers as name.json. testdata/gen/
// frames_refs.go.txt did the same at the commit that wrote frame 4.
func writeRefsFrameFixture(t *testing.T, dir, name string) {
	if err := os.RemoveAll(filepath.Join(dir, name+".bodies")); err != nil {
		t.Fatal(err)
	}
	b, err := openBodies(filepath.Join(dir, name+".bodies"), 0)
	if err != nil {
		t.Fatal(err)
	}
	frame, answers := genFrame(t, b)
	if err := b.store.Close(); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, filepath.Join(dir, name+".bin"), frame)
	writeFixture(t, filepath.Join(dir, name+".json"), answers)
}
