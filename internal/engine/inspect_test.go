package engine

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// unchanged runs fn and fails the test if the engine's state (its
// snapshot) differs afterwards: inspection must change nothing.
func (h *harness) unchanged(fn func()) {
	h.t.Helper()
	snap := func() []byte {
		var b bytes.Buffer
		if err := h.e.Snapshot(&b); err != nil {
			h.t.Fatalf("Snapshot: %v", err)
		}
		return b.Bytes()
	}
	before := snap()
	fn()
	if !bytes.Equal(before, snap()) {
		h.t.Fatal("inspecting the engine changed its state")
	}
}

func (h *harness) peek(q api.QueueKey, opts PeekOptions) []PeekedMessage {
	h.t.Helper()
	var out []PeekedMessage
	h.unchanged(func() {
		var ok bool
		if out, ok = h.e.Peek(q, h.now, opts); !ok {
			h.t.Fatalf("Peek(%v): no such queue", q)
		}
	})
	return out
}

func (h *harness) groups(q api.QueueKey, opts GroupsOptions) GroupsPage {
	h.t.Helper()
	var out GroupsPage
	h.unchanged(func() {
		var ok bool
		if out, ok = h.e.Groups(q, h.now, opts); !ok {
			h.t.Fatalf("Groups(%v): no such queue", q)
		}
	})
	return out
}

func peekedBodies(ms []PeekedMessage) string {
	var b []string
	for _, m := range ms {
		b = append(b, m.Body+":"+string(m.State)+":"+strconv.Itoa(m.ReceiveCount))
	}
	return strings.Join(b, " ")
}

func TestPeekFIFO(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrMessageRetentionPeriod: "120"})
	h.sendFIFO(q, "a1", "a", "1")
	h.advance(time.Second)
	h.sendFIFO(q, "b1", "b", "2")
	h.advance(time.Second)
	h.sendFIFO(q, "a2", "a", "3")
	h.must(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: map[string]string{api.AttrDelaySeconds: "30"}})
	h.sendFIFO(q, "c1", "c", "4") // delayed by the queue's DelaySeconds
	got := h.receive(q, 1, 10)    // a1 goes in flight and holds group a
	if len(got) != 1 || got[0].Body != "a1" {
		t.Fatalf("received %v, want a1", bodies(got))
	}

	all := h.peek(q, PeekOptions{Limit: 10})
	if s, want := peekedBodies(all), "a1:inflight:1 b1:visible:0 a2:visible:0 c1:delayed:0"; s != want {
		t.Fatalf("peek = %s, want %s", s, want)
	}
	for i := 1; i < len(all); i++ {
		if all[i].SequenceNumber <= all[i-1].SequenceNumber {
			t.Fatalf("peek not in sequence order: %+v", all)
		}
	}
	a1 := all[0]
	if a1.GroupID != "a" || a1.DeduplicationID != "1" || a1.VisibleAt != h.now+10*int64(time.Second) ||
		a1.ReceivedAt != h.now || a1.FirstReceivedAt != h.now || a1.SentAt != t0 || a1.SenderID != testAccount {
		t.Fatalf("peeked in-flight message: %+v", a1)
	}
	if all[1].VisibleAt != 0 || all[1].ReceivedAt != 0 {
		t.Fatalf("peeked visible message: %+v", all[1])
	}

	// Limit, and one group in its order.
	if s := peekedBodies(h.peek(q, PeekOptions{Limit: 2})); s != "a1:inflight:1 b1:visible:0" {
		t.Fatalf("peek limit 2 = %s", s)
	}
	if s := peekedBodies(h.peek(q, PeekOptions{Group: strp("a")})); s != "a1:inflight:1" {
		t.Fatalf("peek group a, limit 1 = %s", s)
	}
	if s := peekedBodies(h.peek(q, PeekOptions{Group: strp("a"), Limit: 5})); s != "a1:inflight:1 a2:visible:0" {
		t.Fatalf("peek group a = %s", s)
	}
	if s := peekedBodies(h.peek(q, PeekOptions{Group: strp("nope"), Limit: 5})); s != "" {
		t.Fatalf("peek unknown group = %s", s)
	}

	// Peeking received nothing: the next receive gets b1 (a is held), and
	// b1 is on its first receive.
	got = h.receive(q, 1, 10)
	if len(got) != 1 || got[0].Body != "b1" || got[0].Attributes[api.MsgAttrApproximateReceiveCount] != "1" {
		t.Fatalf("received %+v, want b1 on its first receive", got)
	}

	// Time passes without a command: timers run out in what peek shows;
	// then a1 and b1 outlive the retention period.
	h.advance(31 * time.Second)
	if s := peekedBodies(h.peek(q, PeekOptions{Limit: 10})); s != "a1:visible:1 b1:visible:1 a2:visible:0 c1:visible:0" {
		t.Fatalf("peek after the timers = %s", s)
	}
	h.advance(120*time.Second - 31*time.Second - time.Second)
	if s := peekedBodies(h.peek(q, PeekOptions{Limit: 10})); s != "a2:visible:0 c1:visible:0" {
		t.Fatalf("peek after retention = %s", s)
	}
	if _, ok := h.e.Peek(api.QueueKey{Account: testAccount, Name: "missing"}, h.now, PeekOptions{}); ok {
		t.Fatal("Peek of a missing queue answered ok")
	}
}

func TestPeekBodyAndAttributes(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	body := strings.Repeat("é", 10) // 2 bytes each
	h.send(q, &api.SendMessageRequest{MessageBody: body, MessageAttributes: map[string]api.MessageAttributeValue{
		"kind": {DataType: "String", StringValue: strp("test")},
	}})
	tests := []struct {
		max      int
		wantBody string
		cut      bool
	}{
		{0, body, false},
		{20, body, false},
		{5, "éé", true}, // not mid-character
		{4, "éé", true},
		{1, "", true},
	}
	for _, tc := range tests {
		m := h.peek(q, PeekOptions{MaxBodyBytes: tc.max})[0]
		if m.Body != tc.wantBody || m.BodyTruncated != tc.cut || m.BodyBytes != 20 {
			t.Errorf("MaxBodyBytes %d: body %q truncated %v bytes %d, want %q %v 20", tc.max, m.Body, m.BodyTruncated, m.BodyBytes, tc.wantBody, tc.cut)
		}
		if v := m.MessageAttributes["kind"]; v.StringValue == nil || *v.StringValue != "test" || m.Size != 20+len("kind")+len("String")+len("test") {
			t.Errorf("attributes %+v size %d", m.MessageAttributes, m.Size)
		}
		if m.SequenceNumber != 0 || m.State != StateVisible {
			t.Errorf("standard message: %+v", m)
		}
	}
}

// A standard dead-letter queue keeps a moved message's original enqueue
// time, so the message sits in the aged heap: Peek merges it in order with
// the messages that arrived directly.
func TestPeekStandardDeadLetterOrder(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	src := h.createQueue("src", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	h.send(src, &api.SendMessageRequest{MessageBody: "old1"})
	h.send(src, &api.SendMessageRequest{MessageBody: "old2"})
	h.advance(time.Second)
	h.send(dlq, &api.SendMessageRequest{MessageBody: "direct"})
	h.advance(time.Second)
	if got := h.receive(src, 10, 0); len(got) != 2 {
		t.Fatalf("first receive got %d messages", len(got))
	}
	if got := h.receive(src, 10, 0); len(got) != 0 { // both moved to the DLQ
		t.Fatalf("second receive got %v", bodies(got))
	}
	if s := peekedBodies(h.peek(dlq, PeekOptions{Limit: 10})); s != "old1:visible:1 old2:visible:1 direct:visible:0" {
		t.Fatalf("peek dlq = %s", s)
	}
	if s := peekedBodies(h.peek(dlq, PeekOptions{Limit: 1})); s != "old1:visible:1" {
		t.Fatalf("peek dlq limit 1 = %s", s)
	}
	if m := h.peek(dlq, PeekOptions{Limit: 1})[0]; m.DeadLetterSourceARN != src.ARN(testRegion) || m.EnqueuedAt != t0 {
		t.Fatalf("moved message: %+v", m)
	}
}

func TestSmallestOfHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		h := newIndexedHeap(agedLess, agedPos)
		var all []*message
		for i := range r.IntN(60) {
			m := &message{serial: uint64(i + 1), enqueuedAt: r.Int64N(20)}
			h.Push(m)
			all = append(all, m)
		}
		keep := func(m *message) bool { return m.enqueuedAt%3 != 0 }
		var want []*message
		for _, m := range all {
			if keep(m) {
				want = append(want, m)
			}
		}
		slices.SortFunc(want, func(a, b *message) int {
			if agedLess(a, b) {
				return -1
			}
			return 1
		})
		n := r.IntN(70)
		want = want[:min(n, len(want))]
		before := slices.Clone(h.items)
		got := smallest(&h, n, keep)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: smallest(%d) returned %d items, want %d", trial, n, len(got), len(want))
		}
		if !slices.Equal(before, h.items) {
			t.Fatalf("trial %d: smallest modified the heap", trial)
		}
	}
}

func TestGroupsFIFO(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	// Groups g0..g4, sent in that order; g1 gets three messages.
	for i := range 5 {
		g := "g" + strconv.Itoa(i)
		h.sendFIFO(q, g+"-1", g, g+"-1")
		h.advance(time.Millisecond)
	}
	h.sendFIFO(q, "g1-2", "g1", "g1-2")
	h.sendFIFO(q, "g1-3", "g1", "g1-3")

	// A receive with an attempt id holds g0 and g1 (g0 first, it is
	// oldest; then g1's three).
	max := 3
	res := h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max, VisibilityTimeout: intp(30), ReceiveRequestAttemptId: "attempt-1"}).(*api.ReceiveMessageResult)
	if b := bodies(res.Messages); !slices.Equal(b, []string{"g0-1", "g1-1", "g1-2"}) {
		t.Fatalf("received %v", b)
	}
	receivedAt := h.now
	h.advance(time.Second)

	page := h.groups(q, GroupsOptions{Limit: 2})
	if !page.FIFO || page.Total != 5 || page.InFlight != 2 || len(page.Groups) != 2 || page.Next == "" {
		t.Fatalf("first page: %+v", page)
	}
	g0, g1 := page.Groups[0], page.Groups[1]
	if g0.ID != "g0" || g0.Messages != 1 || g0.InFlight != 1 || g0.Owner == nil || g0.OldestSentAt != t0 {
		t.Fatalf("g0: %+v", g0)
	}
	if g1.ID != "g1" || g1.Messages != 3 || g1.InFlight != 2 || g1.Visible != 1 || g1.Owner == nil {
		t.Fatalf("g1: %+v", g1)
	}
	own := g1.Owner
	if own.ReceiptHandle != res.Messages[1].ReceiptHandle || own.AttemptID != "attempt-1" ||
		own.ReceivedAt != receivedAt || own.VisibleAt != receivedAt+30*int64(time.Second) || own.ReceiveCount != 1 {
		t.Fatalf("g1 owner: %+v", own)
	}
	if g0.HeadSequence >= g1.HeadSequence {
		t.Fatalf("groups not in head order: %+v", page.Groups)
	}

	page2 := h.groups(q, GroupsOptions{Limit: 2, After: page.Next})
	if len(page2.Groups) != 2 || page2.Groups[0].ID != "g2" || page2.Groups[1].ID != "g3" || page2.Groups[0].Owner != nil {
		t.Fatalf("second page: %+v", page2)
	}
	page3 := h.groups(q, GroupsOptions{Limit: 2, After: page2.Next})
	if len(page3.Groups) != 1 || page3.Groups[0].ID != "g4" || page3.Next != "" {
		t.Fatalf("last page: %+v", page3)
	}
	if one := h.groups(q, GroupsOptions{Group: strp("g1")}); len(one.Groups) != 1 || one.Groups[0].ID != "g1" || one.Next != "" {
		t.Fatalf("one group: %+v", one)
	}
	if none := h.groups(q, GroupsOptions{Group: strp("zz")}); len(none.Groups) != 0 || none.Total != 5 {
		t.Fatalf("unknown group: %+v", none)
	}

	// A receive without an attempt id owns g2: the owner has no attempt id.
	got := h.receive(q, 1, 30)
	if g := h.groups(q, GroupsOptions{Group: strp("g2")}).Groups[0]; g.Owner == nil || g.Owner.AttemptID != "" || g.Owner.ReceiptHandle != got[0].ReceiptHandle {
		t.Fatalf("g2 after a receive: %+v", g)
	}

	// The visibility timeouts run out without a command: nothing holds a
	// group any more.
	h.advance(31 * time.Second)
	page = h.groups(q, GroupsOptions{Limit: 10})
	if page.InFlight != 0 || len(page.Groups) != 5 {
		t.Fatalf("after the timeouts: %+v", page)
	}
	for _, g := range page.Groups {
		if g.Owner != nil || g.InFlight != 0 || g.Visible != g.Messages {
			t.Fatalf("group %s after the timeouts: %+v", g.ID, g)
		}
	}
}

func TestGroupsStandard(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	for _, g := range []string{"b", "a", "b", "c", "b"} {
		h.send(q, &api.SendMessageRequest{MessageBody: g, MessageGroupId: g})
	}
	h.send(q, &api.SendMessageRequest{MessageBody: "late", MessageGroupId: "a", DelaySeconds: intp(60)})
	got := h.receive(q, 1, 30) // the fair queue serves a tenant with nothing in flight
	if len(got) != 1 {
		t.Fatal("nothing received")
	}
	page := h.groups(q, GroupsOptions{Limit: 2})
	if page.FIFO || page.Total != 3 || len(page.Groups) != 2 || page.Next != "b" {
		t.Fatalf("first page: %+v", page)
	}
	byID := map[string]GroupInfo{}
	for _, g := range append(page.Groups, h.groups(q, GroupsOptions{After: page.Next, Limit: 2}).Groups...) {
		byID[g.ID] = g
	}
	total := 0
	for id, g := range byID {
		if g.Owner != nil || g.Visible+g.InFlight+g.Delayed != g.Messages {
			t.Errorf("tenant %s: %+v", id, g)
		}
		total += g.InFlight
	}
	if a := byID["a"]; a.Messages != 2 || a.Delayed+a.InFlight != 2-a.Visible || byID["b"].Messages != 3 || byID["c"].Messages != 1 || total != 1 {
		t.Fatalf("tenants: %+v", byID)
	}
}

func TestQueueSummary(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dlq.fifo", nil)
	src := h.fifoQueue("src.fifo", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 4)})
	h.sendFIFO(src, "x", "g1", "1")
	h.sendFIFO(src, "y", "g2", "2")
	var s, d QueueSummary
	h.unchanged(func() {
		s, _ = h.e.QueueSummary(src, h.now)
		d, _ = h.e.QueueSummary(dlq, h.now)
	})
	if s.DeadLetterTarget != dlq.ARN(testRegion) || s.MaxReceiveCount != 4 || s.DeadLetterSources != 0 || s.Groups != 2 || s.Visible != 2 || !s.FIFO {
		t.Fatalf("source summary: %+v", s)
	}
	if d.DeadLetterTarget != "" || d.DeadLetterSources != 1 || d.Groups != 0 || d.MoveTaskRunning {
		t.Fatalf("dlq summary: %+v", d)
	}
	if _, ok := h.e.QueueSummary(api.QueueKey{Account: testAccount, Name: "none"}, h.now); ok {
		t.Fatal("summary of a missing queue")
	}
}

// TestExportPageWalksEveryMessageOnce pages through a queue's messages a
// few at a time while messages are deleted (the page's last one among
// them, so that the cursor must find its place again) and sent between
// pages: every message stored throughout comes exactly once, in order,
// and none deleted before its page comes.
func TestExportPageWalksEveryMessageOnce(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("export", nil)
	for i := range 50 {
		h.send(q, &api.SendMessageRequest{MessageBody: "m" + strconv.Itoa(i)})
	}
	// deleteBody receives until the message with that body comes, deletes
	// it, and makes the others visible again.
	deleteBody := func(body string) {
		t.Helper()
		h.advance(time.Millisecond) // what was given back is visible again
		var others []string
		defer func() {
			for _, h2 := range others {
				zero := 0
				h.must(q, &api.ChangeMessageVisibilityRequest{QueueUrl: q.Path(), ReceiptHandle: h2, VisibilityTimeout: &zero})
			}
		}()
		for range 20 {
			found := false
			for _, m := range h.receive(q, 10, 1000) {
				if m.Body != body {
					others = append(others, m.ReceiptHandle)
				} else if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
					t.Fatal(err)
				} else {
					found = true
				}
			}
			if found {
				return
			}
		}
		t.Fatalf("%s never came to be deleted (others %d)", body, len(others))
	}
	var cur ExportCursor
	var got []string
	deleted := map[string]bool{}
	for page := 0; ; page++ {
		if page > 50 {
			t.Fatalf("the export has not ended after %d pages: %v", page, got)
		}
		msgs, done, ok, err := h.e.ExportPage(q, h.now, &cur, 7, "")
		if !ok || err != nil {
			t.Fatalf("ExportPage: %v %v", ok, err)
		}
		for _, m := range msgs {
			got = append(got, m.Body)
		}
		if done {
			break
		}
		// On even pages the cursor's own last message goes, and it must
		// find its place again; on odd pages it resumes where it was.
		targets := []string{"m" + strconv.Itoa(min(49, len(got)+3))}
		if page%2 == 0 {
			targets = append(targets, got[len(got)-1])
		}
		for _, target := range targets {
			if deleted[target] {
				continue
			}
			deleteBody(target)
			deleted[target] = true
		}
		h.send(q, &api.SendMessageRequest{MessageBody: "late" + strconv.Itoa(page)})
	}
	seen := map[string]bool{}
	last := -1
	for _, b := range got {
		if seen[b] {
			t.Fatalf("%s exported twice: %v", b, got)
		}
		seen[b] = true
		if n, err := strconv.Atoi(strings.TrimPrefix(b, "m")); err == nil && strings.HasPrefix(b, "m") {
			if n <= last {
				t.Fatalf("exported out of order: %v", got)
			}
			last = n
		}
	}
	for i := range 50 {
		b := "m" + strconv.Itoa(i)
		if !seen[b] && !deleted[b] {
			t.Fatalf("%s was stored throughout and not exported: %v", b, got)
		}
	}
}

// TestExportPageAfterItsMessageMoved moves the last message an export's
// page returned to a FIFO dead-letter queue between pages: the cursor's
// record is then linked in the dead-letter queue's arrival list, and the
// export of the source queue must not follow it there.
func TestExportPageAfterItsMessageMoved(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("moved-dlq.fifo", nil)
	q := h.fifoQueue("moved.fifo", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	for i := range 5 {
		h.sendFIFO(q, "m"+strconv.Itoa(i), "g", "d"+strconv.Itoa(i))
	}
	var cur ExportCursor
	page, done, ok, err := h.e.ExportPage(q, h.now, &cur, 2, "")
	if !ok || err != nil || done || len(page) != 2 || page[1].Body != "m1" {
		t.Fatalf("first page: %+v done %v ok %v err %v", page, done, ok, err)
	}
	// Received once with no visibility timeout, each message goes to the
	// dead-letter queue at its next receive, in order.
	if got := h.receive(q, 10, 0); len(got) != 5 {
		t.Fatalf("received %d messages, want 5", len(got))
	}
	h.advance(time.Millisecond)
	if got := h.receive(q, 10, 0); len(got) != 0 {
		t.Fatalf("received %d messages after their last receive, want 0 (moved)", len(got))
	}
	if n := h.counts(dlq); n[0] != 5 {
		t.Fatalf("dead-letter queue counts %v, want 5 visible", n)
	}
	page, done, ok, err = h.e.ExportPage(q, h.now, &cur, 10, "")
	if !ok || err != nil || !done || len(page) != 0 {
		t.Fatalf("after the move the export of the empty source gave %d messages (%+v), done %v ok %v err %v", len(page), page, done, ok, err)
	}
}
