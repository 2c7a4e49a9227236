package replog

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/frozentest"
)

// regenerate rewrites the fixtures of the CURRENT formats (the newest log
// entry version, the snapshot frame this fifoq writes): run it with
// `go test ./internal/replog -run Frozen -replog.regenerate` when a format
// version is added, and commit the new files beside the old ones. Older
// fixtures are never rewritten: they are what an older fifoq wrote
// (testdata/entries/README.md).
var regenerate = flag.Bool("replog.regenerate", false, "write the fixtures of the current entry format and snapshot frame into testdata")

// TestFrozenEntryFormats decodes the committed log entry of every format
// version with today's code and compares the commands, field by field,
// with what the fifoq that wrote the entry decoded from it (vN.json): a
// field renamed, dropped or read in another order fails here, where
// re-encoding an old version with today's code would pass.
func TestFrozenEntryFormats(t *testing.T) {
	if *regenerate {
		writeCurrentEntryFixture(t)
	}
	for v := byte(1); v <= entryFormatVersion; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := filepath.Join("testdata", "entries", fmt.Sprintf("v%d", v))
			data, err := os.ReadFile(name + ".bin")
			if err != nil {
				t.Fatalf("no fixture of entry format %d (a new version must add one: -replog.regenerate): %v", v, err)
			}
			want, err := os.ReadFile(name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if data[0] != v {
				t.Fatalf("%s.bin is an entry of version %d", name, data[0])
			}
			cmds, err := decodeEntry(data)
			if err != nil {
				t.Fatalf("today's fifoq cannot read the entry an older one wrote: %v", err)
			}
			if d, err := frozentest.Diff(want, frozentest.JSON(cmds)); err != nil || d != "" {
				t.Errorf("%s decodes differently than it did when it was written (%v):\n%s", name, err, d)
			}
		})
	}
}

// TestFrozenSnapshotFrames restores the committed snapshot of every frame
// version (fsm.go) with today's code and asks the engine what the fifoq
// that wrote it was asked, as it was (frozentest.Observe): the answers
// must be the same.
func TestFrozenSnapshotFrames(t *testing.T) {
	if *regenerate {
		writeCurrentFrameFixture(t)
	}
	for v := 1; v <= snapshotInlineVersion; v++ {
		t.Run(fmt.Sprintf("frame-v%d", v), func(t *testing.T) {
			name := filepath.Join("testdata", "snapshots", fmt.Sprintf("frame-v%d", v))
			data, err := os.ReadFile(name + ".bin")
			if err != nil {
				t.Fatal(err)
			}
			fx := readFrameFixture(t, name+".json")
			f := &fsm{eng: engine.New(engine.Config{Region: fx.Region})}
			if err := f.restore(io.NopCloser(bytes.NewReader(data)), false); err != nil {
				t.Fatalf("today's fifoq cannot restore the snapshot an older one wrote: %v", err)
			}
			checkObservations(t, name, fx, f.eng)
		})
	}
}

// frameFixture is the JSON beside a snapshot fixture: where and when the
// engine was observed, and what it answered.
type frameFixture struct {
	Region, Account string
	Now             int64
	Probes          frozentest.Probes
	Observations    json.RawMessage
}

func readFrameFixture(t *testing.T, path string) frameFixture {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fx frameFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fx
}

func checkObservations(t *testing.T, name string, fx frameFixture, e *engine.Engine) {
	t.Helper()
	got := frozentest.JSON(frozentest.Observe(e, fx.Account, fx.Now, fx.Probes))
	if d, err := frozentest.Diff(fx.Observations, got); err != nil || d != "" {
		t.Errorf("the state restored from %s answers differently than the state that wrote it (%v):\n%s", name, err, d)
	}
}

// genAccount owns the fixtures' queues.
const genAccount = "123456789012"

func genStrp(s string) *string { return &s }
func genIntp(i int) *int       { return &i }

var (
	genFIFO  = api.QueueKey{Account: genAccount, Name: "jobs.fifo"}
	genStd   = api.QueueKey{Account: genAccount, Name: "events"}
	genPart7 = api.QueueKey{Account: genAccount, Name: "jobs.fifo", Part: 7}
)

// genCommands are the commands every entry fixture holds: the actions with
// binary layouts, others in JSON, an internal tick, both cool-downs. The
// same function (testdata/gen/entries_base.go.txt) wrote the older
// fixtures at older commits.
func genCommands(t0 int64) []*engine.Command {
	acct, fq, sq := genAccount, genFIFO, genStd
	at := func(i int) int64 { return t0 + int64(i)*1e6 }
	attrs := map[string]api.MessageAttributeValue{
		"s":  {DataType: "String", StringValue: genStrp("text \u00fc")},
		"n":  {DataType: "Number", StringValue: genStrp("-12.5")},
		"b":  {DataType: "Binary", BinaryValue: []byte{0, 1, 0xfe, 0xff}},
		"c":  {DataType: "String.custom", StringValue: genStrp("custom")},
		"bj": {DataType: "Binary.jpeg", BinaryValue: []byte("jpg")},
	}
	return []*engine.Command{
		{Time: at(0), Caller: acct, Entropy: 11, Request: &api.CreateQueueRequest{QueueName: "jobs.fifo",
			Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "45", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
			Tags:       map[string]string{"team": "a"}}},
		{Time: at(1), Caller: acct, Entropy: 12, Request: &api.CreateQueueRequest{QueueName: "events",
			Attributes: map[string]string{"DelaySeconds": "5", "MessageRetentionPeriod": "3600"}}},
		{Time: at(2), Caller: acct, Queue: fq, MessageIDs: []string{"m-1"}, Entropy: 13, Request: &api.SendMessageRequest{QueueUrl: fq.Path(),
			MessageBody: "first", MessageAttributes: attrs, MessageGroupId: "g1", MessageGroupIdSet: true, MessageDeduplicationId: "d1", MessageDeduplicationIdSet: true}},
		{Time: at(3), Caller: acct, Queue: sq, MessageIDs: []string{"m-2", "m-3"}, Entropy: 14, Request: &api.SendMessageBatchRequest{QueueUrl: sq.Path(),
			Entries: []api.SendMessageBatchRequestEntry{
				{Id: "a", MessageBody: "one", DelaySeconds: genIntp(30), MessageAttributes: map[string]api.MessageAttributeValue{"n": {DataType: "Number.int", StringValue: genStrp("7")}}},
				{Id: "b", MessageBody: "two"}}}},
		{Time: at(4), Caller: acct, Queue: fq, Entropy: 1<<63 + 5, Request: &api.ReceiveMessageRequest{QueueUrl: fq.Path(), AttributeNames: []string{"All"},
			MessageAttributeNames: []string{"s", "n"}, MaxNumberOfMessages: genIntp(10), VisibilityTimeout: genIntp(30), WaitTimeSeconds: genIntp(0), ReceiveRequestAttemptId: "att-1"}},
		{Time: at(5), Caller: acct, Queue: sq, Request: &api.DeleteMessageRequest{QueueUrl: sq.Path(), ReceiptHandle: "handle-1"}},
		{Time: at(6), Caller: acct, Queue: sq, Request: &api.DeleteMessageBatchRequest{QueueUrl: sq.Path(),
			Entries: []api.DeleteMessageBatchRequestEntry{{Id: "x", ReceiptHandle: "handle-2"}}}},
		{Time: at(7), Caller: acct, Queue: fq, Request: &api.ChangeMessageVisibilityRequest{QueueUrl: fq.Path(), ReceiptHandle: "handle-3", VisibilityTimeout: genIntp(60)}},
		{Time: at(8), Caller: acct, Queue: sq, Request: &api.SetQueueAttributesRequest{QueueUrl: sq.Path(), Attributes: map[string]string{"VisibilityTimeout": "10"}}},
		{Time: at(9), Entropy: 15, Request: &engine.TickRequest{}},
		{Time: at(10), Caller: acct, Queue: sq, PurgeDelay: 2e9, Request: &api.PurgeQueueRequest{QueueUrl: sq.Path()}},
		{Time: at(11), Caller: "210987654321", Queue: sq, RecreateDelay: -1, Request: &api.DeleteQueueRequest{QueueUrl: sq.Path()}},
	}
}

// genEmptyDedupID is a send with its deduplication id sent empty: "ei" in
// the JSON versions (2 and 3), a sent flag in the binary ones.
func genEmptyDedupID(t0 int64) *engine.Command {
	return &engine.Command{Time: t0 + 20e6, Caller: genAccount, Queue: genFIFO, MessageIDs: []string{"m-4", "m-5"}, Entropy: 16,
		Request: &api.SendMessageBatchRequest{QueueUrl: genFIFO.Path(), Entries: []api.SendMessageBatchRequestEntry{
			{Id: "e", MessageBody: "empty dedup id", MessageGroupId: "g2", MessageGroupIdSet: true, MessageDeduplicationIdSet: true},
			{Id: "f", MessageBody: "no dedup id", MessageGroupId: "g2", MessageGroupIdSet: true}}}}
}

// writeCurrentEntryFixture writes the entry fixture of entryFormatVersion:
// every command of the older fixtures, the internal commands, (from
// version 6) commands in another region than the server's, (from
// version 7) a fifoq:SetMeta that sets its key only if absent, and (from
// version 8) the steps of a queue's move. Version 9 adds nothing to the
// layout; version 10 adds the outbox's commands and a spanning fence;
// version 11 a command on a partition of a split queue, the split, and a
// fence of a queue whose move tasks ended; version 12 writes the move's
// install in its binary layout; version 13 adds a backup's hold of
// departures, set and lifted; version 14 adds nothing to the layout.
func writeCurrentEntryFixture(t *testing.T) {
	const t0 = 1764400000_000000000
	eu := api.QueueKey{Region: "eu-west-1", Account: genAccount, Name: "jobs.fifo"}
	cmds := append(genCommands(t0), genEmptyDedupID(t0),
		&engine.Command{Time: t0 + 30e6, Request: &engine.HousekeepRequest{Limit: 10000}},
		&engine.Command{Time: t0 + 31e6, Entropy: 17, Request: &engine.TickRequest{Moves: 500}},
		&engine.Command{Request: &engine.SetMetaRequest{Key: "cluster/entry-format", Value: "6"}},
		&engine.Command{Request: &engine.SetMetaRequest{Key: "cluster/incarnation/n2"}},
		&engine.Command{Time: t0 + 32e6, Caller: genAccount, Region: "eu-west-1", Entropy: 18, Request: &api.CreateQueueRequest{QueueName: "jobs.fifo",
			Attributes: map[string]string{"FifoQueue": "true"}}},
		&engine.Command{Time: t0 + 33e6, Caller: genAccount, Region: "eu-west-1", Queue: eu, MessageIDs: []string{"m-6"}, Entropy: 19,
			Request: &api.SendMessageRequest{QueueUrl: eu.Path(), MessageBody: "in eu", MessageGroupId: "g", MessageGroupIdSet: true,
				MessageDeduplicationId: "d", MessageDeduplicationIdSet: true}},
		&engine.Command{Time: t0 + 34e6, Caller: genAccount, Region: "ap-south-1", Queue: eu, Request: &api.PurgeQueueRequest{QueueUrl: eu.Path()}},
		&engine.Command{Request: &engine.SetMetaRequest{Key: "shards/queue/" + genAccount + "//jobs", Value: "2", IfAbsent: true}},
		&engine.Command{Time: t0 + 35e6, Queue: genFIFO, Request: &engine.FenceQueueRequest{Move: "move-1"}},
		&engine.Command{Time: t0 + 36e6, Queue: genFIFO, Request: &engine.UnfenceQueueRequest{Move: "move-1"}},
		&engine.Command{Time: t0 + 37e6, Queue: genFIFO, Request: &engine.InstallQueueRequest{Move: "move-2", Image: []byte("FIFOQSNP\x00\x00\x00\x02 image")}},
		&engine.Command{Time: t0 + 38e6, Queue: genFIFO, Request: &engine.DropQueueRequest{Move: "move-2"}},
		&engine.Command{Time: t0 + 39e6, Queue: genFIFO, Request: &engine.FenceQueueRequest{Move: "move-3", Spanning: true}},
		&engine.Command{Time: t0 + 40e6, Queue: eu, Request: &engine.TakeMessagesRequest{Source: genFIFO, SourceArn: "arn:aws:sqs:us-east-1:" + genAccount + ":" + genFIFO.Name,
			Created: t0, Fifo: true, Messages: []engine.OutboxMessage{{Seq: 1, Kind: engine.OutboxDeadLetter, Record: []byte("a message record")}}}},
		&engine.Command{Time: t0 + 41e6, Queue: genFIFO, Request: &engine.SettleOutboxRequest{Created: t0, Through: 1}},
		&engine.Command{Time: t0 + 42e6, Queue: genFIFO, Request: &engine.SettleOutboxRequest{Created: t0, Through: 2, Returned: true}},
		&engine.Command{Time: t0 + 43e6, Queue: genFIFO, Request: &engine.SplitQueueRequest{At: 1 << 31, Part: 7}},
		&engine.Command{Time: t0 + 43e6 + 1, Queue: genStd, Request: &engine.FenceQueueRequest{Move: "move-4", Spanning: true, Ended: true}},
		&engine.Command{Time: t0 + 44e6, Caller: genAccount, Queue: genPart7, MessageIDs: []string{"m-7"}, Entropy: 20,
			Request: &api.SendMessageRequest{QueueUrl: genFIFO.Path(), MessageBody: "in partition 7", MessageGroupId: "g7", MessageGroupIdSet: true,
				MessageDeduplicationId: "d7", MessageDeduplicationIdSet: true}},
		&engine.Command{Time: t0 + 45e6, Queue: eu, Request: &engine.TakeMessagesRequest{Source: genPart7, SourceArn: "arn:aws:sqs:us-east-1:" + genAccount + ":" + genFIFO.Name,
			Created: t0, Fifo: true, Messages: []engine.OutboxMessage{{Seq: 1, Kind: engine.OutboxDeadLetter, Record: []byte("a message record")}}}},
		&engine.Command{Time: t0 + 46e6, Queue: genFIFO, Request: &engine.MergeQueueRequest{Part: 7}},
		&engine.Command{Time: t0 + 47e6, Request: &engine.HoldDeparturesRequest{ID: "backup-1", Until: t0 + 120e9}},
		&engine.Command{Time: t0 + 48e6, Request: &engine.HoldDeparturesRequest{ID: "backup-1"}},
	)
	data, _, err := encodeEntryHeld(cmds, entryFormatVersion)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err = decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join("testdata", "entries", fmt.Sprintf("v%d", entryFormatVersion))
	writeFixture(t, name+".bin", data)
	writeFixture(t, name+".json", frozentest.JSON(cmds))
}

// frameSink is a raft.SnapshotSink in memory.
type frameSink struct{ bytes.Buffer }

func (s *frameSink) ID() string    { return "frozen" }
func (s *frameSink) Cancel() error { return nil }
func (s *frameSink) Close() error  { return nil }

// writeCurrentFrameFixture writes the snapshot frame this fifoq writes
// with the bodies in it (snapshotInlineVersion), of the state genCommands
// leave, as testdata/gen/frames.go.txt did at older commits.
func writeCurrentFrameFixture(t *testing.T) {
	frame, answers := genFrame(t, nil)
	name := filepath.Join("testdata", "snapshots", fmt.Sprintf("frame-v%d", snapshotInlineVersion))
	writeFixture(t, name+".bin", frame)
	writeFixture(t, name+".json", answers)
}

// genFrame applies genCommands to an engine whose bodies are in b (in
// memory if b is nil), snapshots it through the fsm as Raft would, and
// returns the snapshot and, as a fixture's JSON, what the engine answers
// then.
func genFrame(t *testing.T, b *bodies) (frame, answers []byte) {
	t.Helper()
	const t0 = 1764300000_000000000
	cfg := engine.Config{Region: "us-east-1"}
	if b != nil {
		cfg.Bodies = b
	}
	eng := engine.New(cfg)
	for _, c := range append(genCommands(t0)[:10], genEmptyDedupID(t0)) {
		_, _ = eng.Apply(c) // some fail (receipt handles of no message), as they would
	}
	f := &fsm{eng: eng, bodies: b}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink frameSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	fx := struct {
		Region, Account string
		Now             int64
		Probes          frozentest.Probes
		Observations    []frozentest.Observation
	}{Region: "us-east-1", Account: genAccount, Now: t0 + 20e6,
		Probes: frozentest.Probes{DedupIDs: []string{"d1", "nope"}, AttemptIDs: []string{"att-1"}}}
	fx.Observations = frozentest.Observe(eng, fx.Account, fx.Now, fx.Probes)
	js, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return sink.Bytes(), append(js, '\n')
}

func writeFixture(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
