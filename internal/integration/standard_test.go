package integration

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestStandardRoundTrip sends, receives and deletes messages of a standard
// queue: each is delivered at least once and gone once deleted.
func TestStandardRoundTrip(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "std", nil)
		const n = 25
		sendMany(t, c, q, "", "m", n)
		seen := map[string]bool{}
		for _, b := range drain(t, c, q) {
			seen[b] = true
		}
		for i := 0; i < n; i++ {
			if !seen[fmt.Sprintf("m-%d", i)] {
				t.Errorf("m-%d was never delivered", i)
			}
		}
		env.Clock.Advance(time.Minute)
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("deleted messages came back: %q", bodies(msgs))
		}
	})
}

// TestStandardSendRules checks per-message delay and the FIFO-only
// parameter refused on a standard queue.
func TestStandardSendRules(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "rules", nil)
		_, err := c.Send(ctxT(t), q, SendIn{Body: "x", Dedup: "d"})
		t.Run("MessageDeduplicationId refused", func(t *testing.T) { wantErr(t, err, "InvalidParameterValue") })

		mustSend(t, c, q, SendIn{Body: "delayed", Delay: i32(2)})
		mustSend(t, c, q, SendIn{Body: "now"})
		wantBodies(t, mustReceive(t, c, q, 10), "now")
		env.Clock.Advance(2100 * time.Millisecond)
		wantBodies(t, mustReceive(t, c, q, 10), "delayed")
	})
}

// TestStandardVisibility checks the visibility timeout and ChangeMessageVisibility.
func TestStandardVisibility(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "vis", map[string]string{"VisibilityTimeout": "10"})
		mustSend(t, c, q, SendIn{Body: "m"})
		first := mustReceive(t, c, q, 1)
		wantBodies(t, first, "m")
		if msgs := mustReceive(t, c, q, 1); len(msgs) != 0 {
			t.Fatal("an in-flight message was delivered again")
		}
		// Extend to 60 s: not back after the queue's 10 s.
		ok(t, c.ChangeVisibility(ctx, q, first[0].Handle, 60))
		env.Clock.Advance(30 * time.Second)
		if msgs := mustReceive(t, c, q, 1); len(msgs) != 0 {
			t.Fatal("message came back before its extended visibility timeout")
		}
		// Back to 0: visible at once.
		ok(t, c.ChangeVisibility(ctx, q, first[0].Handle, 0))
		again := mustReceive(t, c, q, 1)
		wantBodies(t, again, "m")
		if again[0].Sys["ApproximateReceiveCount"] != "2" {
			t.Errorf("ApproximateReceiveCount = %q, want 2", again[0].Sys["ApproximateReceiveCount"])
		}
		// A receive's own VisibilityTimeout overrides the queue's.
		ok(t, c.ChangeVisibility(ctx, q, again[0].Handle, 0))
		third := must(c.Receive(ctx, q, RecvIn{Max: 1, Wait: i32(0), Visibility: i32(1)}))(t)
		wantBodies(t, third, "m")
		env.Clock.Advance(1500 * time.Millisecond)
		last := mustReceive(t, c, q, 1)
		wantBodies(t, last, "m")
		ok(t, c.Delete(ctx, q, last[0].Handle))
		env.Clock.Advance(time.Minute)
		if msgs := mustReceive(t, c, q, 1); len(msgs) != 0 {
			t.Fatalf("message survived its deletion: %q", bodies(msgs))
		}
	})
}

// TestPurgeQueue checks PurgeQueue and its once-a-minute limit.
func TestPurgeQueue(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "purge", nil)
		sendMany(t, c, q, "", "p", 5)
		ok(t, c.Purge(ctx, q))
		if msgs := mustReceive(t, c, q, 10); len(msgs) != 0 {
			t.Fatalf("purged messages delivered: %q", bodies(msgs))
		}
		if n := numAttr(t, c, q, "ApproximateNumberOfMessages"); n != 0 {
			t.Fatalf("ApproximateNumberOfMessages after purge = %d", n)
		}
		wantErr(t, c.Purge(ctx, q), "AWS.SimpleQueueService.PurgeQueueInProgress")
		env.Clock.Advance(61 * time.Second)
		ok(t, c.Purge(ctx, q))
		// Messages sent after a purge are kept.
		mustSend(t, c, q, SendIn{Body: "after"})
		wantBodies(t, mustReceive(t, c, q, 10), "after")
	})
}

// TestMessageAttributes round-trips every attribute type, custom types
// included, and checks the MD5 of the attributes on send and on receive.
func TestMessageAttributes(t *testing.T) {
	attrs := map[string]Attr{
		"s":        {DataType: "String", String: "héllo, wörld ✓"},
		"n":        {DataType: "Number", String: "-12.5e3"},
		"b":        {DataType: "Binary", Binary: []byte{0, 1, 2, 0xfe, 0xff}},
		"custom-s": {DataType: "String.json", String: `{"k":[1,2]}`},
		"custom-n": {DataType: "Number.int", String: "42"},
		"custom-b": {DataType: "Binary.gif", Binary: []byte("GIF89a")},
	}
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		for _, queue := range []struct{ name, group string }{{"attrs", ""}, {"attrs.fifo", "g"}} {
			t.Run(queue.name, func(t *testing.T) {
				var qattrs map[string]string
				if queue.group != "" {
					qattrs = fifoAttrs("ContentBasedDeduplication", "true")
				}
				q := mustCreate(t, c, queue.name, qattrs)
				body := "body with attributes"
				out := mustSend(t, c, q, SendIn{Body: body, Group: queue.group, Attrs: attrs})
				if out.MD5Body != bodyMD5(body) {
					t.Errorf("send MD5OfMessageBody = %s, want %s", out.MD5Body, bodyMD5(body))
				}
				if want := attrsMD5(attrs); out.MD5Attrs != want {
					t.Errorf("send MD5OfMessageAttributes = %s, want %s", out.MD5Attrs, want)
				}
				msgs := mustReceive(t, c, q, 1)
				wantBodies(t, msgs, body)
				m := msgs[0]
				if want := attrsMD5(attrs); m.MD5Attrs != want {
					t.Errorf("receive MD5OfMessageAttributes = %s, want %s", m.MD5Attrs, want)
				}
				if m.MD5Body != bodyMD5(body) {
					t.Errorf("receive MD5OfBody = %s, want %s", m.MD5Body, bodyMD5(body))
				}
				if len(m.Attrs) != len(attrs) {
					t.Fatalf("received %d attributes, want %d: %+v", len(m.Attrs), len(attrs), m.Attrs)
				}
				for name, want := range attrs {
					got := m.Attrs[name]
					if got.DataType != want.DataType || got.String != want.String || !bytes.Equal(got.Binary, want.Binary) {
						t.Errorf("attribute %s = %+v, want %+v", name, got, want)
					}
				}
				for _, sys := range []string{"SenderId", "SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp"} {
					if m.Sys[sys] == "" {
						t.Errorf("system attribute %s missing from %v", sys, m.Sys)
					}
				}
			})
		}
	})
}
