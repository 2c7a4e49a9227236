package fifoqtest

import (
	"time"

	"github.com/fifoq/fifoq/internal/clock"
)

// Clock is a fake clock for a Server: it stands still until the test
// advances it. Pass it to New with WithClock.
//
// The server stamps the clock's time into every message and every change,
// and measures on it every period SQS has: visibility timeouts, message
// delays, the retention period, the 5-minute deduplication interval, the
// recreate and purge delays. It waits on it too: a long poll ends when the
// clock passes its wait time, and a long poll waiting for a delayed or
// in-flight message is answered when Advance makes the message visible.
//
// A long poll on a queue that stays empty therefore waits until the test
// advances the clock past its WaitTimeSeconds (or the server stops): a test
// with a fake clock either receives with WaitTimeSeconds 0, or advances
// the clock from another goroutine while it waits.
//
// A message move task (StartMessageMoveTask) moves messages at its rate of
// the clock's time, so with a fake clock it moves them as the test advances
// the clock; the server applies the moves on its own, within about a tenth
// of a second of real time after Advance, so a test waits for the task's
// status (ListMessageMoveTasks) rather than expecting them at once.
//
// SigV4 signatures are still checked against the real time, since that is
// what the SDK signs with.
type Clock struct {
	fake *clock.Fake
}

// NewClock returns a fake clock that reads start; a zero start is the
// current time.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Now()
	}
	return &Clock{fake: clock.NewFake(start)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.fake.Now() }

// Advance moves the clock forward by d, at once, and wakes the long polls
// whose wait ended or whose message became visible by the new time. A
// negative d does nothing: the server's time never goes backwards.
func (c *Clock) Advance(d time.Duration) { c.fake.Advance(d) }
