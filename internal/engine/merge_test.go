package engine

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// TestMergeQueue splits a FIFO queue, works both halves, and merges them
// back: every group's messages in every state, its deduplication records
// and sequence numbers, the receipt handles either half handed out and
// the retries of receive attempts made in either half or over both must
// be the merged queue's; the partition merged away answers as a moved
// queue does; and the merged queue, owning every hash again, is a queue
// never split, whose snapshot restores.
func TestMergeQueue(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("ht.fifo", htAttrs)
	var groups []string
	sent := map[string][]string{} // by group: bodies, in send order
	ids := map[string]string{}    // MessageId by deduplication id
	seqs := map[string]string{}   // SequenceNumber by deduplication id
	send := func(p api.QueueKey, g, d string) {
		t.Helper()
		res := h.sendFIFO(p, d, g, d)
		if l := sent[g]; len(l) > 0 && !seqLess(seqs[l[len(l)-1]], res.SequenceNumber) {
			t.Fatalf("group %s: sequence number %s after %s", g, res.SequenceNumber, seqs[l[len(l)-1]])
		}
		sent[g] = append(sent[g], d)
		ids[d], seqs[d] = res.MessageId, res.SequenceNumber
		h.advance(time.Millisecond)
	}
	for i := range 20 {
		g := "g" + strconv.Itoa(i)
		groups = append(groups, g)
		for j := range 2 {
			send(q, g, fmt.Sprintf("%s-%d", g, j))
		}
	}
	receiveAttempt := func(p api.QueueKey, id string, max int) []api.Message {
		t.Helper()
		return h.must(p, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max, ReceiveRequestAttemptId: id,
			MessageSystemAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult).Messages
	}
	before := receiveAttempt(q, "before", 10) // made whole, shared by the split

	var hashes []uint32
	for _, g := range groups {
		hashes = append(hashes, api.GroupHash(g))
	}
	slices.Sort(hashes)
	at := hashes[len(hashes)/2]
	if _, err := h.raw(q, &SplitQueueRequest{At: at, Part: 1}); err != nil {
		t.Fatal(err)
	}
	p1 := part(q, 1)
	parts := []api.QueueKey{q, p1}
	// Both halves go on: sends interleaved in time, receives in each and
	// over both with one attempt id.
	for round := range 2 {
		for _, g := range groups {
			send(partitionOf(t, h.e, parts, g), g, fmt.Sprintf("%s-after-%d", g, round))
		}
	}
	// A burst in one half runs its sequence numbers ahead of the clock:
	// the other half's next message, sent later, has a lower number, so
	// the merged arrival list is in time order but not sequence order.
	var burstGroup, laterGroup string
	for _, g := range groups {
		switch partitionOf(t, h.e, parts, g) {
		case p1:
			burstGroup = g
		case q:
			laterGroup = g
		}
	}
	for i := range 3 {
		d := fmt.Sprintf("%s-burst-%d", burstGroup, i)
		res := h.sendFIFO(p1, d, burstGroup, d)
		sent[burstGroup] = append(sent[burstGroup], d)
		ids[d], seqs[d] = res.MessageId, res.SequenceNumber
	}
	h.advance(time.Microsecond)
	send(q, laterGroup, laterGroup+"-later")
	if last := sent[burstGroup][len(sent[burstGroup])-1]; !seqLess(seqs[laterGroup+"-later"], seqs[last]) {
		t.Fatalf("the later send got %s, the burst %s: want the burst ahead", seqs[laterGroup+"-later"], seqs[last])
	}
	inP1 := receiveAttempt(p1, "in-1", 10)
	// A receive over both partitions, as a router makes it: of at most
	// ten messages in all.
	var across []api.Message
	for _, p := range parts {
		across = append(across, receiveAttempt(p, "across", 5)...)
	}
	if len(before) == 0 || len(inP1) == 0 || len(across) == 0 {
		t.Fatalf("receives before the merge: %d, %d, %d messages", len(before), len(inP1), len(across))
	}
	inflight := slices.Concat(before, inP1, across)
	c0, c1 := h.counts(q), h.counts(p1)

	_, err := h.raw(q, &MergeQueueRequest{Part: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.raw(q, &MergeQueueRequest{Part: 1}); err != nil {
		t.Fatalf("the same merge again: %v", err)
	}
	if r, _ := h.e.PartitionOf(q); r.Split || r.Lo != 0 || r.Hi != hashEnd {
		t.Fatalf("partition 0 after the merge holds %+v, want a whole queue", r)
	}
	if _, ok := h.e.PartitionOf(p1); ok {
		t.Fatal("partition 1 is still there")
	}
	if c := h.counts(q); c[0] != c0[0]+c1[0] || c[1] != c0[1]+c1[1] || c[1] != len(inflight) {
		t.Fatalf("counts after the merge %v, before %v + %v (%d in flight)", c, c0, c1, len(inflight))
	}
	_, err = h.do(p1, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "x", MessageGroupId: groups[0], MessageDeduplicationId: "x"})
	if !IsQueueMoving(err) {
		t.Fatalf("a send to the partition merged away: %v, want IsQueueMoving", err)
	}

	// Retries of every attempt return its messages.
	for _, c := range []struct {
		id   string
		want []api.Message
	}{{"before", before}, {"in-1", inP1}, {"across", across}} {
		got := receiveAttempt(q, c.id, 10)
		if g, w := sortedIDs(got), sortedIDs(c.want); !slices.Equal(g, w) {
			t.Fatalf("retry of attempt %s after the merge: %v, want %v", c.id, g, w)
		}
	}
	// Duplicates of messages sent to either half are known.
	for _, g := range groups {
		for _, d := range []string{g + "-0", g + "-after-1"} {
			res := h.sendFIFO(q, d, g, d)
			if res.MessageId != ids[d] || res.SequenceNumber != seqs[d] {
				t.Fatalf("duplicate of %s after the merge: %s %s, want %s %s", d, res.MessageId, res.SequenceNumber, ids[d], seqs[d])
			}
		}
		send(q, g, g+"-merged")
	}

	// The merged arrival list is in time order, not sequence order: the
	// snapshot must restore, to the same bytes.
	snap := snapshotBytes(t, h.e)
	restoreHarness(t, h)
	if again := snapshotBytes(t, h.e); !bytes.Equal(snap, again) {
		t.Fatal("a restored engine's snapshot differs from the one it was restored from")
	}

	// Every handle handed out, by the whole queue or either half, acts on
	// its message.
	for _, m := range inflight {
		if err := h.changeVis(q, m.ReceiptHandle, 60); err != nil {
			t.Fatalf("visibility change of %s by a handle from before the merge: %v", m.Body, err)
		}
		if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
			t.Fatalf("delete of %s by a handle from before the merge: %v", m.Body, err)
		}
		g := m.Attributes[api.MsgAttrMessageGroupId]
		sent[g] = slices.DeleteFunc(sent[g], func(d string) bool { return d == m.Body })
	}
	drained := map[string][]string{}
	drainPartitions(t, h, []api.QueueKey{q}, func(_ api.QueueKey, m api.Message) {
		if _, hashed := HandleGroupHash(m.ReceiptHandle); hashed {
			t.Fatalf("the merged queue, whole again, handed out a handle of a split queue")
		}
		g := m.Attributes[api.MsgAttrMessageGroupId]
		drained[g] = append(drained[g], m.Body)
	})
	for _, g := range groups {
		if !slices.Equal(drained[g], sent[g]) {
			t.Fatalf("group %s drained %v, want %v", g, drained[g], sent[g])
		}
	}

	// Partition 1 is not made again while its record lasts; another is.
	_, err = h.raw(q, &SplitQueueRequest{At: at, Part: 1})
	wantCode(t, err, "InvalidParameterValue")
	if _, err := h.raw(q, &SplitQueueRequest{At: at, Part: 2}); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		own := partitionOf(t, h.e, []api.QueueKey{q, part(q, 2)}, g)
		res := h.sendFIFO(own, g+"-resplit", g, g+"-resplit")
		if !seqLess(seqs[g+"-merged"], res.SequenceNumber) {
			t.Fatalf("group %s: sequence number %s after %s", g, res.SequenceNumber, seqs[g+"-merged"])
		}
	}
}

// sortedIDs returns the MessageIds of msgs, sorted.
func sortedIDs(msgs []api.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.MessageId)
	}
	slices.Sort(out)
	return out
}

// TestMergeRefusals checks what a merge refuses: partitions that do not
// touch, a queue never split, a partition into itself, and a fenced one.
func TestMergeRefusals(t *testing.T) {
	h := newHarness(t)
	whole := h.fifoQueue("whole.fifo", htAttrs)
	q := h.fifoQueue("ht.fifo", htAttrs)
	for _, s := range []struct {
		from api.QueueKey
		req  SplitQueueRequest
	}{{q, SplitQueueRequest{At: 1 << 30, Part: 1}}, {part(q, 1), SplitQueueRequest{At: 1 << 31, Part: 2}}} {
		if _, err := h.raw(s.from, &s.req); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		into api.QueueKey
		part uint32
	}{
		{q, 2},                // [0, 2^30) and [2^31, 2^32) do not touch
		{part(q, 1), 0},       // partition 0 begins before 1, not where it ends
		{q, 0},                // into itself
		{q, 9},                // no partition 9
		{q, MaxPart + 1},      // no such number
		{whole, 1},            // never split
		{part(q, 2), 1},       // 1 ends where 2 begins, not the other way
		{part(whole, 1), 0},   // no such queue
		{part(q, 1), MaxPart}, // no such partition
	} {
		_, err := h.raw(c.into, &MergeQueueRequest{Part: c.part})
		if err == nil {
			t.Fatalf("merge of %d into %s succeeded", c.part, c.into)
		}
		if ae, ok := err.(*api.Error); !ok || ae.Code != "InvalidParameterValue" && ae.Code != "QueueDoesNotExist" {
			t.Fatalf("merge of %d into %s: %v", c.part, c.into, err)
		}
	}
	if _, err := h.raw(part(q, 1), &FenceQueueRequest{Move: "m1"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.raw(part(q, 1), &MergeQueueRequest{Part: 2})
	if !IsQueueMoving(err) {
		t.Fatalf("merge into a fenced partition: %v, want IsQueueMoving", err)
	}
	_, err = h.raw(q, &MergeQueueRequest{Part: 1})
	if !IsQueueMoving(err) {
		t.Fatalf("merge of a fenced partition: %v, want IsQueueMoving", err)
	}
}

// mergeSetup makes a high-throughput FIFO queue with 20 groups of 2
// messages, receives them all (handles of the whole queue, v1), and
// returns the split point at the median group hash.
func mergeSetup(t *testing.T, h *harness) (q api.QueueKey, msgs []api.Message, at uint32) {
	q = h.fifoQueue("ht.fifo", htAttrs)
	var hashes []uint32
	for i := range 20 {
		g := "g" + strconv.Itoa(i)
		hashes = append(hashes, api.GroupHash(g))
		for j := range 2 {
			d := fmt.Sprintf("%s-%d", g, j)
			h.sendFIFO(q, d, g, d)
			h.advance(time.Millisecond)
		}
	}
	for got := h.receive(q, 10, 3600); len(got) > 0; got = h.receive(q, 10, 3600) {
		msgs = append(msgs, got...)
	}
	slices.Sort(hashes)
	return q, msgs, hashes[len(hashes)/2]
}

// TestMergeAfterMoveBack: partition 1 is moved to another engine and
// back (the balancer's "idle partitions are brought into one shard and
// merged"), then merged into partition 0, which never moved. Handles the
// whole queue handed out before the split must still act on their
// messages.
func TestMergeAfterMoveBack(t *testing.T) {
	a := newHarness(t)
	b := newHarness(t)
	b.ids = 1_000_000
	q, msgs, at := mergeSetup(t, a)
	a.internal(q, &SplitQueueRequest{At: at, Part: 1})
	p1 := part(q, 1)
	moveBetween(t, a, b, p1, "out")
	moveBetween(t, b, a, p1, "back")
	a.now = max(a.now, b.now)
	// Before the merge partition 1 honours them.
	for _, m := range msgs {
		if partitionOf(t, a.e, []api.QueueKey{q, p1}, m.Attributes[api.MsgAttrMessageGroupId]) != p1 {
			continue
		}
		if err := a.changeVis(p1, m.ReceiptHandle, 3600); err != nil {
			t.Fatalf("before the merge, partition 1: %v", err)
		}
	}
	a.internal(q, &MergeQueueRequest{Part: 1})
	// Every delete succeeds, and deletes its message.
	for _, m := range msgs {
		if err := a.deleteMsg(q, m.ReceiptHandle); err != nil {
			t.Fatalf("delete of %s after the merge: %v", m.Body, err)
		}
	}
	if c := a.counts(q); c != [3]int{0, 0, 0} {
		t.Fatalf("after deleting all %d messages by their handles, partition 0 holds %v (visible, in flight, delayed)", len(msgs), c)
	}
}

// TestMergeAfterPartition0MovedBack: the queue was moved once before
// its split (a past tag every partition carries); partition 0 is moved away
// and back, partition 1 stays, then 1 is merged into 0. Handles from before
// the first move must still act on their messages.
func TestMergeAfterPartition0MovedBack(t *testing.T) {
	a := newHarness(t)
	b := newHarness(t)
	c := newHarness(t)
	b.ids, c.ids = 1_000_000, 2_000_000
	q, msgs, at := mergeSetup(t, a)
	// Some serials taken in b, so that serials differ.
	other := b.fifoQueue("other.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	for i := range 5 {
		b.sendFIFO(other, "f"+strconv.Itoa(i), "g", "")
	}
	moveBetween(t, a, b, q, "first")
	b.internal(q, &SplitQueueRequest{At: at, Part: 1})
	moveBetween(t, b, c, q, "out")
	moveBetween(t, c, b, q, "back")
	b.now = max(b.now, c.now)
	for _, m := range msgs {
		p := partitionOf(t, b.e, []api.QueueKey{q, part(q, 1)}, m.Attributes[api.MsgAttrMessageGroupId])
		if err := b.changeVis(p, m.ReceiptHandle, 3600); err != nil {
			t.Fatalf("before the merge, %s in %v: %v", m.Body, p, err)
		}
	}
	b.internal(q, &MergeQueueRequest{Part: 1})
	bad := 0
	for _, m := range msgs {
		if err := b.changeVis(q, m.ReceiptHandle, 3600); err != nil {
			bad++
			t.Logf("after the merge, %s: %v", m.Body, err)
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d handles from before the first move no longer act on their message after the merge", bad, len(msgs))
	}
}

// TestMergeThenPartitionNumberReused: a partition dead-letters through its outbox to
// a dead-letter queue in another engine, is merged away, and its number is
// used again by a later split (allowed once its ten-minute record is gone).
// The new partition numbers its outbox from 1 again under the same
// (key, createdAt) source: the dead-letter queue takes nothing.
func TestMergeThenPartitionNumberReused(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	b.ids = 1_000_000
	dlq := a.fifoQueue("dead.fifo", nil)
	attrs := map[string]string{
		api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId",
		api.AttrContentBasedDeduplication: "true",
		api.AttrRedrivePolicy:             fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion)),
	}
	q := a.fifoQueue("q.fifo", attrs)
	moveBetween(t, a, b, dlq, "m-dlq")
	at := uint32(1 << 31)
	var g string
	for i := 0; ; i++ {
		if g = "g" + strconv.Itoa(i); api.GroupHash(g) >= at {
			break
		}
	}
	r := &relayer{t: t, hosts: []*harness{a, b}, log: t.Logf}
	deadLetterIn := func(p api.QueueKey, body string) {
		a.sendFIFO(p, body, g, "")
		if got := a.receive(p, 1, 0); len(got) != 1 {
			t.Fatalf("receive: %d", len(got))
		}
		if got := a.receive(p, 10, 30); len(got) != 0 {
			t.Fatalf("a receive past maxReceiveCount returned %d", len(got))
		}
		r.run(false)
	}
	p1 := part(q, 1)
	a.internal(q, &SplitQueueRequest{At: at, Part: 1})
	deadLetterIn(p1, "first")
	a.internal(q, &MergeQueueRequest{Part: 1})
	a.advance(11 * time.Minute)
	// Any later drop or merge in the engine prunes the expired record.
	x := a.fifoQueue("x.fifo", nil)
	moveBetween(t, a, b, x, "m-x")
	a.internal(q, &SplitQueueRequest{At: at, Part: 1})
	deadLetterIn(p1, "second")
	b.now = a.now
	if c := b.counts(dlq); c[0] != 2 {
		t.Fatalf("dead-letter queue holds %v, want 2 visible (first and second)", c)
	}
}

// TestMergeUnderOpenView: a view taken before a merge writes the
// bytes a snapshot at that moment wrote, whatever the merge and the
// commands after it change.
func TestMergeUnderOpenView(t *testing.T) {
	h := newHarness(t)
	q, msgs, at := mergeSetup(t, h)
	h.internal(q, &SplitQueueRequest{At: at, Part: 1})
	parts := []api.QueueKey{q, part(q, 1)}
	ten := 10
	for i := range 20 {
		g := "g" + strconv.Itoa(i)
		p := partitionOf(t, h.e, parts, g)
		d := g + "-x"
		h.sendFIFO(p, d, g, d)
		h.advance(time.Millisecond)
	}
	for _, p := range parts {
		h.must(p, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &ten, ReceiveRequestAttemptId: "a"})
	}
	before := snapshotBytes(t, h.e)
	v, err := h.e.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	h.internal(q, &MergeQueueRequest{Part: 1})
	for i := range 200 {
		g := "g" + strconv.Itoa(i%20)
		d := g + "-y" + strconv.Itoa(i)
		h.sendFIFO(q, d, g, d)
	}
	for _, m := range msgs[:10] {
		h.changeVis(q, m.ReceiptHandle, 0)
		h.deleteMsg(q, m.ReceiptHandle)
	}
	h.receive(q, 10, 30)
	var b bytes.Buffer
	if _, err := v.WriteTo(&b, noLock{}); err != nil {
		t.Fatal(err)
	}
	v.Release()
	if !bytes.Equal(b.Bytes(), before) {
		t.Fatalf("the view taken before the merge wrote other bytes (%d vs %d)", b.Len(), len(before))
	}
	restoreHarness(t, h)
}

// TestInstallRetryAfterMerge: the mover that brought partition 1 here
// repeats its install (a retry after a lost answer, which move.go says is
// safe) after the partition was merged into 0: the image comes back as
// partition 1, every message of it now held twice.
func TestInstallRetryAfterMerge(t *testing.T) {
	a := newHarness(t)
	b := newHarness(t)
	b.ids = 1_000_000
	q, _, at := mergeSetup(t, a)
	a.internal(q, &SplitQueueRequest{At: at, Part: 1})
	p1 := part(q, 1)
	moveBetween(t, a, b, p1, "out")
	// moveBetween from b back to a, keeping the image.
	a.now = max(a.now, b.now)
	b.internal(p1, &FenceQueueRequest{Move: "back", Spanning: true})
	var image bytes.Buffer
	if err := b.e.ExportQueue(p1, "back", &image); err != nil {
		t.Fatal(err)
	}
	a.internal(p1, &InstallQueueRequest{Move: "back", Image: image.Bytes()})
	b.internal(p1, &DropQueueRequest{Move: "back"})
	a.internal(q, &MergeQueueRequest{Part: 1})
	total := a.counts(q)
	_, err := a.raw(p1, &InstallQueueRequest{Move: "back", Image: image.Bytes()})
	if err == nil {
		c := a.counts(p1)
		t.Fatalf("a repeated install after the merge succeeded: partition 1 holds %v again, partition 0 %v", c, total)
	}
}
