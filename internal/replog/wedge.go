package replog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// A leadership transfer that never ends. hashicorp/raft (v1.8.0) sets a
// flag while it hands a group's leadership over, and refuses every write
// and barrier of the group while the flag is set. The goroutine that
// clears it can block for good on a send to the target's replication,
// when that replication has stopped or holds an earlier transfer's
// request (hashicorp/raft issue #696): the leader then refuses every
// write, for ever, and stays the leader, or is elected again later with
// the flag still set. fifoq hands leaderships over often (to spread them
// over the nodes, and on every graceful stop), and TestMovesOverFaultyNetwork
// met it with a member cut off while its group's leadership was handed to
// it.
//
// Nothing short of a new Raft instance clears the flag. So a group whose
// leader has refused writes with that error, and accepted none, for
// wedgedTransferTimeout, and refuses them still (see the probes below),
// stops its node as a storage fault does: the
// process exits non-zero and its supervisor's restart gives every group a
// new Raft, while the other members elect leaders in its place. A
// transfer that ends, even in failure, takes at most an election timeout
// and one RPC's timeouts (dial and answer, 10 s each), well under it.

// wedgedTransferTimeout is how long a leader may refuse writes for a
// leadership transfer in progress before its node stops.
const wedgedTransferTimeout = 30 * time.Second

// A refusal alone says little: a write refused once while a transfer was
// in progress, on a group that then writes nothing for the timeout (an
// idle shard), came from a transfer that ended long since, and stopping
// the node for it would be a false alarm (the in-memory soaks met members
// stopped so). So while refusals are on record, the leader probes: every
// probeRefusalsEvery it applies a barrier, which Raft refuses at once
// while the flag is set, and whose success clears the record. A node
// stops only when refusals began over the timeout ago and the latest is
// recent.

// probeRefusalsEvery is how long after the latest refusal the leader
// probes whether writes are still refused.
const probeRefusalsEvery = 2 * time.Second

// refusalFresh is how recent the latest refusal must be for a group to
// count as wedged.
const refusalFresh = 3 * probeRefusalsEvery

// transferWatch follows a group's refusals for a transfer in progress.
type transferWatch struct {
	// since is when the refusals began (Unix nanoseconds), 0 while writes
	// are accepted.
	since atomic.Int64
	// last is when the latest refusal came.
	last atomic.Int64
	// probing is set while a probe runs.
	probing atomic.Bool
}

// note records the outcome of a write or a barrier.
func (w *transferWatch) note(err error, now time.Time) {
	switch {
	case err == nil:
		w.since.Store(0)
		w.last.Store(0)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		w.since.CompareAndSwap(0, now.UnixNano())
		w.last.Store(now.UnixNano())
	}
}

// wedged returns how long writes have been refused for a transfer in
// progress, and whether that is for longer than timeout with the latest
// refusal recent.
func (w *transferWatch) wedged(now time.Time, timeout time.Duration) (time.Duration, bool) {
	s := w.since.Load()
	if s == 0 {
		return 0, false
	}
	d := now.Sub(time.Unix(0, s))
	fresh := now.Sub(time.Unix(0, w.last.Load())) < refusalFresh
	return d, d > timeout && fresh
}

// probeDue reports whether refusals are on record and none came for
// probeRefusalsEvery.
func (w *transferWatch) probeDue(now time.Time) bool {
	return w.since.Load() != 0 && now.Sub(time.Unix(0, w.last.Load())) >= probeRefusalsEvery
}

// wedgedError is what stops a node whose group's leadership transfer
// never ended.
type wedgedError struct{ refusedFor time.Duration }

func (e *wedgedError) Error() string {
	return fmt.Sprintf("this node leads a group whose Raft has refused every write for %v for a leadership transfer that never ended (hashicorp/raft issue #696); only a restart clears it", e.refusedFor.Round(time.Second))
}

// checkWedged stops the node if the group it leads is wedged so, and
// probes whether writes are still refused when none was tried lately.
func (l *Raft) checkWedged(now time.Time) {
	if l.raft.State() != raft.Leader {
		return
	}
	w := &l.transfers
	if w.probeDue(now) && w.probing.CompareAndSwap(false, true) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer w.probing.Store(false)
			w.note(l.probeWrites(), time.Now())
		}()
	}
	if d, ok := w.wedged(now, wedgedTransferTimeout); ok {
		l.faults.halt(&wedgedError{refusedFor: d})
	}
}

// probeWrites applies a barrier, which Raft refuses at once while a
// leadership transfer is in progress; a test may stand in for it
// (wedgeProbe).
func (l *Raft) probeWrites() error {
	if p := l.wedgeProbe.Load(); p != nil {
		return (*p)()
	}
	return l.awaitFuture(l.raft.Barrier(probeRefusalsEvery))
}

// How a transfer wedges, and what keeps fifoq from starting one that
// would. hashicorp/raft's transfer pushes requests to catch the target up
// into a channel of one slot, which the target's replication goroutine
// takes from; the push does not give up when the transfer does. A
// transfer that times out (after an election timeout) while its last
// request still waits in the slot, because the replication goroutine is
// busy (a snapshot on its way, an RPC to a slow or cut-off member), leaves
// the slot full. The next transfer to that member then blocks on its
// push, with the flag set; if the leader steps down before the goroutine
// takes the old request, the goroutine exits and the push blocks for
// ever (the path hashicorp/raft issue #696 describes; the in-memory soak
// found leaders wedged so, with that goroutine blocked at the push). fifoq
// asks for transfers again and again to the same member (the balancer
// every few seconds, a leader whose clock is off every second), which
// makes that path likely. So a leader starts no transfer to a member for
// transferCooldown after one to it failed in the same term (a new term
// has new replication goroutines and slots); a failed transfer to a
// member Raft picked bars every member, and a transfer to a member Raft
// picks waits out any failure. By then the goroutine has had many rounds
// to take the request, unless the member is unreachable, and such a
// member is refused anyway (ErrPeerUnheard). A node that stops or leaves
// hands its leadership over once, unguarded (transferLeadership).

// transferCooldown is how long a leader starts no transfer to a member
// after one to it failed in the same term.
const transferCooldown = 30 * time.Second

// ErrTransferCoolingDown is a leadership transfer not started because one
// to the same member failed moments before, in the same term.
var ErrTransferCoolingDown = errors.New("a leadership transfer to it failed moments ago; not trying again yet")

// transferGuard remembers the failed leadership transfers of the current
// term.
type transferGuard struct {
	mu   sync.Mutex
	term uint64
	// failedAt holds when a transfer failed, by its target ("": a member
	// Raft picked).
	failedAt map[string]time.Time
}

// check says whether a transfer to target ("": one Raft picks) may start
// in term.
func (g *transferGuard) check(term uint64, target string, now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if term != g.term {
		g.term, g.failedAt = term, nil
		return nil
	}
	for t, at := range g.failedAt {
		if now.Sub(at) < transferCooldown && (target == "" || t == "" || t == target) {
			return ErrTransferCoolingDown
		}
	}
	return nil
}

// note records the outcome of a transfer to target started in term.
func (g *transferGuard) note(term uint64, target string, err error, now time.Time) {
	if err == nil || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return // done, or none was started
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if term != g.term {
		g.term, g.failedAt = term, nil
	}
	if g.failedAt == nil {
		g.failedAt = map[string]time.Time{}
	}
	g.failedAt[target] = now
}

// guardedTransfer starts a leadership transfer to target ("": a member
// Raft picks) unless the guard bars it, and waits for it up to timeout.
func (l *Raft) guardedTransfer(target raft.ServerID, addr raft.ServerAddress, timeout time.Duration) error {
	term := l.raft.CurrentTerm()
	if err := l.transferGuard.check(term, string(target), time.Now()); err != nil {
		return err
	}
	var f raft.Future
	if target == "" {
		f = l.raft.LeadershipTransfer()
	} else {
		f = l.raft.LeadershipTransferToServer(target, addr)
	}
	err := l.awaitTransfer(f, timeout)
	l.transferGuard.note(term, string(target), err, time.Now())
	return err
}
