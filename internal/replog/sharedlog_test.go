package replog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

// TestOwnLogMovesIntoSharedLog: a replica with a log of its own (made
// before its node had a shared log) opened with one has its log moved
// there, with its entries, term and vote: its dir names a group and holds
// no log of its own, and its queue is whole. An own log found beside a
// named group, as a crash after naming it leaves, is removed and the group
// kept.
func TestOwnLogMovesIntoSharedLog(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	createFIFO(t, l, c)
	for i := range 20 {
		send(t, l, c, i)
	}
	term, last := l.raft.CurrentTerm(), l.raft.LastIndex()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "wal")
	kept := filepath.Join(t.TempDir(), "wal")
	if err := os.CopyFS(kept, os.DirFS(own)); err != nil {
		t.Fatal(err)
	}

	shared := openSharedTest(t, t.TempDir(), 0)
	stored := func(l *Raft) int {
		n := 0
		l.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(testQueue) })
		return n
	}
	for round := range 2 {
		l, _ = openTest(t, dir, RaftConfig{sharedLog: shared})
		if _, err := os.Stat(own); err == nil {
			t.Fatalf("round %d: the replica still has a log of its own", round)
		}
		id, named, err := readGroupID(dir)
		if err != nil || !named {
			t.Fatalf("round %d: the replica names no group of the shared log (%v)", round, err)
		}
		g := shared.log.Group(id)
		if got, _ := g.LastIndex(); got < last {
			t.Fatalf("round %d: the group's last entry is %d, the own log's was %d", round, got, last)
		}
		if got, _ := g.GetUint64([]byte("CurrentTerm")); got < term {
			t.Fatalf("round %d: the group's term is %d, the own log's was %d", round, got, term)
		}
		deadline := time.Now().Add(10 * time.Second)
		for stored(l) != 20 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := stored(l); n != 20 {
			t.Fatalf("round %d: the queue holds %d messages after the move, want 20", round, n)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// As a crash after the group was named and before the own log
		// was removed would leave it.
		if err := os.CopyFS(own, os.DirFS(kept)); err != nil {
			t.Fatal(err)
		}
	}
	l, _ = openTest(t, dir, RaftConfig{sharedLog: shared})
	defer l.Close()
	want := []string{"m0", "m1", "m2", "m3", "m4"}
	if got := receiveBodies(t, l, c, 5); !slices.Equal(got, want) {
		t.Fatalf("received %v after the move, want %v", got, want)
	}
	if groups := shared.log.Groups(); len(groups) != 1 {
		t.Fatalf("the shared log holds groups %v, want the replica's one", groups)
	}
}
