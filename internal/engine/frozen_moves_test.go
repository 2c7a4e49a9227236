package engine

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// regenerateMoves writes the move fixture (writeMovesFixture).
var regenerateMoves = flag.Bool("engine.regenerate-moves", false, "write testdata/snapshots/moves.* (only when it is first made)")

// movesFixture is the JSON beside testdata/snapshots/moves.bin: the
// engine's clock and the state of its harness when the snapshot was
// written, the receipt handles handed out before the moved queue moved,
// and what the engine that wrote the snapshot answered (movesObservation).
type movesFixture struct {
	Now         int64
	Entropy     uint64
	IDs         int
	OldHandles  []string
	Observation movesObservation
}

// movesObservation is what the move state of a snapshot answers: the
// fences, what a fenced and a moved-away queue answer, and, on the moved
// queue, a retried receive attempt, the handles from before its move, and
// the messages and counts after them.
type movesObservation struct {
	Fenced        map[string]string
	FencedAnswer  string
	MovedAway     string
	Retried       []movedMessage
	DeleteOld     string
	ChangeOld     string
	ReceivedAfter []movedMessage
	Counts        [3]int
}

// movedMessage is a received message as the observation keeps it.
type movedMessage struct {
	MessageId, Body, ReceiptHandle, SequenceNumber string
}

// TestFrozenMoveState restores the committed snapshot of an engine in the
// middle of the cluster's queue moves (testdata/snapshots/moves.bin): a
// queue moved in from another engine, with its old handle tag and serials
// and an attempt record of handles from before the move; a queue fenced
// for a move in progress; and the marker of a queue moved away. Their
// fields are gob fields of snapshot format 2 and 4, zero when unused, so
// no version number guards them: this fixture does. The restored engine
// must answer as the one that wrote it did.
func TestFrozenMoveState(t *testing.T) {
	name := filepath.Join("testdata", "snapshots", "moves")
	if *regenerateMoves {
		writeMovesFixture(t, name)
	}
	data, err := os.ReadFile(name + ".bin")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var fx movesFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	e := New(Config{Region: testRegion})
	if err := e.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("today's engine cannot restore the move state an older one wrote: %v", err)
	}
	h := &harness{t: t, e: e, now: fx.Now, caller: testAccount, entropy: fx.Entropy, ids: fx.IDs}
	if got := observeMoves(h, fx.OldHandles); !reflect.DeepEqual(got, fx.Observation) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(fx.Observation, "", "  ")
		t.Fatalf("the move state restored from %s answers differently than the state that wrote it:\ngot  %s\nwant %s", name, g, w)
	}
}

// The queues of the move fixture.
var (
	movedQueue  = api.QueueKey{Account: testAccount, Name: "moved.fifo"}
	fencedQueue = api.QueueKey{Account: testAccount, Name: "fenced.fifo"}
	goneQueue   = api.QueueKey{Account: testAccount, Name: "gone.fifo"}
)

// observeMoves asks h's engine what TestFrozenMoveState compares.
func observeMoves(h *harness, old []string) movesObservation {
	var o movesObservation
	o.Fenced = map[string]string{}
	for k, move := range h.e.Fenced() {
		o.Fenced[k.String()] = move
	}
	errText := func(err error) string {
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	_, err := h.raw(fencedQueue, &api.SendMessageRequest{QueueUrl: fencedQueue.Path(), MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "x"})
	o.FencedAnswer = errText(err)
	_, err = h.raw(goneQueue, &api.GetQueueUrlRequest{QueueName: goneQueue.Name})
	o.MovedAway = errText(err)
	two := 2
	retried := h.must(movedQueue, &api.ReceiveMessageRequest{QueueUrl: movedQueue.Path(), MaxNumberOfMessages: &two,
		ReceiveRequestAttemptId: "att-1", MessageSystemAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult)
	o.Retried = keptMessages(retried.Messages)
	o.DeleteOld = errText(h.deleteMsg(movedQueue, old[0]))
	o.ChangeOld = errText(h.changeVis(movedQueue, old[1], 0))
	o.ReceivedAfter = keptMessages(h.receive(movedQueue, 10, 30))
	o.Counts = h.counts(movedQueue)
	return o
}

func keptMessages(ms []api.Message) []movedMessage {
	out := make([]movedMessage, 0, len(ms))
	for _, m := range ms {
		out = append(out, movedMessage{MessageId: m.MessageId, Body: m.Body, ReceiptHandle: m.ReceiptHandle,
			SequenceNumber: m.Attributes[api.MsgAttrSequenceNumber]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Body < out[j].Body })
	return out
}

// writeMovesFixture builds the move state, snapshots it and writes the
// fixture: `go test ./internal/engine -run TestFrozenMoveState
// -engine.regenerate-moves`, only when the fixture is first made or a new
// version of it is added beside it (an existing one never changes).
func writeMovesFixture(t *testing.T, name string) {
	// The moved queue: messages in two groups, two of group A received
	// under an attempt id, then moved into this engine, whose queue of its
	// own already took the serials the messages had.
	src := newHarness(t)
	q := src.fifoQueue(movedQueue.Name, map[string]string{api.AttrVisibilityTimeout: "30"})
	for i := range 4 {
		src.sendFIFO(q, "a"+strconv.Itoa(i), "A", "da"+strconv.Itoa(i))
		src.sendFIFO(q, "b"+strconv.Itoa(i), "B", "db"+strconv.Itoa(i))
	}
	two := 2
	got := src.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &two, ReceiveRequestAttemptId: "att-1"}).(*api.ReceiveMessageResult).Messages
	if len(got) != 2 {
		t.Fatalf("received %d messages under the attempt, want 2", len(got))
	}
	moveQueue(t, src, "move-in", q)
	h := src // the harness of the engine the queue moved into

	// A queue fenced for a move in progress.
	f := h.fifoQueue(fencedQueue.Name, map[string]string{api.AttrContentBasedDeduplication: "true"})
	h.sendFIFO(f, "kept", "g", "")
	h.internal(f, &FenceQueueRequest{Move: "move-out"})

	// A queue moved away from this engine: its marker stays 10 minutes.
	g := h.fifoQueue(goneQueue.Name, map[string]string{api.AttrContentBasedDeduplication: "true"})
	h.sendFIFO(g, "left", "g", "")
	h.internal(g, &FenceQueueRequest{Move: "move-away"})
	var image bytes.Buffer
	if err := h.e.ExportQueue(g, "move-away", &image); err != nil {
		t.Fatal(err)
	}
	elsewhere := newHarness(t)
	elsewhere.now = h.now
	elsewhere.internal(g, &InstallQueueRequest{Move: "move-away", Image: image.Bytes()})
	h.internal(g, &DropQueueRequest{Move: "move-away"})

	var snap bytes.Buffer
	if err := h.e.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	fx := movesFixture{Now: h.now, Entropy: h.entropy, IDs: h.ids,
		OldHandles: []string{got[0].ReceiptHandle, got[1].ReceiptHandle}}
	// Observed on a restored copy, as the test observes.
	e := New(Config{Region: testRegion})
	if err := e.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	fx.Observation = observeMoves(&harness{t: t, e: e, now: fx.Now, caller: testAccount, entropy: fx.Entropy, ids: fx.IDs}, fx.OldHandles)
	js, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".bin", snap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".json", append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s.bin and .json", name)
}
