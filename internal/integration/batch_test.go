package integration

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// TestBatchesWithPartialFailures runs the three batch actions with one
// failing entry each: the other entries succeed, and the failed entry is
// reported by its id with the SQS code and the sender at fault.
func TestBatchesWithPartialFailures(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)

		t.Run("SendMessageBatch", func(t *testing.T) {
			q := mustCreate(t, c, "send-batch.fifo", fifoAttrs())
			var entries []BatchSend
			for i := 0; i < 10; i++ {
				body := fmt.Sprintf("m%d", i)
				if i == 4 {
					body = "bad \x01 body"
				}
				entries = append(entries, BatchSend{ID: fmt.Sprintf("id-%d", i), SendIn: SendIn{Body: body, Group: "g", Dedup: fmt.Sprintf("d%d", i)}})
			}
			sent, fails, err := c.SendBatch(ctx, q, entries)
			ok(t, err)
			wantFails(t, "SendMessageBatch", fails, "id-4", "InvalidMessageContents")
			if len(sent) != 9 {
				t.Fatalf("SendMessageBatch: %d successful entries, want 9", len(sent))
			}
			idOf := map[string]string{}
			for _, e := range entries {
				if e.ID == "id-4" {
					continue
				}
				s, found := sent[e.ID]
				if !found || s.ID == "" || s.Seq == "" || s.MD5Body != bodyMD5(e.Body) {
					t.Fatalf("SendMessageBatch entry %s: got %+v", e.ID, s)
				}
				idOf[e.Body] = s.ID
			}
			msgs := mustReceive(t, c, q, 10)
			wantBodies(t, msgs, "m0", "m1", "m2", "m3", "m5", "m6", "m7", "m8", "m9")
			for _, m := range msgs {
				if m.ID != idOf[m.Body] {
					t.Errorf("message %s has MessageId %s, not the one its send returned", m.Body, m.ID)
				}
			}
		})

		t.Run("ChangeMessageVisibilityBatch and DeleteMessageBatch", func(t *testing.T) {
			q := mustCreate(t, c, "handle-batch.fifo", fifoAttrs("VisibilityTimeout", "30"))
			sendMany(t, c, q, "g", "m", 9)
			msgs := mustReceive(t, c, q, 10)
			if len(msgs) != 9 {
				t.Fatalf("received %d of 9 messages", len(msgs))
			}
			withBogus := append(handles(msgs), BatchHandle{ID: "bogus", Handle: "not-a-receipt-handle"})
			changed, fails, err := c.ChangeVisibilityBatch(ctx, q, withBogus, 120)
			ok(t, err)
			wantFails(t, "ChangeMessageVisibilityBatch", fails, "bogus", "ReceiptHandleIsInvalid")
			wantIDs(t, "ChangeMessageVisibilityBatch", changed, handles(msgs))
			// The new timeout holds the group past the queue's 30 s.
			env.Clock.Advance(60 * time.Second)
			if got := mustReceive(t, c, q, 10); len(got) != 0 {
				t.Fatalf("messages came back before their changed visibility timeout: %q", bodies(got))
			}

			deleted, fails, err := c.DeleteBatch(ctx, q, withBogus)
			ok(t, err)
			wantFails(t, "DeleteMessageBatch", fails, "bogus", "ReceiptHandleIsInvalid")
			wantIDs(t, "DeleteMessageBatch", deleted, handles(msgs))
			env.Clock.Advance(2 * time.Minute)
			if got := mustReceive(t, c, q, 10); len(got) != 0 {
				t.Fatalf("deleted messages came back: %q", bodies(got))
			}
			if n := numAttr(t, c, q, "ApproximateNumberOfMessages") + numAttr(t, c, q, "ApproximateNumberOfMessagesNotVisible"); n != 0 {
				t.Fatalf("queue still counts %d messages after the batch delete", n)
			}
		})
	})
}

// TestChangeVisibilityBatchToZero checks that a batch visibility change to
// 0 makes messages receivable again at once.
func TestChangeVisibilityBatchToZero(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "cvb", nil)
		sendMany(t, c, q, "", "s", 3)
		var msgs []Msg
		for i := 0; i < 10 && len(msgs) < 3; i++ {
			msgs = append(msgs, mustReceive(t, c, q, 10)...)
		}
		if len(msgs) != 3 {
			t.Fatalf("received %d of 3 messages", len(msgs))
		}
		changed, fails, err := c.ChangeVisibilityBatch(ctxT(t), q, handles(msgs), 0)
		if err != nil || len(fails) != 0 || len(changed) != 3 {
			t.Fatalf("ChangeMessageVisibilityBatch: %v, %d ok, failed %v", err, len(changed), fails)
		}
		var again []Msg
		for i := 0; i < 10 && len(again) < 3; i++ {
			again = append(again, mustReceive(t, c, q, 10)...)
		}
		if len(again) != 3 {
			t.Fatalf("after visibility 0, received %d of 3 messages", len(again))
		}
		for _, m := range again {
			if m.Sys["ApproximateReceiveCount"] != "2" {
				t.Errorf("%s: ApproximateReceiveCount %q, want 2", m.Body, m.Sys["ApproximateReceiveCount"])
			}
		}
	})
}

// wantFails fails the test unless fails is exactly one entry with the id and code.
func wantFails(t *testing.T, action string, fails []BatchFail, id, code string) {
	t.Helper()
	if len(fails) != 1 || fails[0].ID != id || fails[0].Code != code || !fails[0].SenderFault {
		t.Fatalf("%s failed entries = %+v, want one {%s %s SenderFault}", action, fails, id, code)
	}
}

// wantIDs fails the test unless the successful ids are the entries' ids.
func wantIDs(t *testing.T, action string, got []string, entries []BatchHandle) {
	t.Helper()
	var want []string
	for _, e := range entries {
		want = append(want, e.ID)
	}
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s successful ids %v, want %v", action, got, want)
	}
}
