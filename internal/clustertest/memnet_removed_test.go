package clustertest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/testenv"
)

// holds reports whether nd's data dir holds a replica of shard id.
func (nd *memNode) holds(id uint32) bool {
	_, err := os.Stat(filepath.Join(nd.dir, "shards", strconv.FormatUint(uint64(id), 10)))
	return err == nil
}

// TestReplicaRemovedWhileCutOffIsClosed cuts a member off while the map
// moves some of its shard replicas to a member that joins, and each of
// those shards commits the removal of its replica without it. Once the
// network heals, the member must learn that it was removed and close
// those replicas: it never received the entry that removed it, and its
// shard's leader no longer sends it anything, so a replica that waited to
// see its removal in its own log would stay open for good, campaigning in
// a group that no longer counts it and listing queues long moved away.
func TestReplicaRemovedWhileCutOffIsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("four members in one process; skipped in -short mode")
	}
	testenv.Long(t, "four in-process members, one cut off while the map moves its replicas away, about 40 s")
	c := newMemCluster(t, 4, 4, 38)
	c.logTailsOnFailure(30)
	c.waitShards(5)

	// m4 leaves, and the others take its replicas (four each of twelve).
	leaving := c.nodes[3]
	c.t.Logf("remove %s", leaving.id)
	c.retryingFor("remove "+leaving.id, time.Minute, func() error {
		return c.removeMember(leaving)
	})
	c.stop(leaving, 0)
	c.waitNoReplicaOn(leaving.id)

	// One of the others, not the first group's leader, is cut off; m4
	// joins again with an empty data dir, and the map gives it replicas,
	// one taken from each of the others (each holds four of twelve).
	var lead, cut *memNode
	deadline := time.Now().Add(30 * time.Second)
	for lead == nil || lead == leaving {
		if time.Now().After(deadline) {
			t.Fatalf("the first group has no leader among the members left 30 s after %s's removal", leaving.id)
		}
		time.Sleep(100 * time.Millisecond)
		lead = c.leaderOf(0)
	}
	for _, nd := range c.nodes[:3] {
		if nd != lead {
			cut = nd
			break
		}
	}
	c.net.Isolate(cut.raftAddr, c.raftAddrs())
	t.Logf("cut %s off", cut.id)
	c.rejoin(leaving)

	// Wait, as the members that reach each other see it, until a shard's
	// leader no longer counts the member cut off among its replicas.
	var removed []uint32
	deadline = time.Now().Add(90 * time.Second)
	for len(removed) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no shard removed %s's replica within 90 s of %s joining", cut.id, leaving.id)
		}
		time.Sleep(200 * time.Millisecond)
		for _, nd := range c.running() {
			st := nd.shards()
			if nd == cut || st == nil {
				continue
			}
			for _, sh := range st.Shards {
				if sh.Shard != 0 && sh.Held && sh.State == "Leader" && len(sh.Members) > 0 &&
					!slices.ContainsFunc(sh.Members, func(m replog.Member) bool { return m.ID == cut.id }) &&
					!slices.Contains(sh.Wanted, cut.id) && cut.holds(sh.Shard) {
					removed = append(removed, sh.Shard)
				}
			}
		}
	}
	// The leader of such a shard sends the member the entry that removes
	// it, once, and stops replicating to it: past the transport's
	// timeout, that send has failed for good.
	t.Logf("shards %v removed %s's replica while it was cut off", removed, cut.id)
	time.Sleep(15 * time.Second)
	c.net.Heal()

	deadline = time.Now().Add(30 * time.Second)
	for {
		var still []uint32
		if st := cut.shards(); st != nil {
			for _, sh := range st.Shards {
				if sh.Held && slices.Contains(removed, sh.Shard) {
					still = append(still, sh.Shard)
				}
			}
		} else {
			still = removed
		}
		if len(still) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds its replicas of shards %v 30 s after the network healed; its shards removed them while it was cut off", cut.id, still)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
