package replog

import (
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

// TestLeaderClockHeldToItsLastCheck stamps commands as a leader whose
// clock stepped 10 s ahead after its last check would: queue time (the
// engine's) must move by at most the bound, not by the step, and follow
// the clock again once a check confirms it.
func TestLeaderClockHeldToItsLastCheck(t *testing.T) {
	nodes := startClusterWith(t, 3, nil, func(cfg *RaftConfig) { cfg.Cluster.MaxClockOffset = 500 * time.Millisecond })
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)

	checked := time.Unix(0, c.t)
	began := time.Now()
	leader.log.ClockAgreed(checked)
	c.t += int64(10 * time.Second) // the clock steps ahead
	send(t, leader.log, c, 0)
	var now int64
	leader.log.Read(func(e *engine.Engine) { now = e.Now() })
	if limit := checked.Add(time.Since(began) + 500*time.Millisecond).UnixNano(); now > limit {
		t.Fatalf("queue time moved %v past the last check, more than the bound (500ms) and the %v since",
			time.Duration(now-checked.UnixNano()), time.Since(began))
	}
	if now < checked.UnixNano() {
		t.Fatalf("queue time %v before the last check", time.Duration(now-checked.UnixNano()))
	}

	// A check finds the clock right after all: it is followed again.
	leader.log.ClockAgreed(time.Unix(0, c.t))
	send(t, leader.log, c, 1)
	leader.log.Read(func(e *engine.Engine) { now = e.Now() })
	if now != c.t {
		t.Fatalf("after the check, queue time is %v off the clock, want 0", time.Duration(now-c.t))
	}
	// The others applied the same times.
	for _, nd := range nodes {
		waitApplied(t, nd, leader.log.raft.LastIndex())
		var got int64
		nd.log.Read(func(e *engine.Engine) { got = e.Now() })
		if got != now {
			t.Fatalf("%s's queue time is %v off the leader's", nd.id, time.Duration(got-now))
		}
	}
}
