package clustertest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A made-up history, written in milliseconds from t0.
type hb struct {
	t0  time.Time
	ops []Op
}

func newHB() *hb { return &hb{t0: time.Unix(1_700_000_000, 0)} }

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
	cfg := CheckConfig{DedupInterval: 5 * time.Minute, Slack: 10 * time.Millisecond, Timeout: 10 * time.Second}
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
	a1, a2 := msg("a", 1), msg("a", 2)
	for _, c := range []struct {
		name  string
		want  string // the direct check's kind ("" if only linearizability sees it)
		build func(b *hb)
	}{
		{"an acknowledged send lost", "lost", func(b *hb) {
			b.send(0, 0, 10, OK, a1)
			b.send(0, 10, 20, OK, a2)
			b.recv(1, 30, 40, held(a2, "h2"))
			b.del(1, 50, 60, OK, held(a2, "h2"))
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
	} {
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
