package integration

import (
	"context"
	"testing"
	"time"
)

// TestLongPolling checks that a waiting receive is answered by a send,
// that an empty long poll lasts its wait time on the server's clock (and
// not a moment less), and that a client that gives up frees its waiter
// without taking a message.
func TestLongPolling(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "poll", nil)

		t.Run("woken by a send", func(t *testing.T) {
			done := receiveAsync(ctx, c, q, RecvIn{Max: 1, Wait: i32(5)})
			waitForWaiters(t, env, 1)
			mustSend(t, c, q, SendIn{Body: "wake up"})
			// The clock stands still: only the send can end this poll.
			msgs := awaitReceive(t, done, "a long poll woken by a send")
			wantBodies(t, msgs, "wake up")
			mustDelete(t, c, q, msgs...)
		})

		t.Run("empty wait lasts WaitTimeSeconds", func(t *testing.T) {
			done := receiveAsync(ctx, c, q, RecvIn{Max: 1, Wait: i32(1)})
			waitForWaiters(t, env, 1)
			env.Clock.Advance(999 * time.Millisecond)
			// A poll still waiting takes a message sent now; one that
			// had ended early would leave it in the queue.
			mustSend(t, c, q, SendIn{Body: "just in time"})
			msgs := awaitReceive(t, done, "a long poll 1 ms before its end")
			wantBodies(t, msgs, "just in time")
			mustDelete(t, c, q, msgs...)

			done = receiveAsync(ctx, c, q, RecvIn{Max: 1, Wait: i32(1)})
			waitForWaiters(t, env, 1)
			env.Clock.Advance(time.Second)
			if msgs := awaitReceive(t, done, "an empty long poll past its wait time"); len(msgs) != 0 {
				t.Fatalf("empty queue yielded %q", bodies(msgs))
			}
		})

		t.Run("queue wait time applies", func(t *testing.T) {
			waiting := mustCreate(t, c, "poll-default", map[string]string{"ReceiveMessageWaitTimeSeconds": "1"})
			done := receiveAsync(ctx, c, waiting, RecvIn{Max: 1})
			// A receive without WaitTimeSeconds waits the queue's second.
			waitForWaiters(t, env, 1)
			env.Clock.Advance(time.Second)
			if msgs := awaitReceive(t, done, "a receive past the queue's wait time"); len(msgs) != 0 {
				t.Fatalf("receive on a queue with ReceiveMessageWaitTimeSeconds=1 returned %q", bodies(msgs))
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
			case <-time.After(10 * time.Second):
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

// receivedOrFailed is the outcome of a receive made in another goroutine.
type receivedOrFailed struct {
	msgs []Msg
	err  error
}

// receiveAsync starts a receive in a goroutine of its own, so that the
// test can act (send, advance the clock) while it waits.
func receiveAsync(ctx context.Context, c Client, q string, in RecvIn) <-chan receivedOrFailed {
	done := make(chan receivedOrFailed, 1)
	go func() {
		msgs, err := c.Receive(ctx, q, in)
		done <- receivedOrFailed{msgs, err}
	}()
	return done
}

// awaitReceive returns the messages of a receive started by receiveAsync.
// The 10 s of real time are a guard against a hang, not a measure: the
// server's clock is the Env's fake one.
func awaitReceive(t *testing.T, done <-chan receivedOrFailed, what string) []Msg {
	t.Helper()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.msgs
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
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
	// Five waiters take the five messages; the others wait until the
	// clock passes their wait time.
	waitForWaiters(t, env, waiters-5)
	env.Clock.Advance(2 * time.Second)
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
