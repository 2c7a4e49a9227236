package crashtest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// history records what clients saw, in an order that respects
// happens-before: an event is recorded before the client acts on it (a
// delivery is recorded before the message's delete is sent), so if the
// server applied X before Y, X's record precedes Y's.
type history struct {
	mu sync.Mutex

	// sends maps a message's (producer, seq) to its acknowledged MessageId.
	acked map[msgRef]string
	// dedupOf maps a message to the dedup id it was sent with.
	dedupOf map[msgRef]string
	// deleted maps MessageIds whose delete was acknowledged to the event
	// index of that acknowledgement.
	deleted map[string]int
	// deliveries lists every delivery, in record order.
	deliveries []delivery
	events     int
	// holds lists every message a consumer was handed, with the times it
	// knows, for the check that no group is held by two receives at once.
	holds []hold
	// t0 is the time reports count from.
	t0 time.Time
	// wrongBodies lists deliveries whose body was not the one sent.
	wrongBodies []string
}

// hold is one message handed to a consumer by one receive: the consumer
// holds the message's group from the receive's answer until the message
// is deleted, given back, or its visibility timeout runs out.
type hold struct {
	consumer  int
	receive   int // which receive (numbered over the whole history)
	group     string
	messageID string
	seq       int // the message's place in its group (the producer's sequence number)
	// answered is when the receive's answer arrived: the server had made
	// the message invisible by then.
	answered time.Time
	// deadline is the receive's request start plus its visibility
	// timeout: the server timestamps the receive no earlier than the
	// request's start, so the message stays invisible at least until then.
	deadline time.Time
	// released, if not zero, is the start of the first delete or
	// visibility change the consumer sent for the message (acknowledged or
	// not): the server may have applied it any time after.
	released time.Time
}

// msgRef names a message the test sent: its producer and that producer's sequence number.
type msgRef struct {
	producer, seq int
}

type delivery struct {
	event     int
	messageID string
	ref       msgRef
	group     string
}

func newHistory() *history {
	return &history{acked: map[msgRef]string{}, dedupOf: map[msgRef]string{}, deleted: map[string]int{}, t0: time.Now()}
}

// heldMessage is one message of a receive's answer, as received returns it.
type heldMessage struct {
	group, messageID string
	seq              int // the message's place in its group
}

// received records the messages one receive of a consumer handed over: the
// request started at began with the given visibility timeout and was
// answered at answered. It returns one hold id per message, for released.
func (h *history) received(consumer int, began, answered time.Time, visibility time.Duration, msgs []heldMessage) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	receive := h.events
	ids := make([]int, len(msgs))
	for i, m := range msgs {
		ids[i] = len(h.holds)
		h.holds = append(h.holds, hold{consumer: consumer, receive: receive, group: m.group, messageID: m.messageID, seq: m.seq,
			answered: answered, deadline: began.Add(visibility)})
	}
	return ids
}

// released records that a delete or visibility change of a held message
// was sent at began, whatever its outcome.
func (h *history) released(id int, began time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id < 0 || id >= len(h.holds) {
		return
	}
	if r := h.holds[id].released; r.IsZero() || began.Before(r) {
		h.holds[id].released = began
	}
}

func (h *history) sendAcked(ref msgRef, dedup, messageID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	h.acked[ref] = messageID
	h.dedupOf[ref] = dedup
}

func (h *history) delivered(ref msgRef, group, messageID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	h.deliveries = append(h.deliveries, delivery{event: h.events, messageID: messageID, ref: ref, group: group})
}

// wrongBody records a delivery whose body is not the one sent.
func (h *history) wrongBody(ref msgRef, messageID string, got int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wrongBodies = append(h.wrongBodies, fmt.Sprintf("wrong body: message %v (MessageId %s) delivered with a body of %d bytes that is not the one sent", ref, messageID, got))
}

func (h *history) deleteAcked(messageID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events++
	if _, ok := h.deleted[messageID]; !ok {
		h.deleted[messageID] = h.events
	}
}

// check verifies the history after the final drain and returns every
// violation found.
func (h *history) check() (problems []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	add := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	// 0. Every body delivered is the one sent.
	for _, w := range h.wrongBodies {
		add("%s", w)
	}
	deliveredIDs := map[string]bool{}
	for _, d := range h.deliveries {
		deliveredIDs[d.messageID] = true
	}

	// 1. Every acknowledged send was delivered (the final drain receives
	//    everything left), so nothing acknowledged is lost.
	for ref, id := range h.acked {
		if !deliveredIDs[id] {
			add("lost: message %v (MessageId %s) was acknowledged but never delivered", ref, id)
		}
	}
	// 2. No acknowledged delete comes back.
	for _, d := range h.deliveries {
		if at, ok := h.deleted[d.messageID]; ok && d.event > at {
			add("resurrected: MessageId %s delivered at event %d after its delete was acknowledged at event %d", d.messageID, d.event, at)
		}
	}
	// 3. Per-group order: within a group, the first deliveries of each
	//    producer's messages come in the order it sent them. Redeliveries
	//    may come later: a consumer that received several messages of a
	//    group at once and deleted all but the first sees that first one
	//    again after its visibility timeout, as SQS does.
	last := map[string]int{}
	first := map[msgRef]bool{}
	for _, d := range h.deliveries {
		if first[d.ref] {
			continue
		}
		first[d.ref] = true
		stream := fmt.Sprintf("%s/%d", d.group, d.ref.producer)
		if prev, ok := last[stream]; ok && d.ref.seq < prev {
			add("out of order: group %s producer %d: message %d first delivered after message %d", d.group, d.ref.producer, d.ref.seq, prev)
		}
		if prev, ok := last[stream]; !ok || d.ref.seq > prev {
			last[stream] = d.ref.seq
		}
	}
	// 4. Exactly-once sends: a message sent (and retried) under one dedup
	//    id is delivered under one MessageId only.
	idsOf := map[string]map[string]bool{}
	for _, d := range h.deliveries {
		dedup, ok := h.dedupOf[d.ref]
		if !ok {
			// Sent but never acknowledged (the run ended mid-retry): use the
			// ref itself, which maps one-to-one to a dedup id.
			dedup = fmt.Sprintf("unacked-%d-%d", d.ref.producer, d.ref.seq)
		}
		if idsOf[dedup] == nil {
			idsOf[dedup] = map[string]bool{}
		}
		idsOf[dedup][d.messageID] = true
	}
	for dedup, ids := range idsOf {
		if len(ids) > 1 {
			list := make([]string, 0, len(ids))
			for id := range ids {
				list = append(list, id)
			}
			sort.Strings(list)
			add("duplicate: dedup id %s delivered as %d messages: %s", dedup, len(ids), strings.Join(list, ", "))
		}
	}
	// 5. Exclusive groups: a receive is never handed a message of a group
	//    while another receive holds that message or an earlier one of the
	//    group. That is FIFO's one consumer per group, with the exception
	//    SQS makes (recorded, and followed by the engine: see fifoGroup): a
	//    consumer that gives back the head of its group with
	//    ChangeMessageVisibility 0 while holding later messages lets
	//    another receive take that head, and so the holder of the later
	//    messages is the receive that took the earlier one too.
	for _, p := range h.doubleHolds() {
		add("double hold: group %s: consumer %d (receive %d) held message %d from %v until at least %v, and consumer %d (receive %d) held message %d from %v",
			p[0].group, p[0].consumer, p[0].receive, p[0].seq, p[0].answered.Sub(h.t0), p[0].end().Sub(h.t0),
			p[1].consumer, p[1].receive, p[1].seq, p[1].answered.Sub(h.t0))
	}
	return problems
}

// end is the earliest moment the hold may have ended: the start of the
// message's release, or its visibility deadline.
func (m hold) end() time.Time {
	if !m.released.IsZero() && m.released.Before(m.deadline) {
		return m.released
	}
	return m.deadline
}

// doubleHolds returns the pairs of holds that break group exclusivity:
// both certainly held at one moment (the later of their answers comes
// before the earlier of their ends), of the same message, or of an
// earlier message of the group (the first) and a later one (the second)
// by a receive that was not handed that earlier message too. h.mu must be
// held.
func (h *history) doubleHolds() [][2]hold {
	byGroup := map[string][]hold{}
	// took records which messages (by sequence number) each receive was
	// handed, per group.
	type key struct {
		receive int
		group   string
		seq     int
	}
	took := map[key]bool{}
	for _, m := range h.holds {
		if m.end().After(m.answered) {
			byGroup[m.group] = append(byGroup[m.group], m)
		}
		took[key{m.receive, m.group, m.seq}] = true
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out [][2]hold
	for _, g := range groups {
		list := byGroup[g]
		sort.SliceStable(list, func(i, j int) bool { return list[i].answered.Before(list[j].answered) })
		for i, a := range list {
			// Only holds answered before a certainly ends can overlap it.
			for _, b := range list[i+1:] {
				if !b.answered.Before(a.end()) {
					break
				}
				if a.receive == b.receive || !b.answered.Before(b.end()) {
					continue
				}
				// a and b were both held at b's answer.
				switch {
				case a.seq == b.seq:
					out = append(out, [2]hold{a, b})
				case a.seq < b.seq && !took[key{b.receive, g, a.seq}]:
					out = append(out, [2]hold{a, b})
				case b.seq < a.seq && !took[key{a.receive, g, b.seq}]:
					out = append(out, [2]hold{b, a})
				}
			}
		}
	}
	return out
}

func (h *history) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%d sends acknowledged, %d deliveries, %d deletes acknowledged, %d holds", len(h.acked), len(h.deliveries), len(h.deleted), len(h.holds))
}
