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
// one group to two consumers at once: the check must report them, or it
// could not catch a server that breaks FIFO's one-holder-per-group rule.
// It must also leave alone what SQS allows, or the crash test would fail
// against a correct server.
func TestHistoryCatchesDoubleHold(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	vis := 2 * time.Second
	const g = "p0-g1"
	msg := func(seq int) heldMessage {
		return heldMessage{group: g, messageID: "m" + string(rune('a'+seq)), seq: seq}
	}

	for _, c := range []struct {
		name string
		run  func(h *history)
		want int // double holds reported
	}{
		{"a later message while an earlier is held", func(h *history) {
			ids := h.received(1, at(0), at(10), vis, []heldMessage{msg(1), msg(5)})
			// Consumer 1 deletes its first message but still holds the
			// second when consumer 2 is handed the next one.
			h.released(ids[0], at(20))
			h.received(2, at(30), at(40), vis, []heldMessage{msg(9)})
		}, 1},
		{"the same message twice before its visibility deadline", func(h *history) {
			h.received(1, at(0), at(10), vis, []heldMessage{msg(1)})
			h.received(2, at(1900), at(1999), vis, []heldMessage{msg(1)})
		}, 1},
		{"the same message after its visibility deadline", func(h *history) {
			h.received(1, at(0), at(10), vis, []heldMessage{msg(1)})
			h.received(2, at(2000), at(2010), vis, []heldMessage{msg(1)})
		}, 0},
		{"answered after the release was sent, before it was acknowledged", func(h *history) {
			ids := h.received(1, at(0), at(10), vis, []heldMessage{msg(1), {group: "p0-g2", messageID: "x", seq: 2}})
			// The delete may be applied as soon as it is sent.
			h.released(ids[0], at(20))
			h.received(2, at(15), at(25), vis, []heldMessage{msg(5)})
			h.received(3, at(30), at(40), vis, []heldMessage{{group: "p0-g3", messageID: "y", seq: 3}})
		}, 0},
		{"the head given back while a later message is held (SQS allows it)", func(h *history) {
			ids := h.received(1, at(0), at(10), vis, []heldMessage{msg(1), msg(5)})
			h.released(ids[0], at(20)) // ChangeMessageVisibility 0
			h.received(2, at(30), at(40), vis, []heldMessage{msg(1)})
		}, 0},
		{"the head given back, and the held later message handed out too", func(h *history) {
			ids := h.received(1, at(0), at(10), vis, []heldMessage{msg(1), msg(5)})
			h.released(ids[0], at(20))
			h.received(2, at(30), at(40), vis, []heldMessage{msg(1), msg(5)})
		}, 1},
		{"three holders", func(h *history) {
			h.received(1, at(0), at(10), vis, []heldMessage{msg(1)})
			h.received(2, at(20), at(30), vis, []heldMessage{msg(5)})
			h.received(3, at(40), at(50), vis, []heldMessage{msg(9)})
		}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHistory()
			c.run(h)
			if p := doubleHolds(h); len(p) != c.want {
				t.Fatalf("double holds reported: %d, want %d:\n  %s", len(p), c.want, strings.Join(p, "\n  "))
			}
		})
	}
}
