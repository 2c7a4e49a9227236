package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

func TestFIFOSendRules(t *testing.T) {
	h := newHarness(t)
	plain := h.fifoQueue("plain.fifo", nil)
	cbd := h.fifoQueue("cbd.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})

	tests := []struct {
		name    string
		q       api.QueueKey
		req     api.SendMessageRequest
		code    string
		message string
	}{
		{"no group id", plain, api.SendMessageRequest{MessageBody: "b", MessageDeduplicationId: "d"}, "MissingParameter", "The request must contain the parameter MessageGroupId."},
		{"no dedup id without content-based dedup", plain, api.SendMessageRequest{MessageBody: "b", MessageGroupId: "g"}, "InvalidParameterValue",
			"The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"},
		{"per-message delay", plain, api.SendMessageRequest{MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "d", DelaySeconds: intp(5)}, "InvalidParameterValue",
			"Value 5 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."},
		{"per-message delay on content-based queue", cbd, api.SendMessageRequest{MessageBody: "b", MessageGroupId: "g", DelaySeconds: intp(1)}, "InvalidParameterValue", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.QueueUrl = tc.q.Path()
			_, err := h.do(tc.q, &req)
			ae := wantCode(t, err, tc.code)
			if tc.message != "" && ae.Message != tc.message {
				t.Errorf("message = %q, want %q", ae.Message, tc.message)
			}
		})
	}
	if c := h.counts(plain); c != [3]int{} {
		t.Errorf("counts after refused sends = %v, want none", c)
	}

	t.Run("explicit delay 0 is accepted", func(t *testing.T) {
		h.send(plain, &api.SendMessageRequest{MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "zero", DelaySeconds: intp(0)})
	})
	t.Run("content-based id is the SHA-256 of the body; an explicit id wins", func(t *testing.T) {
		h.send(cbd, &api.SendMessageRequest{MessageBody: "hello", MessageGroupId: "g",
			MessageAttributes: map[string]api.MessageAttributeValue{"a": {DataType: "String", StringValue: strp("x")}}})
		h.send(cbd, &api.SendMessageRequest{MessageBody: "world", MessageGroupId: "g", MessageDeduplicationId: "mine"})
		msgs := h.receive(cbd, 10, -1)
		if len(msgs) != 2 {
			t.Fatalf("received %d messages, want 2", len(msgs))
		}
		if got, want := msgs[0].Attributes[api.MsgAttrMessageDeduplicationId], api.ContentDeduplicationID("hello"); got != want {
			t.Errorf("content-based dedup id = %q, want %q", got, want)
		}
		if got := msgs[1].Attributes[api.MsgAttrMessageDeduplicationId]; got != "mine" {
			t.Errorf("explicit dedup id = %q, want mine", got)
		}
	})
	t.Run("content-based dedup ignores attributes", func(t *testing.T) {
		a := h.send(cbd, &api.SendMessageRequest{MessageBody: "same", MessageGroupId: "g",
			MessageAttributes: map[string]api.MessageAttributeValue{"a": {DataType: "String", StringValue: strp("1")}}})
		b := h.send(cbd, &api.SendMessageRequest{MessageBody: "same", MessageGroupId: "other",
			MessageAttributes: map[string]api.MessageAttributeValue{"a": {DataType: "String", StringValue: strp("2")}}})
		if a.MessageId != b.MessageId {
			t.Errorf("same body, different attributes: ids %s and %s, want a duplicate", a.MessageId, b.MessageId)
		}
		if a.MD5OfMessageAttributes == b.MD5OfMessageAttributes {
			t.Errorf("duplicate answered with the original's attribute MD5; want its own request's")
		}
	})
}

func TestFIFODeduplication(t *testing.T) {
	type send struct {
		at    time.Duration // since the first send
		group string
		dedup string
	}
	tests := []struct {
		name  string
		scope string
		sends []send
		// same[i] is the index of the earlier send whose message send i
		// duplicates, or -1 for a new message.
		same []int
	}{
		{
			name:  "duplicate inside the interval",
			sends: []send{{0, "g", "d"}, {time.Minute, "g", "d"}, {4*time.Minute + 59*time.Second, "g", "d"}},
			same:  []int{-1, 0, 0},
		},
		{
			name:  "interval counts from the first send",
			sends: []send{{0, "g", "d"}, {4 * time.Minute, "g", "d"}, {5 * time.Minute, "g", "d"}, {6 * time.Minute, "g", "d"}},
			same:  []int{-1, 0, -1, 2},
		},
		{
			name:  "queue scope spans groups",
			sends: []send{{0, "a", "d"}, {time.Second, "b", "d"}},
			same:  []int{-1, 0},
		},
		{
			name:  "message group scope",
			scope: "messageGroup",
			sends: []send{{0, "a", "d"}, {time.Second, "b", "d"}, {2 * time.Second, "a", "d"}, {3 * time.Second, "b", "d"}},
			same:  []int{-1, -1, 0, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			attrs := map[string]string{}
			if tc.scope != "" {
				attrs[api.AttrDeduplicationScope] = tc.scope
			}
			q := h.fifoQueue("q.fifo", attrs)
			start := h.now
			var results []*api.SendMessageResult
			fresh := 0
			for i, s := range tc.sends {
				h.now = start + int64(s.at)
				r := h.sendFIFO(q, fmt.Sprintf("body-%d", i), s.group, s.dedup)
				results = append(results, r)
				if j := tc.same[i]; j >= 0 {
					if r.MessageId != results[j].MessageId || r.SequenceNumber != results[j].SequenceNumber {
						t.Errorf("send %d = (%s, %s), want the original (%s, %s)", i, r.MessageId, r.SequenceNumber, results[j].MessageId, results[j].SequenceNumber)
					}
				} else {
					fresh++
					for _, prev := range results[:i] {
						if prev.MessageId == r.MessageId {
							t.Errorf("send %d reused message id %s", i, r.MessageId)
						}
					}
				}
			}
			if c := h.counts(q); c[0] != fresh {
				t.Errorf("stored %d messages, want %d", c[0], fresh)
			}
		})
	}
}

func TestFIFODeduplicationSurvivesDelete(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	first := h.sendFIFO(q, "a", "g", "d")
	msgs := h.receive(q, 1, -1)
	if err := h.deleteMsg(q, msgs[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Minute)
	again := h.sendFIFO(q, "a", "g", "d")
	if again.MessageId != first.MessageId || again.SequenceNumber != first.SequenceNumber {
		t.Errorf("resend after delete = %+v, want the original %+v", again, first)
	}
	if got := h.receive(q, 1, -1); len(got) != 0 {
		t.Errorf("received %v after a deduplicated resend, want nothing", bodies(got))
	}
	h.advance(4 * time.Minute)
	if r := h.sendFIFO(q, "a", "g", "d"); r.MessageId == first.MessageId {
		t.Errorf("send after the interval was deduplicated")
	}
}

// TestFIFODeduplicationScopeChangePropagates: a DeduplicationScope change
// deduplicates with the old scope for dedupScopePropagation, through a
// snapshot and restore, then with the new one (localstack
// test_sqs.snapshot.json: test_fifo_change_to_high_throughput_after_creation).
func TestFIFODeduplicationScopeChangePropagates(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	h.must(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: map[string]string{
		api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId"}})
	first := h.sendFIFO(q, "a", "g1", "d")
	restoreHarness(t, h)
	h.advance(dedupScopePropagation - time.Second)
	if r := h.sendFIFO(q, "b", "g2", "d"); r.MessageId != first.MessageId {
		t.Errorf("another group's send before the change propagated was not deduplicated")
	}
	h.advance(time.Second)
	third := h.sendFIFO(q, "c", "g3", "d")
	if third.MessageId == first.MessageId {
		t.Errorf("another group's send after the change propagated was deduplicated")
	}
	if r := h.sendFIFO(q, "d", "g3", "d"); r.MessageId != third.MessageId {
		t.Errorf("a second send in g3 was not deduplicated within its group")
	}
}

func TestFIFOSequenceNumbers(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	var seqs []string
	for i := range 5 {
		r := h.sendFIFO(q, "b", "g"+strconv.Itoa(i%2), "d"+strconv.Itoa(i))
		seqs = append(seqs, r.SequenceNumber)
		h.advance(time.Millisecond)
	}
	batch := h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.SendMessageBatchRequestEntry{
		{Id: "a", MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "ba"},
		{Id: "b", MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "bb"},
	}}).(*api.SendMessageBatchResult)
	for _, s := range batch.Successful {
		seqs = append(seqs, s.SequenceNumber)
	}
	prev := uint64(0)
	for i, s := range seqs {
		if len(s) != 20 {
			t.Errorf("sequence number %q has %d digits, want 20", s, len(s))
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("sequence number %q: %v", s, err)
		}
		if n <= prev {
			t.Errorf("sequence number %d = %d not above %d", i, n, prev)
		}
		if i > 0 && i < 5 && n == prev+1 {
			t.Errorf("sequence numbers of sends 1 ms apart are consecutive: %d, %d", prev, n)
		}
		prev = n
	}
	msgs := h.receive(q, 10, -1)
	got := map[string]bool{}
	for _, m := range msgs {
		got[m.Attributes[api.MsgAttrSequenceNumber]] = true
	}
	for _, s := range seqs {
		if !got[s] {
			t.Errorf("sequence number %s not returned as an attribute", s)
		}
	}
}

func TestFIFOGroupOrderAndBlocking(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "30"})
	for i := range 3 {
		h.sendFIFO(q, fmt.Sprintf("a%d", i), "A", fmt.Sprintf("a%d", i))
	}
	h.sendFIFO(q, "b0", "B", "b0")

	first := h.receive(q, 1, -1)
	if got := bodies(first); !slices.Equal(got, []string{"a0"}) {
		t.Fatalf("first receive = %v, want [a0]", got)
	}
	// A is in flight: the next receive skips it for B.
	if got := bodies(h.receive(q, 10, -1)); !slices.Equal(got, []string{"b0"}) {
		t.Fatalf("second receive = %v, want [b0]", got)
	}
	if got := h.receive(q, 10, -1); len(got) != 0 {
		t.Fatalf("third receive = %v, want nothing while both groups are in flight", bodies(got))
	}
	// Visibility runs out: a0 comes back first, with its receive count up.
	h.advance(31 * time.Second)
	again := h.receive(q, 1, -1)
	if len(again) != 1 || again[0].Body != "a0" || again[0].Attributes[api.MsgAttrApproximateReceiveCount] != "2" {
		t.Fatalf("after expiry got %+v, want a0 with receive count 2", again)
	}
	if again[0].ReceiptHandle == first[0].ReceiptHandle {
		t.Errorf("a new receive reused the receipt handle")
	}
	if again[0].Attributes[api.MsgAttrApproximateFirstReceiveTimestamp] != first[0].Attributes[api.MsgAttrApproximateFirstReceiveTimestamp] {
		t.Errorf("ApproximateFirstReceiveTimestamp changed on the second receive")
	}
	if err := h.deleteMsg(q, again[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	// Deleting the in-flight message unblocks the group; b0's visibility
	// ran out too, so it follows A's messages.
	if got := bodies(h.receive(q, 10, -1)); !slices.Equal(got, []string{"a1", "a2", "b0"}) {
		t.Fatalf("after delete got %v, want [a1 a2 b0]", got)
	}
}

func TestFIFOReceiveFillsFromGroups(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	// Interleave three groups; C has more than a batch.
	order := []string{"A", "B", "A", "C", "B", "A"}
	for i, g := range order {
		h.sendFIFO(q, fmt.Sprintf("%s%d", g, i), g, strconv.Itoa(i))
	}
	for i := range 12 {
		h.sendFIFO(q, fmt.Sprintf("C-%02d", i), "C", "c"+strconv.Itoa(i))
	}
	tests := []struct {
		max  int
		want []string
	}{
		// As many of the oldest group as possible, then the next group by
		// its oldest message, each in order.
		{4, []string{"A0", "A2", "A5", "B1"}},
		{3, []string{"C3", "C-00", "C-01"}},
		{10, nil}, // B and C are in flight
	}
	for i, tc := range tests {
		if got := bodies(h.receive(q, tc.max, -1)); !slices.Equal(got, tc.want) && !(len(got) == 0 && tc.want == nil) {
			t.Fatalf("receive %d (max %d) = %v, want %v", i, tc.max, got, tc.want)
		}
	}
}

func TestFIFODelayQueue(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrDelaySeconds: "10"})
	h.sendFIFO(q, "a", "g", "a")
	if c := h.counts(q); c != [3]int{0, 0, 1} {
		t.Fatalf("counts = %v, want 1 delayed", c)
	}
	if got := h.receive(q, 1, -1); len(got) != 0 {
		t.Fatalf("received %v during the queue's delay", bodies(got))
	}
	if when, ok := h.e.NextWake(q, h.now); !ok || when != h.now+10*int64(time.Second) {
		t.Errorf("NextWake = %d, %v; want %d", when, ok, h.now+10*int64(time.Second))
	}
	h.advance(10 * time.Second)
	if c := h.counts(q); c != [3]int{1, 0, 0} {
		t.Fatalf("counts at the end of the delay = %v, want 1 visible", c)
	}
	if !h.e.Receivable(q, h.now) {
		t.Errorf("Receivable = false at the end of the delay")
	}
	if got := bodies(h.receive(q, 1, -1)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("received %v, want [a]", got)
	}
}

func TestFIFODeleteAndVisibilityHandles(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	other := h.fifoQueue("other.fifo", nil)
	h.sendFIFO(q, "a", "g", "a")
	h.sendFIFO(other, "o", "g", "o")
	old := h.receive(q, 1, 5)[0].ReceiptHandle
	otherHandle := h.receive(other, 1, -1)[0].ReceiptHandle
	h.advance(6 * time.Second)

	// The visibility timeout ran out: the handle is expired (LocalStack's
	// test_fifo_delete_after_visibility_timeout).
	expired := "Value " + old + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."
	if ae := wantCode(t, h.deleteMsg(q, old), "InvalidParameterValue"); ae.Message != expired {
		t.Errorf("message %q, want %q", ae.Message, expired)
	}
	wantCode(t, h.changeVis(q, old, 10), "InvalidParameterValue")

	cur := h.receive(q, 1, 30)[0].ReceiptHandle
	// An older handle while the message is in flight under a newer receive.
	ae := wantCode(t, h.deleteMsg(q, old), "InvalidParameterValue")
	if ae.QueryCode != "InvalidParameterValue" || ae.Message != expired {
		t.Errorf("query code = %s, message %q", ae.QueryCode, ae.Message)
	}
	wantCode(t, h.changeVis(q, old, 10), "InvalidParameterValue")
	if c := h.counts(q); c != [3]int{0, 1, 0} {
		t.Errorf("counts = %v: the old handle touched the message", c)
	}
	// Malformed handles and handles of another queue.
	wantCode(t, h.deleteMsg(q, "not-a-handle"), "ReceiptHandleIsInvalid")
	wantCode(t, h.deleteMsg(q, otherHandle), "ReceiptHandleIsInvalid")
	wantCode(t, h.changeVis(q, "AAAA", 10), "ReceiptHandleIsInvalid")

	if err := h.deleteMsg(q, cur); err != nil {
		t.Fatalf("delete with the current handle: %v", err)
	}
	// Deleting again, with either handle, succeeds.
	if err := h.deleteMsg(q, cur); err != nil {
		t.Errorf("second delete: %v", err)
	}
	if err := h.deleteMsg(q, old); err != nil {
		t.Errorf("delete with an old handle of a deleted message: %v", err)
	}
	// LocalStack's AWS-validated
	// test_change_visibility_on_deleted_message_raises_invalid_parameter_value.
	ae = wantCode(t, h.changeVis(q, cur, 10), "InvalidParameterValue")
	if want := "Value " + cur + " for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."; ae.Message != want {
		t.Errorf("message %q, want %q", ae.Message, want)
	}
}

func TestChangeMessageVisibility(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		t.Run(map[bool]string{true: "fifo", false: "standard"}[fifo], func(t *testing.T) {
			h := newHarness(t)
			var q api.QueueKey
			send := func(body string) {
				if fifo {
					h.sendFIFO(q, body, "g"+body, body)
				} else {
					h.send(q, &api.SendMessageRequest{MessageBody: body})
				}
			}
			if fifo {
				q = h.fifoQueue("q.fifo", nil)
			} else {
				q = h.createQueue("q", nil)
			}
			send("a")
			m := h.receive(q, 1, 30)[0]

			// Extend: counted from now.
			h.advance(20 * time.Second)
			if err := h.changeVis(q, m.ReceiptHandle, 15); err != nil {
				t.Fatal(err)
			}
			h.advance(14 * time.Second)
			if got := h.receive(q, 1, -1); len(got) != 0 {
				t.Fatalf("message visible before its new timeout")
			}
			// The total may not exceed 12 hours from the receive.
			wantCode(t, h.changeVis(q, m.ReceiptHandle, api.MaxVisibilityTimeout), "InvalidParameterValue")
			if err := h.changeVis(q, m.ReceiptHandle, api.MaxVisibilityTimeout-34); err != nil {
				t.Errorf("timeout just within 12 hours of the receive: %v", err)
			}
			// 0 makes it receivable now, and wakes long polls.
			h.takeWoken()
			if err := h.changeVis(q, m.ReceiptHandle, 0); err != nil {
				t.Fatal(err)
			}
			if w := h.takeWoken(); !slices.Contains(w, q) {
				t.Errorf("hook not called for a visibility change to 0 (got %v)", w)
			}
			if fifo {
				// The receive is over: the handle has expired.
				wantCode(t, h.changeVis(q, m.ReceiptHandle, 0), "InvalidParameterValue")
			} else if err := h.changeVis(q, m.ReceiptHandle, 0); err != nil {
				// A standard queue takes the handle of a visible message
				// (LocalStack's test_change_message_visibility_after_visibility_timeout_expiration).
				t.Errorf("visibility 0 again: %v", err)
			}
			again := h.receive(q, 1, -1)
			if len(again) != 1 || again[0].MessageId != m.MessageId {
				t.Fatalf("after visibility 0 got %+v", again)
			}

			// Batch: per-entry results.
			res := h.must(q, &api.ChangeMessageVisibilityBatchRequest{QueueUrl: q.Path(), Entries: []api.ChangeMessageVisibilityBatchRequestEntry{
				{Id: "ok", ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: intp(60)},
				{Id: "bad", ReceiptHandle: "garbage", VisibilityTimeout: intp(60)},
			}}).(*api.ChangeMessageVisibilityBatchResult)
			if len(res.Successful) != 1 || res.Successful[0].Id != "ok" || len(res.Failed) != 1 || res.Failed[0].Id != "bad" || res.Failed[0].Code != "ReceiptHandleIsInvalid" || !res.Failed[0].SenderFault {
				t.Errorf("batch result = %+v", res)
			}
		})
	}
}

func TestFIFOReceiveRequestAttemptID(t *testing.T) {
	setup := func(t *testing.T) (*harness, api.QueueKey, []api.Message) {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "30"})
		for i := range 4 {
			h.sendFIFO(q, fmt.Sprintf("m%d", i), "g"+strconv.Itoa(i%2), strconv.Itoa(i))
		}
		return h, q, h.receiveAttempt(q, "try-1", 3)
	}
	t.Run("retry returns the same messages and handles", func(t *testing.T) {
		h, q, first := setup(t)
		h.advance(20 * time.Second)
		retry := h.receiveAttempt(q, "try-1", 3)
		if !slices.EqualFunc(first, retry, func(a, b api.Message) bool { return a.MessageId == b.MessageId && a.ReceiptHandle == b.ReceiptHandle }) {
			t.Fatalf("retry = %v, want %v", retry, first)
		}
		if retry[0].Attributes[api.MsgAttrApproximateReceiveCount] != "1" {
			t.Errorf("retry counted as a receive: count %s", retry[0].Attributes[api.MsgAttrApproximateReceiveCount])
		}
		// The retry restarted the visibility timeout.
		h.advance(20 * time.Second)
		if err := h.deleteMsg(q, retry[0].ReceiptHandle); err != nil {
			t.Errorf("delete 40 s after the first receive, 20 s after the retry: %v", err)
		}
	})
	t.Run("a deletion makes the retry a new receive", func(t *testing.T) {
		h, q, first := setup(t)
		if err := h.deleteMsg(q, first[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		retry := h.receiveAttempt(q, "try-1", 3)
		for _, m := range retry {
			if m.MessageId == first[1].MessageId {
				t.Fatalf("retry after a deletion returned in-flight message %s again", m.Body)
			}
		}
	})
	t.Run("a visibility change makes the retry a new receive", func(t *testing.T) {
		h, q, first := setup(t)
		if err := h.changeVis(q, first[1].ReceiptHandle, 100); err != nil {
			t.Fatal(err)
		}
		if retry := h.receiveAttempt(q, "try-1", 3); len(retry) != 0 {
			t.Fatalf("retry = %v, want a new receive finding nothing", bodies(retry))
		}
	})
	t.Run("after the visibility timeout the retry is a new receive", func(t *testing.T) {
		h, q, first := setup(t)
		h.advance(31 * time.Second)
		retry := h.receiveAttempt(q, "try-1", 3)
		if len(retry) == 0 || retry[0].ReceiptHandle == first[0].ReceiptHandle {
			t.Fatalf("retry after expiry = %+v, want new receipts", retry)
		}
		if retry[0].Attributes[api.MsgAttrApproximateReceiveCount] != "2" {
			t.Errorf("receive count = %s, want 2", retry[0].Attributes[api.MsgAttrApproximateReceiveCount])
		}
	})
	t.Run("attempt ids expire after 5 minutes", func(t *testing.T) {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "3600"})
		h.sendFIFO(q, "a", "g", "a")
		h.sendFIFO(q, "b", "h", "b")
		first := h.receiveAttempt(q, "x", 1)
		h.advance(5 * time.Minute)
		retry := h.receiveAttempt(q, "x", 1)
		if len(retry) != 1 || retry[0].MessageId == first[0].MessageId {
			t.Fatalf("retry after 5 minutes = %v, want the other message", bodies(retry))
		}
	})
	t.Run("other attempt ids are other receives", func(t *testing.T) {
		h, q, first := setup(t)
		second := h.receiveAttempt(q, "try-2", 3)
		for _, m := range second {
			for _, f := range first {
				if m.MessageId == f.MessageId {
					t.Fatalf("another attempt id got in-flight message %s", m.Body)
				}
			}
		}
	})
}

func (h *harness) receiveAttempt(q api.QueueKey, id string, max int) []api.Message {
	h.t.Helper()
	return h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max, ReceiveRequestAttemptId: id,
		MessageSystemAttributeNames: []string{"All"}}).(*api.ReceiveMessageResult).Messages
}

func TestFIFOBacklogDoesNotHideOtherGroups(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	const backlog = 50_000
	entries := make([]api.SendMessageBatchRequestEntry, 0, 10)
	for i := 0; i < backlog; i++ {
		entries = append(entries, api.SendMessageBatchRequestEntry{Id: strconv.Itoa(len(entries)), MessageBody: "x", MessageGroupId: "big", MessageDeduplicationId: strconv.Itoa(i)})
		if len(entries) == 10 {
			h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: entries})
			entries = entries[:0]
		}
	}
	h.sendFIFO(q, "late", "small", "late")
	if got := h.receive(q, 10, -1); len(got) != 10 || got[0].Attributes[api.MsgAttrMessageGroupId] != "big" {
		t.Fatalf("first receive got %d messages", len(got))
	}
	if got := bodies(h.receive(q, 10, -1)); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("with the backlog's group in flight got %v, want [late]", got)
	}
	if c := h.counts(q); c != [3]int{backlog - 10, 11, 0} {
		t.Errorf("counts = %v", c)
	}
}

func TestFIFOInflightLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 120,000 messages")
	}
	testenv.Long(t, "sends 120,000 messages")
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "3600"})
	groups := api.MaxInflightFIFO / 10
	for g := 0; g < groups; g++ {
		entries := make([]api.SendMessageBatchRequestEntry, 10)
		for i := range entries {
			entries[i] = api.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), MessageBody: "x", MessageGroupId: strconv.Itoa(g), MessageDeduplicationId: fmt.Sprintf("%d-%d", g, i)}
		}
		h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: entries})
	}
	h.sendFIFO(q, "extra", "extra", "extra")
	var last []api.Message
	for g := 0; g < groups; g++ {
		last = h.receive(q, 10, -1)
		if len(last) != 10 {
			t.Fatalf("receive %d got %d messages", g, len(last))
		}
	}
	if c := h.counts(q); c[1] != api.MaxInflightFIFO {
		t.Fatalf("in flight = %d", c[1])
	}
	// At the limit a FIFO receive returns nothing, without an error.
	if got := h.receive(q, 10, -1); len(got) != 0 {
		t.Fatalf("receive at the in-flight limit got %d messages", len(got))
	}
	if h.e.Receivable(q, h.now) {
		t.Errorf("Receivable at the in-flight limit")
	}
	h.takeWoken()
	if err := h.deleteMsg(q, last[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if len(h.takeWoken()) == 0 {
		t.Errorf("no wake-up when a deletion freed room under the limit")
	}
	if got := bodies(h.receive(q, 1, -1)); !slices.Equal(got, []string{"extra"}) {
		t.Fatalf("after a deletion got %v, want [extra]", got)
	}
}

// TestSendMessageBatchPartialFailure: an entry over the queue's
// MaximumMessageSize fails alone, with the batch wording of the size error
// (localstack test_sqs.snapshot.json: test_send_batch_message_size), while
// an entry without a group id fails the whole request and sends nothing
// (test_send_batch_missing_message_group_id_for_fifo_queue).
func TestSendMessageBatchPartialFailure(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrMaximumMessageSize: "1024"})
	res := h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.SendMessageBatchRequestEntry{
		{Id: "ok1", MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "1"},
		{Id: "big", MessageBody: strings.Repeat("x", 2000), MessageGroupId: "g", MessageDeduplicationId: "3"},
		{Id: "ok2", MessageBody: "four", MessageGroupId: "g", MessageDeduplicationId: "4"},
	}}).(*api.SendMessageBatchResult)
	var ok, failed []string
	for _, s := range res.Successful {
		ok = append(ok, s.Id)
	}
	for _, f := range res.Failed {
		failed = append(failed, f.Id+":"+f.Code+":"+f.Message)
	}
	if !slices.Equal(ok, []string{"ok1", "ok2"}) || !slices.Equal(failed, []string{"big:InvalidParameterValue:One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes."}) {
		t.Errorf("successful %v, failed %v", ok, failed)
	}
	if got := bodies(h.receive(q, 10, -1)); !slices.Equal(got, []string{"one", "four"}) {
		t.Errorf("received %v", got)
	}

	_, err := h.do(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.SendMessageBatchRequestEntry{
		{Id: "ok3", MessageBody: "five", MessageGroupId: "g", MessageDeduplicationId: "5"},
		{Id: "nogroup", MessageBody: "six", MessageDeduplicationId: "6"},
	}})
	if ae := wantCode(t, err, "InvalidParameterValue"); ae.Message != "The request must contain the parameter MessageGroupId." {
		t.Errorf("message = %q", ae.Message)
	}
	if c := h.counts(q); c[0]+c[1] != 2 {
		t.Errorf("a failed batch stored messages: counts %v", c)
	}
}

func TestMaximumMessageSize(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrMaximumMessageSize: "1024"})
	attrs := map[string]api.MessageAttributeValue{"name": {DataType: "String", StringValue: strp("value")}}
	// 1024 bytes in all: body + "name" + "String" + "value".
	h.send(q, &api.SendMessageRequest{MessageBody: strings.Repeat("x", 1024-4-6-5), MessageAttributes: attrs})
	_, err := h.do(q, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: strings.Repeat("x", 1024-4-6-5+1), MessageAttributes: attrs})
	ae := wantCode(t, err, "InvalidParameterValue")
	if ae.Message != "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes." {
		t.Errorf("message = %q", ae.Message)
	}
}

// TestReceiveOutlook checks what ReceiveOutlook tells the server before it
// decides whether a receive goes through the log: no queue, nothing to take,
// something to take, and a FIFO attempt id whose record must answer its
// retry even when nothing else is there.
func TestReceiveOutlook(t *testing.T) {
	h := newHarness(t)
	check := func(q api.QueueKey, id string, wantExists, wantTake bool) {
		t.Helper()
		if exists, take := h.e.ReceiveOutlook(q, h.now, id); exists != wantExists || take != wantTake {
			t.Fatalf("ReceiveOutlook(%s, %q) = %v %v, want %v %v", q, id, exists, take, wantExists, wantTake)
		}
	}
	check(api.QueueKey{Account: testAccount, Name: "nosuch"}, "", false, false)
	q := h.fifoQueue("q.fifo", nil)
	check(q, "", true, false)
	check(q, "a1", true, false)
	h.sendFIFO(q, "x", "g", "d")
	check(q, "", true, true)
	if got := h.receiveAttempt(q, "a1", 1); len(got) != 1 {
		t.Fatalf("got %d messages, want 1", len(got))
	}
	check(q, "", true, false)   // the one message is in flight
	check(q, "a2", true, false) // another attempt has no record
	check(q, "a1", true, true)  // the retry answers from the record
	h.advance(api.ReceiveRequestAttemptIdInterval)
	check(q, "a1", true, true) // its visibility timeout (30 s) ran out: receivable anyway
	h.hideAll(q)
	check(q, "a1", true, false) // in flight again, and the record has expired
}

// hideAll receives every message of q with a long visibility
// timeout, so that nothing is receivable.
func (h *harness) hideAll(q api.QueueKey) {
	h.t.Helper()
	for len(h.receive(q, 10, 3600)) > 0 {
	}
}

// TestReceiveSpread checks the estimate of how many receives a queue can
// feed at once: visible messages shared out on a standard queue, ready
// groups on a FIFO queue.
func TestReceiveSpread(t *testing.T) {
	h := newHarness(t)
	if n := h.e.ReceiveSpread(api.QueueKey{Account: testAccount, Name: "nosuch"}, 1); n != 0 {
		t.Fatalf("missing queue: %d", n)
	}
	std := h.createQueue("std", nil)
	for range 25 {
		h.send(std, &api.SendMessageRequest{MessageBody: "x"})
	}
	for _, c := range []struct{ take, want int }{{1, 25}, {10, 3}, {0, 25}, {99, 3}} {
		if n := h.e.ReceiveSpread(std, c.take); n != c.want {
			t.Fatalf("standard queue of 25, take %d: %d, want %d", c.take, n, c.want)
		}
	}
	f := h.fifoQueue("f.fifo", nil)
	for i := range 6 {
		h.sendFIFO(f, "x", fmt.Sprint("g", i%2), fmt.Sprint(i))
	}
	if n := h.e.ReceiveSpread(f, 10); n != 2 {
		t.Fatalf("FIFO queue with 2 ready groups: %d", n)
	}
	h.receive(f, 1, -1) // locks one group
	if n := h.e.ReceiveSpread(f, 10); n != 1 {
		t.Fatalf("FIFO queue with 1 ready group: %d", n)
	}
}
