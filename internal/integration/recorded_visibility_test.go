package integration

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// This file replays what SQS was recorded doing with receipt handles,
// visibility timeouts and FIFO message groups. The sequences come from
// LocalStack's AWS-validated tests (tests/aws/services/sqs/test_sqs.py and
// the snapshot beside it); each test names the one it follows. Where a
// recording waited for a visibility timeout, the test moves the server's
// clock instead.

// TestRecordedReceiptHandleErrors replays recorded error answers to
// DeleteMessage and ChangeMessageVisibility.
func TestRecordedReceiptHandleErrors(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			name:   "FIFO delete after the visibility timeout",
			source: "localstack test_sqs.snapshot.json: test_fifo_delete_after_visibility_timeout/delete_after_timeout_fifo",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "expired.fifo", fifoAttrs("VisibilityTimeout", "1", "ContentBasedDeduplication", "true"))
				mustSend(t, s.c, u, SendIn{Body: "foobar", Group: "1"})
				h := mustReceive(t, s.c, u, 1)[0].Handle
				s.env.Clock.Advance(1500 * time.Millisecond)
				s.vars["handle"] = h
				return "DeleteMessage", params{"QueueUrl": u, "ReceiptHandle": h}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException",
				Message: "Value {handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."},
		},
		{
			// The recording checks the code and the message; the JSON
			// __type is the one InvalidParameterValue was recorded with
			// (test_send_receive_max_number_of_messages).
			name:   "change visibility of a deleted message",
			source: "localstack test_sqs.py: test_change_visibility_on_deleted_message_raises_invalid_parameter_value (AWS-validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "deleted", nil)
				mustSend(t, s.c, u, SendIn{Body: "foo"})
				h := mustReceive(t, s.c, u, 1)[0].Handle
				if err := s.c.ChangeVisibility(ctxT(t), u, h, 42); err != nil {
					t.Fatalf("ChangeMessageVisibility before the delete: %v", err)
				}
				if err := s.c.Delete(ctxT(t), u, h); err != nil {
					t.Fatalf("DeleteMessage: %v", err)
				}
				s.vars["handle"] = h
				return "ChangeMessageVisibility", params{"QueueUrl": u, "ReceiptHandle": h, "VisibilityTimeout": 42}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException",
				Message: "Value {handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."},
		},
		{
			name:   "delete with an illegal receipt handle",
			source: "localstack test_sqs.py: test_delete_message_with_illegal_receipt_handle (AWS-validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "illegal", nil)
				return "DeleteMessage", params{"QueueUrl": u, "ReceiptHandle": "garbage"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "ReceiptHandleIsInvalid",
				Message: `The input receipt handle "garbage" is not a valid receipt handle.`},
		},
		{
			// The recording checks the code only.
			name:   "change visibility with an invalid receipt handle",
			source: "localstack test_sqs.py: test_invalid_receipt_handle_should_return_error_message (AWS-validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "invalid", nil)
				return "ChangeMessageVisibility", params{"QueueUrl": u, "ReceiptHandle": "INVALID", "VisibilityTimeout": 60}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "ReceiptHandleIsInvalid"},
		},
	})
}

// receiveVis receives up to max messages without waiting, with the given
// visibility timeout. The v2 SDK leaves a VisibilityTimeout of 0 out of
// the request, so on AWS JSON the receive is sent by hand.
func receiveVis(t *testing.T, env *Env, c Client, url string, max, vis int32) []Msg {
	t.Helper()
	if c.Proto() != "json" || vis != 0 {
		msgs, err := c.Receive(ctxT(t), url, RecvIn{Max: max, Wait: i32(0), Visibility: i32(vis)})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		return msgs
	}
	r := rawPost(t, env, map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ReceiveMessage"},
		jsonBody(t, params{"QueueUrl": url, "MaxNumberOfMessages": max, "WaitTimeSeconds": 0, "VisibilityTimeout": vis}))
	var out struct {
		Messages []struct{ Body, ReceiptHandle string }
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil {
		t.Fatalf("ReceiveMessage: HTTP %d %s", r.status, r.body)
	}
	var msgs []Msg
	for _, m := range out.Messages {
		msgs = append(msgs, Msg{Body: m.Body, Handle: m.ReceiptHandle})
	}
	return msgs
}

// TestRecordedStandardDeleteAfterVisibilityTimeout: in a standard queue the
// handle of a message whose visibility timeout ran out still deletes it
// (localstack test_sqs.snapshot.json:
// test_delete_after_visibility_timeout/delete_after_timeout_queue_empty,
// and test_remove_message_with_old_receipt_handle).
func TestRecordedStandardDeleteAfterVisibilityTimeout(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "late", map[string]string{"VisibilityTimeout": "1"})
		mustSend(t, c, u, SendIn{Body: "foobar"})
		m := mustReceive(t, c, u, 1)
		if len(m) != 1 {
			t.Fatalf("received %v", bodies(m))
		}
		env.Clock.Advance(1500 * time.Millisecond)
		if err := c.Delete(ctxT(t), u, m[0].Handle); err != nil {
			t.Fatalf("DeleteMessage after the visibility timeout: %v", err)
		}
		wantBodies(t, mustReceive(t, c, u, 1))
		if n := numAttr(t, c, u, "ApproximateNumberOfMessages"); n != 0 {
			t.Errorf("ApproximateNumberOfMessages = %d after the delete", n)
		}
	})
}

// TestRecordedFIFODeleteAfterVisibilityTimeout: a FIFO queue refuses the
// handle once the visibility timeout ran out, and the message stays
// (localstack test_sqs.snapshot.json:
// test_fifo_delete_after_visibility_timeout/delete_after_timeout_fifo).
func TestRecordedFIFODeleteAfterVisibilityTimeout(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "late.fifo", fifoAttrs("VisibilityTimeout", "1", "ContentBasedDeduplication", "true"))
		mustSend(t, c, u, SendIn{Body: "foobar", Group: "1"})
		h := mustReceive(t, c, u, 1)[0].Handle
		env.Clock.Advance(1500 * time.Millisecond)
		err := c.Delete(ctxT(t), u, h)
		wantErr(t, err, "InvalidParameterValue")
		if want := "Value " + h + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."; errMessage(err) != want {
			t.Errorf("message %q, recorded %q", errMessage(err), want)
		}
		wantBodies(t, mustReceive(t, c, u, 1), "foobar")
	})
}

// TestRecordedFIFODeleteAfterExtendedVisibility: a handle whose visibility
// was extended still deletes after the queue's timeout (localstack
// test_sqs.snapshot.json:
// test_fifo_delete_after_visibility_timeout_extended/delete_after_timeout_fifo_extended).
func TestRecordedFIFODeleteAfterExtendedVisibility(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "extended.fifo", fifoAttrs("VisibilityTimeout", "1", "ContentBasedDeduplication", "true"))
		mustSend(t, c, u, SendIn{Body: "foobar", Group: "1"})
		h := mustReceive(t, c, u, 1)[0].Handle
		if err := c.ChangeVisibility(ctxT(t), u, h, 5); err != nil {
			t.Fatalf("ChangeMessageVisibility: %v", err)
		}
		env.Clock.Advance(1500 * time.Millisecond)
		if err := c.Delete(ctxT(t), u, h); err != nil {
			t.Fatalf("DeleteMessage within the extended timeout: %v", err)
		}
		wantBodies(t, mustReceive(t, c, u, 1))
	})
}

// TestRecordedChangeVisibilityAfterTimeout: in a standard queue
// ChangeMessageVisibility with the handle of a message whose visibility
// timeout ran out answers 200 (localstack test_sqs.snapshot.json:
// test_change_message_visibility_after_visibility_timeout_expiration/visibility_timeout_expired).
// That the message is then in flight again is fifoq's reading: the
// recording checks the answer only.
func TestRecordedChangeVisibilityAfterTimeout(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "expired", map[string]string{"VisibilityTimeout": "1"})
		mustSend(t, c, u, SendIn{Body: "test"})
		h := mustReceive(t, c, u, 1)[0].Handle
		env.Clock.Advance(2 * time.Second)
		if err := c.ChangeVisibility(ctxT(t), u, h, 2); err != nil {
			t.Fatalf("ChangeMessageVisibility after the timeout: %v", err)
		}
		wantBodies(t, mustReceive(t, c, u, 1))
		env.Clock.Advance(2500 * time.Millisecond)
		wantBodies(t, mustReceive(t, c, u, 1), "test")
	})
}

// TestRecordedStaleHandleEndsVisibility: in a standard queue the handle of
// an earlier receive ends the visibility of the message a later receive
// holds (localstack test_sqs.py: test_terminate_visibility_timeout_after_receive,
// AWS-validated); ending it makes the message receivable once, not for
// good (test_change_message_visibility_not_permanent).
func TestRecordedStaleHandleEndsVisibility(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "stale", nil)
		mustSend(t, c, u, SendIn{Body: "test"})
		first := receiveVis(t, env, c, u, 1, 0)
		if len(first) != 1 {
			t.Fatalf("first receive %v", bodies(first))
		}
		if got := receiveVis(t, env, c, u, 1, 3); len(got) != 1 {
			t.Fatalf("second receive %v", bodies(got))
		}
		if err := c.ChangeVisibility(ctxT(t), u, first[0].Handle, 0); err != nil {
			t.Fatalf("ChangeMessageVisibility with the first handle: %v", err)
		}
		wantBodies(t, mustReceive(t, c, u, 1), "test")
		wantBodies(t, mustReceive(t, c, u, 1))
	})
}

// TestRecordedStandardOldHandles: in a standard queue the handle of an
// earlier receive still deletes the message and changes its visibility
// (moto test_sqs.py test_delete_message_using_old_receipt_handle and
// test_change_message_visibility_on_old_message, verified against AWS as
// moto pull request #4655 states).
func TestRecordedStandardOldHandles(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "old", map[string]string{"VisibilityTimeout": "0"})
		mustSend(t, c, u, SendIn{Body: "body"})
		first := mustReceive(t, c, u, 1)
		second := mustReceive(t, c, u, 1)
		if len(first) != 1 || len(second) != 1 || first[0].Handle == second[0].Handle {
			t.Fatalf("receives %+v %+v", first, second)
		}
		mustDelete(t, c, u, first[0])
		wantBodies(t, mustReceive(t, c, u, 1))
		mustDelete(t, c, u, first[0], second[0])

		v := mustCreate(t, c, "old-visibility", map[string]string{"VisibilityTimeout": "1"})
		mustSend(t, c, v, SendIn{Body: "test message 1"})
		orig := mustReceive(t, c, v, 1)[0]
		env.Clock.Advance(2 * time.Second)
		if got := mustReceive(t, c, v, 1); len(got) != 1 || got[0].Handle == orig.Handle {
			t.Fatalf("second receive %+v", got)
		}
		for range 2 {
			if err := c.ChangeVisibility(ctxT(t), v, orig.Handle, 100); err != nil {
				t.Fatalf("ChangeMessageVisibility with the old handle: %v", err)
			}
		}
		env.Clock.Advance(2 * time.Second)
		wantBodies(t, mustReceive(t, c, v, 1))
	})
}

// TestRecordedReceiveWithZeroVisibility: a receive with visibility
// timeout 0 leaves the message receivable; the next receive gets it with
// another handle and holds it (localstack test_sqs.py:
// test_receive_terminate_visibility_timeout, AWS-validated).
func TestRecordedReceiveWithZeroVisibility(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "zero", nil)
		mustSend(t, c, u, SendIn{Body: "foobar"})
		first := receiveVis(t, env, c, u, 1, 0)
		second := mustReceive(t, c, u, 1)
		if len(first) != 1 || len(second) != 1 || first[0].Handle == second[0].Handle {
			t.Fatalf("receives %+v %+v", first, second)
		}
		wantBodies(t, mustReceive(t, c, u, 1))
	})
}

// TestRecordedFIFOLongPollGroupUnlock: a long poll does not get a message
// sent to a group held by another receive, and gets it as soon as the
// held message is deleted (localstack test_sqs.py:
// test_fifo_message_group_visibility, AWS-validated).
func TestRecordedFIFOLongPollGroupUnlock(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "poll.fifo", fifoAttrs("VisibilityTimeout", "60", "ContentBasedDeduplication", "true"))
		mustSend(t, c, u, SendIn{Body: "message-1", Group: "1"})
		held := mustReceive(t, c, u, 1)
		wantBodies(t, held, "message-1")
		mustSend(t, c, u, SendIn{Body: "message-2", Group: "1"})
		type answer struct {
			msgs []Msg
			err  error
		}
		got := make(chan answer, 1)
		ctx := ctxT(t)
		go func() {
			msgs, err := c.Receive(ctx, u, RecvIn{Max: 1, Wait: i32(10)})
			got <- answer{msgs, err}
		}()
		select {
		case a := <-got:
			t.Fatalf("long poll returned %v, %v while the group is held", bodies(a.msgs), a.err)
		case <-time.After(500 * time.Millisecond):
		}
		mustDelete(t, c, u, held...)
		select {
		case a := <-got:
			if a.err != nil {
				t.Fatalf("long poll: %v", a.err)
			}
			wantBodies(t, a.msgs, "message-2")
		case <-time.After(5 * time.Second):
			t.Fatal("long poll did not return after the delete unlocked the group")
		}
	})
}

// TestRecordedFIFOMessagesInOrderAfterTimeout: after the visibility
// timeout a group's messages come again in order (localstack test_sqs.py:
// test_fifo_messages_in_order_after_timeout, AWS-validated).
func TestRecordedFIFOMessagesInOrderAfterTimeout(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "order.fifo", fifoAttrs("VisibilityTimeout", "1"))
		for _, b := range []string{"message-0", "message-1", "message-2"} {
			mustSend(t, c, u, SendIn{Body: b, Group: "1", Dedup: b})
		}
		wantBodies(t, mustReceive(t, c, u, 10), "message-0", "message-1", "message-2")
		env.Clock.Advance(2 * time.Second)
		wantBodies(t, mustReceive(t, c, u, 10), "message-0", "message-1", "message-2")
	})
}

// TestRecordedFIFOGroupOrdering: a receive takes a group's messages
// before the next group's, whatever the send order (localstack
// test_sqs.py: test_fifo_receive_message_group_id_ordering, AWS-validated).
func TestRecordedFIFOGroupOrdering(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "groups.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		for _, m := range [][2]string{{"g1-m1", "group-1"}, {"g2-m1", "group-2"}, {"g1-m2", "group-1"}, {"g1-m3", "group-1"}} {
			mustSend(t, c, u, SendIn{Body: m[0], Group: m[1]})
		}
		wantBodies(t, mustReceive(t, c, u, 10), "g1-m1", "g1-m2", "g1-m3", "g2-m1")
	})
}

// TestRecordedFIFOEmptyGroupAddedBack: a group emptied by a delete serves
// again when a message is sent to it (localstack test_sqs.snapshot.json:
// test_fifo_empty_message_groups_added_back_to_queue/final-fifo-receive).
func TestRecordedFIFOEmptyGroupAddedBack(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "refill.fifo", fifoAttrs())
		mustSend(t, c, u, SendIn{Body: "Message 1", Group: "g1", Dedup: "1"})
		m := mustReceive(t, c, u, 1)
		wantBodies(t, m, "Message 1")
		mustDelete(t, c, u, m...)
		wantBodies(t, mustReceive(t, c, u, 1))
		mustSend(t, c, u, SendIn{Body: "Message 2", Group: "g1", Dedup: "2"})
		wantBodies(t, mustReceive(t, c, u, 1), "Message 2")
	})
}

// TestRecordedFIFOGroupsAfterVisibilityTimeout: a group whose visibility
// timeout ran out is served after a group that was never received, and
// groups come back in the order their timeouts ran out (localstack
// test_sqs.py: test_fifo_receive_message_visibility_timeout_shared_in_group,
// AWS-validated; AWS answered the first of its two accepted orders).
func TestRecordedFIFOGroupsAfterVisibilityTimeout(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "shared.fifo", fifoAttrs("VisibilityTimeout", "1", "ContentBasedDeduplication", "true"))
		for _, m := range [][2]string{{"g1-m1", "group-1"}, {"g1-m2", "group-1"}, {"g1-m3", "group-1"}, {"g1-m4", "group-1"}, {"g2-m1", "group-2"}, {"g3-m1", "group-3"}} {
			mustSend(t, c, u, SendIn{Body: m[0], Group: m[1]})
		}
		wantBodies(t, mustReceive(t, c, u, 2), "g1-m1", "g1-m2")
		wantBodies(t, mustReceive(t, c, u, 1), "g2-m1")
		env.Clock.Advance(2 * time.Second)
		wantBodies(t, receiveVis(t, env, c, u, 10, 0), "g3-m1", "g1-m1", "g1-m2", "g1-m3", "g1-m4", "g2-m1")
	})
}

// TestRecordedFIFOZeroVisibilityReceive: a receive with visibility timeout
// 0 leaves the groups it took receivable at once, behind the others
// (localstack test_sqs.py: test_fifo_receive_message_with_zero_visibility_timeout,
// AWS-validated).
func TestRecordedFIFOZeroVisibilityReceive(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "zero.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		for _, m := range [][2]string{{"g1-m1", "group-1"}, {"g2-m1", "group-2"}, {"g2-m2", "group-2"}, {"g3-m1", "group-3"}, {"g1-m2", "group-1"}} {
			mustSend(t, c, u, SendIn{Body: m[0], Group: m[1]})
		}
		// AWS's answer came some time after the sends: groups made
		// visible again by the receive are behind g3, visible since its
		// send.
		env.Clock.Advance(time.Millisecond)
		wantBodies(t, receiveVis(t, env, c, u, 3, 0), "g1-m1", "g1-m2", "g2-m1")
		wantBodies(t, receiveVis(t, env, c, u, 10, 0), "g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2")
	})
}

// TestRecordedFIFOGroupsAfterDelete: deleting all of a group's in-flight
// messages makes it receivable, in the place of its next message's send;
// deleting some of them does not (localstack test_sqs.py:
// test_fifo_message_group_visibility_after_delete, whose first accepted
// order is AWS's, and test_fifo_message_group_visibility_after_partial_delete,
// AWS-validated).
func TestRecordedFIFOGroupsAfterDelete(t *testing.T) {
	for _, partial := range []bool{false, true} {
		name := map[bool]string{false: "all", true: "partial"}[partial]
		t.Run(name, func(t *testing.T) {
			eachProtocol(t, func(t *testing.T, env *Env, c Client) {
				u := mustCreate(t, c, "deleted.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
				for _, m := range [][2]string{
					{"g1-m1", "group-1"}, {"g2-m1", "group-2"}, {"g1-m2", "group-1"}, {"g2-m2", "group-2"},
					{"g1-m2", "group-1"}, // deduplicated by content
					{"g1-m3", "group-1"}, {"g1-m4", "group-1"}, {"g3-m1", "group-3"},
				} {
					mustSend(t, c, u, SendIn{Body: m[0], Group: m[1]})
				}
				got := mustReceive(t, c, u, 2)
				wantBodies(t, got, "g1-m1", "g1-m2")
				if partial {
					got = got[:1]
				}
				mustDelete(t, c, u, got...)
				if partial {
					wantBodies(t, mustReceive(t, c, u, 10), "g2-m1", "g2-m2", "g3-m1")
					return
				}
				wantBodies(t, mustReceive(t, c, u, 10), "g2-m1", "g2-m2", "g1-m3", "g1-m4", "g3-m1")
			})
		})
	}
}

// TestRecordedFIFOGroupAfterVisibilityChange: ending or shortening the
// visibility of a group's first message makes that message receivable
// while the second is still in flight; the group comes after the one that
// waited (localstack test_sqs.py:
// test_fifo_message_group_visibility_after_terminate_visibility_timeout and
// test_fifo_message_group_visibility_after_change_message_visibility,
// AWS-validated).
func TestRecordedFIFOGroupAfterVisibilityChange(t *testing.T) {
	for _, vis := range []int32{0, 1} {
		name := map[int32]string{0: "terminate", 1: "shorten"}[vis]
		t.Run(name, func(t *testing.T) {
			eachProtocol(t, func(t *testing.T, env *Env, c Client) {
				u := mustCreate(t, c, "change.fifo", fifoAttrs("VisibilityTimeout", "30", "ContentBasedDeduplication", "true"))
				for _, m := range [][2]string{{"g1-m1", "group-1"}, {"g1-m2", "group-1"}, {"g2-m1", "group-2"}} {
					mustSend(t, c, u, SendIn{Body: m[0], Group: m[1]})
				}
				got := mustReceive(t, c, u, 2)
				wantBodies(t, got, "g1-m1", "g1-m2")
				// Some time passes before the change, as it did when AWS
				// answered: group-1 is then visible after group-2's send.
				env.Clock.Advance(time.Millisecond)
				if err := c.ChangeVisibility(ctxT(t), u, got[0].Handle, vis); err != nil {
					t.Fatalf("ChangeMessageVisibility: %v", err)
				}
				env.Clock.Advance(2 * time.Second)
				wantBodies(t, mustReceive(t, c, u, 3), "g2-m1", "g1-m1")
			})
		})
	}
}

// TestRecordedFIFOGroupVisibilityExtended: extending one message's
// visibility keeps it and the rest of its group from a receive, not the
// messages before it (localstack test_sqs.snapshot.json:
// test_fifo_group_visibility_extends_with_change_message_visibility[*-0-visible,
// *-1-visible, *-2-visible]/some-messages-invisible).
func TestRecordedFIFOGroupVisibilityExtended(t *testing.T) {
	recorded := [][]string{{}, {"foo"}, {"foo", "bar"}}
	for pos, want := range recorded {
		name := map[int]string{0: "0-visible", 1: "1-visible", 2: "2-visible"}[pos]
		t.Run(name, func(t *testing.T) {
			eachProtocol(t, func(t *testing.T, env *Env, c Client) {
				u := mustCreate(t, c, "extend.fifo", fifoAttrs("VisibilityTimeout", "1"))
				for _, b := range []string{"foo", "bar", "baz"} {
					mustSend(t, c, u, SendIn{Body: b, Group: "1", Dedup: b})
				}
				got := mustReceive(t, c, u, 5)
				wantBodies(t, got, "foo", "bar", "baz")
				if err := c.ChangeVisibility(ctxT(t), u, got[pos].Handle, 4); err != nil {
					t.Fatalf("ChangeMessageVisibility: %v", err)
				}
				env.Clock.Advance(2500 * time.Millisecond)
				wantBodies(t, mustReceive(t, c, u, 5), want...)
			})
		})
	}
}

// TestFIFOExpiredHandleBatches: the batch forms answer an expired FIFO
// handle per entry with the code of the single calls. No recording shows
// these entries; the code and fault follow the single-call answers above.
func TestFIFOExpiredHandleBatches(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "batches.fifo", fifoAttrs("VisibilityTimeout", "1", "ContentBasedDeduplication", "true"))
		mustSend(t, c, u, SendIn{Body: "a", Group: "1"})
		mustSend(t, c, u, SendIn{Body: "b", Group: "2"})
		old := mustReceive(t, c, u, 2)
		env.Clock.Advance(1500 * time.Millisecond)
		cur := mustReceive(t, c, u, 2)
		if len(old) != 2 || len(cur) != 2 {
			t.Fatalf("received %v then %v", bodies(old), bodies(cur))
		}
		ok, fails, err := c.ChangeVisibilityBatch(ctxT(t), u, []BatchHandle{{ID: "old", Handle: old[0].Handle}, {ID: "cur", Handle: cur[0].Handle}}, 10)
		if err != nil || len(ok) != 1 || ok[0] != "cur" || len(fails) != 1 || fails[0].ID != "old" || fails[0].Code != "InvalidParameterValue" || !fails[0].SenderFault {
			t.Errorf("ChangeMessageVisibilityBatch = %v, %+v, %v", ok, fails, err)
		}
		ok, fails, err = c.DeleteBatch(ctxT(t), u, []BatchHandle{{ID: "old", Handle: old[1].Handle}, {ID: "cur", Handle: cur[1].Handle}})
		if err != nil || len(ok) != 1 || ok[0] != "cur" || len(fails) != 1 || fails[0].ID != "old" || fails[0].Code != "InvalidParameterValue" || !fails[0].SenderFault {
			t.Errorf("DeleteMessageBatch = %v, %+v, %v", ok, fails, err)
		}
		err = c.ChangeVisibility(ctxT(t), u, old[0].Handle, 10)
		wantErr(t, err, "InvalidParameterValue")
		if want := "Value " + old[0].Handle + " for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."; errMessage(err) != want {
			t.Errorf("ChangeMessageVisibility message %q, want %q", errMessage(err), want)
		}
	})
}
