package replog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

var testQueue = api.QueueKey{Account: "000000000000", Name: "q.fifo"}

func openTest(t testing.TB, dir string, cfg RaftConfig) (*Raft, *engine.Engine) {
	t.Helper()
	cfg.Dir = dir
	if cfg.Engine == (engine.Config{}) {
		cfg.Engine = testEngine
	}
	l, err := OpenRaft(cfg)
	if err != nil {
		t.Fatalf("OpenRaft: %v", err)
	}
	return l, l.fsm.eng
}

// clock hands out strictly increasing command times.
type clock struct {
	mu sync.Mutex
	t  int64
}

func (c *clock) next() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t += int64(time.Millisecond)
	return c.t
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()} }

func apply(t testing.TB, l Log, c *clock, q api.QueueKey, req api.Request, ids ...string) api.Response {
	t.Helper()
	now := c.next()
	resp, err := l.Apply(context.Background(), &engine.Command{Time: now, Caller: q.Account, Queue: q, Request: req, MessageIDs: ids, Entropy: uint64(now)})
	if err != nil {
		t.Fatalf("%s: %v", req.Action(), err)
	}
	return resp
}

func createFIFO(t testing.TB, l Log, c *clock) {
	apply(t, l, c, api.QueueKey{Account: testQueue.Account}, &api.CreateQueueRequest{
		QueueName:  testQueue.Name,
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"},
	})
}

func send(t testing.TB, l Log, c *clock, i int) *api.SendMessageResult {
	return apply(t, l, c, testQueue, &api.SendMessageRequest{
		QueueUrl: testQueue.Path(), MessageBody: fmt.Sprintf("m%d", i), MessageGroupId: "g",
	}, fmt.Sprintf("id-%d", i)).(*api.SendMessageResult)
}

func receiveBodies(t *testing.T, l Log, c *clock, n int) []string {
	res := apply(t, l, c, testQueue, &api.ReceiveMessageRequest{QueueUrl: testQueue.Path(), MaxNumberOfMessages: &n}).(*api.ReceiveMessageResult)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, m.Body)
	}
	return bodies
}

func TestRaftRecoversAfterReopen(t *testing.T) {
	for _, snapshotEvery := range []uint64{0, 3} {
		t.Run(fmt.Sprintf("snapshot-every-%d", snapshotEvery), func(t *testing.T) {
			dir := t.TempDir()
			c := newClock()
			l, _ := openTest(t, dir, RaftConfig{SnapshotEntries: snapshotEvery})
			createFIFO(t, l, c)
			first := send(t, l, c, 0)
			for i := 1; i < 10; i++ {
				send(t, l, c, i)
			}
			if snapshotEvery > 0 {
				if err := l.raft.Snapshot().Error(); err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				send(t, l, c, 10) // an entry after the snapshot, replayed from the log
			}
			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}

			l, _ = openTest(t, dir, RaftConfig{SnapshotEntries: snapshotEvery})
			defer l.Close()
			// The deduplication record survived: resending m0 returns the
			// original message id and enqueues nothing.
			dup := send(t, l, c, 0)
			if dup.MessageId != first.MessageId {
				t.Fatalf("resend after restart got MessageId %s, want the original %s", dup.MessageId, first.MessageId)
			}
			got := receiveBodies(t, l, c, 10)
			want := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("after restart received %v, want %v", got, want)
			}
		})
	}
}

func TestRaftSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTest(t, dir, RaftConfig{})
	defer l.Close()
	_, err := OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
	if err == nil || !strings.Contains(err.Error(), "in use by another fifoq") {
		t.Fatalf("second OpenRaft on %s: err = %v, want a lock error", dir, err)
	}
}

// TestRaftGroupCommit checks that concurrent commands share log entries:
// fewer entries than commands means one fsync served several requests.
func TestRaftGroupCommit(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	defer l.Close()
	createFIFO(t, l, c)
	before := l.raft.LastIndex()
	const n = 400
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			now := c.next()
			_, err := l.Apply(context.Background(), &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, Entropy: uint64(now),
				Request: &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: fmt.Sprintf("m%d", i), MessageGroupId: "g"}, MessageIDs: []string{fmt.Sprintf("id-%d", i)}})
			if err != nil {
				t.Errorf("send %d: %v", i, err) // not Fatal: this is not the test's goroutine
			}
		}(i)
	}
	wg.Wait()
	entries := l.raft.LastIndex() - before
	if entries >= n {
		t.Fatalf("%d concurrent sends took %d log entries: no group commit", n, entries)
	}
	t.Logf("%d concurrent sends in %d log entries", n, entries)
}

func TestRaftCorruptSnapshotRefused(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	createFIFO(t, l, c)
	send(t, l, c, 0)
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	l.Close()
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(states) == 0 {
		t.Fatal("no snapshot written")
	}
	// Flip a byte in the middle of the engine state.
	b, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(states[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
	if err == nil {
		t.Fatal("OpenRaft accepted a corrupt snapshot")
	}
	if !strings.Contains(err.Error(), states[0]) && !strings.Contains(err.Error(), filepath.Base(filepath.Dir(states[0]))) {
		t.Fatalf("error does not name the snapshot: %v", err)
	}
	t.Logf("refused as expected: %v", err)
}

func TestCodecRoundTrip(t *testing.T) {
	delay := 5
	cmds := []*engine.Command{
		{Time: 1, Caller: "000000000000", Queue: testQueue, Request: &api.SendMessageRequest{QueueUrl: "/a/b", MessageBody: "x\r\ny", DelaySeconds: &delay,
			MessageAttributes: map[string]api.MessageAttributeValue{"b": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}}, MessageIDs: []string{"m"}, Entropy: 7},
		{Time: 2, Request: &engine.TickRequest{}},
		{Time: 3, Request: &engine.HousekeepRequest{Limit: 77}},
		{Request: &engine.SetMetaRequest{Key: "member/n1", Value: "0123456789abcdef0123456789abcdef"}},
	}
	data, err := encodeEntry(cmds)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Request.(*api.SendMessageRequest).MessageBody != "x\r\ny" || *got[0].Request.(*api.SendMessageRequest).DelaySeconds != 5 ||
		got[0].Entropy != 7 || got[0].Queue != testQueue || got[0].MessageIDs[0] != "m" {
		t.Fatalf("round trip changed the commands: %+v", got[0])
	}
	if _, ok := got[1].Request.(*engine.TickRequest); !ok {
		t.Fatalf("tick decoded as %T", got[1].Request)
	}
	if hk, ok := got[2].Request.(*engine.HousekeepRequest); !ok || hk.Limit != 77 || got[2].Time != 3 {
		t.Fatalf("housekeeping decoded as %#v at %d", got[2].Request, got[2].Time)
	}
	if m, ok := got[3].Request.(*engine.SetMetaRequest); !ok || m.Key != "member/n1" || m.Value != "0123456789abcdef0123456789abcdef" || got[3].Time != 0 {
		t.Fatalf("metadata decoded as %#v at %d", got[3].Request, got[3].Time)
	}
	for _, bad := range [][]byte{nil, {9}, append([]byte{entryFormatVersion}, 5), data[:len(data)-1]} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("decodeEntry(%v) accepted a bad entry", bad)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	data, _ := encodeEntry([]*engine.Command{{Time: 1, Request: &api.PurgeQueueRequest{QueueUrl: "/a/b"}}})
	f.Add(data)
	// A version 4 entry with binary layouts, for the fuzzer to mutate.
	delay := 3
	data, _ = encodeEntry([]*engine.Command{{Time: 2, MessageIDs: []string{"a", "b"}, Request: &api.SendMessageBatchRequest{QueueUrl: "/a/b", Entries: []api.SendMessageBatchRequestEntry{
		{Id: "1", MessageBody: "x", DelaySeconds: &delay, MessageGroupId: "g", MessageGroupIdSet: true,
			MessageAttributes: map[string]api.MessageAttributeValue{"k": {DataType: "String", StringListValues: []string{"v"}}}}}}},
		{Time: 3, Request: &api.DeleteMessageBatchRequest{QueueUrl: "/a/b", Entries: []api.DeleteMessageBatchRequestEntry{{Id: "1", ReceiptHandle: "h"}}}}})
	f.Add(data)
	// A move's install in its binary layout (version 12).
	data, _ = encodeEntry([]*engine.Command{{Time: 4, Queue: api.QueueKey{Account: "a", Name: "b"}, Request: &engine.InstallQueueRequest{Move: "m", Image: []byte("FIFOQSNP image")}}})
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeEntry(b)
	})
}
