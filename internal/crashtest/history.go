package crashtest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
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
	return &history{acked: map[msgRef]string{}, dedupOf: map[msgRef]string{}, deleted: map[string]int{}}
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
	return problems
}

func (h *history) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%d sends acknowledged, %d deliveries, %d deletes acknowledged", len(h.acked), len(h.deliveries), len(h.deleted))
}
