package replog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitIncarnations waits until the membership records an incarnation for
// every member: the leader learns them from the members' hellos.
func waitIncarnations(t *testing.T, leader *testNode) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		members, err := leader.log.Members()
		n := 0
		for _, m := range members {
			if m.Incarnation != "" {
				n++
			}
		}
		if err == nil && n == len(members) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the membership records no incarnation for some members: %+v (%v)", members, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRecorded starts a cluster of n nodes whose leader has a FIFO
// queue with one message and records every member's incarnation, and
// returns its nodes, its leader and the clock of its commands.
func startRecorded(t *testing.T, n int) ([]*testNode, *testNode, *clock) {
	t.Helper()
	nodes := startCluster(t, n, nil)
	c := newClock()
	leader := waitLeader(t, nodes)
	createFIFO(t, leader.log, c)
	send(t, leader.log, c, 0)
	waitIncarnations(t, leader)
	return nodes, leader, c
}

// joinAnew removes nd through leader, wipes its data dir, and starts it
// empty with --join, added anew under its new incarnation.
func joinAnew(t *testing.T, leader, nd *testNode) {
	t.Helper()
	if err := leader.log.RemoveServer(context.Background(), nd.id); err != nil {
		t.Fatal(err)
	}
	nd.log.Close()
	if err := os.RemoveAll(nd.dir); err != nil {
		t.Fatal(err)
	}
	cfg := nd.cfg
	cl := *cfg.Cluster
	cl.Peers, cl.Join = nil, true
	cfg.Cluster = &cl
	nd.log, nd.eng = openTest(t, nd.dir, cfg)
	if err := leader.log.AddVoter(context.Background(), nd.id, cl.RaftAddr, nd.log.Incarnation()); err != nil {
		t.Fatalf("adding the removed member anew: %v", err)
	}
}

// TestWipedMemberIsFenced: a member whose data dir is lost and that is
// started again with its usual flags (its --peers bootstrap an empty log)
// must not take part as itself, a voter that forgot its votes. Its peers
// refuse it, and it stops, saying to remove it and add it anew; the
// cluster goes on. Adding its id again is refused until it is removed;
// once removed, it joins anew under a new incarnation and catches up.
func TestWipedMemberIsFenced(t *testing.T) {
	nodes, leader, c := startRecorded(t, 3)

	var wiped *testNode
	for _, nd := range nodes {
		if nd != leader {
			wiped = nd
			break
		}
	}
	oldInc := wiped.log.Incarnation()
	if err := wiped.log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wiped.dir); err != nil {
		t.Fatal(err)
	}
	wiped.log, wiped.eng = openTest(t, wiped.dir, wiped.cfg)
	if wiped.log.Incarnation() == oldInc {
		t.Fatal("a wiped data dir kept its incarnation")
	}
	select {
	case <-wiped.log.Halted():
	case <-time.After(hangGuard):
		t.Fatalf("the wiped member was not fenced; it is %s", wiped.log.raft.State())
	}
	if err := wiped.log.Fault(); err == nil || !strings.Contains(err.Error(), "fifoq cluster remove "+wiped.id) {
		t.Fatalf("the wiped member stopped with %v; want a message naming `fifoq cluster remove %s`", err, wiped.id)
	}
	if err := wiped.log.Ready(); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("the fenced member is ready (%v)", err)
	}
	send(t, leader.log, c, 1)
	if got := queueDepth(leader); got != 2 {
		t.Fatalf("the leader holds %d messages, want 2", got)
	}

	// Its id cannot be added again while it is a member.
	err := leader.log.AddVoter(context.Background(), wiped.id, wiped.cfg.Cluster.RaftAddr, wiped.log.Incarnation())
	if !errors.Is(err, ErrAlreadyMember) {
		t.Fatalf("adding a member's id again: %v; want ErrAlreadyMember", err)
	}
	// Removed, then started empty with --join and added, it catches up.
	joinAnew(t, leader, wiped)
	waitApplied(t, wiped, leader.log.raft.LastIndex())
	if got := queueDepth(wiped); got != 2 {
		t.Fatalf("the member added anew holds %d messages, want 2", got)
	}
	if wiped.log.Fault() != nil {
		t.Fatalf("the member added anew is stopped: %v", wiped.log.Fault())
	}
}

// TestLaggingMemberCatchesUpFromAReplacedLeader: a member that was down
// while another was removed and added anew under a new incarnation still
// records the old one when it comes back. If the new incarnation leads,
// its hellos are all the lagging member can catch up from: the lagging
// member must not refuse them on the strength of a record its own log has
// not caught up past. Nor may the leader, which knows better, be told it is
// stale by it.
func TestLaggingMemberCatchesUpFromAReplacedLeader(t *testing.T) {
	nodes, leader, c := startRecorded(t, 5)

	var others []*testNode
	for _, nd := range nodes {
		if nd != leader {
			others = append(others, nd)
		}
	}
	replaced, lagging := others[0], others[1]
	// Its snapshot holds the record, so that it records the old
	// incarnation from the moment it opens again, before any leader tells
	// it what is committed.
	waitApplied(t, lagging, leader.log.raft.LastIndex())
	if err := lagging.log.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	oldInc, _ := lagging.log.recordedIncarnation(replaced.id)
	if err := lagging.log.Close(); err != nil {
		t.Fatal(err)
	}

	// replaced is removed, wiped and added anew, and its new incarnation
	// recorded, while lagging is down.
	ctx := context.Background()
	joinAnew(t, leader, replaced)
	if err := replaced.log.Admitted(); err != nil {
		t.Fatal(err)
	}
	newInc := replaced.log.Incarnation()
	deadline := time.Now().Add(hangGuard)
	for {
		waitApplied(t, replaced, leader.log.raft.LastIndex())
		if inc, _ := replaced.log.recordedIncarnation(replaced.id); inc == newInc {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member added anew never found its incarnation recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its state speaks for it now, and once a snapshot does too (a
	// restart starts from one), the record of its join goes.
	if replaced.log.newestSnapshotIndex() == 0 {
		if _, err := os.Stat(filepath.Join(replaced.dir, admittedFile)); err != nil {
			t.Fatalf("the record of the join went before a snapshot recorded the incarnation: %v", err)
		}
	}
	if err := replaced.log.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := os.Stat(filepath.Join(replaced.dir, admittedFile))
		if errors.Is(err, os.ErrNotExist) && replaced.log.cluster.mux.admitted.Load() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record of the join is still there (%v) once the state records the incarnation", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// It is added as a non-voter, promoted once it has caught up.
	if err := leader.log.Promote(ctx, replaced.id); err != nil {
		t.Fatal(err)
	}
	for {
		err := leader.log.HandLeadershipTo(replaced.id, 10*time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handing leadership to the member added anew: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitLeader(t, []*testNode{replaced})
	send(t, replaced.log, c, 1)

	// lagging comes back, recording replaced's old incarnation, and must
	// catch up from its new one.
	lagging.log, lagging.eng = openTest(t, lagging.dir, lagging.cfg)
	if inc, _ := lagging.log.recordedIncarnation(replaced.id); inc != oldInc || inc == "" {
		t.Fatalf("the lagging member records incarnation %q of %s, want the old %q: the test shows nothing", inc, replaced.id, oldInc)
	}
	send(t, replaced.log, c, 2)
	waitApplied(t, lagging, replaced.log.raft.LastIndex())
	if got := queueDepth(lagging); got != 3 {
		t.Fatalf("the lagging member holds %d messages, want 3", got)
	}
	for _, nd := range []*testNode{lagging, replaced, leader} {
		if err := nd.log.Fault(); err != nil {
			t.Fatalf("%s stopped: %v", nd.id, err)
		}
	}
}

// TestRestoredCopyIsAnotherCluster: a backup restored into a new data dir
// is another cluster, whatever its node ids. Its node n1 has the id of a
// member of the cluster the backup came from, and replicated state further
// along than that cluster's (the backup's, and what it applied since). A
// member must not take it for a newer incarnation of its n1, nor reach it
// as one of its own: the two refuse each other at the hello, and neither
// stops for it.
func TestRestoredCopyIsAnotherCluster(t *testing.T) {
	nodes, leader, c := startRecorded(t, 3)
	for _, nd := range nodes {
		waitApplied(t, nd, leader.log.raft.LastIndex())
	}
	var file bytes.Buffer
	if _, err := leader.log.Backup(&file, "test"); err != nil {
		t.Fatal(err)
	}

	// The restore, then the restored node started alone as n1.
	dir := t.TempDir()
	r, _ := openTest(t, dir, RaftConfig{NodeID: "n1", MinFreeBytes: -1})
	if err := restoreFrom(r, file.Bytes()); err != nil {
		t.Fatal(err)
	}
	if id, orig := r.clusterID(), leader.log.clusterID(); id == "" || orig == "" || id == orig {
		t.Fatalf("the restored data dir's cluster id is %q, the original's %q: want a new one from the restore on", id, orig)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	restored := &testNode{id: "n1", dir: dir}
	restored.cfg = RaftConfig{NodeID: "n1", MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: freeAddrs(t, 1)[0]}}
	restored.log, restored.eng = openTest(t, dir, restored.cfg)
	defer restored.log.Close()
	waitLeader(t, []*testNode{restored})
	send(t, restored.log, c, 1)
	waitIncarnations(t, restored)
	for _, nd := range nodes {
		if restored.log.stateIndex() <= nd.log.stateIndex() {
			t.Fatalf("the restored node's state is at %d, %s's at %d: the test shows nothing", restored.log.stateIndex(), nd.id, nd.log.stateIndex())
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, nd := range nodes {
		if nd.id == "n1" {
			continue
		}
		if conn, err := restored.log.cluster.mux.dial(ctx, nd.cfg.Cluster.RaftAddr, muxHTTP); err == nil {
			conn.Close()
			t.Errorf("%s accepted the restored copy's n1 as its member n1", nd.id)
		} else if !errors.Is(err, ErrOtherCluster) {
			t.Errorf("%s refused the restored copy's n1 with %v; want ErrOtherCluster", nd.id, err)
		}
		if conn, err := nd.log.cluster.mux.dial(ctx, restored.cfg.Cluster.RaftAddr, muxHTTP); err == nil {
			conn.Close()
			t.Errorf("%s reached the restored copy's n1", nd.id)
		} else if !errors.Is(err, ErrOtherCluster) {
			t.Errorf("%s was refused by the restored copy's n1 with %v; want ErrOtherCluster", nd.id, err)
		}
	}
	// Nor is one added to the other.
	if err := restored.log.AddVoter(ctx, nodes[1].id, nodes[1].cfg.Cluster.RaftAddr, ""); !errors.Is(err, ErrOtherCluster) {
		t.Errorf("adding the original's %s to the restored copy: %v; want ErrOtherCluster", nodes[1].id, err)
	}
	for _, nd := range append(nodes, restored) {
		if err := nd.log.Fault(); err != nil {
			t.Fatalf("%s stopped: %v", nd.id, err)
		}
	}
	// Both clusters go on.
	send(t, leader.log, c, 2)
	send(t, restored.log, c, 3)
}
