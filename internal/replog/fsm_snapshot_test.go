package replog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// snapEngine is an engine with a FIFO queue and n messages, fed by
// applying commands; send applies one more command at time step.
type snapEngine struct {
	eng  *engine.Engine
	step int64
}

func newSnapEngine(t *testing.T, n int) *snapEngine {
	t.Helper()
	s := &snapEngine{eng: newLogEngine(testEngine)}
	s.apply(t, &api.CreateQueueRequest{QueueName: testQueue.Name, Attributes: map[string]string{api.AttrFifoQueue: "true"}}, nil)
	for range n {
		s.send(t)
	}
	return s
}

func (s *snapEngine) apply(t *testing.T, req api.Request, ids []string) {
	t.Helper()
	s.step++
	cmd := &engine.Command{Time: 1_700_000_000_000_000_000 + s.step*1_000_000, Caller: testQueue.Account, Queue: testQueue,
		Request: req, MessageIDs: ids, Entropy: uint64(s.step)}
	if _, err := s.eng.Apply(cmd); err != nil {
		t.Fatalf("%s: %v", req.Action(), err)
	}
}

// send sends one message, or (every third command) receives two, so that
// messages already in the snapshot change state.
func (s *snapEngine) send(t *testing.T) {
	t.Helper()
	if s.step%3 == 0 {
		s.apply(t, &api.ReceiveMessageRequest{QueueUrl: testQueue.Path(), MaxNumberOfMessages: new(int(2))}, nil)
		return
	}
	s.apply(t, &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: fmt.Sprint("body ", s.step),
		MessageGroupId: fmt.Sprint("g", s.step%7), MessageDeduplicationId: fmt.Sprint("d", s.step)}, []string{fmt.Sprint("id-", s.step)})
}

func (s *snapEngine) state(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.eng.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { m.cancelled = true; return nil }
func (m *memSink) Close() error  { m.closed = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

// TestSnapshotWhileApplying takes a snapshot through the fsm and persists
// it while commands go on being applied under the fsm's lock, as Raft's
// apply goroutine does: the snapshot written is the state of the moment
// it was taken, and restores into an engine equal to that state.
func TestSnapshotWhileApplying(t *testing.T) {
	s := newSnapEngine(t, 3000)
	f := &fsm{eng: s.eng, logger: slog.New(slog.DiscardHandler)}
	want := s.state(t)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	done := make(chan error)
	go func() { done <- snap.Persist(&sink) }()
	applied := 0
	for persisting := true; persisting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			persisting = false
		default:
			f.mu.Lock()
			s.send(t)
			f.mu.Unlock()
			applied++
		}
	}
	snap.Release()
	t.Logf("%d commands applied while the snapshot was written", applied)
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed %v, cancelled %v", sink.closed, sink.cancelled)
	}
	got := sink.Bytes()
	// Without a body store, the snapshot carries its bodies.
	if len(got) < 12 || binary.BigEndian.Uint32(got[8:12]) != snapshotInlineVersion || !bytes.Equal(got[12:], want) {
		t.Fatalf("persisted snapshot (%d bytes) is not the state when it was taken (%d bytes) in format version %d", len(got), len(want), snapshotInlineVersion)
	}
	if err := verifySnapshotPayload(bytes.NewReader(got)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	r := &fsm{eng: newLogEngine(testEngine), logger: slog.New(slog.DiscardHandler)}
	if err := r.Restore(io.NopCloser(bytes.NewReader(got))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := (&snapEngine{eng: r.eng}).state(t); !bytes.Equal(got, want) {
		t.Fatal("restored engine differs from the state snapshotted")
	}
	// The view is released: a new snapshot can be taken.
	snap2, err := f.Snapshot()
	if err != nil {
		t.Fatalf("second snapshot: %v", err)
	}
	snap2.Release()
}

// formatV1 wraps an engine state as format version 1 did: magic, version,
// CRC-32C of the state, state.
func formatV1(state []byte) []byte {
	b := append([]byte(nil), snapshotMagic[:]...)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(state, castagnoli))
	return append(b, state...)
}

// TestSnapshotFormat1StillRestores restores and verifies a snapshot in the
// format fifoq wrote before snapshots were streamed, and refuses one whose
// checksum does not match, leaving the engine as it was.
func TestSnapshotFormat1StillRestores(t *testing.T) {
	want := newSnapEngine(t, 500).state(t)
	v1 := formatV1(want)
	if err := verifySnapshotPayload(bytes.NewReader(v1)); err != nil {
		t.Fatalf("verify version 1: %v", err)
	}
	f := &fsm{eng: newLogEngine(testEngine), logger: slog.New(slog.DiscardHandler)}
	if err := f.Restore(io.NopCloser(bytes.NewReader(v1))); err != nil {
		t.Fatalf("Restore version 1: %v", err)
	}
	if got := (&snapEngine{eng: f.eng}).state(t); !bytes.Equal(got, want) {
		t.Fatal("engine restored from version 1 differs")
	}

	bad := bytes.Clone(v1)
	bad[12] ^= 1 // the stored checksum
	if err := verifySnapshotPayload(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("verify version 1 with a wrong checksum: %v", err)
	}
	g := &fsm{eng: newLogEngine(testEngine), logger: slog.New(slog.DiscardHandler)}
	before := (&snapEngine{eng: g.eng}).state(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("Restore version 1 with a wrong checksum: %v", err)
	}
	if got := (&snapEngine{eng: g.eng}).state(t); !bytes.Equal(got, before) {
		t.Fatal("a refused restore changed the engine")
	}
}

// TestVerifySnapshotDamage flips each of a sample of bytes of a current
// snapshot, and cuts it short: verification must refuse every one, and so
// must a restore (which is how a start checks the newest snapshot), leaving
// the engine as it was.
func TestVerifySnapshotDamage(t *testing.T) {
	state := newSnapEngine(t, 50).state(t)
	good := append(binary.BigEndian.AppendUint32(append([]byte(nil), snapshotMagic[:]...), snapshotInlineVersion), state...)
	if err := verifySnapshotPayload(bytes.NewReader(good)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	f := &fsm{eng: newLogEngine(testEngine), logger: slog.New(slog.DiscardHandler)}
	empty := (&snapEngine{eng: f.eng}).state(t)
	refused := func(what string, b []byte) {
		t.Helper()
		if err := verifySnapshotPayload(bytes.NewReader(b)); err == nil {
			t.Fatalf("%s: verified", what)
		}
		if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err == nil {
			t.Fatalf("%s: restored", what)
		}
		if got := (&snapEngine{eng: f.eng}).state(t); !bytes.Equal(got, empty) {
			t.Fatalf("%s: a refused restore changed the engine", what)
		}
	}
	for i := 0; i < len(good); i += 1 + len(good)/200 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		refused(fmt.Sprintf("byte %d flipped", i), bad)
	}
	for _, n := range []int{0, 11, 12, 20, len(good) - 1} {
		refused(fmt.Sprintf("cut to %d bytes", n), good[:n])
	}
}
