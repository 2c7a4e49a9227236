package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

// snapshotBytes returns e's snapshot.
func snapshotBytes(t testing.TB, e *Engine) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := e.Snapshot(&b); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return b.Bytes()
}

// restoreHarness replaces the harness's engine by one restored from its
// snapshot, keeping the hook.
func restoreHarness(t *testing.T, h *harness) {
	t.Helper()
	e := New(Config{Region: testRegion})
	e.SetAvailableHook(h.e.hook.get())
	if err := e.Restore(bytes.NewReader(snapshotBytes(t, h.e))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	h.e = e
	h.takeWoken()
}

// richHarness builds an engine that holds every kind of state a snapshot
// carries: FIFO and standard queues with visible, delayed and in-flight
// messages and message attributes, a dead-letter queue fed by redrive, a
// running move task and a finished one, deduplication and attempt
// records, a purge, a recently deleted queue, tags and a policy.
func richHarness(t *testing.T) *harness {
	h := newHarness(t)
	fdlq := h.fifoQueue("dlq.fifo", nil)
	fq := h.fifoQueue("q.fifo", map[string]string{
		api.AttrVisibilityTimeout: "30",
		api.AttrRedrivePolicy:     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, fdlq.ARN(testRegion)),
	})
	for i := range 6 {
		h.sendFIFO(fq, "body", "g"+string(rune('a'+i%3)), "d"+string(rune('0'+i)))
	}
	h.receive(fq, 1, 0) // g a's head received once: dead-lettered at the next receive
	h.receive(fq, 1, -1)
	h.receiveAttempt(fq, "attempt-1", 2)
	for i := range 3 {
		h.sendFIFO(fdlq, "direct", "g", "x"+string(rune('0'+i)))
	}
	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: fdlq.ARN(testRegion), DestinationArn: fq.ARN(testRegion), MaxNumberOfMessagesPerSecond: intp(1)})

	sdlq := h.createQueue("sdlq", nil)
	sq := h.createQueue("s", map[string]string{
		api.AttrDelaySeconds:  "0",
		api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, sdlq.ARN(testRegion)),
	})
	for i := range 8 {
		req := &api.SendMessageRequest{MessageBody: "s" + string(rune('0'+i)), MessageGroupId: "t" + string(rune('0'+i%2)),
			MessageAttributes: map[string]api.MessageAttributeValue{"k": {DataType: "String", StringValue: strp("v")}, "b": {DataType: "Binary", BinaryValue: []byte{1}}}}
		if i == 7 {
			req.DelaySeconds = intp(60)
		}
		h.send(sq, req)
	}
	h.receive(sq, 3, 20)
	h.receive(sq, 1, 0)
	h.must(sq, &api.TagQueueRequest{QueueUrl: sq.Path(), Tags: map[string]string{"team": "a"}})
	h.must(sq, &api.AddPermissionRequest{QueueUrl: sq.Path(), Label: "l", AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage"}})

	p := h.createQueue("purged", nil)
	h.send(p, &api.SendMessageRequest{MessageBody: "x"})
	h.must(p, &api.PurgeQueueRequest{QueueUrl: p.Path()})
	gone := h.createQueue("gone", nil)
	h.must(gone, &api.DeleteQueueRequest{QueueUrl: gone.Path()})
	h.advance(1500 * time.Millisecond)
	h.tick()
	if !h.e.HasActiveMoveTasks() {
		t.Fatal("richHarness: no running move task")
	}
	return h
}

// tick applies a TickRequest, which api.Validate does not know.
func (h *harness) tick() {
	h.t.Helper()
	if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
		h.t.Fatalf("tick: %v", err)
	}
}

// TestSnapshotKeepsPromises checks, one by one, the promises a restored
// engine keeps to clients of the old one.
func TestSnapshotKeepsPromises(t *testing.T) {
	t.Run("receipt handles, visibility deadlines and group locks", func(t *testing.T) {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "30"})
		h.sendFIFO(q, "a", "g", "a")
		h.sendFIFO(q, "b", "g", "b")
		m := h.receive(q, 1, -1)
		restoreHarness(t, h)
		if got := h.receive(q, 10, -1); len(got) != 0 {
			t.Errorf("group g received while locked: %v", bodies(got))
		}
		h.advance(29 * time.Second)
		if err := h.changeVis(q, m[0].ReceiptHandle, 5); err != nil {
			t.Errorf("ChangeMessageVisibility with a handle from before the snapshot: %v", err)
		}
		restoreHarness(t, h)
		h.advance(5 * time.Second)
		got := h.receive(q, 10, -1)
		if len(got) != 2 || got[0].Attributes[api.MsgAttrApproximateReceiveCount] != "2" {
			t.Fatalf("after the deadline: %v", got)
		}
		restoreHarness(t, h)
		if err := h.deleteMsg(q, m[0].ReceiptHandle); err == nil {
			t.Errorf("a superseded handle deleted after restore")
		}
		if err := h.deleteMsg(q, got[0].ReceiptHandle); err != nil {
			t.Errorf("DeleteMessage with a handle from before the snapshot: %v", err)
		}
	})
	t.Run("sequence numbers and deduplication", func(t *testing.T) {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", nil)
		first := h.sendFIFO(q, "a", "g", "d")
		restoreHarness(t, h)
		dup := h.sendFIFO(q, "a", "g", "d") // same command time: sequence numbers must still grow
		next := h.sendFIFO(q, "b", "g", "e")
		if dup.MessageId != first.MessageId || next.SequenceNumber <= first.SequenceNumber {
			t.Errorf("after restore: duplicate %+v of %+v, next %+v", dup, first, next)
		}
		h.advance(api.DeduplicationInterval - time.Millisecond)
		restoreHarness(t, h)
		if again := h.sendFIFO(q, "a", "g", "d"); again.MessageId != first.MessageId {
			t.Errorf("deduplication forgotten before 5 minutes")
		}
		h.advance(time.Millisecond)
		restoreHarness(t, h)
		if again := h.sendFIFO(q, "a", "g", "d"); again.MessageId == first.MessageId {
			t.Errorf("deduplication kept beyond 5 minutes")
		}
	})
	t.Run("receive request attempt ids", func(t *testing.T) {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", nil)
		h.sendFIFO(q, "a", "g", "a")
		got := h.receiveAttempt(q, "x", 10)
		restoreHarness(t, h)
		again := h.receiveAttempt(q, "x", 10)
		if len(again) != 1 || again[0].ReceiptHandle != got[0].ReceiptHandle {
			t.Errorf("retry after restore = %v, want the same receive %v", again, got)
		}
	})
	t.Run("move tasks resume", func(t *testing.T) {
		h := newHarness(t)
		dlq := h.createQueue("dlq", nil)
		src := h.createQueue("src", map[string]string{api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion))})
		for range 5 {
			h.send(dlq, &api.SendMessageRequest{MessageBody: "m"})
		}
		h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: src.ARN(testRegion), MaxNumberOfMessagesPerSecond: intp(1)})
		h.advance(2 * time.Second)
		h.tick()
		restoreHarness(t, h)
		if !h.e.HasActiveMoveTasks() {
			t.Fatal("no running task after restore")
		}
		h.advance(3 * time.Second)
		h.tick()
		res := h.must(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: dlq.ARN(testRegion)}).(*api.ListMessageMoveTasksResult)
		if r := res.Results[0]; r.Status != api.MoveTaskCompleted || r.ApproximateNumberOfMessagesMoved != 5 {
			t.Errorf("task after restore: %+v", r)
		}
	})
	t.Run("deleted queues and purges", func(t *testing.T) {
		h := newHarness(t)
		q := h.createQueue("q", nil)
		h.must(q, &api.PurgeQueueRequest{QueueUrl: q.Path()})
		d := h.createQueue("d", nil)
		h.must(d, &api.DeleteQueueRequest{QueueUrl: d.Path()})
		restoreHarness(t, h)
		_, err := h.do(q, &api.PurgeQueueRequest{QueueUrl: q.Path()})
		wantCode(t, err, "PurgeQueueInProgress")
		_, err = h.do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "d"})
		wantCode(t, err, "QueueDeletedRecently")
	})
}

// restoreMode is how the engines a snapshot test restores into read a
// queue's chunks: as by default (on two goroutines for large queues only),
// or every queue pipelined (TestRestorePipelined), which must restore the
// same states and report the same errors.
type restoreMode bool

const (
	restoreDefault   restoreMode = false
	restorePipelined restoreMode = true
)

// engine returns e set to restore in mode m.
func (m restoreMode) engine(e *Engine) *Engine {
	if m == restorePipelined {
		e.cfg.restorePipelineMin = -1
	}
	return e
}

// TestSnapshotRoundTrip restores the rich engine and compares the
// snapshots, the reads and the hook calls.
func TestSnapshotRoundTrip(t *testing.T) { testSnapshotRoundTrip(t, restoreDefault) }

func testSnapshotRoundTrip(t *testing.T, mode restoreMode) {
	for name, build := range map[string]func(*testing.T) *harness{
		"empty": newHarness,
		"rich":  richHarness,
	} {
		t.Run(name, func(t *testing.T) {
			h := build(t)
			data := snapshotBytes(t, h.e)
			var woken []api.QueueKey
			e := mode.engine(New(Config{Region: testRegion}))
			e.SetAvailableHook(func(k api.QueueKey) { woken = append(woken, k) })
			if err := e.Restore(bytes.NewReader(data)); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if again := snapshotBytes(t, e); !bytes.Equal(again, data) {
				t.Errorf("snapshot of the restored engine differs")
			}
			if len(woken) != len(e.queues) {
				t.Errorf("hook called for %v, want every one of the %d queues", woken, len(e.queues))
			}
			for k := range h.e.queues {
				cmd := &Command{Time: h.now, Caller: k.Account, Queue: k, Request: &api.GetQueueAttributesRequest{AttributeNames: []string{"All"}}}
				ra, _ := h.e.Read(cmd)
				rb, _ := e.Read(cmd)
				if fmt.Sprint(ra) != fmt.Sprint(rb) {
					t.Errorf("%s: attributes %v, restored %v", k, ra, rb)
				}
			}
			t.Logf("%d bytes", len(data))
		})
	}
}

// TestSnapshotChunksAreBounded checks that large messages do not make
// large chunks: neither side holds more than about one chunk besides the
// state.
func TestSnapshotChunksAreBounded(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("big", map[string]string{api.AttrMaximumMessageSize: "1048576"})
	body := strings.Repeat("x", 200_000)
	for range 30 {
		h.send(q, &api.SendMessageRequest{MessageBody: body})
	}
	p := parseSnapshot(t, snapshotBytes(t, h.e))
	chunks := p.Queues[0].Chunks
	if len(chunks) < 5 {
		t.Errorf("30 messages of 200 kB in %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if len(c.MessageData) > snapChunkBytes+len(body)+1000 {
			t.Errorf("chunk %d holds %d bytes", i, len(c.MessageData))
		}
	}
}

// TestRestoreRejectsBadInput feeds Restore garbage, truncated, corrupted,
// foreign and wrong-version snapshots: each must fail and leave the
// engine as it was.
func TestRestoreRejectsBadInput(t *testing.T) { testRestoreRejectsBadInput(t, restoreDefault) }

func testRestoreRejectsBadInput(t *testing.T, mode restoreMode) {
	good := snapshotBytes(t, richHarness(t).e)
	version := func(v uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[len(snapMagic):], v)
		return b
	}
	cases := map[string][]byte{
		"empty":          {},
		"garbage":        []byte("this is not a snapshot at all, just some text"),
		"magic only":     []byte(snapMagic),
		"wrong magic":    append([]byte("FIFOQSNX"), good[len(snapMagic):]...),
		"version 0":      version(0),
		"version 3":      version(snapVersion + 1),
		"trailing bytes": append(bytes.Clone(good), 0),
		"no checksum":    good[:len(good)-4],
		"bad checksum":   append(bytes.Clone(good[:len(good)-4]), 0, 0, 0, 0),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) { wantRestoreErrorIn(t, mode, in, "") })
	}
	t.Run("other region", func(t *testing.T) {
		e := mode.engine(New(Config{Region: "eu-west-1"}))
		if err := e.Restore(bytes.NewReader(good)); err == nil || !strings.Contains(err.Error(), "region") {
			t.Errorf("Restore of another region's snapshot: %v", err)
		}
	})
	// Every byte position, or every 7th in -short mode and in the first
	// tier (FIFOQ_TESTS=all: every one).
	step := 1
	if testing.Short() || testenv.Quick(t) {
		step = 7
	}
	t.Run("every truncation", func(t *testing.T) {
		target, before := restoreTarget(t, mode)
		for n := 0; n < len(good); n += step {
			if err := target.Restore(bytes.NewReader(good[:n])); err == nil {
				t.Fatalf("Restore of the first %d of %d bytes succeeded", n, len(good))
			}
		}
		if after := snapshotBytes(t, target); !bytes.Equal(before, after) {
			t.Errorf("failed restores changed the engine")
		}
	})
	t.Run("every byte corrupted", func(t *testing.T) {
		target, before := restoreTarget(t, mode)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < len(good); i += step {
			b := bytes.Clone(good)
			b[i] ^= 1 << rng.IntN(8)
			if err := target.Restore(bytes.NewReader(b)); err == nil {
				t.Fatalf("Restore with byte %d of %d corrupted succeeded", i, len(good))
			}
		}
		if after := snapshotBytes(t, target); !bytes.Equal(before, after) {
			t.Errorf("failed restores changed the engine")
		}
	})
}

// restoreTarget returns an engine with a state of its own, whose hook
// fails the test (a failed restore must not call it), and its snapshot.
func restoreTarget(t *testing.T, mode restoreMode) (*Engine, []byte) {
	t.Helper()
	e := mode.engine(junkEngine(t, 42))
	e.SetAvailableHook(func(k api.QueueKey) { t.Errorf("a failed restore called the hook for %s", k) })
	return e, snapshotBytes(t, e)
}

// wantRestoreError restores in into an engine with a state of its own and
// requires an error (containing want) and the engine unchanged.
func wantRestoreError(t *testing.T, in []byte, want string) {
	t.Helper()
	wantRestoreErrorIn(t, restoreDefault, in, want)
}

// wantRestoreErrorIn is wantRestoreError restoring in mode.
func wantRestoreErrorIn(t *testing.T, mode restoreMode, in []byte, want string) {
	t.Helper()
	e, before := restoreTarget(t, mode)
	err := e.Restore(bytes.NewReader(in))
	if err == nil {
		t.Fatalf("Restore succeeded")
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Restore error %q, want it to mention %q", err, want)
	}
	if after := snapshotBytes(t, e); !bytes.Equal(before, after) {
		t.Errorf("a failed restore changed the engine")
	}
}

// TestRestoreRejectsInconsistentSnapshots restores snapshots that are well
// formed, with a valid checksum, but describe states the engine cannot be
// in: each must fail rather than build an engine that breaks later.
func TestRestoreRejectsInconsistentSnapshots(t *testing.T) {
	testRestoreRejectsInconsistentSnapshots(t, restoreDefault)
}

// testRestoreRejectsInconsistentSnapshots restores, in mode, a rich
// engine's snapshot edited by each of inconsistentSnapshots' cases: the
// unedited one must restore to the same snapshot, every other one must fail
// with its error.
func testRestoreRejectsInconsistentSnapshots(t *testing.T, mode restoreMode) {
	good := snapshotBytes(t, richHarness(t).e)
	for _, tc := range inconsistentSnapshots(t) {
		t.Run(tc.name, func(t *testing.T) {
			p := parseSnapshot(t, good)
			tc.edit(p)
			in := p.encode(t)
			if tc.want == "" {
				e := mode.engine(New(Config{Region: testRegion}))
				if err := e.Restore(bytes.NewReader(in)); err != nil {
					t.Fatalf("Restore: %v", err)
				}
				if !bytes.Equal(snapshotBytes(t, e), good) {
					t.Errorf("parse and encode changed the snapshot")
				}
				return
			}
			wantRestoreErrorIn(t, mode, in, tc.want)
		})
	}
}

// inconsistentSnapshot is an edit of a parsed snapshot and a part of the
// error its restore must fail with ("" for an edit that must restore).
type inconsistentSnapshot struct {
	name, want string
	edit       func(*parsedSnapshot)
}

// parsedQueueNamed returns the parsed queue called name in p; t is failed if
// there is none.
func parsedQueueNamed(t *testing.T, p *parsedSnapshot, name string) *parsedQueue {
	for i := range p.Queues {
		if p.Queues[i].Q.Name == name {
			return &p.Queues[i]
		}
	}
	t.Fatalf("no queue %s", name)
	return nil
}

// editMessages is an edit of a parsed snapshot that decodes the first
// message chunk of the queue called name, changes its messages and their
// aged flags with edit, and encodes them back.
func editMessages(t *testing.T, name string, edit func(ms []*message, aged []bool) ([]*message, []bool)) func(*parsedSnapshot) {
	return func(p *parsedSnapshot) {
		q := parsedQueueNamed(t, p, name)
		c := &q.Chunks[0]
		bodies, store := &heapBodies{}, newMsgStore()
		ms, aged := decodeMessages(t, c, bodies, store)
		ms, aged = edit(ms, aged)
		encodeMessages(c, ms, aged, bodies, store)
	}
}

// inconsistentSnapshots are testRestoreRejectsInconsistentSnapshots' cases,
// edits of richHarness's snapshot that keep it well formed; t is the test
// their edits fail if a queue they name is missing.
func inconsistentSnapshots(t *testing.T) []inconsistentSnapshot {
	// Short names for the two helpers keep each case on a line.
	queue := func(p *parsedSnapshot, name string) *parsedQueue { return parsedQueueNamed(t, p, name) }
	messages := func(name string, edit func(ms []*message, aged []bool) ([]*message, []bool)) func(*parsedSnapshot) {
		return editMessages(t, name, edit)
	}
	return []inconsistentSnapshot{
		{"unchanged re-encoding is accepted", "", func(*parsedSnapshot) {}},
		// Gob decodes the trailer into a snapQueue (it matches fields by
		// name): the queue checks must catch it.
		{"queue missing", "queue 5", func(p *parsedSnapshot) { p.Header.Queues++ }},
		{"trailer counts", "trailer", func(p *parsedSnapshot) { p.Trailer.Messages++ }},
		{"queue twice", "twice", func(p *parsedSnapshot) {
			p.Queues = append(p.Queues, p.Queues[0])
			p.Header.Queues++
			p.Trailer.Queues++
		}},
		{"foreign ARN", "ARN", func(p *parsedSnapshot) { p.Queues[0].Q.Arn += "x" }},
		{"negative count", "negative", func(p *parsedSnapshot) { p.Queues[0].Q.Messages = -1 }},
		{"dedup records in a standard queue", "standard queue", func(p *parsedSnapshot) { queue(p, "q.fifo").Q.Fifo = false }},
		{"unknown task status", "status", func(p *parsedSnapshot) { queue(p, "dlq.fifo").Q.Tasks[0].Status = "PAUSED" }},
		{"task of another queue", "source", func(p *parsedSnapshot) { queue(p, "dlq.fifo").Q.Tasks[0].SourceName = "s" }},
		{"running task out of range", "does not exist", func(p *parsedSnapshot) { p.Header.Running[0].Index = 7 }},
		{"running task not RUNNING", "status", func(p *parsedSnapshot) { queue(p, "dlq.fifo").Q.Tasks[0].Status = api.MoveTaskCompleted }},
		{"RUNNING task not running", "listed as running", func(p *parsedSnapshot) { p.Header.Running = nil }},
		{"deletion of an existing queue", "deletion", func(p *parsedSnapshot) { p.Header.Deleted[0].Name = "s" }},
		{"redrive policy without its parsed form", "redrive", func(p *parsedSnapshot) { queue(p, "q.fifo").Q.Attrs.HasRedrive = false }},
		{"serial 0", "serial", messages("q.fifo", func(ms []*message, a []bool) ([]*message, []bool) { ms[0].serial = 0; return ms, a })},
		{"serial from the future", "serial", messages("q.fifo", func(ms []*message, a []bool) ([]*message, []bool) { ms[0].serial = 1 << 40; return ms, a })},
		{"serial twice in a queue", "twice", messages("s", func(ms []*message, a []bool) ([]*message, []bool) { ms[1].serial = ms[0].serial; return ms, a })},
		{"serial in two queues", "two queues", messages("s", func(ms []*message, a []bool) ([]*message, []bool) { ms[0].serial = 1; return ms, a })},
		{"unknown state", "state", messages("s", func(ms []*message, a []bool) ([]*message, []bool) { ms[0].state = 7; return ms, a })},
		{"aged message in a FIFO queue", "aged", messages("q.fifo", func(ms []*message, a []bool) ([]*message, []bool) { a[0] = true; return ms, a })},
		// A FIFO queue's arrival list is in time order, and each group's
		// messages in sequence order (a list merged from partitions need
		// not be in sequence order across groups).
		{"FIFO sequence order in a group", "sequence", messages("q.fifo", func(ms []*message, a []bool) ([]*message, []bool) {
			for i := range ms {
				for j := i + 1; j < len(ms); j++ {
					if ms[i].group == ms[j].group {
						ms[i].seq, ms[j].seq = ms[j].seq, ms[i].seq
						return ms, a
					}
				}
			}
			t.Fatal("no two messages of one group in q.fifo")
			return ms, a
		})},
		{"sequence number beyond the last", "sequence", messages("q.fifo", func(ms []*message, a []bool) ([]*message, []bool) {
			ms[len(ms)-1].seq += 1 << 40
			return ms, a
		})},
		{"arrival time order", "time order", messages("s", func(ms []*message, a []bool) ([]*message, []bool) { ms[0].enqueuedAt += int64(time.Hour); return ms, a })},
		{"visible message outside its tenant's list", "tenant", messages("s", func(ms []*message, a []bool) ([]*message, []bool) {
			for _, m := range ms {
				if m.state == stateInflight {
					m.state = stateVisible
					break
				}
			}
			return ms, a
		})},
		{"in-flight message in a tenant's list", "visible message", messages("s", func(ms []*message, a []bool) ([]*message, []bool) {
			for _, m := range ms {
				if m.state == stateVisible {
					m.state = stateInflight
					break
				}
			}
			return ms, a
		})},
		{"message listed twice in its tenant", "twice", func(p *parsedSnapshot) {
			o := &queue(p, "s").Chunks[0].Orders[0]
			o.Serials[1] = o.Serials[0]
		}},
		{"unknown message in a tenant", "unknown message", func(p *parsedSnapshot) { queue(p, "s").Chunks[0].Orders[0].Serials[0] = 999 }},
		{"unknown tenant", "tenant", func(p *parsedSnapshot) { queue(p, "s").Chunks[0].Orders[0].Tenant = "nobody" }},
		{"more records than announced", "announced", func(p *parsedSnapshot) { queue(p, "s").Q.Messages-- }},
		{"empty chunk", "empty chunk", func(p *parsedSnapshot) {
			q := queue(p, "s")
			q.Chunks = append([]snapChunk{{}}, q.Chunks...)
		}},
		{"bytes after the message records", "unread bytes", func(p *parsedSnapshot) {
			c := &queue(p, "s").Chunks[0]
			c.MessageData = append(c.MessageData, 0)
		}},
		{"message records cut short", "truncated", func(p *parsedSnapshot) {
			c := &queue(p, "s").Chunks[0]
			c.MessageData = c.MessageData[:len(c.MessageData)-3]
		}},
		{"deduplication key twice", "twice", func(p *parsedSnapshot) {
			c := &queue(p, "q.fifo").Chunks[0]
			r := recordReader{buf: c.DedupData}
			first, id, _ := r.dedup(snapVersion)
			var w recordWriter
			w.dedup(&first, id)
			w.dedup(&first, id)
			c.DedupData = append(w.buf, r.buf...)
			c.Dedups++
			queue(p, "q.fifo").Q.Dedups++
		}},
		{"attempt serials without nonces", "nonces", func(p *parsedSnapshot) {
			a := &queue(p, "q.fifo").Chunks[0].Attempts[0]
			a.Nonces = a.Nonces[:0]
		}},
	}
}

// TestSnapshotWhileReading takes snapshots while other goroutines read;
// with -race it proves Snapshot writes nothing.
func TestSnapshotWhileReading(t *testing.T) {
	h := richHarness(t)
	want := snapshotBytes(t, h.e)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g == 0 {
					if got := snapshotBytes(t, h.e); !bytes.Equal(got, want) {
						t.Error("snapshots of an unchanged engine differ")
						return
					}
					continue
				}
				at := h.now + int64(i)*int64(time.Second)
				for k := range h.e.queues {
					if _, err := h.e.Read(&Command{Time: at, Caller: testAccount, Queue: k, Request: &api.GetQueueAttributesRequest{AttributeNames: []string{"All"}}}); err != nil {
						t.Error(err)
					}
					h.e.NextWake(k, at)
					h.e.Receivable(k, at)
				}
			}
		}()
	}
	wg.Wait()
}

// FuzzRestore feeds Restore arbitrary bytes, as they are and with a valid
// checksum appended in place of their last four bytes (so that mutations
// of the body reach the decoder's checks). Restore must never panic; what
// it accepts must be an engine that works: it snapshots to the same bytes
// again, and commands on every queue do not panic.
func FuzzRestore(f *testing.F) {
	// The harness wants a *testing.T, which a fuzz target does not have
	// before f.Fuzz; the builders do not fail, so a bare one serves.
	seedT := &testing.T{}
	for _, build := range []func(*testing.T) *harness{newHarness, richHarness} {
		f.Add(snapshotBytes(f, build(seedT).e))
	}
	f.Add(snapshotBytes(f, junkEngine(seedT, 7)))
	f.Add([]byte(snapMagic + "\x00\x00\x00\x01garbage"))
	f.Fuzz(fuzzRestore)
}

func fuzzRestore(t *testing.T, data []byte) {
	for _, in := range [][]byte{data, withChecksum(data)} {
		e := junkEngine(t, 42)
		before := snapshotBytes(t, e)
		woken := 0
		e.SetAvailableHook(func(api.QueueKey) { woken++ })
		if err := e.Restore(bytes.NewReader(in)); err != nil {
			if after := snapshotBytes(t, e); !bytes.Equal(before, after) || woken > 0 {
				t.Fatalf("a failed restore (%v) changed the engine or called the hook", err)
			}
			continue
		}
		got := snapshotBytes(t, e)
		e2 := New(Config{Region: testRegion})
		if err := e2.Restore(bytes.NewReader(got)); err != nil {
			t.Fatalf("the snapshot of a restored engine does not restore: %v", err)
		}
		if again := snapshotBytes(t, e2); !bytes.Equal(again, got) {
			t.Fatalf("snapshot, restore, snapshot changed the bytes")
		}
		exercise(e)
	}
}

// withChecksum replaces the last four bytes of data by the checksum of the
// rest.
func withChecksum(data []byte) []byte {
	if len(data) < len(snapMagic)+8 {
		return data
	}
	b := bytes.Clone(data)
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], snapCRCTable))
	return b
}

// exercise applies commands of every kind to every queue of e.
func exercise(e *Engine) {
	now := e.now
	var keys []api.QueueKey
	for k := range e.queues {
		keys = append(keys, k)
	}
	var handles []string
	do := func(k api.QueueKey, req api.Request) (api.Response, error) {
		now += int64(time.Second)
		cmd := &Command{Time: now, Caller: k.Account, Queue: k, Request: req, MessageIDs: []string{"x"}, Entropy: uint64(now)}
		if _, ok := req.(*TickRequest); !ok && req.Action().ReadOnly() {
			return e.Read(cmd)
		}
		return e.Apply(cmd)
	}
	for _, k := range keys {
		ten, zero := 10, 0
		for _, at := range []int64{now, now + int64(24*time.Hour)} {
			e.NextWake(k, at)
			e.Receivable(k, at)
		}
		do(k, &api.GetQueueAttributesRequest{AttributeNames: []string{"All"}})
		do(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: k.ARN(testRegion), MaxResults: &ten})
		do(k, &api.SendMessageRequest{MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "d"})
		for _, vis := range []*int{&zero, nil} {
			resp, err := do(k, &api.ReceiveMessageRequest{MaxNumberOfMessages: &ten, VisibilityTimeout: vis, ReceiveRequestAttemptId: "a"})
			if err == nil {
				for _, m := range resp.(*api.ReceiveMessageResult).Messages {
					handles = append(handles, m.ReceiptHandle)
				}
			}
		}
		for _, h := range handles {
			do(k, &api.ChangeMessageVisibilityRequest{ReceiptHandle: h, VisibilityTimeout: &ten})
			do(k, &api.DeleteMessageRequest{ReceiptHandle: h})
		}
		if resp, err := do(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: k.ARN(testRegion)}); err == nil {
			do(api.QueueKey{}, &api.CancelMessageMoveTaskRequest{TaskHandle: resp.(*api.StartMessageMoveTaskResult).TaskHandle})
		}
		do(k, &api.PurgeQueueRequest{})
	}
	now += int64(10 * time.Minute)
	do(api.QueueKey{}, &TickRequest{})
	for _, k := range keys {
		do(k, &api.DeleteQueueRequest{})
	}
	now += int64(24 * time.Hour)
	do(api.QueueKey{}, &TickRequest{})
}

// parsedSnapshot is a snapshot decoded into its records, for tests to edit
// and encode again.
type parsedSnapshot struct {
	Version uint32 // format version encode writes; 0 for snapVersion
	Header  snapHeader
	Queues  []parsedQueue
	Trailer snapTrailer
}

type parsedQueue struct {
	Q      snapQueue
	Chunks []snapChunk
}

func parseSnapshot(t *testing.T, data []byte) *parsedSnapshot {
	t.Helper()
	if !bytes.HasPrefix(data, []byte(snapMagic)) {
		t.Fatal("parseSnapshot: no magic number")
	}
	version := binary.BigEndian.Uint32(data[len(snapMagic):])
	body := bytes.NewReader(data[len(snapMagic)+4 : len(data)-4])
	dec := gob.NewDecoder(body)
	p := &parsedSnapshot{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("parseSnapshot: %v", err)
		}
	}
	must(dec.Decode(&p.Header))
	for range p.Header.Queues {
		var q parsedQueue
		must(dec.Decode(&q.Q))
		var msgs, dedups, attempts, ordered int
		for msgs < q.Q.Messages || dedups < q.Q.Dedups || attempts < q.Q.Attempts || ordered < q.Q.Ordered {
			var c snapChunk
			must(dec.Decode(&c))
			if version >= 2 {
				for _, data := range []*[]byte{&c.MessageData, &c.DedupData} {
					n, err := binary.ReadUvarint(body)
					must(err)
					*data = make([]byte, n)
					_, err = io.ReadFull(body, *data)
					must(err)
				}
			}
			msgs, dedups, attempts = msgs+c.Messages, dedups+c.Dedups, attempts+len(c.Attempts)
			for _, o := range c.Orders {
				ordered += len(o.Serials)
			}
			q.Chunks = append(q.Chunks, c)
		}
		p.Queues = append(p.Queues, q)
	}
	must(dec.Decode(&p.Trailer))
	return p
}

// dropDedups removes every deduplication record, and the chunks left
// with no record at all.
func (p *parsedSnapshot) dropDedups() {
	for i := range p.Queues {
		pq := &p.Queues[i]
		pq.Q.Dedups = 0
		pq.Chunks = slices.DeleteFunc(pq.Chunks, func(c snapChunk) bool {
			return c.Messages == 0 && len(c.Attempts) == 0 && len(c.Orders) == 0
		})
		for j := range pq.Chunks {
			pq.Chunks[j].Dedups, pq.Chunks[j].DedupData = 0, nil
		}
	}
}

// encode writes the records as a snapshot, with a valid checksum.
func (p *parsedSnapshot) encode(t *testing.T) []byte {
	t.Helper()
	if p.Version != 0 {
		return p.encodeVersion(t, p.Version) // the records are in its layout
	}
	return p.encodeVersion(t, snapVersion)
}

// encodeVersion writes the records as a snapshot of format version 1 or
// 2, with a valid checksum.
func (p *parsedSnapshot) encodeVersion(t *testing.T, version uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(snapMagic)
	binary.Write(&b, binary.BigEndian, version)
	enc := gob.NewEncoder(&b)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
	}
	must(enc.Encode(&p.Header))
	for i := range p.Queues {
		must(enc.Encode(&p.Queues[i].Q))
		for _, c := range p.Queues[i].Chunks {
			if version == 1 {
				must(enc.Encode(&c))
				continue
			}
			msgs, dedups := c.MessageData, c.DedupData
			c.MessageData, c.DedupData = nil, nil
			must(enc.Encode(&c))
			must(writeChunkData(&b, msgs, dedups))
		}
	}
	must(enc.Encode(&p.Trailer))
	return binary.BigEndian.AppendUint32(b.Bytes(), crc32.Checksum(b.Bytes(), snapCRCTable))
}

// decodeMessages decodes a chunk's message records, their bodies into
// bodies.
func decodeMessages(t *testing.T, c *snapChunk, bodies BodyStore, store *msgStore) ([]*message, []bool) {
	t.Helper()
	r := recordReader{buf: c.MessageData, bodies: bodies}
	var ms []*message
	var aged []bool
	for range c.Messages {
		var d decodedMessage
		if err := r.message(&d); err != nil {
			t.Fatalf("decodeMessages: %v", err)
		}
		m := store.adopt(&d.m, d.group, d.sender, d.recv)
		store.setExt(m, newMsgExt(d.id, msgExt{attrs: d.attrs, storedAttrs: d.storedAttrs, md5Attrs: d.md5Attrs, traceHeader: d.traceHeader, dlqSource: string(d.dlqSource), head: d.head, sentBefore: m.enqueuedAt - d.sentAt}))
		ms, aged = append(ms, m), append(aged, d.aged)
	}
	return ms, aged
}

// encodeMessages encodes ms as a chunk's message records, their bodies
// read from bodies.
func encodeMessages(c *snapChunk, ms []*message, aged []bool, bodies BodyStore, store *msgStore) {
	w := recordWriter{ms: store, bodies: bodies}
	for i, m := range ms {
		w.message(m, aged[i])
	}
	c.MessageData, c.Messages = w.buf, len(ms)
}
