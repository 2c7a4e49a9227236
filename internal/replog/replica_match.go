package replog

import (
	"sync"

	"github.com/hashicorp/raft"
)

// replicaMatch is what a shard's leader knows of how far each follower's
// log matches its own, learnt from the followers' answers to its
// AppendEntries (raftnet's OnAppendEntries): hashicorp/raft keeps its
// own count (a follower's matchIndex) to itself.
//
// A shard adds a new replica without a vote and makes it a voter once it
// has caught up (matchWanted), as etcd's learners and CockroachDB's
// learner replicas do: a voter counts in the group's quorum at once, so a
// replica still waiting for its first snapshot, or on a node that has not
// opened it yet, would make the group need every other replica to commit,
// and one more failure would stop the shard's writes. A leader's crash
// right after such an addition can leave the group leaderless for good:
// the survivors' configuration counts the new replica, whose own (an old
// snapshot's) does not count them.
type replicaMatch struct {
	mu sync.Mutex
	// term is the leader's term that matched and target are of: a new
	// term starts both afresh.
	term uint64
	// matched is each follower's log match: the index of the last entry
	// it said it holds as this leader's, 0 after an answer refused.
	matched map[raft.ServerID]uint64
	// target is, for each replica waiting to vote, the leader's last
	// index when it first saw it waiting: the replica votes once it
	// holds that entry.
	target map[raft.ServerID]uint64
}

// reset starts a new term's knowledge. mu is held.
func (m *replicaMatch) reset(term uint64) {
	if term == m.term && m.matched != nil {
		return
	}
	m.term = term
	m.matched = map[raft.ServerID]uint64{}
	m.target = map[raft.ServerID]uint64{}
}

// observe learns from follower id's answer to an AppendEntries: a refusal
// (its log does not hold the entry before those sent, or it knows a newer
// term) says nothing of its log matching; a success says it holds every
// entry sent, or the one before them for an AppendEntries without any.
// A heartbeat (no entries, no previous entry) says nothing.
func (m *replicaMatch) observe(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if args.Term < m.term {
		return
	}
	m.reset(args.Term)
	if !resp.Success {
		m.matched[id] = 0
		return
	}
	index := args.PrevLogEntry
	if n := len(args.Entries); n > 0 {
		index = args.Entries[n-1].Index
	}
	if index > m.matched[id] {
		m.matched[id] = index
	}
}

// forget drops what was learnt of replica id: it is added anew (perhaps
// on a node whose data dir was replaced), removed, or made a voter, so
// that nothing learnt of an earlier replica by its id promotes the next.
func (m *replicaMatch) forget(id raft.ServerID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.matched, id)
	delete(m.target, id)
}

// caughtUp reports whether follower id, waiting to vote, has caught up
// with this leader (of term, whose log ends at last): whether it holds
// every entry the leader had when it first asked (a later ask sets no
// new target, so that a follower under a steady load, always a little
// behind, still catches up).
func (m *replicaMatch) caughtUp(id raft.ServerID, term, last uint64) (bool, uint64, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reset(term)
	target, ok := m.target[id]
	if !ok {
		target = last
		m.target[id] = target
	}
	return m.matched[id] >= target, m.matched[id], target
}
