package replog

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestReplicaMatch: what a leader learns of a follower's log from its
// answers to AppendEntries, and when a replica waiting to vote has caught
// up.
func TestReplicaMatch(t *testing.T) {
	var m replicaMatch
	ok := &raft.AppendEntriesResponse{Success: true}
	refused := &raft.AppendEntriesResponse{Success: false}
	entries := func(term uint64, prev uint64, idx ...uint64) *raft.AppendEntriesRequest {
		r := &raft.AppendEntriesRequest{Term: term, PrevLogEntry: prev}
		for _, i := range idx {
			r.Entries = append(r.Entries, &raft.Log{Index: i})
		}
		return r
	}
	// First asked at index 10: the target.
	if caught, _, target := m.caughtUp("b", 2, 10); caught || target != 10 {
		t.Fatalf("a replica never heard from: caught up %v, target %d", caught, target)
	}
	m.observe("b", entries(2, 0), ok) // a heartbeat says nothing
	m.observe("b", entries(2, 4, 5, 6), ok)
	if caught, at, _ := m.caughtUp("b", 2, 30); caught || at != 6 {
		t.Fatalf("after entries up to 6: caught up %v at %d; want not, at 6", caught, at)
	}
	m.observe("b", entries(2, 9), ok) // an empty append at 9 matched
	m.observe("b", entries(2, 9, 10), refused)
	if caught, at, _ := m.caughtUp("b", 2, 30); caught || at != 0 {
		t.Fatalf("after a refusal: caught up %v at %d; want not, at 0", caught, at)
	}
	m.observe("b", entries(2, 7, 8, 9, 10, 11), ok)
	// The target stays 10 although the log has grown to 30.
	if caught, at, _ := m.caughtUp("b", 2, 30); !caught || at != 11 {
		t.Fatalf("holding 11 of a target of 10: caught up %v at %d", caught, at)
	}
	// An answer to an older term's append is ignored; a new term starts
	// afresh, with a new target.
	m.observe("b", entries(3, 0), ok)
	m.observe("b", entries(2, 40, 41), ok)
	if caught, at, target := m.caughtUp("b", 3, 50); caught || at != 0 || target != 50 {
		t.Fatalf("in a new term: caught up %v at %d, target %d", caught, at, target)
	}
}
