package replog

import (
	"testing"
	"time"
)

// TestOneEntryInFlight checks a node alone hands Raft one entry at a time:
// while an entry is being written, the commands that come meanwhile wait,
// and all of them go into the next entry together.
func TestOneEntryInFlight(t *testing.T) {
	store := newHungStore()
	t.Cleanup(store.release)
	l, _ := openTest(t, t.TempDir(), RaftConfig{wrapStore: store.wrap})
	defer l.Close()
	defer store.release() // before Close, should the test fail with the write hung
	oneEntryInFlight(t, l, store)
}

// TestOneEntryInFlightOnALeader checks the same of a cluster's leader:
// while its entry is being written on its own disk, the next waits and
// gathers the commands that come meanwhile. Fewer, larger entries cost
// the leader less CPU, as each is also encoded and sent to every follower.
func TestOneEntryInFlightOnALeader(t *testing.T) {
	stores := map[string]*hungStore{}
	nodes := startClusterWith(t, 3, nil, func(cfg *RaftConfig) {
		s := newHungStore()
		t.Cleanup(s.release)
		stores[cfg.NodeID] = s
		cfg.wrapStore = s.wrap
	})
	leader := waitLeader(t, nodes)
	store := stores[leader.id]
	defer store.release() // before the nodes close, should the test fail with the write hung
	oneEntryInFlight(t, leader.log, store)
}

// oneEntryInFlight checks that l, whose log store is store, hands Raft
// one entry at a time.
func oneEntryInFlight(t *testing.T, l *Raft, store *hungStore) {
	t.Helper()
	c := newClock()
	createFIFO(t, l, c)
	before := l.raft.LastIndex()

	// The first command's entry hangs in the disk write.
	store.arm()
	first := applyAsync(t.Context(), l, sendCommand(c, "m0"))
	select {
	case <-store.entered:
	case <-time.After(hangGuard):
		t.Fatal("the first command never reached the log store")
	}

	// Four more come while it hangs: the batcher takes the first of them
	// and waits for the entry in flight, the other three queue behind it.
	var dones []chan applyResult
	for _, b := range []string{"m1", "m2", "m3", "m4"} {
		p := &pending{cmd: sendCommand(c, b), done: make(chan applyResult, 1)}
		l.submit <- p
		dones = append(dones, p.done)
	}
	deadline := time.Now().Add(hangGuard)
	for len(l.submit) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d commands queued; want 3 behind the one the batcher waits with", len(l.submit))
		}
		time.Sleep(time.Millisecond)
	}
	// A batcher that did not wait would hand the command it took to Raft
	// now: give it the time to, so that the checks below see it. With one
	// entry in flight their outcome does not depend on this pause.
	time.Sleep(50 * time.Millisecond)
	l.fsm.heldMu.Lock()
	held := len(l.fsm.held)
	l.fsm.heldMu.Unlock()
	if held != 1 {
		t.Fatalf("%d entries handed to Raft while the first is written; want 1", held)
	}

	store.release()
	if err := waitErr(t, first); err != nil {
		t.Fatalf("first command: %v", err)
	}
	for i, d := range dones {
		select {
		case res := <-d:
			if res.err != nil {
				t.Fatalf("command %d: %v", i+1, res.err)
			}
		case <-time.After(hangGuard):
			t.Fatalf("command %d was never answered", i+1)
		}
	}
	// Two entries: the first command's, and one with the other four.
	if got := l.raft.LastIndex() - before; got != 2 {
		t.Fatalf("the five commands took %d log entries; want 2 (one in flight at a time)", got)
	}
	if got := receiveBodies(t, l, c, 10); len(got) != 5 {
		t.Fatalf("received %v; want the five messages", got)
	}
}

// TestNextEntryLeavesOnceStored checks that on a node alone the next entry
// is handed to Raft as soon as the previous one is on disk, without
// waiting for the previous one to be applied and answered: the disk is not
// left idle while the state machine works.
func TestNextEntryLeavesOnceStored(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	defer l.Close()
	createFIFO(t, l, c)
	before := l.raft.LastIndex()

	// The state machine blocks on the next entry it applies.
	release := blockFSM(t, l)
	defer release()
	first := applyAsync(t.Context(), l, sendCommand(c, "m0"))
	waitIndex(t, l, before+1)
	select {
	case err := <-first:
		t.Fatalf("the first command was answered (%v) while its entry could not be applied", err)
	default:
	}

	// The next command's entry is written while the first is still
	// unapplied. Had it waited for the first's answer, the index would
	// stay where it is until release.
	second := applyAsync(t.Context(), l, sendCommand(c, "m1"))
	waitIndex(t, l, before+2)

	release()
	for i, errc := range []<-chan error{first, second} {
		if err := waitErr(t, errc); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	if got := receiveBodies(t, l, c, 10); len(got) != 2 {
		t.Fatalf("received %v; want the two messages", got)
	}
}

// waitIndex waits until l's log holds an entry at index.
func waitIndex(t *testing.T, l *Raft, index uint64) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for l.raft.LastIndex() < index {
		if time.Now().After(deadline) {
			t.Fatalf("the log's last index is %d; want %d", l.raft.LastIndex(), index)
		}
		time.Sleep(time.Millisecond)
	}
}
