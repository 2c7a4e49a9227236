package replog

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Pace: an idle shard's replicas heartbeat less often.
//
// What an idle Raft group costs is its heartbeats: a leader sends each
// follower one every tenth of the heartbeat timeout (30 to 60 ms at the
// cluster's 300 ms), and a node holds many shards, most of them idle most
// of the time. CockroachDB quiesces an idle range and TiKV hibernates an
// idle region: both stop ticking it until a write comes. hashicorp/raft
// cannot stop its heartbeats, but it reloads its heartbeat timeout while
// it runs, so a shard whose log has not grown for idleAfter raises it to
// idleHeartbeatFactor times the configured one, and a replica whose log
// grows again lowers it back.
//
// Each replica decides alone, from its own log, so that no message is
// needed, and the factor is small enough that any mix of paces is safe:
// an idle leader's heartbeats come at most 2/10 of the idle timeout
// apart, two thirds of the configured timeout, which is both the shortest
// an active follower waits before it calls an election and the leader's
// own lease (LeaderLeaseTimeout, not reloadable, equal to the configured
// timeout). What an idle shard gives up is a quick failover: its
// followers notice a lost leader after one to two idle timeouts (1 to 2 s
// at the default) instead of 300 to 600 ms, and the shard serves nothing
// meanwhile. A write to it is served as soon as it has a leader; the
// write makes the shard active again.
//
// The first group is never paced: the membership, the shard map and the
// node's liveness as the others see it ride on it.

// shardCommitTimeout is a shard's Raft CommitTimeout: how long a leader
// that has sent every entry waits before it sends each follower an empty
// append anyway, to tell it the commit index. These appends are not
// heartbeats (a heartbeat carries no commit index, and cannot safely:
// it skips the log's consistency check) and are not coalesced, so at
// Raft's default, 50 ms, they cost an idle shard more than its
// heartbeats do, and at 250 ms still a quarter to a half of what is left
// of its CPU (docs/benchmarks.md, "A longer CommitTimeout").
// CommitTimeout cannot be reloaded as a shard goes idle, so it is long
// for every shard; a busy one never waits on it, as each new entry is
// sent at once. What it costs is how soon a follower learns that the last
// entries of a burst are committed and applies them (one to two of it
// after them): fifoq serves from leaders, and a backup read through a
// follower first waits until it has applied what its leader committed
// (the server's catchUp); and how soon a new replica that caught up by a
// snapshot alone is seen to hold the leader's last entry and made a
// voter (replicaMatch), one such append later.
const shardCommitTimeout = time.Second

// idleAfter is how long a shard's log must not grow before its replica
// slows its heartbeats. It is a variable for tests.
var idleAfter = 10 * time.Second

// idleHeartbeatFactor is the idle heartbeat timeout over the configured
// one (see above for why no more).
const idleHeartbeatFactor = 10.0 / 3

// pace is what a replica knows of its shard's activity. Only
// watchLeadership's goroutine touches it.
type pace struct {
	// active is Raft's timing as configured, and idle the one used while
	// the shard is idle; active.HeartbeatTimeout is zero when the log is
	// not paced.
	active, idle raft.ReloadableConfig
	lastIndex    uint64
	lastGrew     time.Time
	// slowed: the idle timing is in use. Idle reads it from elsewhere.
	slowed atomic.Bool
}

// startPace notes the configured heartbeat timeout, for a shard's log in
// a cluster; other logs are never paced.
func (l *Raft) startPace() {
	if l.cluster == nil || l.cfg.Shard == nil {
		return
	}
	p := &l.pace
	p.active = l.raft.ReloadableConfig()
	p.idle = p.active
	p.idle.HeartbeatTimeout = time.Duration(float64(p.active.HeartbeatTimeout) * idleHeartbeatFactor)
	// The election timeout may not be shorter than the heartbeat's.
	p.idle.ElectionTimeout = max(p.active.ElectionTimeout, p.idle.HeartbeatTimeout)
}

// keepPace slows the heartbeats of a shard whose log has not grown for
// idleAfter, and brings them back when it grows again.
func (l *Raft) keepPace(now time.Time) {
	p := &l.pace
	if p.active.HeartbeatTimeout == 0 {
		return
	}
	if index := l.raft.LastIndex(); index != p.lastIndex || p.lastGrew.IsZero() {
		p.lastIndex, p.lastGrew = index, now
		if p.slowed.Load() && l.setTiming(p.active) {
			p.slowed.Store(false)
		}
		return
	}
	if !p.slowed.Load() && now.Sub(p.lastGrew) >= idleAfter && l.setTiming(p.idle) {
		p.slowed.Store(true)
	}
}

// setTiming sets Raft's heartbeat and election timeouts and says whether
// it did. A lowered timeout takes effect at once: Raft resets a
// follower's timer and wakes a leader's heartbeats.
func (l *Raft) setTiming(to raft.ReloadableConfig) bool {
	rc := l.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = to.HeartbeatTimeout, to.ElectionTimeout
	if err := l.raft.ReloadConfig(rc); err != nil {
		l.logger.Warn("could not change Raft's heartbeat timeout", "to", to.HeartbeatTimeout, "err", err)
		return false
	}
	return true
}

// Idle says whether this replica has slowed its heartbeats because its
// shard is idle.
func (l *Raft) Idle() bool { return l.pace.slowed.Load() }
