package replog

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestUncommittedRemovalKeepsTheMember: a leader that appended its own
// removal, which its group could not commit (its followers gone), is
// still a member as far as its replica's fate goes: IsMember stays true
// and CommittedMembers still names it. Taken from the configuration Raft
// uses (its latest, uncommitted), the node closed such a replica and a
// removal asked through it went ahead, which left a shard with voters it
// could not reach and without a leader for good (the in-memory nemesis at
// 487 moves: "shards map[2:true] still count m3 among their replicas").
func TestUncommittedRemovalKeepsTheMember(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m, ok := leader.log.CommittedMembers(); ok && len(m) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader knows no committed membership of 3 after 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, nd := range nodes {
		if nd != leader {
			nd.log.Close()
			nd.log = nil
		}
	}
	f := leader.log.raft.RemoveServer(raft.ServerID(leader.id), 0, 0)
	// The removal is in the leader's log, and in the configuration Raft
	// uses, once it is appended.
	for leader.log.InLatestMembership() {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the leader's latest configuration still names it")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !leader.log.IsMember() {
		t.Fatal("IsMember is false on a leader whose removal was never committed")
	}
	m, ok := leader.log.CommittedMembers()
	if !ok || len(m) != 3 {
		t.Fatalf("committed members %v (known: %v), want the 3 before the removal", m, ok)
	}
	if err := f.Error(); err == nil {
		t.Fatal("the removal committed without a majority")
	}
}
