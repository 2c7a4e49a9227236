package clock

import (
	"testing"
	"time"
)

var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeTimersFireWhenTheClockReachesThem(t *testing.T) {
	c := NewFake(start)
	early := c.TimerAt(start.Add(time.Second))
	late := c.TimerAt(start.Add(time.Minute))
	var order []string
	c.FuncAt(start.Add(2*time.Second), func() { order = append(order, "func 2s") })
	c.FuncAt(start.Add(time.Second), func() { order = append(order, "func 1s") })

	c.Advance(999 * time.Millisecond)
	select {
	case <-early.C():
		t.Fatal("a timer fired before the clock reached it")
	default:
	}
	c.Advance(2 * time.Second)
	select {
	case got := <-early.C():
		if want := start.Add(2999 * time.Millisecond); !got.Equal(want) {
			t.Errorf("timer delivered %v, want the clock's time %v", got, want)
		}
	default:
		t.Fatal("a timer the clock passed did not fire")
	}
	if len(order) != 2 || order[0] != "func 1s" || order[1] != "func 2s" {
		t.Errorf("functions ran as %q, want the earlier first, before Advance returned", order)
	}
	if !late.Stop() {
		t.Error("Stop of a pending timer reported it had fired")
	}
	c.Advance(time.Hour)
	select {
	case <-late.C():
		t.Error("a stopped timer fired")
	default:
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("%d timers pending after all fired or stopped", n)
	}
	if early.Stop() {
		t.Error("Stop of a fired timer reported it stopped it")
	}
}

func TestFakeTimerInThePastFiresAtOnce(t *testing.T) {
	c := NewFake(start)
	tm := c.TimerAt(start)
	select {
	case <-tm.C():
	default:
		t.Fatal("a timer for the clock's present time did not fire at once")
	}
	done := make(chan struct{})
	c.FuncAt(start.Add(-time.Second), func() { close(done) })
	<-done // runs in a goroutine of its own; a test timeout here is the failure
}

func TestFakeNeverGoesBackwards(t *testing.T) {
	c := NewFake(start)
	c.Set(start.Add(-time.Hour))
	c.Advance(-time.Hour)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("clock moved back to %v", got)
	}
	c.Set(start.Add(time.Hour))
	if got := c.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("Set forward: clock reads %v", got)
	}
}

func TestRealAndWithNowTimers(t *testing.T) {
	for name, c := range map[string]Clock{"real": Real{}, "with now": WithNow(func() time.Time { return time.Now().Add(time.Hour) })} {
		tm := c.TimerAt(c.Now())
		<-tm.C() // a timer for the clock's present fires; a hang is the failure
		done := make(chan struct{})
		c.FuncAt(c.Now(), func() { close(done) })
		<-done
		if c.FuncAt(c.Now().Add(time.Hour), func() {}).Stop() != true {
			t.Errorf("%s: Stop of a pending timer reported it had fired", name)
		}
	}
}
