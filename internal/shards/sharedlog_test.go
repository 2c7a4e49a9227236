package shards

import (
	"fmt"
	"log/slog"
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
	"github.com/fifoq/fifoq/internal/testenv"
)

// TestReplicasShareOneLog: a member's shard replicas keep their entries in
// the node's shared log (each dir names its group, none has a log of its
// own), sends to three shards at once share its writes, and every message
// is there after the member is closed and opened again; the group of a
// replica its shard removed, whose dir is gone, is dropped as the log
// opens.
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

	// Opened again, every message is there.
	host, set = openMember(t, dir, 3)
	for id, q := range queues {
		l, _ := set.Shard(id)
		n, found := 0, false
		l.Read(func(e *engine.Engine) { n, found = e.StoredMessages(q) })
		if !found || n != sends {
			t.Fatalf("after a restart, shard %d holds %d messages of %s (found %v), want %d", id, n, q, found, sends)
		}
	}
	set.Close()
	host.Close()

	// Shard 3 as if it had removed this replica (closeUnwanted forgets
	// it), and its dir removed since: its group is dropped, and a replica
	// wanted here again is made anew.
	if err := os.RemoveAll(filepath.Join(dir, "shards", "3")); err != nil {
		t.Fatal(err)
	}
	h, err := loadHeld(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.remove(3); err != nil {
		t.Fatal(err)
	}
	_, set = openMember(t, dir, 3)
	if got := set.shared.Groups(); got > 3 {
		t.Fatalf("the shared log holds %d groups after a replica's dir was removed, want at most 3", got)
	}
}

// TestLostReplicaStopsTheNode: a part of a member's data dir lost while it
// was down (its shared log, a shard replica's dir, or all of shards/)
// stops the member as it opens again, saying to remove it and join it
// anew, rather than making those replicas anew under the member's id,
// which would answer their shards as if they had never acknowledged an
// entry nor cast a vote. Nothing is made in place of what was lost.
func TestLostReplicaStopsTheNode(t *testing.T) {
	for _, lose := range []string{"shards/log", "shards/2", "shards"} {
		t.Run(strings.ReplaceAll(lose, "/", "-"), func(t *testing.T) {
			dir := t.TempDir()
			host, set := openMember(t, dir, 3)
			for _, id := range set.IDs() {
				q := queue("q" + strconv.Itoa(int(id)))
				placeAt(t, host, set, id, q)
				g, _ := set.Shard(id)
				send(t, g, q, "m")
			}
			set.Close()
			host.Close()
			if err := os.RemoveAll(filepath.Join(dir, lose)); err != nil {
				t.Fatal(err)
			}

			// Twice: a refused open must leave nothing that lets the next
			// one through.
			for range 2 {
				err := openUntilHalted(t, dir, 3)
				if err == nil || !strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), "fifoq cluster remove n1") {
					t.Fatalf("the member opened after %s was lost: %v; want it stopped, told to remove n1", lose, err)
				}
				t.Logf("stopped: %v", err)
			}
			for _, id := range []string{"1", "2", "3"} {
				if ok, err := replog.ReplicaHoldsLog(filepath.Join(dir, "shards", id)); err != nil || (ok && strings.HasPrefix("shards/"+id, lose)) {
					t.Fatalf("shard %s's replica was made anew after %s was lost (%v)", id, lose, err)
				}
			}
		})
	}
}

// openUntilHalted opens the member in dir, with count shards, and returns
// what stopped its shards, or nil if none stopped within 20 s.
func openUntilHalted(t *testing.T, dir string, count int) error {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	addr := testenv.FreeAddr(t)
	host, err := replog.OpenRaft(replog.RaftConfig{Dir: dir, NodeID: "n1", MinFreeBytes: -1, Logger: quiet, Engine: engine.Config{Region: "us-east-1"},
		Cluster: &replog.ClusterConfig{RaftAddr: addr, Peers: []replog.Peer{{ID: "n1", Addr: addr}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	set, err := Open(host, Config{Count: count, Dir: dir, Shard: replog.RaftConfig{MinFreeBytes: -1, Logger: quiet}, Logger: quiet})
	if err != nil {
		return err
	}
	defer set.Close()
	select {
	case <-set.Halted():
		return set.Fault()
	case <-time.After(20 * time.Second):
		return nil
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
