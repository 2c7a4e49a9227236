package historycheck

import (
	"fmt"
	"sort"
	"time"
)

// lost: every acknowledged send was delivered (the drain received every
// message left in the queue).
func lost(h *checked) []string {
	var out []string
	for _, op := range h.acknowledged(Send) {
		for _, m := range op.Msgs {
			if len(h.deliveries[m.ID]) == 0 {
				out = append(out, fmt.Sprintf("lost: %s of group %s (MessageId %s) acknowledged at %s, never delivered",
					m.Dedup, m.Group, m.ID, h.at(op.Return)))
			}
		}
	}
	return out
}

// undoneDeletes: no receive answered after a message's delete was
// acknowledged returns the message. A receive that took the message before
// the delete took effect gave it a new receipt handle, and a FIFO queue
// refuses a delete with any handle but the latest; a retried receive
// returns again only messages still in flight under it (the engine's
// replay, as SQS within the visibility timeout). So an acknowledged delete
// took effect before any receive answered after it, which cannot then
// return the message — a receive invoked before the acknowledgement
// included.
func undoneDeletes(h *checked) []string {
	var out []string
	for _, del := range h.acknowledged(Delete) {
		m := del.Msgs[0]
		for _, i := range h.deliveries[m.ID] {
			if rcv := h.ops[i]; rcv.Return.After(del.Return) {
				out = append(out, fmt.Sprintf("undone delete: %s of group %s delivered by client %d's receive invoked at %s and answered at %s, after its delete was acknowledged at %s",
					m.Dedup, m.Group, rcv.Client, h.at(rcv.Invoke), h.at(rcv.Return), h.at(del.Return)))
				break
			}
		}
	}
	return out
}

// duplicates: one deduplication id never names two MessageIds (answered
// by sends or returned by receives) first seen within the deduplication
// interval of each other.
func duplicates(h *checked) []string {
	idsOf := map[string]map[string]time.Time{} // dedup → MessageId → first seen
	note := func(m Msg, when time.Time) {
		if m.ID == "" {
			return
		}
		if idsOf[m.Dedup] == nil {
			idsOf[m.Dedup] = map[string]time.Time{}
		}
		if first, ok := idsOf[m.Dedup][m.ID]; !ok || when.Before(first) {
			idsOf[m.Dedup][m.ID] = when
		}
	}
	for _, op := range h.ops {
		if op.Outcome == OK && (op.Kind == Send || op.Kind == Receive) {
			for _, m := range op.Msgs {
				note(m, op.Return)
			}
		}
	}
	var out []string
	for _, d := range sortedKeys(idsOf) {
		var seen []time.Time
		for _, when := range idsOf[d] {
			seen = append(seen, when)
		}
		sort.Slice(seen, func(i, j int) bool { return seen[i].Before(seen[j]) })
		for i := 1; i < len(seen); i++ {
			if seen[i].Sub(seen[0]) < h.cfg.DedupInterval {
				out = append(out, fmt.Sprintf("duplicate: dedup id %s became %d messages within the deduplication interval", d, len(idsOf[d])))
				break
			}
		}
	}
	return out
}

// order: within a group, no message is first delivered by a receive
// answered after the first delivery of a message sent after it, and one
// receive returns a group's messages in order.
//
// A receive takes a group's messages from its first stored one on, so a
// later message is delivered alone only once the earlier ones are
// deleted, which needs a delivery of each answered before.
func order(h *checked) []string {
	firsts := map[string]map[int]int{} // group → seq → receive of its first delivery
	var out []string
	for i, op := range h.ops {
		if op.Kind != Receive || op.Outcome != OK {
			continue
		}
		last := map[string]int{}
		for _, m := range op.Msgs {
			if prev, ok := last[m.Group]; ok && m.Seq <= prev {
				out = append(out, fmt.Sprintf("order: group %s: one receive returned message %d after message %d", m.Group, m.Seq, prev))
			}
			last[m.Group] = m.Seq
			g := firsts[m.Group]
			if g == nil {
				g = map[int]int{}
				firsts[m.Group] = g
			}
			if f, ok := g[m.Seq]; !ok || op.Return.Before(h.ops[f].Return) {
				g[m.Seq] = i
			}
		}
	}
	for _, g := range sortedKeys(firsts) {
		seqs := sortedKeys(firsts[g])
		// Going from the last message back, the earliest answer of a
		// first delivery of any later message: the message's own first
		// delivery must not be answered after it.
		var earliestLater time.Time
		var laterSeq int
		for i := len(seqs) - 1; i >= 0; i-- {
			rcv := h.ops[firsts[g][seqs[i]]]
			if !earliestLater.IsZero() && rcv.Return.After(earliestLater) {
				out = append(out, fmt.Sprintf("order: group %s: message %d first delivered by a receive invoked at %s and answered at %s, after message %d was delivered at %s",
					g, seqs[i], h.at(rcv.Invoke), h.at(rcv.Return), laterSeq, h.at(earliestLater)))
			}
			if earliestLater.IsZero() || rcv.Return.Before(earliestLater) {
				earliestLater, laterSeq = rcv.Return, seqs[i]
			}
		}
	}
	return out
}

// sortedKeys returns a map's keys in order, for reports in a stable order.
func sortedKeys[K string | int, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
