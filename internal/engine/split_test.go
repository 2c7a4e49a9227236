package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// htAttrs are the attributes of a high-throughput FIFO queue, the kind a
// router splits.
var htAttrs = map[string]string{api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId", api.AttrVisibilityTimeout: "30"}

// partitionOf returns, of parts, the partition that owns group.
func partitionOf(t *testing.T, e *Engine, parts []api.QueueKey, group string) api.QueueKey {
	t.Helper()
	h := uint64(api.GroupHash(group))
	for _, p := range parts {
		r, ok := e.PartitionOf(p)
		if !ok {
			t.Fatalf("no partition %s", p)
		}
		if h >= r.Lo && h < r.Hi {
			return p
		}
	}
	t.Fatalf("no partition of %v holds group %q (hash %d)", parts, group, h)
	return api.QueueKey{}
}

func part(q api.QueueKey, n uint32) api.QueueKey {
	q.Part = n
	return q
}

// TestSplitQueue splits a FIFO queue with messages visible and in flight,
// deduplication records and a receive attempt, and checks that every
// group's state went whole to the partition that owns it: counts, order,
// handles handed out before the split, deduplication, the attempt's retry,
// sequence numbers, the refusal of another partition's groups, and a
// snapshot's round trip.
func TestSplitQueue(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("ht.fifo", htAttrs)
	var groups []string
	seqs := map[string][]string{} // by group, in send order
	ids := map[string]string{}    // MessageId by dedup id
	for i := range 20 {
		g := "g" + strconv.Itoa(i)
		groups = append(groups, g)
		for j := range 3 {
			d := fmt.Sprintf("%s-%d", g, j)
			res := h.sendFIFO(q, d, g, d)
			seqs[g] = append(seqs[g], res.SequenceNumber)
			ids[d] = res.MessageId
		}
	}
	ten := 10
	first := h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &ten, ReceiveRequestAttemptId: "attempt-1",
		MessageSystemAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult).Messages
	if len(first) != 10 {
		t.Fatalf("received %d messages, want 10", len(first))
	}
	more := h.receive(q, 10, 30)
	inflight := append(slices.Clone(first), more...)
	before := h.counts(q)

	// Split where the first receive's groups fall on both sides: the one
	// of the highest hash goes.
	var at uint32
	for _, m := range first {
		at = max(at, api.GroupHash(m.Attributes[api.MsgAttrMessageGroupId]))
	}
	if _, err := h.raw(q, &SplitQueueRequest{At: at, Part: 1}); err != nil {
		t.Fatal(err)
	}
	p1 := part(q, 1)
	if _, err := h.raw(q, &SplitQueueRequest{At: at, Part: 1}); err != nil {
		t.Fatalf("the same split again: %v", err)
	}
	parts := []api.QueueKey{q, p1}
	if r, _ := h.e.PartitionOf(q); !r.Split || r.Lo != 0 || r.Hi != uint64(at) {
		t.Fatalf("partition 0 holds %+v", r)
	}
	if r, _ := h.e.PartitionOf(p1); !r.Split || r.Lo != uint64(at) || r.Hi != 1<<32 {
		t.Fatalf("partition 1 holds %+v", r)
	}
	c0, c1 := h.counts(q), h.counts(p1)
	if c0[0]+c1[0] != before[0] || c0[1]+c1[1] != before[1] || c0[1]+c1[1] != len(inflight) {
		t.Fatalf("counts after the split %v + %v, before %v", c0, c1, before)
	}
	if c0[0] == 0 || c1[0] == 0 {
		t.Fatalf("counts after the split %v and %v: want groups in both halves", c0, c1)
	}

	// A group belongs to one partition: the other refuses its sends.
	for _, g := range groups {
		own := partitionOf(t, h.e, parts, g)
		other := parts[1-slices.Index(parts, own)]
		_, err := h.do(other, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "x", MessageGroupId: g, MessageDeduplicationId: "new-" + g})
		if !IsQueueMoving(err) {
			t.Fatalf("send of %s to the partition that does not own it: %v, want IsQueueMoving", g, err)
		}
		// A duplicate of a message sent before the split is known where
		// its group went.
		d := g + "-2"
		res := h.sendFIFO(own, d, g, d)
		if res.MessageId != ids[d] || res.SequenceNumber != seqs[g][2] {
			t.Fatalf("duplicate of %s in %s: id %s seq %s, want %s %s", d, own, res.MessageId, res.SequenceNumber, ids[d], seqs[g][2])
		}
		res = h.sendFIFO(own, "after-"+g, g, "after-"+g)
		if n, _ := strconv.ParseUint(res.SequenceNumber, 10, 64); n%partDigits != uint64(own.Part) || len(res.SequenceNumber) != 20 {
			t.Fatalf("sequence number %s in partition %d", res.SequenceNumber, own.Part)
		}
		if !seqLess(seqs[g][2], res.SequenceNumber) {
			t.Fatalf("group %s: sequence number %s after %s", g, res.SequenceNumber, seqs[g][2])
		}
		seqs[g] = append(seqs[g], res.SequenceNumber)
	}

	// The attempt's retry, made of both partitions' answers, is the
	// first receive: each partition returns its share again.
	var retried []string
	for _, p := range parts {
		got := h.must(p, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &ten, ReceiveRequestAttemptId: "attempt-1"}).(*api.ReceiveMessageResult).Messages
		for _, m := range got {
			retried = append(retried, m.MessageId)
		}
	}
	var want []string
	for _, m := range first {
		want = append(want, m.MessageId)
	}
	slices.Sort(retried)
	slices.Sort(want)
	if !slices.Equal(retried, want) {
		t.Fatalf("retry of the attempt over the partitions returned %v, want %v", retried, want)
	}

	// The snapshot of split partitions restores to the same bytes.
	snap := snapshotBytes(t, h.e)
	restoreHarness(t, h)
	if again := snapshotBytes(t, h.e); !bytes.Equal(snap, again) {
		t.Fatal("a restored engine's snapshot differs from the one it was restored from")
	}

	// Handles handed out before the split delete their messages where
	// the group now is; a split queue's handles name their group's hash.
	for _, m := range inflight {
		own := partitionOf(t, h.e, parts, m.Attributes[api.MsgAttrMessageGroupId])
		if err := h.deleteMsg(own, m.ReceiptHandle); err != nil {
			t.Fatalf("delete of %s in %s by a handle from before the split: %v", m.Body, own, err)
		}
	}
	drained := map[string][]string{}
	drainPartitions(t, h, parts, func(p api.QueueKey, m api.Message) {
		g := m.Attributes[api.MsgAttrMessageGroupId]
		if partitionOf(t, h.e, parts, g) != p {
			t.Fatalf("partition %d handed out a message of group %s", p.Part, g)
		}
		if hash, ok := HandleGroupHash(m.ReceiptHandle); !ok || hash != api.GroupHash(g) {
			t.Fatalf("handle of a split queue's message carries hash %d (%v), want %d", hash, ok, api.GroupHash(g))
		}
		other := parts[1-slices.Index(parts, p)]
		if err := h.changeVis(other, m.ReceiptHandle, 10); !IsQueueMoving(err) {
			t.Fatalf("the other partition's answer to the handle: %v, want IsQueueMoving", err)
		}
		drained[g] = append(drained[g], m.Attributes[api.MsgAttrSequenceNumber])
	})
	for _, m := range inflight {
		g := m.Attributes[api.MsgAttrMessageGroupId]
		seqs[g] = slices.DeleteFunc(seqs[g], func(s string) bool { return s == m.Attributes[api.MsgAttrSequenceNumber] })
	}
	for _, g := range groups {
		if !slices.Equal(drained[g], seqs[g]) {
			t.Fatalf("group %s drained %v, want %v", g, drained[g], seqs[g])
		}
	}
	if res := h.must(q, &api.ListQueuesRequest{}).(*api.ListQueuesResult); len(res.QueueUrls) != 1 {
		t.Fatalf("ListQueues lists %v: want the split queue once", res.QueueUrls)
	}
}

// routeDelete deletes the message of handle as a router would: in the
// partition of the group hash the handle carries, or, for a handle from
// before the queue's first split, in each partition in turn until one does
// not answer that the message is not there; if none has it, the handle is
// one of a message gone, and the delete succeeds. It returns the
// partition that answered.
func routeDelete(t *testing.T, h *harness, parts []api.QueueKey, handle string) (api.QueueKey, error) {
	t.Helper()
	if hash, ok := HandleGroupHash(handle); ok {
		for _, p := range parts {
			if r, _ := h.e.PartitionOf(p); uint64(hash) >= r.Lo && uint64(hash) < r.Hi {
				return p, h.deleteMsg(p, handle)
			}
		}
		t.Fatalf("no partition holds hash %d", hash)
	}
	for _, p := range parts {
		if err := h.deleteMsg(p, handle); !IsHandleElsewhere(err) {
			return p, err
		}
	}
	return api.QueueKey{}, nil
}

// drainPartitions receives every message of each partition in turn,
// hands each to check, then deletes it, until the partition is empty.
func drainPartitions(t *testing.T, h *harness, parts []api.QueueKey, check func(p api.QueueKey, m api.Message)) {
	t.Helper()
	for _, p := range parts {
		for got := h.receive(p, 10, 30); len(got) > 0; got = h.receive(p, 10, 30) {
			for _, m := range got {
				check(p, m)
				if err := h.deleteMsg(p, m.ReceiptHandle); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// tooManyTags reports whether err is a split's or merge's refusal to keep
// more past receipt handle tags than a queue honours.
func tooManyTags(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "UnsupportedOperation" && strings.Contains(ae.Message, "past receipt handle tags")
}

// seqLess compares two sequence numbers of 20 digits.
func seqLess(a, b string) bool { return len(a) < len(b) || len(a) == len(b) && a < b }

// TestSplitRefusals checks what a split refuses: queues whose messages do
// not go by group, hashes outside the partition, a partition number in
// use, and queues that messages reach by key.
func TestSplitRefusals(t *testing.T) {
	h := newHarness(t)
	std := h.createQueue("std", nil)
	byQueue := h.fifoQueue("byqueue.fifo", nil)
	ht := h.fifoQueue("ht.fifo", htAttrs)
	dlq := h.fifoQueue("dlq.fifo", htAttrs)
	h.fifoQueue("src.fifo", map[string]string{api.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + dlq.ARN(testRegion) + `","maxReceiveCount":"2"}`})
	for _, c := range []struct {
		q    api.QueueKey
		req  *SplitQueueRequest
		code string
	}{
		{std, &SplitQueueRequest{At: 10, Part: 1}, "UnsupportedOperation"},
		{byQueue, &SplitQueueRequest{At: 10, Part: 1}, "UnsupportedOperation"},
		{ht, &SplitQueueRequest{At: 0, Part: 1}, "InvalidParameterValue"},
		{ht, &SplitQueueRequest{At: 10, Part: 0}, "InvalidParameterValue"},
		{ht, &SplitQueueRequest{At: 10, Part: MaxPart + 1}, "InvalidParameterValue"},
		{dlq, &SplitQueueRequest{At: 10, Part: 1}, "UnsupportedOperation"},
	} {
		_, err := h.raw(c.q, c.req)
		wantCode(t, err, c.code)
	}
	if _, err := h.raw(ht, &SplitQueueRequest{At: 1 << 30, Part: 5}); err != nil {
		t.Fatal(err)
	}
	_, err := h.raw(ht, &SplitQueueRequest{At: 1 << 29, Part: 5})
	wantCode(t, err, "InvalidParameterValue") // partition 5 exists
	_, err = h.raw(ht, &SplitQueueRequest{At: 1 << 31, Part: 6})
	wantCode(t, err, "InvalidParameterValue") // outside partition 0's range now
	_, err = h.raw(part(ht, 5), &SplitQueueRequest{At: 1 << 31, Part: 6})
	if err != nil {
		t.Fatalf("split of partition 5 inside its range: %v", err)
	}
	// A split queue is no dead-letter queue: a policy naming one is
	// answered as if the queue were moving (a cluster gathers it into one
	// partition before the request comes, and again when it retries),
	// after every check that would refuse it for good (here, a standard
	// source naming a FIFO queue).
	htPolicy := `{"deadLetterTargetArn":"` + ht.ARN(testRegion) + `","maxReceiveCount":"2"}`
	_, err = h.do(std, &api.SetQueueAttributesRequest{QueueUrl: std.Path(), Attributes: map[string]string{
		api.AttrRedrivePolicy: htPolicy}})
	wantCode(t, err, "InvalidParameterValue")
	src := h.fifoQueue("src-of-split.fifo", nil)
	_, err = h.do(src, &api.SetQueueAttributesRequest{QueueUrl: src.Path(), Attributes: map[string]string{
		api.AttrRedrivePolicy: htPolicy}})
	if !IsQueueMoving(err) {
		t.Fatalf("a FIFO queue's redrive policy naming a split queue: got %v, want the retryable answer of a moving queue", err)
	}
	_, err = h.raw(api.QueueKey{Account: ht.Account, Region: ht.Region, Name: "new-of-split.fifo"}, &api.CreateQueueRequest{QueueName: "new-of-split.fifo",
		Attributes: map[string]string{api.AttrFifoQueue: "true", api.AttrRedrivePolicy: htPolicy}})
	if !IsQueueMoving(err) {
		t.Fatalf("a new FIFO queue whose redrive policy names a split queue: got %v, want the retryable answer of a moving queue", err)
	}
	// It may turn to the queue's deduplication scope, as SQS lets any
	// high-throughput queue (localstack test_sqs.snapshot.json:
	// test_fifo_change_to_regular_throughput_after_creation): by group
	// for dedupScopePropagation, time for a cluster to gather it, and
	// it is split no further.
	if _, err = h.do(ht, &api.SetQueueAttributesRequest{QueueUrl: ht.Path(), Attributes: map[string]string{
		api.AttrFifoThroughputLimit: "perQueue", api.AttrDeduplicationScope: "queue"}}); err != nil {
		t.Fatalf("a split queue turned to the queue's deduplication scope: %v", err)
	}
	if l := h.e.QueueLoads(h.now)[ht]; l.HighThroughput {
		t.Fatalf("a queue turned to perQueue still reads as high-throughput: %+v", l)
	}
	h.advance(dedupScopePropagation)
	_, err = h.raw(ht, &SplitQueueRequest{At: 1 << 20, Part: 7})
	wantCode(t, err, "UnsupportedOperation")
}

// TestSplitRandom runs a random FIFO workload over a queue that is split
// at random moments into up to eight partitions, and whose adjacent
// partitions are merged at others, each command sent to the partition of
// its group as a router would, with snapshot round trips in between; at the end every group holds exactly the messages sent and not
// deleted, in the order sent, and no group ever had two messages in
// flight at once or one handed out behind one in flight.
func TestSplitRandom(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { splitRandom(t, seed) })
	}
}

func splitRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 38))
	h := newHarness(t)
	// Past handle tags run out now and then (12 hours), and the messages
	// must outlive them: the longest retention.
	attrs := maps.Clone(htAttrs)
	attrs[api.AttrMessageRetentionPeriod] = "1209600"
	q := h.fifoQueue("ht.fifo", attrs)
	parts := []api.QueueKey{q}
	type sent struct{ body, seq string }
	live := map[string][]sent{}         // by group: sent and not deleted, in order
	out := map[string]int{}             // by group: how many of live are in flight
	current := map[string]api.Message{} // by handle: the receives not over
	var handles []api.Message           // every message handed out
	nextPart := uint32(1)
	merges := 0
	for step := range 600 {
		g := "g" + strconv.Itoa(rng.IntN(12))
		switch op := rng.IntN(10); {
		case op < 4:
			d := fmt.Sprintf("m%d", step)
			own := partitionOf(t, h.e, parts, g)
			res := h.sendFIFO(own, d, g, d)
			if l := live[g]; len(l) > 0 && !seqLess(l[len(l)-1].seq, res.SequenceNumber) {
				t.Fatalf("step %d: group %s got sequence number %s after %s", step, g, res.SequenceNumber, l[len(l)-1].seq)
			}
			live[g] = append(live[g], sent{d, res.SequenceNumber})
		case op < 7:
			p := parts[rng.IntN(len(parts))]
			seen := map[string]bool{}
			for _, m := range h.receive(p, 1+rng.IntN(10), 30) {
				mg := m.Attributes[api.MsgAttrMessageGroupId]
				if partitionOf(t, h.e, parts, mg) != p {
					t.Fatalf("step %d: partition %d handed out group %s", step, p.Part, mg)
				}
				if !seen[mg] && out[mg] != 0 {
					t.Fatalf("step %d: group %s handed out %s with %d in flight", step, mg, m.Body, out[mg])
				}
				seen[mg] = true
				if l := live[mg]; out[mg] >= len(l) || l[out[mg]].body != m.Body {
					t.Fatalf("step %d: group %s handed out %s, want the next of %v after %d in flight", step, mg, m.Body, l, out[mg])
				}
				out[mg]++
				current[m.ReceiptHandle] = m
				handles = append(handles, m)
			}
		case op < 9 && len(handles) > 0:
			m := handles[rng.IntN(len(handles))]
			mg := m.Attributes[api.MsgAttrMessageGroupId]
			own, err := routeDelete(t, h, parts, m.ReceiptHandle)
			_, isCurrent := current[m.ReceiptHandle]
			switch {
			case err != nil && isCurrent:
				t.Fatalf("step %d: delete of %s in flight in %d: %v", step, m.Body, own.Part, err)
			case isCurrent && own != partitionOf(t, h.e, parts, mg):
				t.Fatalf("step %d: %s of group %s deleted in partition %d", step, m.Body, mg, own.Part)
			case err != nil && slices.ContainsFunc(live[mg], func(s sent) bool { return s.body == m.Body }):
				wantCode(t, err, "InvalidParameterValue") // its receive is over
			case err != nil:
				// Its message is gone, and the handle's tag was
				// forgotten once it named no message (trimPast).
				wantCode(t, err, "ReceiptHandleIsInvalid")
			case isCurrent:
				i := slices.IndexFunc(live[mg], func(s sent) bool { return s.body == m.Body })
				if i < 0 || i >= out[mg] {
					t.Fatalf("step %d: deleted %s, not among group %s's %d in flight of %v", step, m.Body, mg, out[mg], live[mg])
				}
				live[mg] = slices.Delete(live[mg], i, i+1)
				out[mg]--
				delete(current, m.ReceiptHandle)
			default:
				if slices.ContainsFunc(live[mg], func(s sent) bool { return s.body == m.Body }) {
					t.Fatalf("step %d: a stale handle of %s deleted it", step, m.Body)
				}
			}
		case op == 9 && len(parts) > 1 && rng.IntN(3) == 0:
			// Merge a random partition with the one after it.
			p := parts[rng.IntN(len(parts))]
			r, _ := h.e.PartitionOf(p)
			i := slices.IndexFunc(parts, func(n api.QueueKey) bool { nr, _ := h.e.PartitionOf(n); return nr.Lo == r.Hi })
			if i < 0 {
				continue
			}
			n := parts[i]
			if _, err := h.raw(p, &MergeQueueRequest{Part: n.Part}); tooManyTags(err) {
				continue // too many past handle tags: until some expire
			} else if err != nil {
				t.Fatalf("step %d: merge of %d into %d: %v", step, n.Part, p.Part, err)
			}
			parts = slices.Delete(parts, i, i+1)
			g := "g" + strconv.Itoa(rng.IntN(12))
			if _, err := h.do(n, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "x", MessageGroupId: g, MessageDeduplicationId: "x"}); !IsQueueMoving(err) {
				t.Fatalf("step %d: a send to partition %d, merged away: %v", step, n.Part, err)
			}
			merges++
			if rng.IntN(2) == 0 {
				restoreHarness(t, h)
			}
		case op == 9:
			// Split a random partition at a random hash inside it.
			p := parts[rng.IntN(len(parts))]
			r, _ := h.e.PartitionOf(p)
			if r.Hi-r.Lo < 2 || len(parts) >= 8 {
				continue
			}
			at := uint32(r.Lo + 1 + rng.Uint64N(r.Hi-r.Lo-1))
			if _, err := h.raw(p, &SplitQueueRequest{At: at, Part: nextPart}); tooManyTags(err) {
				continue // too many past handle tags: until some expire
			} else if err != nil {
				t.Fatalf("step %d: split of %d at %d: %v", step, p.Part, at, err)
			}
			parts = append(parts, part(q, nextPart))
			nextPart++
			if rng.IntN(2) == 0 {
				restoreHarness(t, h)
			}
		}
		if rng.IntN(25) == 0 {
			// Visibility timeouts run out: every receive is over. Now
			// and then past handle tags run out too, which a queue split
			// and merged often honours many of.
			if rng.IntN(8) == 0 {
				// Handles older than a past tag's life are no handles.
				h.advance(time.Duration(pastTagLife))
				handles = nil
			}
			h.advance(31 * time.Second)
			clear(out)
			clear(current)
		}
	}
	h.advance(31 * time.Second)
	drainPartitions(t, h, parts, func(p api.QueueKey, m api.Message) {
		g := m.Attributes[api.MsgAttrMessageGroupId]
		if l := live[g]; len(l) == 0 || l[0].body != m.Body || l[0].seq != m.Attributes[api.MsgAttrSequenceNumber] {
			t.Fatalf("drain of partition %d: group %s gave %s (%s), want the first of %v", p.Part, g, m.Body, m.Attributes[api.MsgAttrSequenceNumber], l)
		}
		live[g] = live[g][1:]
	})
	for g, l := range live {
		if len(l) > 0 {
			t.Fatalf("group %s kept %v after the drain", g, l)
		}
	}
	t.Logf("seed %d: %d splits, %d merges, %d partitions at the end", seed, nextPart-1, merges, len(parts))
}

// TestSplitEdges covers what a review found the split got wrong: a
// record of a receive attempt made before a move, left whole on one side,
// that must still restore; a partition number of a partition deleted
// lately, which must not be reused; and a receipt handle from before the
// first split whose message went to the other partition, which must not
// be taken as one of a message gone.
func TestSplitEdges(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("ht.fifo", htAttrs)
	for i := range 8 {
		g := "g" + strconv.Itoa(i)
		h.sendFIFO(q, g, g, g)
	}
	ten := 10
	first := h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &ten, ReceiveRequestAttemptId: "a",
		MessageSystemAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult).Messages
	moveQueue(t, h, "m1", q) // the attempt's record now names the handles of before the move
	// The lowest hash among the groups received stays, the others go.
	lowest := uint32(1<<32 - 1)
	for _, m := range first {
		lowest = min(lowest, api.GroupHash(m.Attributes[api.MsgAttrMessageGroupId]))
	}
	h.internal(q, &SplitQueueRequest{At: lowest + 1, Part: 1})
	restoreHarness(t, h)
	p1 := part(q, 1)
	for _, m := range first {
		g := m.Attributes[api.MsgAttrMessageGroupId]
		if api.GroupHash(g) == lowest {
			continue
		}
		// Its handle, from before the split, is not one of a message gone
		// in partition 0; partition 1 deletes it.
		err := h.deleteMsg(q, m.ReceiptHandle)
		if !IsHandleElsewhere(err) || IsQueueMoving(err) {
			t.Fatalf("partition 0's answer to the handle of a message now in partition 1: %v, want IsHandleElsewhere", err)
		}
		// It says which hashes it holds, so that a router whose map
		// lags the split knows that some are held elsewhere.
		if lo, hi, ok := HandleElsewhereSpan(err); !ok || lo != 0 || hi != uint64(lowest)+1 {
			t.Fatalf("partition 0's answer %v says it holds [%d, %d) (%v), want [0, %d)", err, lo, hi, ok, uint64(lowest)+1)
		}
		// It honours the handle's tag, so the handle is the queue's own.
		if !HandleElsewhereKnowsTag(err) {
			t.Fatalf("partition 0's answer %v says it does not know the tag of a handle of its own from before the split", err)
		}
		if err := h.deleteMsg(p1, m.ReceiptHandle); err != nil {
			t.Fatalf("partition 1's answer to the handle of its message: %v", err)
		}
	}
	// A handle of another queue: neither partition honours its tag, so
	// that a router answers ReceiptHandleIsInvalid, as a queue never
	// split does, rather than take it for a message gone.
	other := h.fifoQueue("other.fifo", htAttrs)
	h.sendFIFO(other, "g", "o", "o")
	foreign := h.must(other, &api.ReceiveMessageRequest{QueueUrl: other.Path()}).(*api.ReceiveMessageResult).Messages[0].ReceiptHandle
	for _, p := range []api.QueueKey{q, p1} {
		err := h.deleteMsg(p, foreign)
		if !IsHandleElsewhere(err) || HandleElsewhereKnowsTag(err) {
			t.Fatalf("partition %d's answer to another queue's handle: %v, want IsHandleElsewhere not knowing the tag", p.Part, err)
		}
	}
	if err := h.deleteMsg(other, foreign); err != nil {
		t.Fatalf("the other queue's answer to its own handle: %v", err)
	}
	h.must(p1, &api.DeleteQueueRequest{QueueUrl: q.Path()})
	_, err := h.raw(q, &SplitQueueRequest{At: lowest, Part: 1})
	wantCode(t, err, "InvalidParameterValue")
	h.internal(q, &SplitQueueRequest{At: lowest, Part: 2})
	restoreHarness(t, h)
}

// FuzzReceiptHandles feeds arbitrary receipt handles, of both versions, to
// the delete and visibility change of a queue never split and of the two
// partitions of a split one: each answers with success, an invalid or
// expired handle, or (a split queue's partition) the retryable moving
// error or the answer that another partition may hold the handle's
// message, never anything else, and a handle that decodes is the one its
// fields encode.
func FuzzReceiptHandles(f *testing.F) {
	// Every input meets the same state, made afresh (the harness is
	// deterministic, so the seeds' handles are valid in each).
	setup := func(t *testing.T) (h *harness, qs []api.QueueKey, handles []string) {
		h = newHarness(t)
		plain := h.fifoQueue("plain.fifo", htAttrs)
		split := h.fifoQueue("split.fifo", htAttrs)
		for i := range 4 {
			g := "g" + strconv.Itoa(i)
			h.sendFIFO(plain, g, g, g)
			h.sendFIFO(split, g, g, g)
		}
		for _, m := range h.receive(plain, 10, 30) {
			handles = append(handles, m.ReceiptHandle)
		}
		h.internal(split, &SplitQueueRequest{At: 1 << 31, Part: 1})
		qs = []api.QueueKey{plain, split, part(split, 1)}
		for _, p := range qs[1:] {
			for _, m := range h.receive(p, 10, 30) {
				handles = append(handles, m.ReceiptHandle)
			}
		}
		return h, qs, handles
	}
	seedT := &testing.T{}
	_, _, seeds := setup(seedT)
	if seedT.Failed() || len(seeds) != 8 {
		f.Fatalf("the setup handed out %d handles", len(seeds))
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, handle string) {
		h, qs, _ := setup(t)
		plain := qs[0]
		if tag, serial, nonce, ok := decodeHandle(handle); ok {
			// A handle that decodes is the one its fields encode (or
			// another spelling of it, which base64 allows).
			hash, hashed := HandleGroupHash(handle)
			again := encodeHandle(tag, serial, nonce)
			if hashed {
				again = encodeSplitHandle(tag, serial, nonce, hash)
			}
			tag2, serial2, nonce2, _ := decodeHandle(again)
			hash2, hashed2 := HandleGroupHash(again)
			if tag2 != tag || serial2 != serial || nonce2 != nonce || hash2 != hash || hashed2 != hashed {
				t.Fatalf("handle %q decodes to (%d, %d, %d, %d) and its encoding %q to (%d, %d, %d, %d)", handle, tag, serial, nonce, hash, again, tag2, serial2, nonce2, hash2)
			}
		}
		for _, q := range qs {
			vis := 0
			for _, req := range []api.Request{
				&api.DeleteMessageRequest{QueueUrl: q.Path(), ReceiptHandle: handle},
				&api.ChangeMessageVisibilityRequest{QueueUrl: q.Path(), ReceiptHandle: handle, VisibilityTimeout: &vis},
			} {
				_, err := h.raw(q, req)
				switch {
				case err == nil, (IsQueueMoving(err) || IsHandleElsewhere(err)) && q != plain:
				case errCode(err) == "ReceiptHandleIsInvalid", errCode(err) == "InvalidParameterValue":
				default:
					t.Fatalf("%s of %q on %s: %v", req.Action(), handle, q, err)
				}
			}
		}
	})
}

// TestSplitsAndMergesForgetTagsOfMessagesGone splits a partition off a
// queue and merges it back again and again, its messages received before
// each split and deleted after each merge: each merge leaves the queue one
// more past handle tag, but one that names only messages gone is
// forgotten by the next split once a minute old (trimPast), so the queue
// is never refused a split for honouring too many, as a busy queue split,
// moved and merged many times within half a day once was. A tag that
// names a message still in flight is kept and counted: with one message
// a cycle left in flight, the splits are refused once maxPastTags such
// tags would be passed, and every kept message's handle still deletes it.
func TestSplitsAndMergesForgetTagsOfMessagesGone(t *testing.T) {
	var low, high []string // groups below and above the split's hash
	for i := 0; len(low) < 1 || len(high) < 3*maxPastTags; i++ {
		g := "g" + strconv.Itoa(i)
		if api.GroupHash(g) < 1<<31 {
			low = append(low, g)
		} else {
			high = append(high, g)
		}
	}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			h := newHarness(t)
			q := h.fifoQueue("ht.fifo", htAttrs)
			var kept []api.Message
			refusedAt := -1
			for cycle := range 3 * maxPastTags {
				n := strconv.Itoa(cycle)
				h.sendFIFO(q, "low-"+n, low[0], "low-"+n)
				h.sendFIFO(q, "high-"+n, high[cycle], "high-"+n)
				got := h.receive(q, 10, 43200)
				if len(got) != 2 {
					t.Fatalf("cycle %d: received %d messages, want 2", cycle, len(got))
				}
				p := uint32(cycle + 1)
				if _, err := h.raw(q, &SplitQueueRequest{At: 1 << 31, Part: p}); tooManyTags(err) {
					refusedAt = cycle
					kept = append(kept, got...)
					break
				} else if err != nil {
					t.Fatalf("cycle %d: split: %v", cycle, err)
				}
				h.advance(2 * time.Minute)
				if _, err := h.raw(q, &MergeQueueRequest{Part: p}); err != nil {
					t.Fatalf("cycle %d: merge: %v", cycle, err)
				}
				h.advance(2 * time.Minute)
				for _, m := range got {
					if keep && strings.HasPrefix(m.Body, "high-") {
						kept = append(kept, m)
						continue
					}
					if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
						t.Fatalf("cycle %d: delete %s: %v", cycle, m.Body, err)
					}
				}
			}
			switch {
			case !keep && refusedAt >= 0:
				t.Fatalf("with every message deleted, the split of cycle %d was refused for too many past tags", refusedAt)
			case keep && refusedAt < 0:
				t.Fatalf("with a message a cycle in flight, %d cycles of splits were never refused: the tags naming them are not counted", 3*maxPastTags)
			case keep && refusedAt < maxPastTags-2:
				t.Fatalf("with a message a cycle in flight, the split of cycle %d was refused; want about %d cycles first", refusedAt, maxPastTags)
			}
			for _, m := range kept {
				if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
					t.Fatalf("the handle of %s, in flight across every split and merge: %v", m.Body, err)
				}
			}
			if left := h.attrs(q, api.AttrApproximateNumberOfMessagesNotVisible)[api.AttrApproximateNumberOfMessagesNotVisible]; left != "0" {
				t.Fatalf("after deleting every message, %s are in flight", left)
			}
		})
	}
}
