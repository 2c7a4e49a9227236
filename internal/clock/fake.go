package clock

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Fake is a clock that moves only when Advance or Set moves it. Its timers
// fire when the clock reaches their time, in the goroutine that moved it:
// a channel timer's channel receives at once, and an AfterFunc's function
// is called before Advance returns. It is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer // pending, in no particular order
	seq    uint64
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start}
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (a negative d does nothing) and
// fires the timers it passes, earliest first.
func (c *Fake) Advance(d time.Duration) {
	if d < 0 {
		return
	}
	c.mu.Lock()
	c.set(c.now.Add(d))
}

// Set moves the clock to t, if t is later than its time, and fires the
// timers it passes, earliest first. The clock never goes backwards, as the
// engine requires of the times in its commands.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return
	}
	c.set(t)
}

// set moves the clock to t with c.mu held, and fires the timers due after
// releasing it: a timer's function may call the clock.
func (c *Fake) set(t time.Time) {
	c.now = t
	var due []*fakeTimer
	c.timers = slices.DeleteFunc(c.timers, func(ft *fakeTimer) bool {
		if ft.at.After(t) {
			return false
		}
		ft.fired = true
		due = append(due, ft)
		return true
	})
	c.mu.Unlock()
	slices.SortFunc(due, func(a, b *fakeTimer) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, ft := range due {
		ft.fire(t)
	}
}

// TimerAt returns a timer that fires when the clock reaches t; at once if
// it has.
func (c *Fake) TimerAt(t time.Time) Timer {
	return c.add(t, nil)
}

// FuncAt calls f when the clock reaches t: in a goroutine of its own if it
// has (the caller may hold a lock f takes), else in the goroutine that
// advances the clock.
func (c *Fake) FuncAt(t time.Time, f func()) Timer {
	return c.add(t, f)
}

// Pending returns the number of timers not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func (c *Fake) add(at time.Time, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	ft := &fakeTimer{clock: c, at: at, f: f, seq: c.seq}
	if f == nil {
		ft.ch = make(chan time.Time, 1)
	}
	if !at.After(c.now) {
		ft.fired = true
		if f != nil {
			go f()
		} else {
			ft.ch <- c.now
		}
		return ft
	}
	c.timers = append(c.timers, ft)
	return ft
}

// fakeTimer is a timer of a Fake clock.
type fakeTimer struct {
	clock *Fake
	at    time.Time
	seq   uint64 // creation order, to fire timers of one time in order
	ch    chan time.Time
	f     func()
	fired bool // fired or stopped; guarded by clock.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop removes the timer if it has not fired.
func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.fired {
		return false
	}
	t.fired = true
	c.timers = slices.DeleteFunc(c.timers, func(ft *fakeTimer) bool { return ft == t })
	return true
}

func (t *fakeTimer) fire(now time.Time) {
	if t.f != nil {
		t.f()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}
