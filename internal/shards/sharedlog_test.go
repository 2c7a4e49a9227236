package shards

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// TestReplicasShareOneLog: a member's shard replicas keep their entries in
// the node's shared log (each dir names its group, none has a log of its
// own), sends to three shards at once share its writes, and every message
// is there after the member is closed and opened again; a group that no
// replica's dir names any more is dropped as the log opens.
func TestReplicasShareOneLog(t *testing.T) {
	dir := t.TempDir()
	host, set := openMember(t, dir, 3)
	queues := map[uint32]api.QueueKey{}
	for _, id := range set.IDs() {
		q := queue("q" + strconv.Itoa(int(id)))
		placeAt(t, host, set, id, q)
		queues[id] = q
	}
	const sends = 40
	var wg sync.WaitGroup
	for id, q := range queues {
		g, _ := set.Shard(id)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range sends / 4 {
					send(t, g, q, fmt.Sprintf("w%d-%d", w, i))
				}
			}()
		}
	}
	wg.Wait()
	writes := set.sharedLogWrites()
	t.Logf("%d sends to %d shards took %d writes of the shared log", sends*len(queues), len(queues), writes)
	if writes == 0 || writes >= uint64(sends*len(queues)) {
		t.Fatalf("%d sends to %d shards took %d writes of the shared log: not shared", sends*len(queues), len(queues), writes)
	}
	for id := range queues {
		rd := filepath.Join(dir, "shards", strconv.Itoa(int(id)))
		if _, err := os.Stat(filepath.Join(rd, "wal")); err == nil {
			t.Fatalf("shard %d's replica has a log of its own", id)
		}
		if _, err := os.Stat(filepath.Join(rd, "log-group")); err != nil {
			t.Fatalf("shard %d's replica names no group of the shared log: %v", id, err)
		}
	}
	set.Close()
	host.Close()

	// A replica dir gone, as an operator might remove one: its group is
	// dropped when the log next opens, and the shard (with one member, the
	// node) is made anew.
	if err := os.RemoveAll(filepath.Join(dir, "shards", "3")); err != nil {
		t.Fatal(err)
	}
	_, set = openMember(t, dir, 3)
	for id, q := range queues {
		if id == 3 {
			continue
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			l, ok := set.Shard(id)
			n, found := 0, false
			if ok && l.Leading() {
				l.Read(func(e *engine.Engine) { n, found = e.StoredMessages(q) })
			}
			if found && n == sends {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after a restart, shard %d holds %d messages of %s (found %v), want %d", id, n, q, found, sends)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := set.shared.Groups(); got > 3 {
		t.Fatalf("the shared log holds %d groups after a replica's dir was removed, want at most 3", got)
	}
}

// TestSharedLogReplicaIsNotOpenedAlone: a replica whose entries are in the
// node's shared log is refused when opened without it (as a log of its
// own), rather than started with an empty log that every later open would
// take.
func TestSharedLogReplicaIsNotOpenedAlone(t *testing.T) {
	dir := t.TempDir()
	host, set := openMember(t, dir, 2)
	ids := set.IDs()
	set.Close()
	host.Close()
	rd := filepath.Join(dir, "shards", strconv.Itoa(int(ids[0])))
	_, err := replog.OpenRaft(replog.RaftConfig{Dir: rd, NodeID: "n1", MinFreeBytes: -1, Engine: engine.Config{Region: "us-east-1"}})
	if err == nil || !strings.Contains(err.Error(), "shared log") {
		t.Fatalf("a shared-log replica opened alone: %v; want a refusal naming the shared log", err)
	}
	if _, err := os.Stat(filepath.Join(rd, "wal")); err == nil {
		t.Fatal("the refused open made a log of the replica's own")
	}
}
