package replog

import (
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent returns the collector's setting.
func gcPercent() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

func TestWithGCHeld(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	var during int
	if err := withGCHeld(1<<30, func() error { during = gcPercent(); return nil }); err != nil {
		t.Fatal(err)
	}
	if during != -1 || gcPercent() != 150 {
		t.Errorf("collector at %d while held, %d after; want -1 and 150", during, gcPercent())
	}

	// Past the budget, the collector is let go while fn still runs.
	var keep [][]byte
	released := false
	withGCHeld(8<<20, func() error {
		for range 200 {
			keep = append(keep, make([]byte, 1<<20))
			time.Sleep(time.Millisecond)
			if gcPercent() == 150 {
				released = true
				break
			}
		}
		return nil
	})
	if !released {
		t.Errorf("the collector stayed off while the heap grew by %d MiB, budget 8 MiB", len(keep))
	}

	// A collector the operator turned off stays off.
	debug.SetGCPercent(-1)
	withGCHeld(1<<30, func() error { return nil })
	if v := gcPercent(); v != -1 {
		t.Errorf("collector turned off by the operator set to %d", v)
	}
}
