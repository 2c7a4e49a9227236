// Package clock is the time the server reads and waits on: the real clock
// in production, and a fake one that a test moves forward by hand.
//
// The engine never reads a clock: the server stamps the time into every
// command. What the server itself waits for — the end of a long poll, a
// delayed or in-flight message becoming visible — it waits for on a Clock
// too, so that a test that advances a Fake clock sees those waits end at
// once, as if the time had passed.
package clock

import "time"

// Clock tells the time and runs timers against it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// TimerAt returns a timer that delivers on its channel once this
	// clock reaches t. The time is absolute, not a duration, so that a
	// caller that read Now a moment ago waits for what it computed even if
	// the clock moved in between.
	TimerAt(t time.Time) Timer
	// FuncAt calls f in a goroutine of its own once this clock reaches t,
	// unless the returned timer is stopped first.
	FuncAt(t time.Time, f func()) Timer
}

// Timer is a pending timer of a Clock.
type Timer interface {
	// C is the channel the timer delivers on; nil for an AfterFunc timer.
	C() <-chan time.Time
	// Stop keeps the timer from firing; it reports whether it did.
	Stop() bool
}

// Real is the system clock, with the timers of package time.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// TimerAt returns a time.Timer for t.
func (Real) TimerAt(t time.Time) Timer { return realTimer{time.NewTimer(time.Until(t))} }

// FuncAt is time.AfterFunc for t.
func (Real) FuncAt(t time.Time, f func()) Timer { return realTimer{time.AfterFunc(time.Until(t), f)} }

// realTimer holds one pointer, so storing it in a Timer allocates nothing.
type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// WithNow is the real clock's timers with another source of the current
// time, for callers that only stamp time differently (a clock running at
// an offset from the real one). A timer still waits its duration in real
// time.
type WithNow func() time.Time

// Now returns the time of the function.
func (f WithNow) Now() time.Time { return f() }

// TimerAt returns a time.Timer for t on this clock.
func (n WithNow) TimerAt(t time.Time) Timer { return realTimer{time.NewTimer(t.Sub(n()))} }

// FuncAt is time.AfterFunc for t on this clock.
func (n WithNow) FuncAt(t time.Time, f func()) Timer {
	return realTimer{time.AfterFunc(t.Sub(n()), f)}
}
