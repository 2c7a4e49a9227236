package engine

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

// harnessBodies makes newHarness give its engine a testBodies store. The
// tests that set it do not run in parallel.
var harnessBodies bool

// testBodies is a BodyStore in memory that checks how the engine uses it:
// a reference read back must be one it handed out, and a body is released
// once, by the last message that refers to it.
type testBodies struct {
	t        *testing.T
	mu       sync.Mutex
	bodies   []string
	released []bool
}

func newTestBodies(t *testing.T) *testBodies { return &testBodies{t: t} }

func (s *testBodies) Put(body string) BodyRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, body)
	s.released = append(s.released, false)
	// File 1, as a store's files start at 1; Off numbers the bodies.
	return BodyRef{File: 1, Off: uint32(len(s.bodies) - 1), Len: uint32(len(body))}
}

func (s *testBodies) Get(ref BodyRef) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref.File != 1 || int(ref.Off) >= len(s.bodies) || len(s.bodies[ref.Off]) != int(ref.Len) {
		return "", fmt.Errorf("reference %+v was never handed out", ref)
	}
	// A released body may still be read: by a snapshot view taken before
	// its message went. A receive never reads one (its message is there).
	return s.bodies[ref.Off], nil
}

func (s *testBodies) Release(ref BodyRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released[ref.Off] {
		s.t.Errorf("body %d released twice", ref.Off)
	}
	s.released[ref.Off] = true
}

// restored counts as released every body but those e's messages refer
// to, as the command log's store does once a restore has replaced the
// engine's state (the old state's messages went without a Release).
func (s *testBodies) restored(e *Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.released {
		s.released[i] = true
	}
	e.BodyRefs(func(ref BodyRef) { s.released[ref.Off] = false })
}

// check requires the bodies not released to be exactly those the
// engine's messages refer to: none leaked, none released early.
func (s *testBodies) check(e *Engine) {
	s.t.Helper()
	checkMsgStore(s.t, e)
	held := map[uint32]bool{}
	e.BodyRefs(func(ref BodyRef) {
		if held[ref.Off] {
			s.t.Errorf("body %d is referred to by two messages", ref.Off)
		}
		held[ref.Off] = true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	var leaked, early []int
	for i, rel := range s.released {
		switch {
		case !rel && !held[uint32(i)]:
			leaked = append(leaked, i)
		case rel && held[uint32(i)]:
			early = append(early, i)
		}
	}
	if len(leaked) > 0 || len(early) > 0 {
		s.t.Errorf("bodies not released though no message has them: %v; released though a message has them: %v", head(leaked), head(early))
	}
}

func head(xs []int) []int { return xs[:min(len(xs), 10)] }

// TestRandomWithBodyStore runs the random FIFO, standard and move-task
// sequences with the bodies kept in a BodyStore: every answer must be what
// the models say, as with the bodies in the messages (the engine's
// behaviour does not depend on where bodies live), and after every run the
// store must hold exactly the bodies of the messages left.
func TestRandomWithBodyStore(t *testing.T) {
	harnessBodies = true
	defer func() { harnessBodies = false }()
	seeds := uint64(20)
	if testing.Short() || testenv.Quick(t) { // 20 with FIFOQ_TESTS=all
		seeds = 5
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := newRandomRun(t, seed)
		for step := 0; step < *flagSteps && !t.Failed(); step++ {
			r.step(step)
		}
		r.h.bodies.check(r.h.e)
		s := newStdRun(t, seed)
		for step := 0; step < *flagSteps && !t.Failed(); step++ {
			s.step(step)
		}
		s.h.bodies.check(s.h.e)
		m := newMTRun(t, seed)
		for step := 0; step < *flagSteps && !t.Failed(); step++ {
			m.step(step)
		}
		m.h.bodies.check(m.h.e)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// TestBodyStoreSurvivesSnapshots writes a snapshot of an engine whose
// bodies are in a store, restores it into an engine with another store,
// and requires the same snapshot bytes back, the bodies now in the new
// store.
func TestBodyStoreSurvivesSnapshots(t *testing.T) {
	harnessBodies = true
	defer func() { harnessBodies = false }()
	r := newRandomRun(t, 7)
	for step := 0; step < 400; step++ {
		r.step(step)
	}
	want := snapshotBytes(t, r.h.e)

	into := New(Config{Region: testRegion})
	store := newTestBodies(t)
	into.SetBodyStore(store)
	if err := into.Restore(bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	store.check(into)
	if got := snapshotBytes(t, into); !slices.Equal(got, want) {
		t.Fatal("the restored engine writes another snapshot")
	}
	if len(store.bodies) == 0 {
		t.Fatal("the run left no message to carry over")
	}
}

// TestSnapshotTwinsWithBodyStore is TestSnapshotTwins with the bodies of
// both twins in stores: views written while random commands (deletes,
// purges, queue deletions among them) apply must write the bodies a
// stopped-world snapshot would, read back from the store, and each store
// must end holding exactly its engine's bodies.
func TestSnapshotTwinsWithBodyStore(t *testing.T) {
	harnessBodies = true
	defer func() { harnessBodies = false }()
	seeds := uint64(20)
	if testing.Short() || testenv.Quick(t) { // 20 with FIFOQ_TESTS=all
		seeds = 5
	}
	var cov twinCoverage
	for seed := uint64(1); seed <= seeds; seed++ {
		tw := newTwins(t, seed, &cov)
		for step := range *flagSnapSteps {
			tw.step(step)
			if t.Failed() {
				t.Fatalf("seed %d failed at step %d; last commands:\n%s", seed, step, tw.tail())
			}
		}
		if tw.view != nil {
			tw.writeView()
		}
		tw.snapshot(true)
		tw.aBodies.check(tw.a)
		tw.xBodies.check(tw.x)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	// Snapshots by reference are checked at every snapshot of X, and
	// views by reference at half of A's.
	if cov.snapByRef == 0 || cov.viewsByRef == 0 {
		t.Errorf("snapshots by reference: %d of X, %d views of A; want some of each", cov.snapByRef, cov.viewsByRef)
	}
}

// refSnapshotBytes returns a snapshot of the rich harness's engine with
// its bodies in a testBodies store, written by reference, and the store.
func refSnapshotBytes(t *testing.T) ([]byte, *testBodies) {
	harnessBodies = true
	h := richHarness(t)
	harnessBodies = false
	v, err := h.e.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	v.BodiesByReference()
	var b bytes.Buffer
	if _, err := v.WriteTo(&b, noLock{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), h.bodies
}

// FuzzInlineBodies feeds InlineBodies arbitrary bytes, with their checksum
// fixed as FuzzRestore does. It must never panic, and what it makes of an
// input it accepts must restore into an engine without a body store
// exactly as the input restores into one beside the store it refers to.
func FuzzInlineBodies(f *testing.F) {
	seed, _ := refSnapshotBytes(&testing.T{})
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, store := refSnapshotBytes(t)
		for _, in := range [][]byte{data, withChecksum(data)} {
			var out bytes.Buffer
			if err := InlineBodies(&out, bytes.NewReader(in), store.Get); err != nil {
				continue
			}
			withStore := New(Config{Region: testRegion})
			withStore.SetBodyStore(store)
			inline := New(Config{Region: testRegion})
			errRefs := withStore.Restore(bytes.NewReader(in))
			errInline := inline.Restore(bytes.NewReader(out.Bytes()))
			if (errRefs == nil) != (errInline == nil) {
				t.Fatalf("restored by reference: %v; inline: %v", errRefs, errInline)
			}
			if errRefs == nil && !bytes.Equal(snapshotBytes(t, withStore), snapshotBytes(t, inline)) {
				t.Fatal("the two restored engines differ")
			}
		}
	})
}

// TestAttributesInBodyStore runs one story twice, with the bodies in the
// messages and in a store: every receive and peek must answer the same,
// message attributes included, and with the store no message may keep
// its attributes in memory (the store keeps them before the body). A
// snapshot by reference, restored beside the same store, and its inline
// copy, restored without one, must answer the same again.
func TestAttributesInBodyStore(t *testing.T) {
	plain := newHarness(t)
	harnessBodies = true
	stored := newHarness(t)
	harnessBodies = false
	attrs := map[string]api.MessageAttributeValue{
		"kind":   {DataType: "String", StringValue: strp("order")},
		"count":  {DataType: "Number", StringValue: strp("42")},
		"blob":   {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 255}},
		"k.sub":  {DataType: "String.custom", StringValue: strp("é")},
		"k.more": {DataType: "Binary.x", BinaryValue: []byte("b")},
	}
	trace := map[string]api.MessageAttributeValue{api.MsgAttrAWSTraceHeader: {DataType: "String", StringValue: strp("Root=1-5759e988-bd862e3fe1be46a994272793")}}
	type answers struct{ got [][]api.Message }
	story := func(h *harness) (q, dlq api.QueueKey, a answers) {
		dlq = h.createQueue("dlq", nil)
		q = h.createQueue("q", map[string]string{api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion))})
		h.send(q, &api.SendMessageRequest{MessageBody: "with attributes", MessageAttributes: attrs})
		h.send(q, &api.SendMessageRequest{MessageBody: "x", MessageAttributes: map[string]api.MessageAttributeValue{"only": {DataType: "String", StringValue: strp("x")}}})
		h.send(q, &api.SendMessageRequest{MessageBody: "none"})
		h.send(q, &api.SendMessageRequest{MessageBody: "traced", MessageAttributes: attrs, MessageSystemAttributes: trace})
		a.got = append(a.got, h.receive(q, 10, 0))
		sub := 10
		a.got = append(a.got, h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &sub, MessageAttributeNames: []string{"k.*", "count"}}).(*api.ReceiveMessageResult).Messages)
		a.got = append(a.got, h.receive(dlq, 10, 0))
		return q, dlq, a
	}
	_, _, want := story(plain)
	_, dlq, got := story(stored)
	if len(want.got[0]) != 4 || len(want.got[2]) != 4 || len(want.got[1]) != 0 {
		t.Fatalf("the story went otherwise than planned: received %d, %d, %d", len(want.got[0]), len(want.got[1]), len(want.got[2]))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("with a store the receives answer\n%+v\nwithout one\n%+v", got, want)
	}
	if got, want := stored.peek(dlq, PeekOptions{}), plain.peek(dlq, PeekOptions{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("with a store Peek answers\n%+v\nwithout one\n%+v", got, want)
	}
	withAttrs := 0
	for _, q := range stored.e.queues {
		q.eachMessage(func(m *message) {
			if q.ms.attrs(m) != nil {
				t.Errorf("message %d keeps its attributes in memory", m.serial)
			}
			if q.ms.storedAttrs(m) > 0 {
				withAttrs++
			}
		})
	}
	if withAttrs != 3 {
		t.Errorf("%d messages have their attributes in the store, want 3", withAttrs)
	}

	v, err := stored.e.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	v.BodiesByReference()
	var byRef bytes.Buffer
	if _, err := v.WriteTo(&byRef, noLock{}); err != nil {
		t.Fatal(err)
	}
	v.Release()
	var inline bytes.Buffer
	if err := InlineBodies(&inline, bytes.NewReader(byRef.Bytes()), stored.bodies.Get); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inline.Bytes(), snapshotBytes(t, plain.e)) {
		t.Error("the inline copy of the snapshot by reference is not the snapshot of the engine without a store")
	}
	again := newHarness(t)
	again.now = stored.now
	again.e.SetBodyStore(stored.bodies)
	if err := again.e.Restore(bytes.NewReader(byRef.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got, want := again.peek(dlq, PeekOptions{}), plain.peek(dlq, PeekOptions{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored beside the store, Peek answers\n%+v\nnot\n%+v", got, want)
	}
}

// FuzzPayload splits arbitrary bytes as a payload, with and without a
// head, and with any length of message attributes: an error or the parts,
// never a panic; and a payload putPayload makes splits back into what it
// was made of.
func FuzzPayload(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef\x03d-1\x00body"), true, uint32(1), "d", "body", []byte{})
	f.Add([]byte("short"), true, uint32(0), "", "", []byte{0})
	f.Add([]byte("0123456789abcdef0123456789abcdef\xff\xff\xff\xff\x0f"), true, uint32(0), "", "x", []byte{1, 2})
	f.Fuzz(func(t *testing.T, raw []byte, withHead bool, n uint32, dedupID, body string, section []byte) {
		if p, err := splitPayload(string(raw), withHead, n); err == nil {
			rest := len(p.section) + len(p.body)
			if withHead {
				rest += payloadHeadMin - 1 + len(p.head.dedupID)
			}
			if len(p.section) != int(n) || rest > len(raw) {
				t.Fatalf("split %d bytes into a %d-byte section and a %d-byte body", len(raw), len(p.section), len(p.body))
			}
		}
		var store heapBodies
		head := msgHead{dedupID: dedupID}
		copy(head.uuid[:], raw)
		copy(head.md5[:], body)
		ref := putPayload(&store, head, section, body)
		stored, err := store.Get(ref)
		if err != nil {
			t.Fatal(err)
		}
		p, err := splitPayload(stored, true, uint32(len(section)))
		if err != nil || p.head != head || p.section != string(section) || p.body != body {
			t.Fatalf("payload of %+v, %q, %q split back into %+v (%v)", head, section, body, p, err)
		}
	})
}
