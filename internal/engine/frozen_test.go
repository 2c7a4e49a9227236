package engine_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/frozentest"
)

// regenerate rewrites the fixtures of the snapshot formats this engine
// writes (versions 2 and 3): `go test ./internal/engine -run Frozen
// -engine.regenerate`, when a version is added. Older fixtures are never
// rewritten: they are what an older fifoq wrote
// (testdata/snapshots/README.md).
var regenerate = flag.Bool("engine.regenerate", false, "write the fixtures of the current snapshot formats into testdata")

// snapshotFixture is the JSON beside a snapshot fixture: where and when
// the engine that wrote it was observed, and what it answered
// (frozentest.Observe); for a snapshot of format 3, the bodies its store
// held, by BodyRef.Off (File 1).
type snapshotFixture struct {
	Region, Account string
	Now             int64
	Probes          frozentest.Probes
	Observations    json.RawMessage
	Bodies          [][]byte `json:",omitempty"`
}

// probes are the deduplication and attempt ids of the rich state.
var probes = frozentest.Probes{DedupIDs: []string{"d0", "d5", "x1", "never-sent"}, AttemptIDs: []string{"attempt-1"}}

// TestFrozenSnapshotFormats restores the committed snapshot of every
// format version the engine reads, with today's code, and asks the
// engine what the engine that wrote it was asked, as it was: every queue,
// attribute, tag, move task, deduplication and attempt record, and every
// message with its attributes, received in rounds. The answers must be
// the same: a field renamed, dropped or read in another order fails here,
// where re-encoding an old version with today's code would pass.
func TestFrozenSnapshotFormats(t *testing.T) {
	if *regenerate {
		writeCurrentSnapshotFixtures(t)
	}
	for _, v := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := filepath.Join("testdata", "snapshots", fmt.Sprintf("v%d", v))
			data, err := os.ReadFile(name + ".bin")
			if err != nil {
				t.Fatalf("no fixture of snapshot format %d (a new version must add one: -engine.regenerate): %v", v, err)
			}
			if got := binary.BigEndian.Uint32(data[8:12]); got != uint32(v) {
				t.Fatalf("%s.bin is a snapshot of format %d", name, got)
			}
			b, err := os.ReadFile(name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var fx snapshotFixture
			if err := json.Unmarshal(b, &fx); err != nil {
				t.Fatal(err)
			}
			if err := engine.VerifySnapshot(bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if v == 3 {
				// Its bodies are in a store: put them back, as a node
				// does for another (InlineBodies), to restore anywhere.
				var inline bytes.Buffer
				err := engine.InlineBodies(&inline, bytes.NewReader(data), func(r engine.BodyRef) (string, error) {
					if r.File != 1 || int(r.Off) >= len(fx.Bodies) || len(fx.Bodies[r.Off]) != int(r.Len) {
						return "", fmt.Errorf("no body %+v in the fixture", r)
					}
					return string(fx.Bodies[r.Off]), nil
				})
				if err != nil {
					t.Fatal(err)
				}
				data = inline.Bytes()
			}
			e := engine.New(engine.Config{Region: fx.Region})
			if err := e.Restore(bytes.NewReader(data)); err != nil {
				t.Fatalf("today's engine cannot restore the snapshot an older one wrote: %v", err)
			}
			got := frozentest.JSON(frozentest.Observe(e, fx.Account, fx.Now, fx.Probes))
			if d, err := frozentest.Diff(fx.Observations, got); err != nil || d != "" {
				t.Errorf("the state restored from %s answers differently than the state that wrote it (%v):\n%s", name, err, d)
			}
		})
	}
}

// writeCurrentSnapshotFixtures writes the fixtures of formats 2 (what
// Snapshot writes) and 3 (bodies by reference, what a node writes for
// itself).
func writeCurrentSnapshotFixtures(t *testing.T) {
	for _, refs := range []bool{false, true} {
		e, now, bodies := engine.FrozenState(t, refs)
		var data []byte
		if refs {
			var err error
			if data, err = engine.FrozenSnapshotByRef(e); err != nil {
				t.Fatal(err)
			}
		} else {
			var b bytes.Buffer
			if err := e.Snapshot(&b); err != nil {
				t.Fatal(err)
			}
			data = b.Bytes()
		}
		fx := struct {
			Region, Account string
			Now             int64
			Probes          frozentest.Probes
			Observations    []frozentest.Observation
			Bodies          [][]byte `json:",omitempty"`
		}{Region: engine.FrozenRegion, Account: engine.FrozenAccount, Now: now, Probes: probes}
		for _, s := range bodies() {
			fx.Bodies = append(fx.Bodies, []byte(s))
		}
		fx.Observations = frozentest.Observe(e, fx.Account, fx.Now, fx.Probes)
		js, err := json.MarshalIndent(fx, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join("testdata", "snapshots", fmt.Sprintf("v%d", binary.BigEndian.Uint32(data[8:12])))
		for path, b := range map[string][]byte{name + ".bin": data, name + ".json": append(js, '\n')} {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", path)
		}
	}
}
