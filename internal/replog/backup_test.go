package replog

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestBackupRestoresTheWholeState fills a durable log with queues and
// messages in every state (visible, in flight, delayed; FIFO with live
// deduplication and receive-attempt records; bodies in the body store,
// with attributes), takes a backup, restores it into a new data dir, and
// compares the two engines' whole state: their snapshots, byte for byte.
func TestBackupRestoresTheWholeState(t *testing.T) {
	src, _ := openTest(t, t.TempDir(), RaftConfig{MinFreeBytes: -1})
	defer src.Close()
	c := newClock()
	createFIFO(t, src, c)
	for i := range 20 {
		send(t, src, c, i)
	}
	receiveBodies(t, src, c, 3) // three in flight, the group held
	std := api.QueueKey{Account: testQueue.Account, Name: "std"}
	apply(t, src, c, api.QueueKey{Account: testQueue.Account}, &api.CreateQueueRequest{QueueName: "std",
		Attributes: map[string]string{"DelaySeconds": "900"}, Tags: map[string]string{"team": "a"}})
	for i := range 5 {
		v := "value"
		apply(t, src, c, std, &api.SendMessageRequest{QueueUrl: std.Path(), MessageBody: string(rune('a'+i)) + " body",
			MessageAttributes: map[string]api.MessageAttributeValue{"k": {DataType: "String", StringValue: &v}}}, "std-"+string(rune('a'+i)))
	}

	var file bytes.Buffer
	hdr, err := src.Backup(&file, "test")
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if hdr.Messages != 25 || hdr.Size == 0 || hdr.Index == 0 {
		t.Fatalf("backup header %+v", hdr)
	}

	dir := t.TempDir()
	dst, _ := openTest(t, dir, RaftConfig{MinFreeBytes: -1})
	if err := restoreFrom(dst, file.Bytes()); err != nil {
		t.Fatalf("RestoreBackup: %v", err)
	}
	// The restored state is the backup's, with a cluster id of its own
	// (cluster_id.go): given the same, the source's is the same.
	id := dst.clusterID()
	if id == "" || src.clusterID() != "" {
		t.Fatalf("the restored state records cluster id %q, the source %q: want a new one, and none", id, src.clusterID())
	}
	if err := src.setMeta(context.Background(), clusterIDKey, id); err != nil {
		t.Fatal(err)
	}
	if want, got, same := sameSnapshots(t, src, dst); !same {
		t.Fatalf("the restored state differs from the backed-up one (%d and %d bytes of snapshot)", len(got), len(want))
	}
	// As a start after the restore finds it.
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	dst, _ = openTest(t, dir, RaftConfig{MinFreeBytes: -1})
	defer dst.Close()
	if want, got, same := sameSnapshots(t, src, dst); !same {
		t.Fatalf("after a restart, the restored state differs from the backed-up one (%d and %d bytes of snapshot)", len(got), len(want))
	}

	if err := restoreFrom(dst, file.Bytes()); err == nil {
		t.Fatal("a backup was restored over a data dir that holds queues")
	}
	damaged := bytes.Clone(file.Bytes())
	damaged[len(damaged)/2] ^= 1
	empty, _ := openTest(t, t.TempDir(), RaftConfig{MinFreeBytes: -1})
	defer empty.Close()
	if err := restoreFrom(empty, damaged); err == nil {
		t.Fatalf("a damaged backup was restored: %v", err)
	}
	var n int
	empty.Read(func(e *engine.Engine) { n = e.QueueCount() })
	if n != 0 {
		t.Fatalf("a damaged backup left %d queues behind", n)
	}
}

// restoreFrom restores the backup file into l, as fifoq restore does:
// ReadBackup, then RestoreBackup.
// sameSnapshots reports whether a's and b's engines write the same
// snapshot, and the last two it compared. gob writes the log's metadata, a
// map, in Go's iteration order, which differs from one snapshot to the
// next once it holds two keys or more (the cluster's format and id here):
// equal states compare equal within a few snapshots, different ones never.
func sameSnapshots(t *testing.T, a, b *Raft) (want, got []byte, same bool) {
	t.Helper()
	snapshotOf := func(l *Raft) []byte {
		var buf bytes.Buffer
		l.Read(func(e *engine.Engine) {
			if err := e.Snapshot(&buf); err != nil {
				t.Fatal(err)
			}
		})
		return buf.Bytes()
	}
	for range 64 {
		if want, got = snapshotOf(a), snapshotOf(b); bytes.Equal(want, got) {
			return want, got, true
		}
	}
	return want, got, false
}

func restoreFrom(l *Raft, file []byte) error {
	hdr, snap, err := ReadBackup(bytes.NewReader(file))
	if err != nil {
		return err
	}
	return l.RestoreBackup(hdr, snap, 30*time.Second)
}

// TestSnapshotNowHoldsWhatTheRestoreApplied checks what a restore leaves
// for the node to start from: what it applied after installing the backup
// (here a map record, as shards.Adopt writes) is in the newest snapshot,
// so that a node serving the data dir does not wait to lead before its
// state has it (Raft applies what follows the snapshot only then).
func TestSnapshotNowHoldsWhatTheRestoreApplied(t *testing.T) {
	src, _ := openTest(t, t.TempDir(), RaftConfig{MinFreeBytes: -1})
	defer src.Close()
	c := newClock()
	createFIFO(t, src, c)
	send(t, src, c, 0)
	var file bytes.Buffer
	if _, err := src.Backup(&file, "test"); err != nil {
		t.Fatalf("Backup: %v", err)
	}

	dst, _ := openTest(t, t.TempDir(), RaftConfig{MinFreeBytes: -1})
	defer dst.Close()
	if err := restoreFrom(dst, file.Bytes()); err != nil {
		t.Fatalf("RestoreBackup: %v", err)
	}
	if err := dst.setMeta(t.Context(), "shards/1", "node-1"); err != nil {
		t.Fatal(err)
	}
	if snap, last := dst.newestSnapshotIndex(), dst.raft.LastIndex(); snap >= last {
		t.Fatalf("the newest snapshot (index %d) already holds the log's last entry (%d): the check below proves nothing", snap, last)
	}
	if err := dst.SnapshotNow(); err != nil {
		t.Fatalf("SnapshotNow: %v", err)
	}
	if snap, last := dst.newestSnapshotIndex(), dst.raft.LastIndex(); snap != last {
		t.Fatalf("after SnapshotNow the newest snapshot is at index %d, the log's last entry at %d", snap, last)
	}
	if err := dst.SnapshotNow(); err != nil {
		t.Fatalf("SnapshotNow with nothing new: %v", err)
	}
}
