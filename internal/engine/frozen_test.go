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
// writes (versions 2 and 4): `go test ./internal/engine -run Frozen
// -engine.regenerate`, when a version is added. Older fixtures are never
// rewritten: they are what an older fifoq wrote
// (testdata/snapshots/README.md).
var regenerate = flag.Bool("engine.regenerate", false, "write the fixtures of the current snapshot formats into testdata")

// snapshotFixture is the JSON beside a snapshot fixture: where and when
// the engine that wrote it was observed, and what it answered
// (frozentest.Observe); for a snapshot of format 3 or 4, the payloads its
// store held, by BodyRef.Off (File 1).
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
	for _, v := range []int{1, 2, 3, 4} {
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
			if v < 3 {
				checkFrozenRestore(t, name, &fx, data, nil)
				return
			}
			// Its bodies are in a store. A node restarting beside the
			// store restores it as it is...
			store := &fixtureStore{payloads: fx.Bodies}
			checkFrozenRestore(t, name, &fx, data, store)
			// ...and writes its next snapshot by reference from that
			// state, a version 4 one, whatever its store's payloads
			// were written by.
			e := engine.New(engine.Config{Region: fx.Region, Bodies: store})
			if err := e.Restore(bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			again, err := engine.FrozenSnapshotByRef(e)
			if err != nil {
				t.Fatal(err)
			}
			if got := binary.BigEndian.Uint32(again[8:12]); got != 4 {
				t.Fatalf("a snapshot by reference is of format %d, want 4", got)
			}
			// Another node gets the bodies put back (InlineBodies):
			// format 2, restored anywhere.
			for _, snap := range [][]byte{data, again} {
				var inline bytes.Buffer
				if err := engine.InlineBodies(&inline, bytes.NewReader(snap), store.Get); err != nil {
					t.Fatal(err)
				}
				checkFrozenRestore(t, name, &fx, inline.Bytes(), nil)
			}
		})
	}
}

// checkFrozenRestore restores data into an engine (with store as its
// BodyStore, if not nil) and checks that it answers as fx says the engine
// that wrote it did.
func checkFrozenRestore(t *testing.T, name string, fx *snapshotFixture, data []byte, store engine.BodyStore) {
	t.Helper()
	e := engine.New(engine.Config{Region: fx.Region, Bodies: store})
	if err := e.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("today's engine cannot restore the snapshot an older one wrote: %v", err)
	}
	got := frozentest.JSON(frozentest.Observe(e, fx.Account, fx.Now, fx.Probes))
	if d, err := frozentest.Diff(fx.Observations, got); err != nil || d != "" {
		t.Errorf("the state restored from %s answers differently than the state that wrote it (%v):\n%s", name, err, d)
	}
}

// fixtureStore is a BodyStore holding a fixture's payloads, by
// BodyRef.Off in file 1; payloads put later go after them.
type fixtureStore struct {
	payloads [][]byte
}

func (s *fixtureStore) Put(body string) engine.BodyRef {
	s.payloads = append(s.payloads, []byte(body))
	return engine.BodyRef{File: 1, Off: uint32(len(s.payloads) - 1), Len: uint32(len(body))}
}

func (s *fixtureStore) Get(r engine.BodyRef) (string, error) {
	if r.File != 1 || int(r.Off) >= len(s.payloads) || len(s.payloads[r.Off]) != int(r.Len) {
		return "", fmt.Errorf("no body %+v in the fixture", r)
	}
	return string(s.payloads[r.Off]), nil
}

func (s *fixtureStore) Release(engine.BodyRef) {}

// writeCurrentSnapshotFixtures writes the fixtures of formats 2 (what
// Snapshot writes) and 4 (bodies by reference, what a node writes for
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

// TestSnapshotRegionOfEveryFormat reads the region from the header of the
// committed snapshot of every format version, and of one written today
// by an engine of another region than the default: it is what tells a
// data dir or a backup from before their region was recorded which
// region they belong to.
func TestSnapshotRegionOfEveryFormat(t *testing.T) {
	for _, v := range []int{1, 2, 3, 4} {
		name := filepath.Join("testdata", "snapshots", fmt.Sprintf("v%d", v))
		data, err := os.ReadFile(name + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var fx snapshotFixture
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatal(err)
		}
		if got, err := engine.SnapshotRegion(bytes.NewReader(data)); err != nil || got != fx.Region {
			t.Errorf("%s: SnapshotRegion = %q, %v; want %q", name, got, err, fx.Region)
		}
	}
	var b bytes.Buffer
	if err := engine.New(engine.Config{Region: "eu-west-1"}).Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	if got, err := engine.SnapshotRegion(&b); err != nil || got != "eu-west-1" {
		t.Errorf("SnapshotRegion of today's snapshot = %q, %v; want eu-west-1", got, err)
	}
	if _, err := engine.SnapshotRegion(bytes.NewReader([]byte("FIFOQSNP"))); err == nil {
		t.Error("SnapshotRegion read a region from a snapshot cut inside its prefix")
	}
}
