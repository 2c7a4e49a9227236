package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"testing"
	"time"
)

// TestFIFOQueueCreation covers the rules that make a queue FIFO: the .fifo
// suffix and FifoQueue=true go together, FifoQueue cannot change, and the
// FIFO-only attributes are refused on standard queues.
func TestFIFOQueueCreation(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		create := []struct {
			name  string
			queue string
			attrs map[string]string
			code  string // "" means success
		}{
			{"fifo name and attribute", "ok.fifo", fifoAttrs(), ""},
			{"fifo with content-based dedup", "cbd.fifo", fifoAttrs("ContentBasedDeduplication", "true"), ""},
			{"FifoQueue=true without suffix", "nosuffix", fifoAttrs(), "InvalidParameterValue"},
			{"suffix without FifoQueue", "noattr.fifo", nil, "InvalidParameterValue"},
			{"FifoQueue=false on a standard queue", "plain", map[string]string{"FifoQueue": "false"}, "InvalidAttributeName"},
			{"ContentBasedDeduplication on a standard queue", "plain2", map[string]string{"ContentBasedDeduplication": "true"}, "InvalidAttributeName"},
		}
		for _, tc := range create {
			url, err := c.CreateQueue(ctx, tc.queue, tc.attrs, nil)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("%s: CreateQueue: %v", tc.name, err)
				}
				if got := must(c.GetAttrs(ctx, url, "FifoQueue"))(t)["FifoQueue"]; got != "true" {
					t.Fatalf("%s: FifoQueue = %q, want true", tc.name, got)
				}
				continue
			}
			t.Run(tc.name, func(t *testing.T) { wantErr(t, err, tc.code) })
		}

		std := mustCreate(t, c, "standard", nil)
		fifo := mustCreate(t, c, "immutable.fifo", fifoAttrs())
		t.Run("standard to FIFO refused", func(t *testing.T) {
			wantErr(t, c.SetAttrs(ctx, std, map[string]string{"FifoQueue": "true"}), "InvalidAttributeName")
		})
		t.Run("FIFO to standard refused", func(t *testing.T) {
			err := c.SetAttrs(ctx, fifo, map[string]string{"FifoQueue": "false"})
			wantErr(t, err, "InvalidAttributeName", "InvalidAttributeValue")
			if got := must(c.GetAttrs(ctx, fifo, "FifoQueue"))(t)["FifoQueue"]; got != "true" {
				t.Fatalf("FifoQueue = %q after a refused change, want true", got)
			}
		})
		t.Run("ContentBasedDeduplication can change", func(t *testing.T) {
			ok(t, c.SetAttrs(ctx, fifo, map[string]string{"ContentBasedDeduplication": "true"}))
			if got := must(c.GetAttrs(ctx, fifo, "ContentBasedDeduplication"))(t)["ContentBasedDeduplication"]; got != "true" {
				t.Fatalf("ContentBasedDeduplication = %q, want true", got)
			}
		})
	})
}

// TestFIFOSendParameters covers what a send to a FIFO queue must and must not carry.
func TestFIFOSendParameters(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "params.fifo", fifoAttrs())
		cbd := mustCreate(t, c, "params-cbd.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		cases := []struct {
			name  string
			queue string
			in    SendIn
			code  string
		}{
			{"no MessageGroupId", q, SendIn{Body: "a", Dedup: "d"}, "MissingParameter"},
			{"no MessageGroupId, content-based queue", cbd, SendIn{Body: "a"}, "MissingParameter"},
			{"no deduplication id", q, SendIn{Body: "a", Group: "g"}, "InvalidParameterValue"},
			{"per-message DelaySeconds", q, SendIn{Body: "a", Group: "g", Dedup: "d", Delay: i32(1)}, "InvalidParameterValue"},
			{"deduplication id too long", q, SendIn{Body: "a", Group: "g", Dedup: string(make129('d'))}, "InvalidParameterValue"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := c.Send(ctx, tc.queue, tc.in)
				wantErr(t, err, tc.code)
			})
		}
		// Nothing of the refused sends was stored.
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("refused sends left messages %q", bodies(msgs))
		}
		// The same message with everything it needs goes through.
		mustSend(t, c, q, SendIn{Body: "a", Group: "g", Dedup: "d"})
		mustSend(t, c, cbd, SendIn{Body: "a", Group: "g"})
	})
}

func make129(b byte) []byte {
	out := make([]byte, 129)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestFIFOContentBasedDeduplication checks that the generated id is the
// SHA-256 of the body alone, and that an explicit id takes precedence.
func TestFIFOContentBasedDeduplication(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "cbd.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		first := mustSend(t, c, q, SendIn{Body: "hello", Group: "g", Attrs: map[string]Attr{"a": {DataType: "String", String: "1"}}})
		// Same body, other attributes, other group: still a duplicate,
		// since the id is the hash of the body only and dedup is per queue.
		dup := mustSend(t, c, q, SendIn{Body: "hello", Group: "h", Attrs: map[string]Attr{"b": {DataType: "Number", String: "2"}}})
		if dup.ID != first.ID {
			t.Fatalf("duplicate by content got MessageId %s, want the original %s", dup.ID, first.ID)
		}
		// An explicit id wins: the same body is a new message...
		explicit := mustSend(t, c, q, SendIn{Body: "hello", Group: "g", Dedup: "mine"})
		if explicit.ID == first.ID {
			t.Fatal("explicit deduplication id was ignored: got the content-based duplicate's MessageId")
		}
		// ...and another body with the same explicit id is its duplicate.
		again := mustSend(t, c, q, SendIn{Body: "other body", Group: "g", Dedup: "mine"})
		if again.ID != explicit.ID {
			t.Fatalf("duplicate by explicit id got MessageId %s, want %s", again.ID, explicit.ID)
		}

		msgs := mustReceive(t, c, q, 10)
		wantBodies(t, msgs, "hello", "hello")
		sum := sha256.Sum256([]byte("hello"))
		if got, want := msgs[0].Sys["MessageDeduplicationId"], hex.EncodeToString(sum[:]); got != want {
			t.Errorf("content-based MessageDeduplicationId = %q, want SHA-256 of the body %q", got, want)
		}
		if got := msgs[1].Sys["MessageDeduplicationId"]; got != "mine" {
			t.Errorf("explicit MessageDeduplicationId = %q, want mine", got)
		}
		if msgs[0].ID != first.ID || msgs[1].ID != explicit.ID {
			t.Errorf("received ids %s, %s; want %s, %s", msgs[0].ID, msgs[1].ID, first.ID, explicit.ID)
		}
	})
}

// TestFIFODeduplicationInterval checks the 5-minute interval: duplicates are
// accepted with the original MessageId and never delivered, even after the
// original was received and deleted; after the interval the id is new again.
func TestFIFODeduplicationInterval(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "dedup.fifo", fifoAttrs())
		orig := mustSend(t, c, q, SendIn{Body: "v1", Group: "g", Dedup: "id-1"})
		dup := mustSend(t, c, q, SendIn{Body: "v2", Group: "g", Dedup: "id-1"})
		if dup.ID != orig.ID {
			t.Fatalf("duplicate got MessageId %s, want the original's %s", dup.ID, orig.ID)
		}
		msgs := mustReceive(t, c, q, 10)
		wantBodies(t, msgs, "v1")
		mustDelete(t, c, q, msgs...)

		// The id outlives the message's deletion.
		env.Clock.Advance(4 * time.Minute)
		if again := mustSend(t, c, q, SendIn{Body: "v3", Group: "g", Dedup: "id-1"}); again.ID != orig.ID {
			t.Fatalf("duplicate after deletion got MessageId %s, want %s", again.ID, orig.ID)
		}
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("duplicate after deletion was delivered: %q", bodies(msgs))
		}

		// Past the interval (counted from the first send) the id is fresh.
		env.Clock.Advance(time.Minute + 5*time.Second)
		fresh := mustSend(t, c, q, SendIn{Body: "v4", Group: "g", Dedup: "id-1"})
		if fresh.ID == orig.ID {
			t.Fatal("send after the deduplication interval was treated as a duplicate")
		}
		wantBodies(t, mustReceive(t, c, q, 10), "v4")
	})
}

// TestFIFODeduplicationScope checks queue-wide deduplication by default and
// per-group deduplication with DeduplicationScope=messageGroup.
func TestFIFODeduplicationScope(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		perQueue := mustCreate(t, c, "scope-queue.fifo", fifoAttrs())
		perGroup := mustCreate(t, c, "scope-group.fifo", fifoAttrs("DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"))
		attrs := must(c.GetAttrs(ctx, perGroup, "DeduplicationScope", "FifoThroughputLimit"))(t)
		if attrs["DeduplicationScope"] != "messageGroup" || attrs["FifoThroughputLimit"] != "perMessageGroupId" {
			t.Fatalf("high-throughput attributes = %v", attrs)
		}
		if got := must(c.GetAttrs(ctx, perQueue, "DeduplicationScope"))(t)["DeduplicationScope"]; got != "queue" {
			t.Fatalf("default DeduplicationScope = %q, want queue", got)
		}

		a := mustSend(t, c, perQueue, SendIn{Body: "a", Group: "g1", Dedup: "same"})
		b := mustSend(t, c, perQueue, SendIn{Body: "b", Group: "g2", Dedup: "same"})
		if a.ID != b.ID {
			t.Errorf("queue scope: same id in another group was not deduplicated")
		}
		wantBodies(t, mustReceive(t, c, perQueue, 10), "a")

		a = mustSend(t, c, perGroup, SendIn{Body: "a", Group: "g1", Dedup: "same"})
		b = mustSend(t, c, perGroup, SendIn{Body: "b", Group: "g2", Dedup: "same"})
		a2 := mustSend(t, c, perGroup, SendIn{Body: "a2", Group: "g1", Dedup: "same"})
		if a.ID == b.ID {
			t.Errorf("messageGroup scope: same id in another group was deduplicated")
		}
		if a2.ID != a.ID {
			t.Errorf("messageGroup scope: same id in the same group was not deduplicated")
		}
		wantBodies(t, mustReceive(t, c, perGroup, 10), "a", "b")
	})
}

// TestFIFOQueueDelay checks that a FIFO queue's DelaySeconds holds new messages back.
func TestFIFOQueueDelay(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "delay.fifo", fifoAttrs("DelaySeconds", "2", "ContentBasedDeduplication", "true"))
		mustSend(t, c, q, SendIn{Body: "later", Group: "g"})
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("delayed message delivered at once: %q", bodies(msgs))
		}
		if n := numAttr(t, c, q, "ApproximateNumberOfMessagesDelayed"); n != 1 {
			t.Errorf("ApproximateNumberOfMessagesDelayed = %d, want 1", n)
		}
		env.Clock.Advance(1 * time.Second)
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("delayed message delivered after half its delay: %q", bodies(msgs))
		}
		env.Clock.Advance(1100 * time.Millisecond)
		wantBodies(t, mustReceive(t, c, q, 10), "later")
	})
}

// TestFIFOOrderAndSequenceNumbers checks strict per-group order and the
// sequence numbers: returned by every send, increasing, large and
// non-consecutive, and echoed by the SequenceNumber attribute.
func TestFIFOOrderAndSequenceNumbers(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "order.fifo", fifoAttrs())
		const n = 25
		seqs := map[string]string{}
		var order []string
		// Single sends and batches interleaved, a millisecond apart on the
		// server's clock, since SQS's sequence numbers grow with time.
		for i := 0; i < n; env.Clock.Advance(time.Millisecond) {
			if i%2 == 0 {
				body := fmt.Sprintf("m%02d", i)
				out := mustSend(t, c, q, SendIn{Body: body, Group: "g", Dedup: body})
				seqs[body], order = out.Seq, append(order, body)
				i++
				continue
			}
			var entries []BatchSend
			for j := 0; j < 3 && i < n; j, i = j+1, i+1 {
				body := fmt.Sprintf("m%02d", i)
				entries = append(entries, BatchSend{ID: body, SendIn: SendIn{Body: body, Group: "g", Dedup: body}})
			}
			okm, fails, err := c.SendBatch(ctx, q, entries)
			if err != nil || len(fails) > 0 {
				t.Fatalf("SendMessageBatch: %v %v", err, fails)
			}
			for _, e := range entries {
				seqs[e.Body], order = okm[e.ID].Seq, append(order, e.Body)
			}
		}

		var prev *big.Int
		gaps := false
		for _, body := range order {
			s, okParse := new(big.Int).SetString(seqs[body], 10)
			if !okParse {
				t.Fatalf("send of %s returned SequenceNumber %q, want a decimal number", body, seqs[body])
			}
			if len(seqs[body]) < 10 {
				t.Errorf("SequenceNumber %s of %s is small; SQS's are large (about 20 digits)", seqs[body], body)
			}
			if prev != nil {
				if s.Cmp(prev) <= 0 {
					t.Fatalf("SequenceNumber of %s (%s) is not above the previous one (%s)", body, s, prev)
				}
				if new(big.Int).Sub(s, prev).Cmp(big.NewInt(1)) > 0 {
					gaps = true
				}
			}
			prev = s
		}
		if !gaps {
			t.Errorf("sequence numbers are consecutive; SQS's are not")
		}

		var got []string
		for len(got) < n {
			msgs := mustReceive(t, c, q, 10)
			if len(msgs) == 0 {
				t.Fatalf("queue ran dry after %d of %d messages", len(got), n)
			}
			for _, m := range msgs {
				if m.Sys["SequenceNumber"] != seqs[m.Body] {
					t.Errorf("%s: SequenceNumber attribute %q, send returned %q", m.Body, m.Sys["SequenceNumber"], seqs[m.Body])
				}
				if m.Sys["MessageGroupId"] != "g" {
					t.Errorf("%s: MessageGroupId attribute %q, want g", m.Body, m.Sys["MessageGroupId"])
				}
				got = append(got, m.Body)
			}
			mustDelete(t, c, q, msgs...)
		}
		for i := range order {
			if got[i] != order[i] {
				t.Fatalf("received %q, want send order %q", got, order)
			}
		}
	})
}

// TestFIFOGroupLockedWhileInFlight checks that a group with a message in
// flight yields nothing more, while other groups stay receivable.
func TestFIFOGroupLockedWhileInFlight(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "lock.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		for _, m := range []SendIn{{Body: "a1", Group: "A"}, {Body: "a2", Group: "A"}, {Body: "b1", Group: "B"}, {Body: "a3", Group: "A"}} {
			mustSend(t, c, q, m)
		}
		first := mustReceive(t, c, q, 1)
		wantBodies(t, first, "a1")
		// A is locked by a1: only B's message comes, though A has more.
		second := mustReceive(t, c, q, 10)
		wantBodies(t, second, "b1")
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("locked groups yielded %q", bodies(msgs))
		}
		// Deleting a1 unlocks A, in order.
		mustDelete(t, c, q, first...)
		wantBodies(t, mustReceive(t, c, q, 10), "a2", "a3")
	})
}

// TestFIFOVisibilityExpiry checks that a message whose visibility timeout
// expires comes back first in its group, with its receive count raised.
func TestFIFOVisibilityExpiry(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "expiry.fifo", fifoAttrs("ContentBasedDeduplication", "true", "VisibilityTimeout", "30"))
		for _, b := range []string{"m1", "m2", "m3"} {
			mustSend(t, c, q, SendIn{Body: b, Group: "g"})
		}
		first := mustReceive(t, c, q, 1)
		wantBodies(t, first, "m1")
		if rc := first[0].Sys["ApproximateReceiveCount"]; rc != "1" {
			t.Errorf("first ApproximateReceiveCount = %q, want 1", rc)
		}
		env.Clock.Advance(29 * time.Second)
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("group yielded %q before m1's visibility timeout expired", bodies(msgs))
		}
		env.Clock.Advance(2 * time.Second)
		again := mustReceive(t, c, q, 10)
		wantBodies(t, again, "m1", "m2", "m3")
		if rc := again[0].Sys["ApproximateReceiveCount"]; rc != "2" {
			t.Errorf("redelivered ApproximateReceiveCount = %q, want 2", rc)
		}
		if again[0].ID != first[0].ID {
			t.Errorf("redelivered MessageId %s, want %s", again[0].ID, first[0].ID)
		}
		if again[0].Handle == first[0].Handle {
			t.Errorf("redelivery reused the expired receipt handle")
		}
		if again[0].Sys["ApproximateFirstReceiveTimestamp"] != first[0].Sys["ApproximateFirstReceiveTimestamp"] {
			t.Errorf("ApproximateFirstReceiveTimestamp changed on redelivery: %s then %s",
				first[0].Sys["ApproximateFirstReceiveTimestamp"], again[0].Sys["ApproximateFirstReceiveTimestamp"])
		}
	})
}

// TestFIFOReceiveFillsFromOtherGroups checks that a receive takes as many
// messages of the oldest group as it can, then fills from the next groups
// in the order of their oldest messages, and skips locked groups.
func TestFIFOReceiveFillsFromOtherGroups(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "fill.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		for _, m := range []SendIn{
			{Body: "a1", Group: "A"}, {Body: "b1", Group: "B"}, {Body: "a2", Group: "A"},
			{Body: "c1", Group: "C"}, {Body: "b2", Group: "B"}, {Body: "b3", Group: "B"},
		} {
			mustSend(t, c, q, m)
		}
		wantBodies(t, mustReceive(t, c, q, 3), "a1", "a2", "b1")
		// A and B are in flight: only C is left to give.
		wantBodies(t, mustReceive(t, c, q, 10), "c1")
	})
}

// TestFIFOReceiveRequestAttemptId checks that retrying a receive with the
// same attempt id returns the same messages and receipt handles, and that
// the messages are not handed out again once deleted.
func TestFIFOReceiveRequestAttemptId(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "attempt.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		for i := 1; i <= 5; i++ {
			mustSend(t, c, q, SendIn{Body: fmt.Sprintf("m%d", i), Group: "g"})
		}
		first := must(c.Receive(ctx, q, RecvIn{Max: 2, Wait: i32(0), AttemptID: "attempt-1"}))(t)
		wantBodies(t, first, "m1", "m2")
		retry := must(c.Receive(ctx, q, RecvIn{Max: 2, Wait: i32(0), AttemptID: "attempt-1"}))(t)
		wantBodies(t, retry, "m1", "m2")
		for i := range first {
			if retry[i].ID != first[i].ID || retry[i].Handle != first[i].Handle {
				t.Errorf("retry %d: got %s/%s, want the same id and receipt handle %s/%s",
					i, retry[i].ID, retry[i].Handle, first[i].ID, first[i].Handle)
			}
		}
		// Another receive, without the attempt id, finds the group locked.
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("receive during the attempt's visibility got %q", bodies(msgs))
		}
		mustDelete(t, c, q, first...)
		next := must(c.Receive(ctx, q, RecvIn{Max: 2, Wait: i32(0), AttemptID: "attempt-2"}))(t)
		wantBodies(t, next, "m3", "m4")
	})
}

// TestFIFOBacklogDoesNotHideLaterGroup checks that a long backlog in one
// group does not keep a later group's message from being received.
func TestFIFOBacklogDoesNotHideLaterGroup(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	q := mustCreate(t, c, "backlog.fifo", fifoAttrs())
	const backlog = 5000
	sendMany(t, c, q, "big", "big", backlog)
	mustSend(t, c, q, SendIn{Body: "late", Group: "late", Dedup: "late"})
	if n := numAttr(t, c, q, "ApproximateNumberOfMessages"); n != backlog+1 {
		t.Errorf("ApproximateNumberOfMessages = %d, want %d", n, backlog+1)
	}
	first := mustReceive(t, c, q, 10)
	if len(first) != 10 || first[0].Body != "big-0" || first[9].Body != "big-9" {
		t.Fatalf("first receive got %q, want big-0..big-9", bodies(first))
	}
	wantBodies(t, mustReceive(t, c, q, 10), "late")
}
