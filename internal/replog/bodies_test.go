package replog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

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
	req := &api.SendMessageRequest{QueueUrl: bodyQueue.Path(), MessageBody: bigBody(i, size)}
	if tag, ok := bodyTag(i); ok {
		req.MessageAttributes = map[string]api.MessageAttributeValue{"tag": {DataType: "String", StringValue: &tag}}
	}
	apply(t, l, c, bodyQueue, req, fmt.Sprintf("id-%d", i))
}

// bodyTag is the value of the attribute "tag" of message i, which only
// odd messages have: the store keeps it before the body.
func bodyTag(i int) (string, bool) {
	return fmt.Sprintf("tag %d ", i) + strings.Repeat("t", 100), i%2 == 1
}

// storedSize is what message i of sendBody takes in the store: its
// record's 8 bytes of header, the payload's 33 bytes of head (MessageId,
// MD5OfBody and the empty MessageDeduplicationId of a standard queue), its
// body, and the encoding of its attribute
// if it has one (count 1; name, data type and value with their lengths;
// a flag; empty binary value, string list and binary list: 17 bytes
// besides the value).
func storedSize(i, size int) int {
	n := 8 + 33 + size
	if tag, ok := bodyTag(i); ok {
		n += 17 + len(tag)
	}
	return n
}

// receiveAll receives (and deletes) until a receive finds nothing, and
// returns the bodies by the number they start with. Each message must
// have its attribute "tag" if sendBody gave it one, and no other.
func receiveAll(t *testing.T, l Log, c *clock) map[int]string {
	t.Helper()
	got := map[int]string{}
	for {
		n := 10
		res := apply(t, l, c, bodyQueue, &api.ReceiveMessageRequest{QueueUrl: bodyQueue.Path(), MaxNumberOfMessages: &n, MessageAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult)
		if len(res.Messages) == 0 {
			return got
		}
		for _, m := range res.Messages {
			var i int
			fmt.Sscanf(m.Body[:6], "%d", &i)
			got[i] = m.Body
			tag, ok := bodyTag(i)
			if v, has := m.MessageAttributes["tag"]; has != ok || len(m.MessageAttributes) > 1 || ok && (v.StringValue == nil || *v.StringValue != tag) {
				t.Fatalf("message %d has the attributes %v, want a tag %v (%q)", i, m.MessageAttributes, ok, tag)
			}
			apply(t, l, c, bodyQueue, &api.DeleteMessageRequest{QueueUrl: bodyQueue.Path(), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// receiveExactly receives (and deletes) every message, which must be
// those numbered 0 to n-1, each with its body of size bytes.
func receiveExactly(t *testing.T, l Log, c *clock, n, size int) {
	t.Helper()
	got := receiveAll(t, l, c)
	for i := range n {
		if got[i] != bigBody(i, size) {
			t.Fatalf("message %d: received %d bytes, not its body", i, len(got[i]))
		}
	}
	if len(got) != n {
		t.Fatalf("received %d messages, want %d", len(got), n)
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
// across a snapshot and a restart (which finds the snapshot's bodies in the
// store, and appends those of the entries after it again).
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
	receiveExactly(t, l, c, 25, size)
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
	l, _ := openTest(t, dir, RaftConfig{BodyFileSize: 64 << 10})
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

// TestRestartFindsBodiesInPlace checks that a node's snapshot refers to
// the bodies in the store rather than copying them, and that a restart
// reads them where they are: the files the snapshot refers to are left as
// they were, and every body reads back.
func TestRestartFindsBodiesInPlace(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{BodyFileSize: 256 << 10})
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	const size = 20_000
	for i := range 40 {
		sendBody(t, l, c, i, size)
	}
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i := 40; i < 45; i++ { // after the snapshot: replayed from the log
		sendBody(t, l, c, i, size)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v, want one", snaps)
	}
	if st, err := os.Stat(snaps[0]); err != nil || st.Size() > 40*size/10 {
		t.Fatalf("the snapshot of 40 bodies of %d bytes takes %v bytes (%v): it carries them", size, st.Size(), err)
	}
	// Mark the first file: a start that rewrote it would make it new.
	first := filepath.Join(dir, bodiesDir, fmt.Sprintf("%016x.body", 1))
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(first, old, old); err != nil {
		t.Fatal(err)
	}

	l, _ = openTest(t, dir, RaftConfig{BodyFileSize: 256 << 10})
	defer l.Close()
	if st, err := os.Stat(first); err != nil || !st.ModTime().Equal(old) {
		t.Fatalf("the store's first file after the restart: %v, %v; want it untouched", st, err)
	}
	receiveExactly(t, l, c, 45, size)
}

// TestStartRefusesLostBodies replaces the body store under a stopped node
// (a volume lost, a directory deleted): its snapshot refers to bodies the
// store no longer has, and the start refuses, naming what is missing,
// rather than serve messages without bodies.
func TestStartRefusesLostBodies(t *testing.T) {
	for _, damage := range []string{"removed", "emptied", "cut short"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			c := newClock()
			l, _ := openTest(t, dir, RaftConfig{})
			apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
			for i := range 5 {
				sendBody(t, l, c, i, 10_000)
			}
			if err := l.raft.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, bodiesDir)
			file := filepath.Join(store, fmt.Sprintf("%016x.body", 1))
			var err error
			switch damage {
			case "removed":
				err = os.RemoveAll(store)
			case "emptied":
				err = os.Remove(file)
			case "cut short":
				err = os.Truncate(file, 30_000)
			}
			if err != nil {
				t.Fatal(err)
			}
			l, err = OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
			if err == nil {
				l.Close()
				t.Fatal("the node started with its snapshot's bodies gone")
			}
			if !strings.Contains(err.Error(), "body store does not have") || !strings.Contains(err.Error(), ".body") {
				t.Fatalf("start refused with %q; want it to name the missing body file", err)
			}
		})
	}
}

// TestFollowerInstallsSnapshotWithBodies has a follower that was down
// catch up by a snapshot install, the leader's snapshot referring to its
// own body store: the snapshot sent carries the bodies, the follower keeps
// them in its own store, and once it leads it serves every body exactly.
func TestFollowerInstallsSnapshotWithBodies(t *testing.T) {
	nodes := startClusterWith(t, 3, nil, func(cfg *RaftConfig) {
		cfg.trailingLogs = 4
		cfg.walSegmentSize = 64 << 10
		cfg.BodyFileSize = 64 << 10
	})
	leader := waitLeader(t, nodes)
	c := newClock()
	apply(t, leader.log, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	var down *testNode
	for _, nd := range nodes {
		if nd != leader {
			down = nd
			break
		}
	}
	waitApplied(t, down, leader.log.raft.LastIndex())
	downLast := down.log.raft.LastIndex()
	if err := down.log.Close(); err != nil {
		t.Fatal(err)
	}
	down.log = nil

	const size = 10_000
	for i := range 30 {
		sendBody(t, leader.log, c, i, size)
	}
	// Some go, so that the snapshot refers to some of the leader's files
	// and not others.
	for range 2 {
		n := 10
		res := apply(t, leader.log, c, bodyQueue, &api.ReceiveMessageRequest{QueueUrl: bodyQueue.Path(), MaxNumberOfMessages: &n}).(*api.ReceiveMessageResult)
		for _, m := range res.Messages {
			apply(t, leader.log, c, bodyQueue, &api.DeleteMessageRequest{QueueUrl: bodyQueue.Path(), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if err := leader.log.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if first := mustIndex(leader.log.wal.FirstIndex()); first <= downLast+1 {
		t.Fatalf("the leader's log begins at %d, and the follower has up to %d: no snapshot needed", first, downLast)
	}

	down.log, down.eng = openTest(t, down.dir, down.cfg)
	waitApplied(t, down, leader.log.raft.LastIndex())
	if got := down.log.raft.Stats()["last_snapshot_index"]; got == "0" {
		ls, _ := os.ReadDir(filepath.Join(down.dir, "snapshots"))
		t.Fatalf("the follower caught up without installing a snapshot: %v\nleader %v first %d downLast %d snaps %v", down.log.raft.Stats(), leader.log.raft.Stats(), mustIndex(leader.log.wal.FirstIndex()), downLast, ls)
	}
	// The leader closes the snapshot it sent once the follower has
	// answered, which may be after the follower applied it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		spools, _ := filepath.Glob(filepath.Join(leader.dir, spoolPattern))
		if len(spools) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader left spool files: %v", spools)
		}
	}
	if n := countRefs(down.log, down.eng); n != 10 {
		t.Fatalf("the follower keeps %d bodies in its store, want the 10 left", n)
	}
	if err := leader.log.raft.LeadershipTransferToServer(raft.ServerID(down.id), raft.ServerAddress(down.cfg.Cluster.RaftAddr)).Error(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !down.log.Leading() {
		if time.Now().After(deadline) {
			for _, nd := range nodes {
				t.Logf("%s: %v", nd.id, nd.log.raft.Stats())
			}
			t.Fatalf("%s does not lead after the transfer", down.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := receiveAll(t, down.log, c)
	if len(got) != 10 {
		t.Fatalf("the follower, leading, served %d messages, want 10", len(got))
	}
	for i, b := range got {
		if b != bigBody(i, size) {
			t.Fatalf("message %d: %d bytes, not its body", i, len(b))
		}
	}
}

// TestMostlyDeadFilesCompacted keeps one message in seven of a run that
// filled many files: their live bodies are moved out, the files removed
// once the newest snapshot no longer refers to them, and every body left
// reads back exactly, before and after a restart.
func TestMostlyDeadFilesCompacted(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	obs := &recordingObserver{}
	cfg := RaftConfig{BodyFileSize: 64 << 10, Observer: obs}
	l, _ := openTest(t, dir, cfg)
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	const size = 10_000
	for i := range 70 {
		sendBody(t, l, c, i, size)
	}
	// Every message but one in seven goes; those stay in flight.
	hour := 3600
	for deleted := 0; deleted < 60; {
		n := 10
		res := apply(t, l, c, bodyQueue, &api.ReceiveMessageRequest{QueueUrl: bodyQueue.Path(), MaxNumberOfMessages: &n, VisibilityTimeout: &hour}).(*api.ReceiveMessageResult)
		if len(res.Messages) == 0 {
			t.Fatalf("nothing left to receive after %d deletes", deleted)
		}
		for _, m := range res.Messages {
			var i int
			fmt.Sscanf(m.Body[:6], "%d", &i)
			if i%7 != 0 {
				apply(t, l, c, bodyQueue, &api.DeleteMessageRequest{QueueUrl: bodyQueue.Path(), ReceiptHandle: m.ReceiptHandle})
				deleted++
			}
		}
	}
	before, _ := storeBytes(t, dir)
	// A snapshot, so that the files compacted are no longer needed by
	// the newest one; reclaims run once a second, on an apply.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := l.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		apply(t, l, c, bodyQueue, &api.GetQueueAttributesRequest{QueueUrl: bodyQueue.Path()})
		if files, onDisk := storeBytes(t, dir); files <= 3 {
			t.Logf("body files: %d before the compaction, %d after", before, files)
			obs.mu.Lock()
			moved, reported, reportedBytes, live := obs.bodiesMoved, obs.bodyFiles, obs.bodyBytes, obs.bodyLive
			obs.mu.Unlock()
			wantLive := 0
			for i := 0; i < 70; i += 7 {
				wantLive += storedSize(i, size)
			}
			if moved < 9*size || reported != files || reportedBytes != onDisk || live != int64(wantLive) {
				t.Errorf("observer told of %d bytes moved, %d files of %d bytes, %d live; want at least 9 bodies moved, %d files of %d bytes, %d live",
					moved, reported, reportedBytes, live, files, onDisk, wantLive)
			}
			break
		}
		if time.Now().After(deadline) {
			files, bytes := storeBytes(t, dir)
			t.Fatalf("%d body files (%d bytes) left of %d, for 10 bodies of %d bytes", files, bytes, before, size)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openTest(t, dir, cfg)
	defer l.Close()
	// The messages kept are in flight for an hour: let them come back.
	c.mu.Lock()
	c.t += int64(2 * time.Hour)
	c.mu.Unlock()
	got := receiveAll(t, l, c)
	if len(got) != 10 {
		t.Fatalf("received %d messages after the restart, want 10", len(got))
	}
	for i, b := range got {
		if i%7 != 0 || b != bigBody(i, size) {
			t.Fatalf("message %d: %d bytes, not its body", i, len(b))
		}
	}
}

// TestQuietStoreGivesItsBuffersBack checks that the log's housekeeping
// gives the body store's buffers back once a look finds it quiet since the
// one before, and that the bodies they held are served from the files.
func TestQuietStoreGivesItsBuffersBack(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, t.TempDir(), RaftConfig{tidyEvery: time.Hour})
	defer l.Close()
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	const size = 100_000
	for i := range 20 {
		sendBody(t, l, c, i, size)
	}
	store := l.fsm.bodies.store
	if store.BufferBytes() < 20*size {
		t.Fatalf("the store's buffers hold %d bytes after 20 bodies of %d", store.BufferBytes(), size)
	}
	l.tidyBodies(false) // a snapshot's tidying: no look
	l.tidyBodies(true)  // appended to since the last look (there was none): kept
	if store.BufferBytes() == 0 {
		t.Fatal("the first look gave the buffers of a store just appended to back")
	}
	l.tidyBodies(false)
	if store.BufferBytes() == 0 {
		t.Fatal("a snapshot's tidying gave the buffers back")
	}
	l.tidyBodies(true)
	if n := store.BufferBytes(); n != 0 {
		t.Fatalf("a store quiet since the last look holds %d bytes of buffers", n)
	}
	if err := l.fsm.bodies.failure(); err != nil {
		t.Fatal(err)
	}
	receiveExactly(t, l, c, 20, size)
}
