package replog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/engine"
)

// fillLog writes a queue and n messages (bodies m0..m(n-1)), each in its
// own log entry, and closes the log.
func fillLog(t *testing.T, dir string, n int) {
	t.Helper()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	createFIFO(t, l, c)
	for i := 0; i < n; i++ {
		send(t, l, c, i)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// lastSegment returns the newest raft-wal segment file and its contents.
func lastSegment(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no segment files in %s: %v", dir, err)
	}
	path := files[len(files)-1]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestTornLastRecord cuts off the end of the last record written, as a
// crash in the middle of a write would: the log opens, and every record
// before the torn one is there.
func TestTornLastRecord(t *testing.T) {
	dir := t.TempDir()
	fillLog(t, dir, 20)
	path, b := lastSegment(t, dir)
	end := bytes.LastIndex(b, []byte("m19"))
	if end < 0 {
		t.Fatal("last message not found in the segment")
	}
	// Zero everything from the middle of the last command on: the tail of
	// the record never reached the disk.
	for i := end; i < len(b); i++ {
		b[i] = 0
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClock()
	c.t += 1e12 // after the first run's commands
	l, _ := openTest(t, dir, RaftConfig{})
	defer l.Close()
	got := receiveBodies(t, l, c, 10)
	if len(got) == 0 || got[0] != "m0" {
		t.Fatalf("after recovering a torn tail received %v, want m0 first", got)
	}
}

// TestCorruptRecordRefused flips a byte inside an earlier record: the
// start is refused with the entry and its segment file named, rather than
// serving a state that silently differs from the log.
func TestCorruptRecordRefused(t *testing.T) {
	dir := t.TempDir()
	fillLog(t, dir, 20)
	path, b := lastSegment(t, dir)
	// The body as version 4 writes it: its length, then its bytes.
	at := bytes.Index(b, []byte("\x02m5"))
	if at < 0 {
		t.Fatal("message m5 not found in the segment")
	}
	b[at+2] = '6' // still a valid command: only a checksum can tell
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
	if err == nil {
		t.Fatal("OpenRaft served a log with a damaged record")
	}
	if !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), filepath.Base(path)) {
		t.Fatalf("error should name the checksum failure and the segment %s: %v", filepath.Base(path), err)
	}
	t.Logf("refused as expected: %v", err)
}

// testEngine is the engine config of the tests' logs.
var testEngine = engine.Config{Region: "us-east-1"}
