package replog

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// failingStore is a log store whose appends fail with EIO once armed, as
// those of a disk going bad do.
type failingStore struct {
	raft.LogStore
	armed atomic.Bool
	calls atomic.Int64 // appends that failed
}

func (s *failingStore) wrap(ls raft.LogStore) raft.LogStore { s.LogStore = ls; return s }

func (s *failingStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *failingStore) StoreLogs(logs []*raft.Log) error {
	if s.armed.Load() {
		s.calls.Add(1)
		return &os.PathError{Op: "write", Path: "wal/00000000000000000001-0000000000000000.wal", Err: syscall.EIO}
	}
	return s.LogStore.StoreLogs(logs)
}

// IsMonotonic forwards the answer of the store beneath (see storeGate).
func (s *failingStore) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// waitHalted waits until l has stopped on a storage fault, and checks
// what it says about it.
func waitHalted(t *testing.T, l *Raft) {
	t.Helper()
	select {
	case <-l.Halted():
	case <-time.After(hangGuard):
		t.Fatal("the node did not stop on its storage fault")
	}
	if err := l.Fault(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the node's fault is %v; want the EIO of its log store", err)
	}
	if err := l.Ready(); err == nil || !strings.Contains(err.Error(), "storage fault") {
		t.Fatalf("a node stopped on a storage fault is ready (%v)", err)
	}
	if l.Leading() {
		t.Fatal("a node stopped on a storage fault leads")
	}
}

// TestStorageFaultStopsNode: when the disk fails an append, a node alone
// stops (fsync errors are fatal: the entry may be on disk or not, and
// raft-wal cannot go on after one) instead of stepping down and standing
// again. The request whose entry failed is told its outcome is unknown,
// never that the write failed; later ones are refused; the node is not
// ready; and a restart on the same data finds the log as the disk kept it.
func TestStorageFaultStopsNode(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	store := &failingStore{}
	l, _ := openTest(t, dir, RaftConfig{wrapStore: store.wrap})
	createFIFO(t, l, c)
	if _, err := l.Apply(context.Background(), sendCommand(c, "m0")); err != nil {
		t.Fatal(err)
	}
	store.armed.Store(true)
	wantAPIError(t, waitErr(t, applyAsync(context.Background(), l, sendCommand(c, "m1"))), "ServiceUnavailable", "may or may not")
	waitHalted(t, l)
	wantAPIError(t, waitErr(t, applyAsync(context.Background(), l, sendCommand(c, "m2"))), "ServiceUnavailable", "storage fault")
	if n := store.calls.Load(); n != 1 {
		t.Errorf("%d appends reached the failing disk; want 1 (the node stops at the first)", n)
	}
	l.Close()

	l, _ = openTest(t, dir, RaftConfig{})
	defer l.Close()
	got := receiveBodies(t, l, c, 10)
	if len(got) == 0 || got[0] != "m0" || len(got) > 1 {
		t.Fatalf("after the fault and a restart received %v; want [m0] (m1 failed on the disk, m2 was refused)", got)
	}
}

// TestStorageFaultStopsFollower: a follower whose disk fails an append
// stops and says so, rather than stay up, ready and behind for ever (a
// zombie that leaves the cluster one failure from unavailability while
// nothing reports it). The others go on.
func TestStorageFaultStopsFollower(t *testing.T) {
	stores := map[string]*failingStore{}
	nodes := startClusterWith(t, 3, nil, func(cfg *RaftConfig) {
		s := &failingStore{}
		stores[cfg.NodeID] = s
		cfg.wrapStore = s.wrap
	})
	c := newClock()
	leader := waitLeader(t, nodes)
	createFIFO(t, leader.log, c)
	var follower *testNode
	for _, nd := range nodes {
		if nd != leader {
			follower = nd
			break
		}
	}
	stores[follower.id].armed.Store(true)
	for i := range 5 {
		if _, err := leader.log.Apply(context.Background(), sendCommand(c, "m"+string(rune('0'+i)))); err != nil {
			t.Fatalf("send %d with one follower's disk failing: %v", i, err)
		}
	}
	waitHalted(t, follower.log)
	if err := leader.log.Ready(); err != nil {
		t.Fatalf("the leader is not ready after a follower stopped: %v", err)
	}
}

// TestStoppedStateMachineLeaves: a leader whose state machine cannot apply
// an entry (what an older fifoq meets in a rolling upgrade) hands its
// leadership over and leaves the elections, instead of leading a cluster
// that then refuses every write and reads from a frozen state. Another
// member leads, writes go on there, and the stopped node is not ready,
// does not lead, and never leads again.
func TestStoppedStateMachineLeaves(t *testing.T) {
	refusing := map[string]*atomic.Bool{}
	nodes := startClusterWith(t, 3, nil, func(cfg *RaftConfig) {
		var on atomic.Bool
		refusing[cfg.NodeID] = &on
		cfg.rejectCommands = func(cmds []*engine.Command) error {
			if on.Load() {
				return errors.New("test: this node cannot read the entry")
			}
			return nil
		}
	})
	c := newClock()
	old := waitLeader(t, nodes)
	createFIFO(t, old.log, c)
	refusing[old.id].Store(true)
	// The entry commits on the others; the old leader cannot apply it, so
	// its caller never learns the outcome from it.
	wantAPIError(t, waitErr(t, applyAsync(context.Background(), old.log, sendCommand(c, "m0"))), "ServiceUnavailable", "")

	deadline := time.Now().Add(hangGuard)
	var leader *testNode
	for leader == nil {
		for _, nd := range nodes {
			if nd != old && nd.log.Leading() {
				leader = nd
			}
		}
		if old.log.Leading() {
			t.Fatal("the node whose state machine stopped leads")
		}
		if time.Now().After(deadline) {
			t.Fatal("no other node took over the leadership")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := leader.log.Apply(context.Background(), sendCommand(c, "m1")); err != nil {
		t.Fatalf("a write to the new leader: %v", err)
	}
	if err := old.log.Ready(); err == nil || !strings.Contains(err.Error(), "cannot apply") {
		t.Fatalf("the stopped node is ready (%v)", err)
	}
	select {
	case <-old.log.stopped:
	case <-time.After(hangGuard):
		t.Fatal("Raft did not stop on the node whose state machine stopped")
	}
	if got := receiveBodies(t, leader.log, c, 10); len(got) != 2 || got[0] != "m0" || got[1] != "m1" {
		t.Fatalf("the new leader holds %v; want [m0 m1]", got)
	}
}

// TestCloseHandsLeadershipOver: a leader that stops (SIGTERM: the server
// closes its log) hands its leadership to another member first, so that
// the cluster does not wait out an election timeout; writes go on at the
// successor, with nothing acknowledged lost.
func TestCloseHandsLeadershipOver(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	c := newClock()
	old := waitLeader(t, nodes)
	createFIFO(t, old.log, c)
	if _, err := old.log.Apply(context.Background(), sendCommand(c, "m0")); err != nil {
		t.Fatal(err)
	}
	if err := old.log.Close(); err != nil {
		t.Fatal(err)
	}
	if !old.log.handedOver.Load() {
		t.Fatal("the leader stopped without handing its leadership over")
	}
	old.log = nil
	leader := waitLeader(t, nodes)
	if _, err := leader.log.Apply(context.Background(), sendCommand(c, "m1")); err != nil {
		t.Fatalf("a write to the successor: %v", err)
	}
	if got := receiveBodies(t, leader.log, c, 10); len(got) != 2 || got[0] != "m0" || got[1] != "m1" {
		t.Fatalf("the successor holds %v; want [m0 m1]", got)
	}
}

// TestTransferGuard: after a leadership transfer to a member fails, no
// other to it starts in the same term for transferCooldown (wedge.go); a
// failure whose target Raft picked bars every member; a new term, or the
// cooldown's end, lifts the bar; a transfer that was not started (another
// in progress) or that succeeded bars nothing.
func TestTransferGuard(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var g transferGuard
	if err := g.check(3, "n2", now); err != nil {
		t.Fatalf("a first transfer was refused: %v", err)
	}
	g.note(3, "n2", nil, now)
	g.note(3, "n2", raft.ErrLeadershipTransferInProgress, now)
	if err := g.check(3, "n2", now); err != nil {
		t.Fatalf("a transfer after one that succeeded, or was not started, was refused: %v", err)
	}
	g.note(3, "n2", errors.New("leadership transfer timeout"), now)
	if err := g.check(3, "n2", now); !errors.Is(err, ErrTransferCoolingDown) {
		t.Fatalf("a transfer right after one that failed gave %v", err)
	}
	for _, c := range []struct {
		term   uint64
		target string
		after  time.Duration
		barred bool
	}{
		{3, "n2", time.Second, true},
		{3, "", time.Second, true}, // Raft could pick n2
		{3, "n3", time.Second, false},
		{3, "n2", transferCooldown, false},
		{4, "n2", time.Second, false},
	} {
		g := transferGuard{term: 3, failedAt: map[string]time.Time{"n2": now}} // each case from the same record
		err := g.check(c.term, c.target, now.Add(c.after))
		if barred := errors.Is(err, ErrTransferCoolingDown); barred != c.barred {
			t.Errorf("term %d, target %q, %v after: barred %v, want %v", c.term, c.target, c.after, barred, c.barred)
		}
	}
	// A failed transfer to a member Raft picked bars every member.
	g2 := transferGuard{}
	g2.note(5, "", errors.New("not done within 5s"), now)
	if err := g2.check(5, "n3", now.Add(time.Second)); !errors.Is(err, ErrTransferCoolingDown) {
		t.Errorf("after a failed transfer to a member Raft picked, one to n3 gave %v", err)
	}
}
