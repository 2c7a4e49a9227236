package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// The tests of this file replay, at the engine, sequences that LocalStack
// ran against AWS (tests/aws/services/sqs/test_sqs.py, AWS-validated), and
// expect what AWS answered.

// TestFIFOGroupsAfterVisibilityTimeout: a group whose visibility timeout
// ran out is served after the groups that waited all along, in the order
// the timeouts ran out (test_fifo_receive_message_visibility_timeout_shared_in_group).
func TestFIFOGroupsAfterVisibilityTimeout(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "1", api.AttrContentBasedDeduplication: "true"})
	for _, b := range []string{"g1-m1", "g1-m2", "g1-m3", "g1-m4"} {
		h.sendFIFO(q, b, "group-1", "")
	}
	h.sendFIFO(q, "g2-m1", "group-2", "")
	h.sendFIFO(q, "g3-m1", "group-3", "")
	if got := bodies(h.receive(q, 2, -1)); !slices.Equal(got, []string{"g1-m1", "g1-m2"}) {
		t.Fatalf("first receive %v", got)
	}
	h.advance(10 * time.Millisecond)
	if got := bodies(h.receive(q, 1, -1)); !slices.Equal(got, []string{"g2-m1"}) {
		t.Fatalf("second receive %v", got)
	}
	h.advance(2 * time.Second)
	want := []string{"g3-m1", "g1-m1", "g1-m2", "g1-m3", "g1-m4", "g2-m1"}
	if got := bodies(h.receive(q, 10, 0)); !slices.Equal(got, want) {
		t.Errorf("after the timeouts %v, recorded %v", got, want)
	}
}

// TestFIFOGroupsAfterZeroVisibilityReceive: a receive with visibility
// timeout 0 puts the groups it took behind the others
// (test_fifo_receive_message_with_zero_visibility_timeout).
func TestFIFOGroupsAfterZeroVisibilityReceive(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
	h.sendFIFO(q, "g1-m1", "group-1", "")
	h.sendFIFO(q, "g2-m1", "group-2", "")
	h.sendFIFO(q, "g2-m2", "group-2", "")
	h.sendFIFO(q, "g3-m1", "group-3", "")
	h.sendFIFO(q, "g1-m2", "group-1", "")
	h.advance(time.Millisecond) // each call of the recording took time
	if got, want := bodies(h.receive(q, 3, 0)), []string{"g1-m1", "g1-m2", "g2-m1"}; !slices.Equal(got, want) {
		t.Fatalf("first receive %v, recorded %v", got, want)
	}
	h.advance(time.Millisecond)
	if got, want := bodies(h.receive(q, 10, 0)), []string{"g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2"}; !slices.Equal(got, want) {
		t.Errorf("second receive %v, recorded %v", got, want)
	}
}

// TestFIFOGroupsAfterDelete: deleting a group's in-flight messages brings
// it back in the place of its new first message's send
// (test_fifo_message_group_visibility_after_delete), and deleting only some
// of them leaves it blocked (test_fifo_message_group_visibility_after_partial_delete).
func TestFIFOGroupsAfterDelete(t *testing.T) {
	for _, partial := range []bool{false, true} {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", map[string]string{api.AttrContentBasedDeduplication: "true"})
		for _, m := range [][2]string{
			{"g1-m1", "group-1"}, {"g2-m1", "group-2"}, {"g1-m2", "group-1"}, {"g2-m2", "group-2"},
			{"g1-m2", "group-1"}, // a duplicate: deduplicated by content
			{"g1-m3", "group-1"}, {"g1-m4", "group-1"}, {"g3-m1", "group-3"},
		} {
			h.sendFIFO(q, m[0], m[1], "")
		}
		got := h.receive(q, 2, -1)
		if !slices.Equal(bodies(got), []string{"g1-m1", "g1-m2"}) {
			t.Fatalf("first receive %v", bodies(got))
		}
		for i, m := range got {
			if partial && i > 0 {
				break
			}
			if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"g2-m1", "g2-m2", "g1-m3", "g1-m4", "g3-m1"}
		if partial {
			want = []string{"g2-m1", "g2-m2", "g3-m1"}
		}
		if got := bodies(h.receive(q, 10, -1)); !slices.Equal(got, want) {
			t.Errorf("partial %v: drained %v, recorded %v", partial, got, want)
		}
	}
}

// TestFIFOGroupAfterVisibilityChange: ending or shortening the visibility
// of a group's first message makes the group receivable while its second
// message is still in flight; the receive stops at that message
// (test_fifo_message_group_visibility_after_terminate_visibility_timeout,
// test_fifo_message_group_visibility_after_change_message_visibility).
func TestFIFOGroupAfterVisibilityChange(t *testing.T) {
	for _, vis := range []int{0, 1} {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "30", api.AttrContentBasedDeduplication: "true"})
		h.sendFIFO(q, "g1-m1", "group-1", "")
		h.sendFIFO(q, "g1-m2", "group-1", "")
		h.sendFIFO(q, "g2-m1", "group-2", "")
		got := h.receive(q, 2, -1)
		if !slices.Equal(bodies(got), []string{"g1-m1", "g1-m2"}) {
			t.Fatalf("first receive %v", bodies(got))
		}
		h.advance(time.Millisecond) // each call of the recording took time
		if err := h.changeVis(q, got[0].ReceiptHandle, vis); err != nil {
			t.Fatal(err)
		}
		h.advance(2 * time.Second)
		if got, want := bodies(h.receive(q, 3, -1)), []string{"g2-m1", "g1-m1"}; !slices.Equal(got, want) {
			t.Errorf("visibility %d: received %v, recorded %v", vis, got, want)
		}
	}
}

// TestFIFOGroupVisibilityExtended: extending one message's visibility
// keeps it and the rest of its group from a receive; the messages before
// it are received (test_fifo_group_visibility_extends_with_change_message_visibility,
// snapshot some-messages-invisible).
func TestFIFOGroupVisibilityExtended(t *testing.T) {
	recorded := [][]string{{}, {"foo"}, {"foo", "bar"}}
	for pos, want := range recorded {
		h := newHarness(t)
		q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "1"})
		for _, b := range []string{"foo", "bar", "baz"} {
			h.sendFIFO(q, b, "1", b)
		}
		got := h.receive(q, 5, -1)
		if len(got) != 3 {
			t.Fatalf("received %v", bodies(got))
		}
		if err := h.changeVis(q, got[pos].ReceiptHandle, 4); err != nil {
			t.Fatal(err)
		}
		h.advance(2500 * time.Millisecond)
		if got := bodies(h.receive(q, 5, -1)); !slices.Equal(got, want) {
			t.Errorf("message %d extended: received %v, recorded %v", pos, got, want)
		}
	}
}

// TestFIFODeleteAfterExtendedVisibility: a handle whose visibility was
// extended past the queue's timeout still deletes
// (test_fifo_delete_after_visibility_timeout_extended).
func TestFIFODeleteAfterExtendedVisibility(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "1", api.AttrContentBasedDeduplication: "true"})
	h.sendFIFO(q, "foobar", "1", "")
	m := h.receive(q, 1, -1)[0]
	if err := h.changeVis(q, m.ReceiptHandle, 5); err != nil {
		t.Fatal(err)
	}
	h.advance(1500 * time.Millisecond)
	if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
		t.Fatalf("delete within the extended timeout: %v", err)
	}
	if got := h.receive(q, 1, -1); len(got) != 0 {
		t.Errorf("received %v after the delete", bodies(got))
	}
}

// TestStandardVisibilityChangeAfterTimeout: in a standard queue the handle
// of a message whose visibility timeout ran out still changes its
// visibility (test_change_message_visibility_after_visibility_timeout_expiration,
// recorded 200), making it invisible again, and a handle of an earlier
// receive ends the visibility of the latest one
// (test_terminate_visibility_timeout_after_receive).
func TestStandardVisibilityChangeAfterTimeout(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrVisibilityTimeout: "1"})
	h.send(q, &api.SendMessageRequest{MessageBody: "test"})
	m := h.receive(q, 1, -1)[0]
	h.advance(2 * time.Second)
	if err := h.changeVis(q, m.ReceiptHandle, 2); err != nil {
		t.Fatalf("change after the timeout: %v", err)
	}
	if c := h.counts(q); c != [3]int{0, 1, 0} {
		t.Errorf("counts = %v, want the message in flight again", c)
	}
	if got := h.receive(q, 1, -1); len(got) != 0 {
		t.Errorf("received %v during the new timeout", bodies(got))
	}
	h.advance(2 * time.Second)
	second := h.receive(q, 1, 3)
	if len(second) != 1 {
		t.Fatalf("receive after the new timeout %+v", second)
	}
	// The first handle ends the second receive's visibility.
	if err := h.changeVis(q, m.ReceiptHandle, 0); err != nil {
		t.Fatalf("visibility 0 with the first handle: %v", err)
	}
	if got := h.receive(q, 1, -1); len(got) != 1 {
		t.Errorf("message not receivable after visibility 0")
	}
}

// TestChangeVisibilityBatchEntries: per-entry answers of
// ChangeMessageVisibilityBatch and DeleteMessageBatch carry the Query code
// of the error a single call answers.
func TestChangeVisibilityBatchEntries(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "5"})
	h.sendFIFO(q, "a", "g", "a")
	h.sendFIFO(q, "b", "h", "b")
	got := h.receive(q, 2, -1)
	expired := got[0].ReceiptHandle
	h.advance(6 * time.Second)
	cur := h.receive(q, 2, -1)
	if len(cur) != 2 {
		t.Fatalf("second receive %v", bodies(cur))
	}
	if err := h.deleteMsg(q, cur[1].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	res := h.must(q, &api.ChangeMessageVisibilityBatchRequest{QueueUrl: q.Path(), Entries: []api.ChangeMessageVisibilityBatchRequestEntry{
		{Id: "ok", ReceiptHandle: cur[0].ReceiptHandle, VisibilityTimeout: intp(0)},
		{Id: "expired", ReceiptHandle: expired, VisibilityTimeout: intp(10)},
		{Id: "deleted", ReceiptHandle: cur[1].ReceiptHandle, VisibilityTimeout: intp(10)},
		{Id: "garbage", ReceiptHandle: "garbage", VisibilityTimeout: intp(10)},
	}}).(*api.ChangeMessageVisibilityBatchResult)
	want := map[string]string{
		"expired": "Value " + expired + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
		"deleted": "Value " + cur[1].ReceiptHandle + " for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
	}
	if len(res.Successful) != 1 || res.Successful[0].Id != "ok" || len(res.Failed) != 3 {
		t.Fatalf("batch result %+v", res)
	}
	for _, f := range res.Failed {
		code := "InvalidParameterValue"
		if f.Id == "garbage" {
			code = "ReceiptHandleIsInvalid"
		}
		if f.Code != code || !f.SenderFault || want[f.Id] != "" && f.Message != want[f.Id] {
			t.Errorf("entry %s = %+v", f.Id, f)
		}
	}
	dres := h.must(q, &api.DeleteMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.DeleteMessageBatchRequestEntry{
		{Id: "expired", ReceiptHandle: cur[0].ReceiptHandle},
	}}).(*api.DeleteMessageBatchResult)
	if len(dres.Failed) != 1 || dres.Failed[0].Code != "InvalidParameterValue" || !dres.Failed[0].SenderFault {
		t.Errorf("delete batch with a handle whose visibility was ended: %+v", dres)
	}
}
