package replog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestEntryVersionFollowsTheCluster checks what format.go promises of the
// entries a node writes: the cluster's format, raised only by a raise, and
// never a command in a format older than it needs.
func TestEntryVersionFollowsTheCluster(t *testing.T) {
	send := &engine.Command{Time: 1, Request: &api.PurgeQueueRequest{QueueUrl: "/a/b"}}
	meta := &engine.Command{Request: &engine.SetMetaRequest{Key: memberKey("n1"), Value: strings.Repeat("a", 32)}}
	raise := &engine.Command{Request: &engine.SetMetaRequest{Key: formatKey, Value: "5"}}

	l := &Raft{}
	l.format.Store(uint32(baseFormat))
	if v := l.entryVersion([]*engine.Command{send}); v != 4 {
		t.Fatalf("an entry of a cluster writing format 4 is version %d", v)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{send, meta}, l.entryVersion([]*engine.Command{send, meta})); err == nil {
		t.Fatal("a fifoq:SetMeta went into a version 4 entry, which a fifoq of format 4 refuses")
	}
	data, _, err := encodeEntryHeld([]*engine.Command{send, raise}, l.entryVersion([]*engine.Command{send, raise}))
	if err != nil || data[0] != 5 {
		t.Fatalf("a raise to format 5: version %v, %v; want an entry of version 5", data[:min(1, len(data))], err)
	}
	cmds, err := decodeEntry(data)
	if err != nil || len(cmds) != 2 {
		t.Fatalf("decode the raise: %v", err)
	}
	if n, ok := formatRaise(cmds[1]); !ok || n != 5 {
		t.Fatalf("decoded raise names format %d (%v)", n, ok)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{send}, 3); err == nil {
		t.Fatal("wrote a version 3 entry; the binary layout starts at 4")
	}
}

// TestOlderFormatReader stands in for a fifoq that reads format 4 only,
// as the fifoq_faults build does: it refuses a version 5 entry as newer,
// and a fifoq:SetMeta wherever it is.
func TestOlderFormatReader(t *testing.T) {
	meta := &engine.Command{Request: &engine.SetMetaRequest{Key: "k", Value: "v"}}
	v5, err := encodeEntry([]*engine.Command{meta})
	if err != nil {
		t.Fatal(err)
	}
	// Version 4 entries with SetMeta, as development builds wrote them.
	v4 := append([]byte(nil), v5[:len(v5)-4]...)
	v4[0] = 4
	v4 = binary.BigEndian.AppendUint32(v4, crc32.Checksum(v4, castagnoli))
	if _, err := decodeEntry(v4); err != nil {
		t.Fatalf("a fifoq that reads format 5 refuses a version 4 entry with fifoq:SetMeta: %v", err)
	}

	saved := maxEntryFormat
	maxEntryFormat = 4
	defer func() { maxEntryFormat = saved }()
	if _, err := decodeEntry(v5); !errors.Is(err, errNewerEntry) {
		t.Fatalf("a format-4 reader decoded a version 5 entry: %v", err)
	}
	if _, err := decodeEntry(v4); err == nil || !strings.Contains(err.Error(), "fifoq:SetMeta") {
		t.Fatalf("a format-4 reader took a fifoq:SetMeta: %v", err)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{meta}, 5); err == nil {
		t.Fatal("a format-4 fifoq wrote a version 5 entry")
	}
}

// TestHelloFormat checks the format field of a hello: absent in a fifoq's
// from before it (version 4), else a version.
func TestHelloFormat(t *testing.T) {
	for _, c := range []struct {
		line string
		want byte
		ok   bool
	}{
		{"n1 inc -", 4, true},
		{"n1 inc - 5", 5, true},
		{"n1 inc - 0", 0, false},
		{"n1 inc - x", 0, false},
		{"n1 inc - 5 6", 0, false},
		{"n1 inc", 0, false},
	} {
		got, ok := helloFormat(strings.Fields(c.line), 3)
		if got != c.want || ok != c.ok {
			t.Errorf("helloFormat(%q) = %d, %v; want %d, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
