package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestDeadLetterQueueFIFO drives messages of a FIFO queue into its FIFO
// dead-letter queue by receiving without deleting, checks that they arrive
// whole and in order, and moves them back with a message move task.
func TestDeadLetterQueueFIFO(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		dlq := mustCreate(t, c, "dlq.fifo", fifoAttrs())
		dlqARN := queueARN(t, c, dlq)
		plain := mustCreate(t, c, "plain-dlq", nil)

		t.Run("FIFO source needs a FIFO DLQ", func(t *testing.T) {
			_, err := c.CreateQueue(ctx, "mixed.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(queueARN(t, c, plain), 2)), nil)
			wantErr(t, err, "InvalidParameterValue", "InvalidAttributeValue")
		})

		src := mustCreate(t, c, "src.fifo", fifoAttrs(
			"ContentBasedDeduplication", "true",
			"VisibilityTimeout", "30",
			"RedrivePolicy", redrivePolicy(dlqARN, 2)))
		srcARN := queueARN(t, c, src)
		var policy map[string]any
		if err := json.Unmarshal([]byte(must(c.GetAttrs(ctx, src, "RedrivePolicy"))(t)["RedrivePolicy"]), &policy); err != nil {
			t.Fatalf("RedrivePolicy attribute is not JSON: %v", err)
		}
		if policy["deadLetterTargetArn"] != dlqARN || fmt.Sprint(policy["maxReceiveCount"]) != "2" {
			t.Fatalf("RedrivePolicy = %v", policy)
		}

		sent := map[string]string{} // body -> message id
		for _, m := range []SendIn{{Body: "g1", Group: "g"}, {Body: "h1", Group: "h"}, {Body: "g2", Group: "g"}, {Body: "g3", Group: "g"}} {
			sent[m.Body] = mustSend(t, c, src, m).ID
		}

		rounds := 0
		for ; rounds < 6; rounds++ {
			msgs := mustReceive(t, c, src, 10)
			if len(msgs) == 0 {
				break
			}
			if len(msgs) != 4 {
				t.Fatalf("round %d received %q, want all 4 messages", rounds, bodies(msgs))
			}
			env.Clock.Advance(31 * time.Second)
		}
		if rounds != 2 {
			t.Fatalf("messages were received %d times before moving, want maxReceiveCount 2", rounds)
		}

		moved := mustReceive(t, c, dlq, 10)
		if len(moved) != 4 {
			t.Fatalf("DLQ holds %q, want the 4 messages", bodies(moved))
		}
		var inG []string
		for _, m := range moved {
			if m.ID != sent[m.Body] {
				t.Errorf("%s: MessageId in DLQ %s, want %s", m.Body, m.ID, sent[m.Body])
			}
			if want := m.Body[:1]; m.Sys["MessageGroupId"] != want {
				t.Errorf("%s: MessageGroupId in DLQ %q, want %q", m.Body, m.Sys["MessageGroupId"], want)
			}
			if m.Sys["DeadLetterQueueSourceArn"] != srcARN {
				t.Errorf("%s: DeadLetterQueueSourceArn %q, want %q", m.Body, m.Sys["DeadLetterQueueSourceArn"], srcARN)
			}
			if m.Body[0] == 'g' {
				inG = append(inG, m.Body)
			}
		}
		if !slices.Equal(inG, []string{"g1", "g2", "g3"}) {
			t.Fatalf("group g in DLQ is in order %q, want g1 g2 g3", inG)
		}
		// Put them back so that the move task finds them.
		if _, fails, err := c.ChangeVisibilityBatch(ctx, dlq, handles(moved), 0); err != nil || len(fails) > 0 {
			t.Fatalf("ChangeMessageVisibilityBatch: %v %v", err, fails)
		}

		t.Run("ListDeadLetterSourceQueues", func(t *testing.T) { checkListDLQSources(t, c, dlq, dlqARN, src) })

		t.Run("move back to the source", func(t *testing.T) { checkMoveBack(t, env, c, dlq, dlqARN, src) })
	})
}

// TestMessageMoveTaskCancel starts a slow move task, lists it, cancels it
// while it runs, and checks that no message was lost or duplicated.
func TestMessageMoveTaskCancel(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		dlq := mustCreate(t, c, "dlq", nil)
		dlqARN := queueARN(t, c, dlq)
		mustCreate(t, c, "src", map[string]string{"RedrivePolicy": redrivePolicy(dlqARN, 3)})
		dest := mustCreate(t, c, "dest", nil)
		destARN := queueARN(t, c, dest)
		const n = 60
		sendMany(t, c, dlq, "", "x", n)

		t.Run("non-DLQ source refused", func(t *testing.T) {
			_, err := c.StartMove(ctx, destARN, dlqARN, 0)
			wantErr(t, err, "InvalidParameterValue", "UnsupportedOperation")
		})
		t.Run("unknown source refused", func(t *testing.T) {
			_, err := c.StartMove(ctx, "arn:aws:sqs:"+Region+":"+Account+":no-such-queue", "", 0)
			wantErr(t, err, "ResourceNotFoundException")
		})

		handle := must(c.StartMove(ctx, dlqARN, destARN, 1))(t)
		tasks := must(c.ListMoves(ctx, dlqARN, 10))(t)
		if len(tasks) != 1 {
			t.Fatalf("ListMessageMoveTasks = %+v, want the one task", tasks)
		}
		task := tasks[0]
		if task.Handle != handle || task.Status != "RUNNING" || task.Source != dlqARN || task.Dest != destARN ||
			task.Rate == nil || *task.Rate != 1 {
			t.Fatalf("running task = %+v, want handle %s RUNNING %s -> %s at 1/s", task, handle, dlqARN, destARN)
		}
		if task.ToMove != nil && *task.ToMove != n {
			t.Errorf("ApproximateNumberOfMessagesToMove = %d, want %d", *task.ToMove, n)
		}
		t.Run("one task per source", func(t *testing.T) {
			_, err := c.StartMove(ctx, dlqARN, destARN, 1)
			wantErr(t, err, "InvalidParameterValue", "UnsupportedOperation")
		})

		// The task moves at its rate of the server's clock: three seconds
		// of it move some of the messages, far from all.
		env.Clock.Advance(3 * time.Second)
		eventually(t, 5*time.Second, "the task moving", func() bool {
			return numAttr(t, c, dest, "ApproximateNumberOfMessages") > 0
		})
		moved := must(c.CancelMove(ctx, handle))(t)
		if moved < 0 || moved >= n {
			t.Fatalf("CancelMessageMoveTask reports %d moved of %d at 1/s", moved, n)
		}
		eventually(t, 3*time.Second, "task cancellation", func() bool {
			tasks := must(c.ListMoves(ctx, dlqARN, 10))(t)
			return len(tasks) == 1 && tasks[0].Status == "CANCELLED"
		})
		if _, err := c.CancelMove(ctx, handle); err == nil {
			t.Error("cancelling a cancelled task succeeded")
		} else if e, isAPI := apiErr(err); !isAPI || e.Status < 400 || e.Status > 499 {
			t.Errorf("cancelling a cancelled task: %v, want a 4xx answer", err)
		}

		inDest := numAttr(t, c, dest, "ApproximateNumberOfMessages")
		inDLQ := numAttr(t, c, dlq, "ApproximateNumberOfMessages")
		if inDest+inDLQ != n || inDest >= n {
			t.Fatalf("after cancel: %d in destination + %d in DLQ, want %d in all and fewer than %d moved", inDest, inDLQ, n, n)
		}
		// Ten more seconds would let a task still running move ten more.
		// The server moves every running task in one tick, so once a
		// second task, started now, has moved its message, the server has
		// ticked past those ten seconds.
		dlq2 := mustCreate(t, c, "dlq-2", nil)
		dlq2ARN := queueARN(t, c, dlq2)
		mustCreate(t, c, "src-2", map[string]string{"RedrivePolicy": redrivePolicy(dlq2ARN, 3)})
		dest2 := mustCreate(t, c, "dest-2", nil)
		sendMany(t, c, dlq2, "", "y", 1)
		must(c.StartMove(ctx, dlq2ARN, queueARN(t, c, dest2), 1))(t)
		env.Clock.Advance(10 * time.Second)
		eventually(t, 5*time.Second, "the second task moving", func() bool {
			return numAttr(t, c, dest2, "ApproximateNumberOfMessages") == 1
		})
		if now := numAttr(t, c, dest, "ApproximateNumberOfMessages"); now != inDest {
			t.Fatalf("cancelled task kept moving: destination went from %d to %d", inDest, now)
		}
	})
}

// checkListDLQSources adds a second source to the FIFO
// dead-letter queue dlq and lists both sources, whole and in pages.
func checkListDLQSources(t *testing.T, c Client, dlq, dlqARN, src string) {
	ctx := ctxT(t)
	src2 := mustCreate(t, c, "src2.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(dlqARN, 5)))
	all, next, err := c.ListDLQSources(ctx, dlq, 0, "")
	ok(t, err)
	slices.Sort(all)
	if !slices.Equal(all, []string{src, src2}) || next != "" {
		t.Fatalf("ListDeadLetterSourceQueues = %q (next %q), want %q", all, next, []string{src, src2})
	}
	page1, next, err := c.ListDLQSources(ctx, dlq, 1, "")
	ok(t, err)
	if len(page1) != 1 || next == "" {
		t.Fatalf("first page of 1: %q, NextToken %q", page1, next)
	}
	page2, _, err := c.ListDLQSources(ctx, dlq, 1, next)
	ok(t, err)
	if len(page2) != 1 || page2[0] == page1[0] {
		t.Fatalf("second page %q after %q", page2, page1)
	}
	if none, _, err := c.ListDLQSources(ctx, src, 0, ""); err != nil || len(none) != 0 {
		t.Fatalf("ListDeadLetterSourceQueues of a non-DLQ = %q, %v; want none", none, err)
	}
}

// checkMoveBack moves the four messages of the FIFO dead-letter queue dlq
// back to their source with a move task, and checks that each group comes
// back in order.
func checkMoveBack(t *testing.T, env *Env, c Client, dlq, dlqARN, src string) {
	ctx := ctxT(t)
	handle := must(c.StartMove(ctx, dlqARN, "", 0))(t)
	if handle == "" {
		t.Fatal("StartMessageMoveTask returned no TaskHandle")
	}
	// The task moves at its rate of the server's clock.
	env.Clock.Advance(time.Second)
	var task MoveTask
	eventually(t, 5*time.Second, "move task completion", func() bool {
		tasks := must(c.ListMoves(ctx, dlqARN, 10))(t)
		if len(tasks) == 0 {
			t.Fatal("ListMessageMoveTasks lists no task")
		}
		task = tasks[0]
		return task.Status == "COMPLETED"
	})
	if task.Source != dlqARN || task.Moved != 4 {
		t.Errorf("completed task = %+v, want source %s and 4 moved", task, dlqARN)
	}
	back := mustReceive(t, c, src, 10)
	if len(back) != 4 {
		t.Fatalf("source got back %q, want the 4 messages", bodies(back))
	}
	var order []string
	for _, m := range back {
		if m.Body[0] == 'g' {
			order = append(order, m.Body)
		}
		if m.Sys["MessageGroupId"] != m.Body[:1] {
			t.Errorf("%s: MessageGroupId after the move %q", m.Body, m.Sys["MessageGroupId"])
		}
	}
	if !slices.Equal(order, []string{"g1", "g2", "g3"}) {
		t.Fatalf("group g came back in order %q, want g1 g2 g3", order)
	}
	if n := numAttr(t, c, dlq, "ApproximateNumberOfMessages"); n != 0 {
		t.Errorf("DLQ still has %d messages after the move", n)
	}
}
