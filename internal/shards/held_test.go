package shards

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHeldRecord: the node's record of its replicas keeps what was added
// and forgets what was removed across reads, says a replica lost only once
// the record exists and names it, and a damaged record is refused rather
// than read as naming nothing.
func TestHeldRecord(t *testing.T) {
	dir := t.TempDir()
	h, err := loadHeld(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.lostShard(1, false) {
		t.Fatal("a replica is lost before the node keeps a record")
	}
	for _, step := range []error{h.setLog("abc"), h.add(1), h.add(4), h.add(2), h.remove(4)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	h, err = loadHeld(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.logID() != "abc" || !h.lostShard(1, false) || !h.lostShard(2, false) || h.lostShard(4, false) || h.lostShard(1, true) {
		t.Fatalf("read back: log %q, shards %v", h.logID(), h.shards)
	}
	for _, bad := range []string{"log\n", "shard 0\n", "shard x\n", "shards 1\n", "shard 1\nlog abc\nsomething\n"} {
		if err := os.WriteFile(filepath.Join(dir, heldFile), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadHeld(dir); err == nil {
			t.Errorf("a record of %q was read", bad)
		}
	}
}
