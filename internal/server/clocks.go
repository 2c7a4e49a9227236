package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Queue time in a cluster is the leader's wall clock: it stamps every
// command, and the engine only moves forward. A leader whose clock ran Δ
// ahead would move every queue Δ into the future for good (in-flight FIFO
// messages visible early, the deduplication interval cut short); one Δ
// behind would hold queue time still for Δ. So the members compare their
// clocks, and one whose clock disagrees with the majority's by more than
// Config.MaxClockOffset refuses to lead (replog.Raft.SetClockOff), says so
// in its log and its /readyz, and reports every peer's offset in
// fifoq_cluster_clock_offset_seconds. Keep the nodes' clocks synchronised
// (NTP, chrony): the bound only detects what they fail to keep.

// DefaultMaxClockOffset is Config.MaxClockOffset's default.
const DefaultMaxClockOffset = 500 * time.Millisecond

// clockCheckEvery is how often a member measures its peers' clocks.
const clockCheckEvery = 2 * time.Second

// clockWatch holds the last measurements of the peers' clocks.
type clockWatch struct {
	mu      sync.Mutex
	offsets map[string]time.Duration // by peer id: its clock minus this node's, beyond the uncertainty
	off     bool                     // this node's clock is off the majority's
}

// clockOffsets returns a copy of the last offsets measured, for /metrics.
func (c *clockWatch) clockOffsets() map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.offsets) == 0 {
		return nil
	}
	return maps.Clone(c.offsets)
}

// watchClocks measures the peers' clocks every clockCheckEvery until quit.
func (s *Server) watchClocks(quit <-chan struct{}) {
	t := time.NewTicker(clockCheckEvery)
	defer t.Stop()
	for {
		s.checkClocks()
		select {
		case <-t.C:
		case <-quit:
			return
		}
	}
}

// checkClocks measures every peer's clock once, and tells the log whether
// this node's clock is off the majority's. On the leader, the same answers
// show which non-voting members have caught up, and those are promoted.
func (s *Server) checkClocks() {
	members, err := s.cluster.Members()
	if err != nil {
		return
	}
	self := s.cluster.NodeID()
	offsets := map[string]time.Duration{}
	for _, m := range members {
		if m.ID == self {
			continue
		}
		var commit uint64 // for a non-voter: what it must have applied to vote
		if !m.Voter {
			commit = s.cluster.Status().CommitIndex
		}
		off, info, ok := s.measureClock(m.Addr)
		if !ok {
			continue
		}
		offsets[m.ID] = off
		if !m.Voter && info.AppliedIndex >= commit && s.cluster.Leading() {
			s.promote(m.ID)
		}
	}
	// A node is off when a majority of the members' clocks disagree with
	// its own, and right again when its own and those that agree with it
	// make a majority. Between the two (members down, say) it stays as it
	// was: with two clocks that disagree and the third unseen, neither can
	// tell which is wrong.
	limit := s.cfg.MaxClockOffset
	agree, disagree := 0, 0
	var wrong []time.Duration
	var peersOff []string
	for id, o := range offsets {
		if o > limit || o < -limit {
			disagree++
			wrong = append(wrong, o)
			peersOff = append(peersOff, id)
		} else {
			agree++
		}
	}
	// A member whose clock is off this node's is handed no leadership
	// (balancing the shards' leaders would otherwise hand it one it
	// refuses, again and again). When this node's own clock is the odd
	// one, every peer seems off, and this node leads nothing to hand.
	s.cluster.SetPeersClockOff(peersOff)
	majority := len(members)/2 + 1
	s.clocks.mu.Lock()
	was := s.clocks.off
	s.clocks.mu.Unlock()
	off := was
	switch {
	case disagree >= majority:
		off = true
	case agree+1 >= majority:
		off = false
	}
	slices.Sort(wrong)
	var median time.Duration
	if len(wrong) > 0 {
		median = wrong[len(wrong)/2]
	}
	s.clocks.mu.Lock()
	s.clocks.offsets = offsets
	s.clocks.off = off
	s.clocks.mu.Unlock()
	if !off && agree+1 >= majority {
		// Confirmed within the bound: the leader may stamp commands with
		// this clock (replog's clamp).
		s.cluster.ClockAgreed(s.now())
	}
	switch {
	case off && !was:
		why := fmt.Sprintf("%d of the %d members' clocks are off this node's, by %v (a median), more than --max-clock-offset %v", disagree, len(members), median.Round(time.Millisecond), limit)
		s.logger.Error("this node's clock is off the cluster's: it refuses to lead until its clock is synchronised (NTP)", "why", why)
		s.cluster.SetClockOff(why)
	case !off && was:
		s.logger.Info("this node's clock agrees with the cluster's again")
		s.cluster.SetClockOff("")
	}
}

// measureClock asks the node at raftAddr for its status and time, and
// returns how far its clock is ahead of this node's, beyond half the round
// trip (the uncertainty of the measurement), and false if it did not
// answer.
func (s *Server) measureClock(raftAddr string) (time.Duration, *NodeInfo, bool) {
	t0 := s.now()
	info, err := s.askNode(context.Background(), raftAddr)
	t1 := s.now()
	if err != nil || info.Time.IsZero() {
		return 0, nil, false
	}
	half := t1.Sub(t0) / 2
	off := info.Time.Sub(t0.Add(half))
	switch {
	case off > half:
		return off - half, info, true
	case off < -half:
		return off + half, info, true
	}
	return 0, info, true
}

// promote makes a member that joined as a non-voter a voter, now that it
// has applied everything committed before it was asked: a new member that
// votes before it has caught up can stall every write (a cluster of 3
// growing to 4 with one old member down needs the new one for a majority,
// while it is still receiving a snapshot).
func (s *Server) promote(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.cluster.Promote(ctx, id); err != nil {
		s.logger.Warn("could not make a caught-up member a voter", "node_id", id, "err", err)
		return
	}
	s.logger.Info("a new member caught up and now votes", "node_id", id)
}
