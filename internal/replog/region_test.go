package replog

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/backup"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/testenv"
)

// regionConfig is a test log's configuration in region, logging to out
// (if not nil).
func regionConfig(dir, region string, out *testenv.SyncBuffer) RaftConfig {
	cfg := RaftConfig{Dir: dir, Engine: engine.Config{Region: region}, MinFreeBytes: -1, Logger: slog.New(slog.DiscardHandler)}
	if out != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
	}
	return cfg
}

// wantRegionRefused opens dir in region, which must be refused with the
// plain message that the dir belongs to owner.
func wantRegionRefused(t *testing.T, dir, region, owner string) {
	t.Helper()
	l, err := OpenRaft(regionConfig(dir, region, nil))
	if err == nil {
		l.Close()
		t.Fatalf("a data dir of region %s opened in region %s", owner, region)
	}
	want := "data dir " + dir + " belongs to region " + owner + "; start it with --region " + owner + " (a data dir cannot change region)"
	if err.Error() != want {
		t.Fatalf("opening a data dir of region %s in region %s: %v; want %q", owner, region, err, want)
	}
}

// TestDataDirRegionRecorded checks that a new data dir records its
// region, and that another region is refused, with the same words,
// whether its state is in the log alone or in a snapshot, and leaves the
// queues where they were.
func TestDataDirRegionRecorded(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenRaft(regionConfig(dir, "us-east-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	createFIFO(t, l, c)
	send(t, l, c, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, regionFile)); err != nil || string(b) != "us-east-1\n" {
		t.Fatalf("the data dir's region record holds %q (%v)", b, err)
	}
	wantRegionRefused(t, dir, "eu-west-1", "us-east-1")

	l, err = OpenRaft(regionConfig(dir, "us-east-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	l.Read(func(e *engine.Engine) { n = e.MessageCount() })
	if n != 1 {
		t.Fatalf("after a refused open, the data dir holds %d messages, want 1", n)
	}
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantRegionRefused(t, dir, "eu-west-1", "us-east-1")
}

// TestDataDirWithoutRegionRecordAdopts checks a data dir of a fifoq from
// before the region record: with a snapshot, it is of the snapshot's
// region, and refuses another; without one, it takes the configured
// region. Either way the record is written and the adoption logged.
func TestDataDirWithoutRegionRecordAdopts(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		dir := t.TempDir()
		l, err := OpenRaft(regionConfig(dir, "eu-west-1", nil))
		if err != nil {
			t.Fatal(err)
		}
		c := newClock()
		createFIFO(t, l, c)
		if snapshot {
			if err := l.raft.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, regionFile)); err != nil {
			t.Fatal(err)
		}
		region := "eu-west-1"
		if snapshot {
			wantRegionRefused(t, dir, "us-east-1", "eu-west-1")
		} else {
			region = "ap-south-1" // the log cannot tell: the configured one is taken
		}
		var out testenv.SyncBuffer
		l, err = OpenRaft(regionConfig(dir, region, &out))
		if err != nil {
			t.Fatalf("a data dir without a region record, snapshot %v, opened in %s: %v", snapshot, region, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, regionFile)); err != nil || string(b) != region+"\n" {
			t.Fatalf("snapshot %v: the adopted region record holds %q (%v), want %s", snapshot, b, err, region)
		}
		if !strings.Contains(out.String(), "adopted") {
			t.Fatalf("snapshot %v: the adoption of a region was not logged:\n%s", snapshot, out.String())
		}
		wantRegionRefused(t, dir, "us-west-2", region)
	}
}

// TestBackupRegion checks that a backup names the region of the server it
// was taken of, and restores into a data dir of that region only.
func TestBackupRegion(t *testing.T) {
	src, err := OpenRaft(regionConfig(t.TempDir(), "eu-west-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := newClock()
	createFIFO(t, src, c)
	send(t, src, c, 0)
	var file bytes.Buffer
	hdr, err := src.Backup(&file, "test")
	if err != nil || hdr.Region != "eu-west-1" {
		t.Fatalf("Backup: header %+v, %v; want region eu-west-1", hdr, err)
	}

	other, err := OpenRaft(regionConfig(t.TempDir(), "us-east-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := restoreFrom(other, file.Bytes()); err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("a backup of eu-west-1 restored into a log of us-east-1: %v", err)
	}
	dst, err := OpenRaft(regionConfig(t.TempDir(), "eu-west-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := restoreFrom(dst, file.Bytes()); err != nil {
		t.Fatal(err)
	}
	var n int
	dst.Read(func(e *engine.Engine) { n = e.MessageCount() })
	if n != 1 {
		t.Fatalf("the restored log holds %d messages, want 1", n)
	}
}

// TestReadOldBackupTakesItsSnapshotsRegion reads the frozen backup of a
// fifoq from before the header's Region: its region is its snapshot's,
// and the snapshot reader still yields the whole snapshot, byte for byte.
func TestReadOldBackupTakesItsSnapshotsRegion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "backup", "testdata", "v1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "snapshots", "frame-v3.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(`"region"`)) {
		t.Fatal("the frozen backup has a region in its header; this test needs one without")
	}
	_, wantRegion, err := snapshotRegion(bytes.NewReader(want))
	if err != nil || wantRegion == "" {
		t.Fatalf("the frozen snapshot's region: %q, %v", wantRegion, err)
	}
	hdr, snap, err := ReadBackup(bytes.NewReader(data))
	if err != nil || hdr.Region != wantRegion {
		t.Fatalf("ReadBackup: region %q, %v; want %q", hdr.Region, err, wantRegion)
	}
	var got bytes.Buffer
	if _, err := got.ReadFrom(snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("ReadBackup's snapshot reader yields %d bytes, not the backup's %d", got.Len(), len(want))
	}
}

// TestRestoreBackupOfABrokenStateIsAnError restores a backup whose
// checksums hold but whose engine state ends halfway (as a backup of a
// fifoq with a bug could): the state machine fails to restore it after
// Raft installed it, which hashicorp/raft answers with a panic. The
// restore must return an error instead, and leave the engine empty.
func TestRestoreBackupOfABrokenStateIsAnError(t *testing.T) {
	src, err := OpenRaft(regionConfig(t.TempDir(), "us-east-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := newClock()
	createFIFO(t, src, c)
	for i := range 20 {
		send(t, src, c, i)
	}
	var file bytes.Buffer
	hdr, err := src.Backup(&file, "test")
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := backup.Read(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if _, err := snap.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint32(snap.Bytes()[8:12]); v != snapshotInlineVersion {
		t.Fatalf("a backup's snapshot frame is of version %d", v)
	}
	cut := snap.Bytes()[:snap.Len()/2]
	hdr.Size = int64(len(cut))
	var broken bytes.Buffer
	if _, err := backup.Write(&broken, hdr, bytes.NewReader(cut)); err != nil {
		t.Fatal(err)
	}

	dst, err := OpenRaft(regionConfig(t.TempDir(), "us-east-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := restoreFrom(dst, broken.Bytes()); err == nil {
		t.Fatal("a backup whose state ends halfway was restored")
	}
	var n int
	dst.Read(func(e *engine.Engine) { n = e.QueueCount() })
	if n != 0 {
		t.Fatalf("a broken backup left %d queues", n)
	}
}
