package historycheck

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A made-up history, written in milliseconds from t0.
type hb struct {
	t0    time.Time
	ops   []Op
	slack time.Duration
}

func newHB() *hb { return &hb{t0: time.Unix(1_700_000_000, 0), slack: 10 * time.Millisecond} }

func (b *hb) at(ms int) time.Time { return b.t0.Add(time.Duration(ms) * time.Millisecond) }

// msg is message seq of group g, with dedup id g-seq and MessageId id-g-seq.
func msg(g string, seq int) Msg {
	return Msg{Group: g, Dedup: g + "-" + itoa(seq), Seq: seq, ID: "id-" + g + "-" + itoa(seq)}
}

func itoa(i int) string { return strconv.Itoa(i) }

func held(m Msg, handle string) Msg { m.Handle = handle; return m }

func (b *hb) op(kind Kind, client, from, to int, out Outcome, msgs ...Msg) {
	op := Op{Kind: kind, Client: client, Invoke: b.at(from), Outcome: out, Msgs: msgs, Visibility: 2 * time.Second}
	if out != Unknown {
		op.Return = b.at(to)
	}
	b.ops = append(b.ops, op)
}

func (b *hb) send(client, from, to int, out Outcome, msgs ...Msg) {
	b.op(Send, client, from, to, out, msgs...)
}
func (b *hb) recv(client, from, to int, msgs ...Msg)       { b.op(Receive, client, from, to, OK, msgs...) }
func (b *hb) del(client, from, to int, out Outcome, m Msg) { b.op(Delete, client, from, to, out, m) }
func (b *hb) rel(client, from, to int, out Outcome, m Msg) { b.op(Release, client, from, to, out, m) }

func (b *hb) check(drainedAt int) Report {
	cfg := CheckConfig{DedupInterval: 5 * time.Minute, Slack: b.slack, Timeout: 10 * time.Second}
	if drainedAt > 0 {
		cfg.DrainedAt = b.at(drainedAt)
	}
	return Check(b.ops, cfg)
}

// kinds returns the problems' kinds (the text before the first colon).
func kinds(r Report) map[string]bool {
	out := map[string]bool{}
	for _, p := range r.Problems {
		out[strings.SplitN(p, ":", 2)[0]] = true
	}
	return out
}

// TestCheckAcceptsGoodHistories: histories a correct server can produce,
// including the ambiguous outcomes of a failover and SQS's visibility
// rules, pass the check; otherwise the failover test would fail against a
// correct cluster.
func TestCheckAcceptsGoodHistories(t *testing.T) {
	a1, a2, a3 := msg("a", 1), msg("a", 2), msg("a", 3)
	for _, c := range []struct {
		name  string
		build func(b *hb)
	}{
		{"send receive delete", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.send(0, 10, 20, OK, a2)
			b.recv(1, 30, 40, held(a1, "h1"), held(a2, "h2"))
			b.del(1, 50, 60, OK, held(a1, "h1"))
			b.del(1, 60, 70, OK, held(a2, "h2"))
		}},
		{"a send retried after a failover is one message", func(b *hb) {
			// The first attempt failed (unknown), the retry with the same
			// dedup id was acknowledged with the first one's MessageId.
			b.send(0, 0, 900, OK, a1)
			b.recv(1, 1000, 1010, held(a1, "h1"))
			b.del(1, 1020, 1030, OK, held(a1, "h1"))
		}},
		{"an unanswered send that took effect", func(b *hb) {
			b.send(0, 0, 0, Unknown, a1)
			b.recv(1, 100, 110, held(a1, "h1"))
			b.del(1, 120, 130, OK, held(a1, "h1"))
		}},
		{"an unanswered send that did not", func(b *hb) {
			b.send(0, 0, 0, Unknown, a1)
		}},
		{"redelivery after the visibility timeout", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.recv(2, 2100, 2110, held(a1, "h2"))
			b.del(1, 2200, 2210, Refused, held(a1, "h1")) // expired handle
			b.del(2, 2200, 2210, OK, held(a1, "h2"))
		}},
		{"an unanswered delete that did not take effect", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.del(1, 40, 0, Unknown, held(a1, "h1"))
			b.recv(2, 2100, 2110, held(a1, "h2"))
			b.del(2, 2200, 2210, OK, held(a1, "h2"))
		}},
		{"a release retried across a failover, refused because it had worked", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			// The first attempt made a1 visible but its answer was lost;
			// c2 took a1; the retry found h1 expired.
			b.op(Release, 1, 40, 900, Refused, held(a1, "h1"))
			b.ops[len(b.ops)-1].Attempts = 2
			b.recv(2, 100, 110, held(a1, "h2"))
			b.del(2, 120, 130, OK, held(a1, "h2"))
		}},
		{"the head given back while later messages are held", func(b *hb) {
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 20, 30, held(a1, "h1"), held(a2, "h2"))
			b.rel(1, 40, 50, OK, held(a1, "h1"))
			b.recv(2, 60, 70, held(a1, "h3"))
			b.del(2, 80, 90, OK, held(a1, "h3"))
			b.del(1, 80, 90, OK, held(a2, "h2"))
		}},
		{"concurrent receive and delete", func(b *hb) {
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.del(1, 40, 100, OK, held(a1, "h1"))
			b.recv(2, 50, 60, held(a2, "h2")) // the delete was applied before this receive
			b.del(2, 70, 80, OK, held(a2, "h2"))
		}},
		{"several groups interleaved", func(b *hb) {
			b1 := msg("b", 1)
			b.send(0, 0, 10, OK, a1, a2)
			b.send(1, 5, 15, OK, b1)
			b.recv(2, 20, 30, held(a1, "h1"), held(a2, "h2"), held(b1, "h3"))
			b.del(2, 40, 50, OK, held(b1, "h3"))
			b.del(2, 40, 50, OK, held(a1, "h1"))
			b.del(2, 40, 50, OK, held(a2, "h2"))
			b.send(0, 60, 70, OK, a3)
			b.recv(3, 80, 90, held(a3, "h4"))
			b.del(3, 100, 110, OK, held(a3, "h4"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newHB()
			c.build(b)
			r := b.check(10_000)
			if len(r.Problems) > 0 || r.Unchecked > 0 {
				t.Fatalf("a good history was refused: %v (unchecked groups: %d)", r.Problems, r.Unchecked)
			}
		})
	}
}

// TestCheckCatchesBadHistories: each violation the failover test looks
// for, made up, is reported — by the direct check named and by the
// linearizability check.
func TestCheckCatchesBadHistories(t *testing.T) {
	for _, c := range badHistories() {
		t.Run(c.name, func(t *testing.T) {
			b := newHB()
			c.build(b)
			r := b.check(10_000)
			k := kinds(r)
			if c.want != "" && !k[c.want] {
				t.Errorf("the check did not report %q: %v", c.want, r.Problems)
			}
			if !k["not linearizable"] {
				t.Errorf("the linearizability check accepted the history: %v", r.Problems)
			}
		})
	}
}

// TestCheckWithoutLinearizability: with NoLinearizability, the direct
// checks still report a bad history, and porcupine checks no group.
func TestCheckWithoutLinearizability(t *testing.T) {
	for _, c := range badHistories() {
		if c.want == "" {
			continue
		}
		b := newHB()
		c.build(b)
		r := Check(b.ops, CheckConfig{DedupInterval: 5 * time.Minute, Slack: b.slack, DrainedAt: b.at(10_000), NoLinearizability: true})
		if k := kinds(r); !k[c.want] || k["not linearizable"] || r.Groups != 0 {
			t.Errorf("%s: problems %v, %d groups checked; want %q reported and no group checked", c.name, r.Problems, r.Groups, c.want)
		}
	}
}

// badHistory is a made-up history with a violation in it, for
// TestCheckCatchesBadHistories.
type badHistory struct {
	name  string
	want  string // the direct check's kind ("" if only linearizability sees it)
	build func(b *hb)
}

// badHistories are TestCheckCatchesBadHistories' cases: one history for each
// violation the failover test looks for.
func badHistories() []badHistory {
	a1, a2 := msg("a", 1), msg("a", 2)
	return []badHistory{
		{"an acknowledged send lost", "lost", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.send(0, 10, 20, OK, a2)
			b.recv(1, 30, 40, held(a2, "h2"))
			b.del(1, 50, 60, OK, held(a2, "h2"))
		}},
		{"an acknowledged delete undone by a receive concurrent with it", "undone delete", func(b *hb) {
			// Invoked before the delete was acknowledged, answered after:
			// had it taken a1 first, the delete's handle would be stale.
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.del(1, 40, 50, OK, held(a1, "h1"))
			b.recv(2, 45, 60, held(a1, "h2"))
			b.del(2, 70, 80, OK, held(a1, "h2"))
		}},
		{"an acknowledged delete undone", "undone delete", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.del(1, 40, 50, OK, held(a1, "h1"))
			b.recv(2, 2100, 2110, held(a1, "h2"))
			b.del(2, 2200, 2210, OK, held(a1, "h2"))
		}},
		{"group order broken", "order", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.send(0, 11, 20, OK, a2)
			b.recv(1, 30, 40, held(a2, "h2"))
			b.del(1, 50, 60, OK, held(a2, "h2"))
			b.recv(1, 70, 80, held(a1, "h1"))
			b.del(1, 90, 100, OK, held(a1, "h1"))
		}},
		{"group order broken by concurrent receives", "order", func(b *hb) {
			// a2 delivered alone before any delivery of a1 was answered.
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 20, 100, held(a1, "h1"))
			b.recv(2, 30, 50, held(a2, "h2"))
			b.del(2, 60, 70, OK, held(a2, "h2"))
			b.del(1, 110, 120, OK, held(a1, "h1"))
		}},
		{"the head skipped, then delivered after the next one", "order", func(b *hb) {
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 20, 30, held(a2, "h2"))
			b.recv(2, 3000, 3010, held(a1, "h1"))
			b.del(2, 3020, 3030, OK, held(a1, "h1"))
			b.recv(3, 3040, 3050, held(a2, "h3"))
			b.del(3, 3060, 3070, OK, held(a2, "h3"))
		}},
		{"order broken inside one receive", "order", func(b *hb) {
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 30, 40, held(a2, "h2"), held(a1, "h1"))
			b.del(1, 50, 60, OK, held(a2, "h2"))
			b.del(1, 50, 60, OK, held(a1, "h1"))
		}},
		{"a group held by two consumers", "double hold", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.recv(2, 500, 510, held(a1, "h2"))
			b.del(2, 600, 610, OK, held(a1, "h2"))
		}},
		{"a later message while the head is held", "double hold", func(b *hb) {
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.recv(2, 500, 510, held(a2, "h2"))
			b.del(1, 600, 610, OK, held(a1, "h1"))
			b.del(2, 600, 610, OK, held(a2, "h2"))
		}},
		{"a later message taken while the given-back head's successor is held", "double hold", func(b *hb) {
			b.send(0, 0, 10, OK, a1, a2)
			b.recv(1, 20, 30, held(a1, "h1"), held(a2, "h2"))
			b.rel(1, 40, 50, OK, held(a1, "h1"))
			b.recv(2, 60, 70, held(a1, "h3"), held(a2, "h4"))
			b.del(2, 80, 90, OK, held(a1, "h3"))
			b.del(2, 80, 90, OK, held(a2, "h4"))
		}},
		{"a duplicate inside the dedup interval", "duplicate", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			dup := a1
			dup.ID = "other"
			b.send(0, 20, 30, OK, dup)
			b.recv(1, 40, 50, held(a1, "h1"), held(dup, "h2"))
			b.del(1, 60, 70, OK, held(a1, "h1"))
			b.del(1, 60, 70, OK, held(dup, "h2"))
		}},
		{"a delete acknowledged with an expired handle", "", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.recv(2, 2100, 2110, held(a1, "h2"))
			b.del(1, 2200, 2210, OK, held(a1, "h1"))
			b.del(2, 2300, 2310, OK, held(a1, "h2"))
		}},
		{"a release refused at its only attempt, yet its message taken", "", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.recv(1, 20, 30, held(a1, "h1"))
			b.op(Release, 1, 40, 900, Refused, held(a1, "h1"))
			b.recv(2, 100, 110, held(a1, "h2"))
			b.del(2, 120, 130, OK, held(a1, "h2"))
		}},
		{"a message delivered that was never sent", "", func(b *hb) {
			b.recv(1, 20, 30, held(a1, "h1"))
			b.del(1, 40, 50, OK, held(a1, "h1"))
		}},
		{"a message left in the drained queue", "", func(b *hb) {
			b.send(0, 0, 0, Unknown, a1)
			b.send(0, 10, 20, OK, a2)
			b.recv(1, 30, 40, held(a1, "h1"), held(a2, "h2"))
			b.del(1, 50, 60, OK, held(a2, "h2"))
			// a1 was delivered, so its send took effect, and nobody
			// deleted it: the drain cannot have found the queue empty.
		}},
	}
}

// TestCheckDoubleHolds counts the double holds reported in histories of
// one group (their other problems aside): a group handed to two receives
// at once is reported once per pair of receives, and what SQS allows is
// not. It checks without slack, at the millisecond.
func TestCheckDoubleHolds(t *testing.T) {
	const g = "g"
	m := func(seq int) Msg { return msg(g, seq) }
	h := func(seq int, handle string) Msg { return held(m(seq), handle) }
	for _, c := range []struct {
		name  string
		build func(b *hb)
		want  int
	}{
		{"a later message while an earlier is held", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"), h(5, "h5"))
			// Client 1 deletes its first message but still holds the
			// second when client 2 is handed the next one.
			b.del(1, 20, 25, OK, h(1, "h1"))
			b.recv(2, 30, 40, h(9, "h9"))
		}, 1},
		{"the same message twice before its visibility deadline", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"))
			b.recv(2, 1900, 1999, h(1, "h2"))
		}, 1},
		{"the same message after its visibility deadline", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"))
			b.recv(2, 2000, 2010, h(1, "h2"))
		}, 0},
		{"answered after the release was sent, before it was acknowledged", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"), held(msg("other", 2), "x"))
			// The delete may be applied as soon as it is sent.
			b.del(1, 20, 0, Unknown, h(1, "h1"))
			b.recv(2, 15, 25, h(5, "h5"))
			b.recv(3, 30, 40, held(msg("third", 3), "y"))
		}, 0},
		{"the head given back while a later message is held (SQS allows it)", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"), h(5, "h5"))
			b.rel(1, 20, 25, OK, h(1, "h1"))
			b.recv(2, 30, 40, h(1, "h1b"))
		}, 0},
		{"the head given back, and the held later message handed out too", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"), h(5, "h5"))
			b.rel(1, 20, 25, OK, h(1, "h1"))
			b.recv(2, 30, 40, h(1, "h1b"), h(5, "h5b"))
		}, 1},
		{"three holders", func(b *hb) {
			b.recv(1, 0, 10, h(1, "h1"))
			b.recv(2, 20, 30, h(5, "h5"))
			b.recv(3, 40, 50, h(9, "h9"))
		}, 3},
		{"a receive answered while an earlier answered one holds", func(b *hb) {
			// Invoked before the first one's answer: whichever the server
			// served first, the other took the group while it was held.
			b.recv(1, 0, 100, h(1, "h1"))
			b.recv(2, 50, 150, h(5, "h5"))
		}, 1},
		{"an earlier message taken while a later one is held without it", func(b *hb) {
			b.recv(1, 0, 10, h(5, "h5"))
			b.recv(2, 20, 30, h(1, "h1"))
		}, 1},
		{"a receive that outlasted its own visibility timeout", func(b *hb) {
			// Its own hold may be over by its answer, but it took its
			// message while client 1's hold certainly lasted.
			b.recv(1, 0, 10, h(1, "h1"))
			b.recv(2, 20, 1900, h(5, "h5"))
			b.ops[len(b.ops)-1].Visibility = time.Second
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newHB()
			b.slack = 0
			c.build(b)
			var got []string
			for _, p := range b.check(0).Problems {
				if strings.HasPrefix(p, "double hold:") {
					got = append(got, p)
				}
			}
			if len(got) != c.want {
				t.Fatalf("double holds reported: %d, want %d:\n  %s", len(got), c.want, strings.Join(got, "\n  "))
			}
		})
	}
}
