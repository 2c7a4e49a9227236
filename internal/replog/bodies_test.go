package replog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

var bodyQueue = api.QueueKey{Account: "000000000000", Name: "bodies"}

// bigBody is the body of message i: size bytes, different for every i.
func bigBody(i, size int) string {
	return fmt.Sprintf("%06d", i) + strings.Repeat(string(rune('a'+i%26)), size-6)
}

func sendBody(t *testing.T, l Log, c *clock, i, size int) {
	t.Helper()
	apply(t, l, c, bodyQueue, &api.SendMessageRequest{QueueUrl: bodyQueue.Path(), MessageBody: bigBody(i, size)}, fmt.Sprintf("id-%d", i))
}

// receiveAll receives (and deletes) until a receive finds nothing, and
// returns the bodies by the number they start with.
func receiveAll(t *testing.T, l Log, c *clock) map[int]string {
	t.Helper()
	got := map[int]string{}
	for {
		n := 10
		res := apply(t, l, c, bodyQueue, &api.ReceiveMessageRequest{QueueUrl: bodyQueue.Path(), MaxNumberOfMessages: &n}).(*api.ReceiveMessageResult)
		if len(res.Messages) == 0 {
			return got
		}
		for _, m := range res.Messages {
			var i int
			fmt.Sscanf(m.Body[:6], "%d", &i)
			got[i] = m.Body
			apply(t, l, c, bodyQueue, &api.DeleteMessageRequest{QueueUrl: bodyQueue.Path(), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// storeBytes is the size of the body store's files.
func storeBytes(t *testing.T, dir string) (files int, size int64) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, bodiesDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".body") {
			files++
			size += info.Size()
		}
	}
	return files, size
}

// countRefs counts the engine's messages whose bodies are in the store.
func countRefs(l *Raft, eng *engine.Engine) (n int) {
	l.Read(func(e *engine.Engine) { e.BodyRefs(func(engine.BodyRef) { n++ }) })
	return n
}

// TestBodiesOnDisk checks that the durable log keeps bodies in the store,
// not in the engine, and that they read back exactly through a receive,
// across a snapshot and a restart (which empties the store and rewrites
// it from the snapshot and the log).
func TestBodiesOnDisk(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, eng := openTest(t, dir, RaftConfig{})
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	const size = 100_000
	for i := range 20 {
		sendBody(t, l, c, i, size)
	}
	if n := countRefs(l, eng); n != 20 {
		t.Fatalf("%d of 20 messages have their bodies in the store", n)
	}
	var stored int64
	for _, f := range l.fsm.bodies.store.Stats() {
		stored += f.Size
	}
	if stored < 20*size {
		t.Fatalf("the body store holds %d bytes, less than the 20 bodies of %d", stored, size)
	}
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i := 20; i < 25; i++ { // after the snapshot: replayed from the log
		sendBody(t, l, c, i, size)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l, eng = openTest(t, dir, RaftConfig{})
	defer l.Close()
	if n := countRefs(l, eng); n != 25 {
		t.Fatalf("after the restart, %d of 25 messages have their bodies in the store", n)
	}
	got := receiveAll(t, l, c)
	for i := range 25 {
		if got[i] != bigBody(i, size) {
			t.Fatalf("message %d: received %d bytes, not its body", i, len(got[i]))
		}
	}
	if len(got) != 25 {
		t.Fatalf("received %d messages, want 25", len(got))
	}
}

// TestDamagedBodyIsNotServed damages a body on disk: the receive that
// takes its message answers InternalFailure rather than a wrong body, and
// the node goes on serving the others.
func TestDamagedBodyIsNotServed(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	defer l.Close()
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	sendBody(t, l, c, 1, 1000)
	// Enough after it that its record is read from the file, not from the
	// memory that holds the last few MiB appended.
	for i := 10; i < 25; i++ {
		sendBody(t, l, c, i, 1_000_000)
	}
	files, _ := filepath.Glob(filepath.Join(dir, bodiesDir, "*.body"))
	if len(files) != 1 {
		t.Fatalf("body files %v, want one", files)
	}
	f, err := os.OpenFile(files[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 500); err != nil { // inside the body
		t.Fatal(err)
	}
	f.Close()

	// Receive until the damaged message is taken: that receive fails.
	var ae *api.Error
	for try := 0; ; try++ {
		n := 10
		now := c.next()
		resp, err := l.Apply(t.Context(), &engine.Command{Time: now, Caller: bodyQueue.Account, Queue: bodyQueue, Entropy: uint64(now),
			Request: &api.ReceiveMessageRequest{QueueUrl: bodyQueue.Path(), MaxNumberOfMessages: &n}})
		if errors.As(err, &ae) && ae.Code == "InternalFailure" {
			break
		}
		if err != nil {
			t.Fatalf("receive: %v, want InternalFailure for the damaged body", err)
		}
		for _, m := range resp.(*api.ReceiveMessageResult).Messages {
			if m.Body[:6] == "000001" {
				t.Fatalf("the damaged message was received: %d bytes", len(m.Body))
			}
		}
		if try == 20 {
			t.Fatal("every message was received, the damaged one never failed")
		}
	}
	sendBody(t, l, c, 2, 1000)
	// The node goes on serving: the messages the failed receive did not
	// take, and a new one, come intact; the damaged one is in flight.
	got := receiveAll(t, l, c)
	if got[2] != bigBody(2, 1000) {
		t.Fatalf("after the damage, message 2 came as %d bytes", len(got[2]))
	}
	for i, b := range got {
		if i == 1 || (i != 2 && b != bigBody(i, 1_000_000)) {
			t.Fatalf("after the damage, message %d came as %d bytes", i, len(b))
		}
	}
}

// TestBodyFilesReclaimed checks that a file of the store is removed once
// none of its bodies is referenced, but not while a snapshot view that
// may still write one of them is open.
func TestBodyFilesReclaimed(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{bodyFileSize: 64 << 10})
	defer l.Close()
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	for i := range 20 {
		sendBody(t, l, c, i, 10_000)
	}
	before, _ := storeBytes(t, dir)
	if before < 3 {
		t.Fatalf("%d body files, want several", before)
	}
	snap, err := l.fsm.Snapshot() // a view, as Raft takes one
	if err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, l, c); len(got) != 20 {
		t.Fatalf("received %d, want 20", len(got))
	}
	// Reclaiming looks once a second, on an apply.
	time.Sleep(1100 * time.Millisecond)
	sendBody(t, l, c, 100, 10)
	if files, _ := storeBytes(t, dir); files != before {
		t.Fatalf("%d body files left of %d while a snapshot view was open, want all kept", files, before)
	}
	snap.Release()
	time.Sleep(1100 * time.Millisecond)
	sendBody(t, l, c, 101, 10)
	if files, _ := storeBytes(t, dir); files != 1 {
		t.Fatalf("%d body files left once every body of the full ones went, want 1 (the one appended to)", files)
	}
	got := receiveAll(t, l, c)
	if got[100] != bigBody(100, 10) || got[101] != bigBody(101, 10) {
		t.Fatalf("the bodies sent after the reclaim read back as %q, %q", got[100], got[101])
	}
}
