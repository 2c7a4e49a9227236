package integration

import (
	"context"
	"testing"
	"time"
)

// TestLongPolling checks that a waiting receive returns soon after a send,
// that an empty long poll lasts its wait time, and that a client that gives
// up frees its waiter without taking a message.
func TestLongPolling(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "poll", nil)

		t.Run("woken by a send", func(t *testing.T) {
			type result struct {
				msgs []Msg
				err  error
				at   time.Time
			}
			done := make(chan result, 1)
			go func() {
				msgs, err := c.Receive(ctx, q, RecvIn{Max: 1, Wait: i32(5)})
				done <- result{msgs, err, time.Now()}
			}()
			waitForWaiters(t, env, 1)
			sentAt := time.Now()
			mustSend(t, c, q, SendIn{Body: "wake up"})
			r := <-done
			ok(t, r.err)
			wantBodies(t, r.msgs, "wake up")
			if d := r.at.Sub(sentAt); d > 2*time.Second {
				t.Fatalf("long poll returned %v after the send, want well under 2s", d)
			}
			mustDelete(t, c, q, r.msgs...)
		})

		t.Run("empty wait lasts WaitTimeSeconds", func(t *testing.T) {
			start := time.Now()
			msgs := must(c.Receive(ctx, q, RecvIn{Max: 1, Wait: i32(1)}))(t)
			d := time.Since(start)
			if len(msgs) != 0 {
				t.Fatalf("empty queue yielded %q", bodies(msgs))
			}
			if d < 900*time.Millisecond || d > 3*time.Second {
				t.Fatalf("empty long poll of 1 s took %v", d)
			}
		})

		t.Run("queue wait time applies", func(t *testing.T) {
			waiting := mustCreate(t, c, "poll-default", map[string]string{"ReceiveMessageWaitTimeSeconds": "1"})
			start := time.Now()
			msgs := must(c.Receive(ctx, waiting, RecvIn{Max: 1}))(t)
			if d := time.Since(start); len(msgs) != 0 || d < 900*time.Millisecond {
				t.Fatalf("receive on a queue with ReceiveMessageWaitTimeSeconds=1 returned %q after %v", bodies(msgs), d)
			}
		})

		t.Run("cancelled client frees its waiter", func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := c.Receive(cctx, q, RecvIn{Max: 1, Wait: i32(20)})
				done <- err
			}()
			waitForWaiters(t, env, 1)
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("cancelled receive returned no error")
				}
			case <-time.After(2 * time.Second):
				t.Fatal("cancelled receive did not return")
			}
			// The abandoned waiter must not swallow the next message.
			waitForWaiters(t, env, 0)
			mustSend(t, c, q, SendIn{Body: "for the living"})
			msgs := must(c.Receive(ctx, q, RecvIn{Max: 1, Wait: i32(2)}))(t)
			wantBodies(t, msgs, "for the living")
			if rc := msgs[0].Sys["ApproximateReceiveCount"]; rc != "1" {
				t.Fatalf("message was received by the abandoned waiter first (ApproximateReceiveCount %s)", rc)
			}
		})
	})
}

// TestManyLongPollers checks that a send wakes one of many waiters on the
// same queue and the others keep waiting without error.
func TestManyLongPollers(t *testing.T) {
	t.Parallel()
	env := Start(t)
	c := v2Client{env.V2}
	ctx := ctxT(t)
	q := mustCreate(t, c, "many", nil)
	const waiters = 20
	got := make(chan []Msg, waiters)
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		go func() {
			msgs, err := c.Receive(ctx, q, RecvIn{Max: 1, Wait: i32(2)})
			if err != nil {
				errs <- err
				return
			}
			got <- msgs
		}()
	}
	waitForWaiters(t, env, waiters)
	sendMany(t, c, q, "", "w", 5)
	received := 0
	for i := 0; i < waiters; i++ {
		select {
		case err := <-errs:
			t.Fatalf("waiter failed: %v", err)
		case msgs := <-got:
			received += len(msgs)
		case <-time.After(10 * time.Second):
			t.Fatal("waiters did not return")
		}
	}
	if received != 5 {
		t.Fatalf("waiters received %d messages, want the 5 sent", received)
	}
}
