package crashtest

import (
	"strings"
	"testing"
	"time"
)

// doubleHolds returns the "double hold" problems of h's check.
func doubleHolds(h *history) []string {
	var out []string
	for _, p := range h.check() {
		if strings.HasPrefix(p, "double hold:") {
			out = append(out, p)
		}
	}
	return out
}

// TestHistoryCatchesDoubleHold feeds the history check receives that hand
// one group to two consumers at once: the check must report it, or it
// could not catch a server that breaks FIFO's one-holder-per-group rule.
func TestHistoryCatchesDoubleHold(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	vis := 2 * time.Second
	g := "p0-g1"

	t.Run("second receive while the first still holds", func(t *testing.T) {
		h := newHistory()
		h.received(1, at(0), at(10), vis, []heldMessage{{g, "m1"}, {g, "m2"}})
		// Consumer 1 deletes m1 but still holds m2 when consumer 2 is
		// handed m3 of the same group.
		h.released(0, at(20))
		h.received(2, at(30), at(40), vis, []heldMessage{{g, "m3"}})
		if p := doubleHolds(h); len(p) != 1 || !strings.Contains(p[0], "group "+g) {
			t.Fatalf("double holds reported: %q, want one of group %s", p, g)
		}
	})
	t.Run("visibility expired", func(t *testing.T) {
		h := newHistory()
		h.received(1, at(0), at(10), vis, []heldMessage{{g, "m1"}})
		h.received(2, at(2000), at(2010), vis, []heldMessage{{g, "m1"}})
		if p := doubleHolds(h); len(p) != 0 {
			t.Fatalf("a redelivery after the visibility timeout reported: %q", p)
		}
		// One millisecond short of the deadline, it is a double hold.
		h = newHistory()
		h.received(1, at(0), at(10), vis, []heldMessage{{g, "m1"}})
		h.received(2, at(1900), at(1999), vis, []heldMessage{{g, "m1"}})
		if p := doubleHolds(h); len(p) != 1 {
			t.Fatalf("a redelivery before the visibility deadline: reported %q, want one", p)
		}
	})
	t.Run("released before the other answer", func(t *testing.T) {
		h := newHistory()
		ids := h.received(1, at(0), at(10), vis, []heldMessage{{g, "m1"}, {"p0-g2", "m2"}})
		h.released(ids[0], at(20))
		// The delete may be applied as soon as it is sent: another
		// consumer answered before its acknowledgement is no double hold.
		h.received(2, at(15), at(25), vis, []heldMessage{{g, "m3"}})
		h.received(3, at(30), at(40), vis, []heldMessage{{"p0-g3", "m4"}})
		if p := doubleHolds(h); len(p) != 0 {
			t.Fatalf("holds that may not have overlapped reported: %q", p)
		}
	})
	t.Run("three holders", func(t *testing.T) {
		h := newHistory()
		h.received(1, at(0), at(10), vis, []heldMessage{{g, "m1"}})
		h.received(2, at(20), at(30), vis, []heldMessage{{g, "m2"}})
		h.received(3, at(40), at(50), vis, []heldMessage{{g, "m3"}})
		if p := doubleHolds(h); len(p) != 2 {
			t.Fatalf("double holds reported: %q, want two", p)
		}
	})
}
