package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
)

func bufioOf(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestSnapshotVersion1StillRestores restores the rich engine's state from
// a snapshot in format version 1 (records inside the chunks' gob values),
// as older binaries wrote it: the engine restored from it must write
// exactly the snapshot of the engine restored from the same records in the
// current format. Version 1 kept a deduplication record's strings where
// the current format keeps their digest, which cannot be turned back into
// them, so the records compared here leave deduplication records out;
// TestSnapshotVersion1Dedup restores those from version 1.
func TestSnapshotVersion1StillRestores(t *testing.T) {
	testSnapshotVersion1StillRestores(t, restoreDefault)
}

func testSnapshotVersion1StillRestores(t *testing.T, mode restoreMode) {
	data := snapshotBytes(t, richHarness(t).e)
	if v := binary.BigEndian.Uint32(data[len(snapMagic):]); v != snapVersion {
		t.Fatalf("snapshot written in format version %d, want %d", v, snapVersion)
	}
	p := parseSnapshot(t, data)
	p.dropDedups()
	cur, old := p.encodeVersion(t, snapVersion), p.encodeVersion(t, 1)
	if bytes.Equal(old, cur) {
		t.Fatal("versions 1 and 2 encode the same bytes: the test proves nothing")
	}
	want := mode.engine(New(Config{Region: testRegion}))
	if err := want.Restore(bytes.NewReader(cur)); err != nil {
		t.Fatalf("Restore of the current version: %v", err)
	}
	e := mode.engine(New(Config{Region: testRegion}))
	if err := e.Restore(bytes.NewReader(old)); err != nil {
		t.Fatalf("Restore of version 1: %v", err)
	}
	if !bytes.Equal(snapshotBytes(t, e), snapshotBytes(t, want)) {
		t.Error("the engine restored from version 1 writes another snapshot than the one restored from the current version")
	}
	if err := VerifySnapshot(bytes.NewReader(old)); err != nil {
		t.Errorf("VerifySnapshot of version 1: %v", err)
	}
}

// TestSnapshotChunkLengthBounded gives a chunk a record length beyond
// maxChunkData, with a valid checksum: the restore must refuse it without
// allocating it.
func TestSnapshotChunkLengthBounded(t *testing.T) {
	p := parseSnapshot(t, snapshotBytes(t, richHarness(t).e))
	var b bytes.Buffer
	var r chunkDataReader
	if err := writeChunkData(&b, make([]byte, 10), nil); err != nil {
		t.Fatal(err)
	}
	// A length just over the bound, followed by too few bytes.
	huge := binary.AppendUvarint(nil, maxChunkData+1)
	if _, _, err := r.read(&crcReader{r: bufioOf(huge)}); err == nil {
		t.Error("a chunk of more than maxChunkData record bytes was read")
	}
	if cap(r.buf) > 1<<20 {
		t.Errorf("refusing the chunk allocated %d bytes", cap(r.buf))
	}
	msgs, dedups, err := r.read(&crcReader{r: bufioOf(b.Bytes())})
	if err != nil || len(msgs) != 10 || len(dedups) != 0 {
		t.Errorf("read %d and %d bytes, %v; want 10 and 0", len(msgs), len(dedups), err)
	}
	// The whole snapshot with one chunk's records cut short, checksum valid.
	for i := range p.Queues {
		for j := range p.Queues[i].Chunks {
			if c := &p.Queues[i].Chunks[j]; len(c.MessageData) > 0 {
				c.MessageData = c.MessageData[:len(c.MessageData)-1]
				wantRestoreError(t, p.encode(t), "")
				return
			}
		}
	}
	t.Fatal("no chunk with message records")
}

// TestRestorePipelined runs the snapshot tests with every queue's chunks
// read and applied on two goroutines, as only large queues are otherwise:
// the states restored and the errors reported must be the same.
func TestRestorePipelined(t *testing.T) {
	t.Run("round trip", func(t *testing.T) { testSnapshotRoundTrip(t, restorePipelined) })
	t.Run("bad input", func(t *testing.T) { testRestoreRejectsBadInput(t, restorePipelined) })
	t.Run("inconsistent", func(t *testing.T) { testRestoreRejectsInconsistentSnapshots(t, restorePipelined) })
	t.Run("version 1", func(t *testing.T) { testSnapshotVersion1StillRestores(t, restorePipelined) })
	t.Run("twins", func(t *testing.T) { testSnapshotTwins(t, restorePipelined) })
}

// TestRestoreHugeRecordCounts announces far more records than a chunk
// holds, with a valid checksum: the restore must refuse the snapshot
// without sizing anything by the counts.
func TestRestoreHugeRecordCounts(t *testing.T) {
	const huge = 1 << 50
	for _, pipelined := range []bool{false, true} {
		p := parseSnapshot(t, snapshotBytes(t, richHarness(t).e))
		found := false
		for i := range p.Queues {
			q := &p.Queues[i]
			if len(q.Chunks) == 0 || q.Chunks[0].Messages == 0 || q.Chunks[0].Dedups == 0 {
				continue
			}
			q.Q.Messages, q.Q.Dedups = huge, huge
			q.Chunks[0].Messages, q.Chunks[0].Dedups = huge, huge
			wantRestoreErrorIn(t, restoreMode(pipelined), p.encode(t), "")
			found = true
			break
		}
		if !found {
			t.Fatal("no queue with messages and deduplication records in its first chunk")
		}
	}
}
