package replog

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Leadership: which node leads and whether it may serve as leader yet
// (watchLeadership, Leading), handing the leadership over, and leaving the
// elections when the state machine stopped (leaveOnFatal) or the clock is
// off (SetClockOff).

// watchLeadership follows this node's role: when it becomes leader it
// applies a barrier, so that everything committed before its term is
// applied before it answers reads or runs the leader's work, and corrects
// its own address in the membership if it changed (a single-node data dir
// that becomes a cluster's first member).
func (l *Raft) watchLeadership() {
	defer l.wg.Done()
	c := l.cluster
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var warnedTerm uint64
	for {
		select {
		case <-c.wake:
		case <-tick.C:
		case <-l.quit:
			return
		}
		_, id := l.raft.LeaderWithID()
		if string(id) != c.lastLeader {
			c.lastLeader = string(id)
			if id != "" {
				c.leaderChanges.Add(1)
			}
			c.notify()
		}
		now := time.Now()
		l.checkWedged(now)
		l.keepPace(now)
		if l.raft.State() != raft.Leader {
			c.forgetUnheard()
			if c.readyTerm.Swap(0) != 0 {
				c.notify()
			}
			continue
		}
		if why := c.clockOff.Load(); why != nil {
			// Queue time is the leader's clock: a leader whose clock is
			// off the others' would move every queue by the difference.
			if c.readyTerm.Swap(0) != 0 {
				c.notify()
			}
			l.logger.Error("this node leads but its clock is off the cluster's: handing the leadership over", "why", *why)
			if err := l.guardedTransfer("", "", clockOffHandOver); err != nil {
				l.logger.Warn("could not hand the leadership over", "err", err)
			}
			continue
		}
		term := l.raft.CurrentTerm()
		if c.readyTerm.Load() == term {
			continue
		}
		err := l.awaitFuture(l.raft.Barrier(5 * time.Second))
		l.transfers.note(err, time.Now())
		if err != nil {
			// Lost the leadership, or slow: look again. A leader that
			// stays one and cannot commit serves nothing: say so, once
			// a term.
			if l.raft.State() == raft.Leader && l.raft.CurrentTerm() == term && warnedTerm != term {
				warnedTerm = term
				l.logger.Warn("this node leads but could not commit a barrier; it serves nothing until it does", "term", term, "err", err)
			}
			continue
		}
		l.fixOwnAddress()
		if !l.recordRegion() || !l.recordClusterID() {
			continue
		}
		if l.raft.State() == raft.Leader && l.raft.CurrentTerm() == term {
			c.readyTerm.Store(term)
			c.notify()
		}
	}
}

// errClosing ends a wait for one of Raft's futures when the log closes.
var errClosing = errors.New("the command log is closing")

// awaitFuture waits for f, or until the log closes: a barrier of a leader
// that commits nothing waits until Raft shuts down, and Close shuts Raft
// down only once the log's own goroutines have returned.
func (l *Raft) awaitFuture(f raft.Future) error { return awaitUntil(f, l.quit, errClosing) }

// fixOwnAddress updates this node's Raft address in the membership when
// it differs from the one it listens on.
func (l *Raft) fixOwnAddress() {
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	self := raft.ServerAddress(l.cluster.cfg.RaftAddr)
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == l.cfg.NodeID && s.Address != self && s.Suffrage == raft.Voter {
			if err := l.raft.AddVoter(s.ID, self, 0, 5*time.Second).Error(); err != nil {
				l.logger.Warn("could not record this node's raft address in the membership", "addr", self, "err", err)
			} else {
				l.logger.Info("recorded this node's raft address in the membership", "node_id", l.cfg.NodeID, "old", s.Address, "new", self)
			}
		}
	}
}

func (c *clusterState) notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Leading reports whether this node leads and has applied everything
// committed before its term: it may answer reads from its own state and
// run the leader's periodic work.
func (l *Raft) Leading() bool {
	if l.faults.err() != nil {
		return false
	}
	if l.cluster != nil && l.cluster.clockOff.Load() != nil {
		return false
	}
	if _, err := l.fsm.failure(); err != nil {
		return false
	}
	if l.cluster == nil {
		return l.raft.State() == raft.Leader
	}
	t := l.cluster.readyTerm.Load()
	return t != 0 && l.raft.State() == raft.Leader && l.raft.CurrentTerm() == t
}

// LeadershipChanged returns a channel closed at the next change of this
// node's role or of the leader it knows. A cluster of one never changes.
func (l *Raft) LeadershipChanged() <-chan struct{} {
	if l.cluster == nil {
		return nil
	}
	l.cluster.mu.Lock()
	defer l.cluster.mu.Unlock()
	return l.cluster.changed
}

// Leader returns the id and Raft address of the leader this node knows,
// or empty strings when it knows none.
func (l *Raft) Leader() (id, addr string) {
	a, i := l.raft.LeaderWithID()
	return string(i), string(a)
}

// NodeID is this node's id.
func (l *Raft) NodeID() string { return l.cfg.NodeID }

// followerReady says whether a follower can serve (by forwarding to the
// leader): it knows a leader and heard from it recently.
func (l *Raft) followerReady() error {
	if l.cluster == nil {
		return fmt.Errorf("this node is not the leader (it is %s)", l.raft.State())
	}
	if _, id := l.raft.LeaderWithID(); id == "" {
		return errors.New("no leader is known")
	}
	limit := 3 * l.raft.ReloadableConfig().HeartbeatTimeout
	if last := l.raft.LastContact(); last.IsZero() || time.Since(last) > limit {
		return errors.New("the leader has not been heard from recently")
	}
	return nil
}

// LeaderSilent reports whether this follower knows no leader, or has not
// heard from the one it knows for its heartbeat timeout, in which a live
// leader sends it several heartbeats (about ten; one or two where the
// leader's shard is idle and paced, pace.go): the leader has most likely
// failed and an election is under way or about to be. Raft itself clears the
// leader it knows only once its own, randomized, timer runs out, later.
// Always false on a leader and on a node alone.
func (l *Raft) LeaderSilent() bool {
	if l.cluster == nil || l.raft.State() == raft.Leader {
		return false
	}
	if _, id := l.raft.LeaderWithID(); id == "" {
		return true
	}
	last := l.raft.LastContact()
	return last.IsZero() || time.Since(last) > l.raft.ReloadableConfig().HeartbeatTimeout
}

// transferLeadership hands this leader's leadership to another member and
// waits for it, up to timeout, or until the log closes.
//
// Unlike the transfers asked again and again (HandLeadershipTo, a leader
// whose clock is off), it is not held back after a failed one
// (transferGuard): a node that stops or leaves asks once, and a transfer
// that wedges is ended with its Raft.
func (l *Raft) transferLeadership(timeout time.Duration) error {
	return l.awaitTransfer(l.raft.LeadershipTransfer(), timeout)
}

// clockOffHandOver bounds the wait for a leadership transfer of a leader
// whose clock is off.
const clockOffHandOver = 5 * time.Second

// awaitTransfer waits for a leadership transfer, up to timeout, or until
// the log closes. Raft may never answer a transfer it took just before
// it stopped: the goroutine reading the future is then left, as for an
// entry (awaitUntil).
func (l *Raft) awaitTransfer(f raft.Future, timeout time.Duration) error {
	stop := make(chan struct{})
	var why error
	var once sync.Once
	end := func(err error) { once.Do(func() { why = err; close(stop) }) }
	t := time.AfterFunc(timeout, func() { end(fmt.Errorf("not done within %v", timeout)) })
	defer t.Stop()
	answered := make(chan struct{})
	defer close(answered)
	go func() {
		select {
		case <-l.quit:
			end(ErrClosed)
		case <-answered:
		}
	}()
	if err := awaitUntil(f, stop, errTransferEnded); err != errTransferEnded {
		return err
	}
	return why // written before stop closed
}

// errTransferEnded is awaitUntil's answer to awaitTransfer when its wait
// ended first: awaitTransfer says why.
var errTransferEnded = errors.New("the wait for the transfer ended")

// leaveTimeout bounds how long a leader whose state machine stopped tries
// to hand its leadership over before it stops anyway.
const leaveTimeout = 5 * time.Second

// leaveOnFatal takes a member whose state machine stopped at an entry it
// cannot apply (fsm.fatal) out of the cluster's elections: a leader hands
// its leadership to another member first, then Raft stops on this node.
// Left running, the node would vote, could be elected, and would then
// refuse every write and answer reads from its state frozen at that entry
// (what an older fifoq meets in a rolling upgrade, since decoding is
// strict). The process stays up, not ready, saying why; the node takes
// part again once restarted with a fifoq that can apply the entry.
func (l *Raft) leaveOnFatal() {
	defer l.wg.Done()
	select {
	case <-l.fsm.fatalCh:
	case <-l.quit:
		return
	}
	index, err := l.fsm.failure()
	if l.raft.State() == raft.Leader {
		if terr := l.transferLeadership(leaveTimeout); terr != nil {
			l.logger.Warn("leadership not handed over; leaving the elections anyway", "err", terr)
		}
	}
	l.logger.Error("this node's state machine stopped: it leaves the cluster's elections until it is restarted with a fifoq that can apply the entry",
		"index", index, "err", err)
	l.markStopped()
	if err := l.shutdownRaft().Error(); err != nil {
		l.logger.Warn("stop raft", "err", err)
	}
}

// SetClockOff says whether this node's wall clock is off the cluster's by
// more than the cluster allows (why, or "" when it is not): while it is,
// the node refuses to lead, handing the leadership over if it has it, and
// is not ready. The server measures the clocks (its clock watch); the log
// enforces what follows. A cluster of one has no one to compare with.
func (l *Raft) SetClockOff(why string) {
	if l.cluster == nil {
		return
	}
	if why == "" {
		l.cluster.clockOff.Store(nil)
	} else {
		l.cluster.clockOff.Store(&why)
	}
	select {
	case l.cluster.wake <- raft.Observation{}:
	default:
	}
}

// SetPeersClockOff says which members' clocks this node last measured off
// its own by more than the cluster allows. Such a member refuses to lead
// (SetClockOff, on its side): HandLeadershipTo does not hand it a
// leadership, which it would only hand back, at the cost of two
// elections.
func (l *Raft) SetPeersClockOff(ids []string) {
	if l.cluster == nil {
		return
	}
	off := make(map[string]bool, len(ids))
	for _, id := range ids {
		off[id] = true
	}
	l.cluster.peersOff.Store(&off)
}

// peerClockOff reports whether this node last measured member id's clock
// off its own.
func (l *Raft) peerClockOff(id string) bool {
	if l.cluster == nil {
		return false
	}
	off := l.cluster.peersOff.Load()
	return off != nil && (*off)[id]
}

// ErrPeerUnheard is returned by HandLeadershipTo for a member this
// leader's heartbeats do not reach. A transfer to it could not end, and
// hashicorp/raft's transfer can then hang for good (wedge.go).
var ErrPeerUnheard = errors.New("this leader's heartbeats do not reach it")

// PeerUnheard reports whether this node leads and its heartbeats to
// member id fail.
func (l *Raft) PeerUnheard(id string) bool {
	return l.cluster != nil && l.cluster.isUnheard(raft.ServerID(id))
}

// ErrPeerClockOff is returned by HandLeadershipTo for a member whose clock
// is off this node's: it would not lead.
var ErrPeerClockOff = errors.New("its clock is off this node's, and it would not lead")

// HandLeadershipTo hands this leader's leadership to member id and waits
// for it, up to timeout: how a node that leads more of its cluster's
// groups than its share gives one away (internal/shards). A member whose
// clock this node measured off is refused (ErrPeerClockOff), as is one
// its heartbeats do not reach (ErrPeerUnheard), and one a transfer to
// failed moments before (ErrTransferCoolingDown, wedge.go).
func (l *Raft) HandLeadershipTo(id string, timeout time.Duration) error {
	if l.peerClockOff(id) {
		return fmt.Errorf("node %s: %w", id, ErrPeerClockOff)
	}
	if l.PeerUnheard(id) {
		return fmt.Errorf("node %s: %w", id, ErrPeerUnheard)
	}
	f := l.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id && s.Suffrage == raft.Voter {
			return l.guardedTransfer(s.ID, s.Address, timeout)
		}
	}
	return fmt.Errorf("node %s is no voter of this group", id)
}
