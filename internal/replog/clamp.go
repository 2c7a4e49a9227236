package replog

import (
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

// Queue time is the leader's wall clock: the leader stamps every command,
// and the engine's time only moves forward. The members compare clocks
// (the server's clock watch) and a node whose clock is off the majority's
// by more than the bound refuses to lead; but that check runs every few
// seconds, and a clock stepped between two checks would move every queue
// into the future for good if its node led meanwhile, or came to lead (in-
// flight FIFO messages visible early, deduplication cut short).
//
// So the leader holds the times of the commands it writes to a limit: its
// wall clock as of the last check that found it within the bound of the
// majority's (ClockAgreed), carried forward by its monotonic clock, plus
// the bound. A clock stepped after its last check moves queue time by at
// most the bound, on the leader and on a follower that comes to lead,
// until the next check takes the leadership away (or, for a step that
// brought the clock back in line, confirms it). Before a node's first
// check (the server checks as soon as it starts) nothing is held.

// timeBase is a wall clock reading found within the bound, and when it
// was taken on the monotonic clock.
type timeBase struct {
	wall int64
	mono time.Time
}

// defaultMaxClockOffset is ClusterConfig.MaxClockOffset's default.
const defaultMaxClockOffset = 500 * time.Millisecond

// ClockAgreed tells the log that this node's wall clock, which read wall,
// was just found within the bound of the majority's: command times are
// held to it, as carried forward from now by the monotonic clock.
func (l *Raft) ClockAgreed(wall time.Time) {
	if l.cluster == nil {
		return
	}
	l.cluster.timeBase.Store(&timeBase{wall: wall.UnixNano(), mono: time.Now()})
	l.cluster.clampWarned.Store(false)
}

// clampTimes holds the times of the commands this leader is about to write
// to the limit above, and returns how many it held back. A cluster of one
// has no clocks to disagree with.
func (l *Raft) clampTimes(cmds []*engine.Command) int {
	c := l.cluster
	if c == nil {
		return 0
	}
	b := c.timeBase.Load()
	if b == nil {
		return 0
	}
	bound := c.cfg.MaxClockOffset
	if bound <= 0 {
		bound = defaultMaxClockOffset
	}
	limit := b.wall + int64(time.Since(b.mono)+bound)
	held, ahead := 0, int64(0)
	for _, cmd := range cmds {
		if cmd.Time > limit {
			ahead = max(ahead, cmd.Time-limit)
			cmd.Time = limit
			held++
		}
	}
	if held > 0 && !c.clampWarned.Swap(true) {
		l.logger.Warn("this leader's clock has moved ahead since it was last checked against the other members': command times are held back to the last check plus --max-clock-offset until the next check",
			"ahead_of_limit", time.Duration(ahead).String(), "bound", bound)
	}
	return held
}
