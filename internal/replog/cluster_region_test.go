package replog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// TestMemberOfAnotherRegionStops gives a member of eu-west-1 what a leader
// of us-east-1 sends it: a snapshot, and an entry recording the cluster's
// region. Each stops the node (a fence, which its process exits on) with
// the region to start it with, and leaves the engine as it was.
func TestMemberOfAnotherRegionStops(t *testing.T) {
	member := func() *fsm {
		return &fsm{eng: newLogEngine(engine.Config{Region: "eu-west-1"}), logger: slog.New(slog.DiscardHandler),
			faults: newFaultStop(slog.New(slog.DiscardHandler), t.TempDir()), fatalCh: make(chan struct{}),
			nodeID: "n3", region: "eu-west-1"}
	}
	fenced := func(what string, f *fsm) {
		t.Helper()
		select {
		case <-f.faults.done:
		default:
			t.Fatalf("%s: the member did not stop", what)
		}
		var fe *fencedError
		if err := f.faults.err(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "--region us-east-1") {
			t.Fatalf("%s: the member stopped with %v, want a fence naming --region us-east-1", what, err)
		}
		if n := len(f.eng.Meta(clusterRegionKey)); n != 0 {
			t.Fatalf("%s: the engine took the record", what)
		}
	}

	state := newSnapEngine(t, 5).state(t) // of testEngine's region, us-east-1
	snap := append(binary.BigEndian.AppendUint32(append([]byte(nil), snapshotMagic[:]...), snapshotInlineVersion), state...)
	f := member()
	if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err == nil {
		t.Fatal("a snapshot of another region was restored")
	}
	fenced("snapshot", f)

	f = member()
	data, err := encodeEntry([]*engine.Command{{Request: &engine.SetMetaRequest{Key: clusterRegionKey, Value: "us-east-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data})
	fenced("record", f)

	// A record of its own region is applied as any metadata.
	f = member()
	data, _ = encodeEntry([]*engine.Command{{Request: &engine.SetMetaRequest{Key: clusterRegionKey, Value: "eu-west-1"}}})
	f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data})
	if got := f.eng.Meta(clusterRegionKey); got != "eu-west-1" || f.faults.err() != nil {
		t.Fatalf("a record of the member's own region: meta %q, fault %v", got, f.faults.err())
	}
}
