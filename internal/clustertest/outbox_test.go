package clustertest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestDeadLetterQueueInAnotherShard parts a FIFO queue from its
// dead-letter queue (fifoq cluster move puts the dead-letter queue in
// another shard) and follows dead-lettered messages through the queue's
// outbox (engine/outbox.go), with real processes and the AWS SDK:
//
//   - they reach the dead-letter queue, each once, in order per group,
//     with the queue's ARN as DeadLetterQueueSourceArn;
//   - they do so across kills: with the dead-letter queue's shard leader
//     killed first (the relay cannot deliver), then the queue's shard's
//     leader (the outbox must survive it and be relayed by the next);
//   - ListDeadLetterSourceQueues names the queue through every node;
//   - a message move task on the dead-letter queue returns every message
//     to the queue, across the shards again.
func TestDeadLetterQueueInAnotherShard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	waitShards(t, c, 4)
	ctx := context.Background()
	dlqURL := c.createQueue("dead.fifo", map[string]string{"FifoQueue": "true"})
	cl := retryingClient(c.nodes[0])
	arnOf := func(url string) string {
		out, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes["QueueArn"]
	}
	dlqArn := arnOf(dlqURL)
	// A visibility timeout of 0 makes a received message receivable
	// again at once (the SDK does not send a VisibilityTimeout of 0).
	srcURL := c.createQueue("src.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "0",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqArn)})
	srcArn := arnOf(srcURL)
	placed := waitPlaced(t, c, "dead.fifo", "src.fifo")
	if placed["dead.fifo"] != placed["src.fifo"] {
		t.Fatalf("a queue created with a RedrivePolicy is placed beside its dead-letter queue: %v", placed)
	}
	to := placed["dead.fifo"]%3 + 1
	t.Logf("moving dead.fifo from shard %d to shard %d, away from src.fifo", placed["dead.fifo"], to)
	retrying(t, "fifoq cluster move", func() error { return moveQueue(c, dlqURL, to) })
	waitQueueIn(t, c, "dead.fifo", to)
	if placedShards(c)["src.fifo"] == to {
		t.Fatal("src.fifo followed its dead-letter queue")
	}

	// deadLetter sends bodies m<from>..m<from+n-1> in three groups, then
	// receives each once (visibility 0) and once more: maxReceiveCount 1
	// sends each to the dead-letter queue at its second receive.
	deadLetter := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if _, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srcURL), MessageBody: aws.String("m" + strconv.Itoa(i)),
				MessageGroupId: aws.String("g" + strconv.Itoa(i%3))}); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for left := -1; left != 0; {
			if time.Now().After(deadline) {
				t.Fatalf("src.fifo still holds %d messages", left)
			}
			if _, err := cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10}); err != nil {
				t.Fatal(err)
			}
			out, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(srcURL),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
					types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
			b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
			left = a + b
		}
	}
	// collect receives and deletes n messages of queue url through node
	// via (a FIFO queue gives no more of a group while one is in flight),
	// and fails on a duplicate, on a group out of order, or if they are
	// not all there within 60 s.
	collect := func(url string, via int, n int) []types.Message {
		t.Helper()
		client := retryingClient(c.nodes[via])
		var got []types.Message
		seen := map[string]bool{}
		deadline := time.Now().Add(60 * time.Second)
		for len(got) < n {
			if time.Now().After(deadline) {
				for _, nd := range c.nodes {
					t.Logf("%s's log ends:\n%s", nd.id, nd.tail(400))
				}
				t.Fatalf("%d of %d messages in %s after 60 s", len(got), n, url)
			}
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
				VisibilityTimeout: 60, WaitTimeSeconds: 1, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
			if err != nil {
				t.Fatal(err)
			}
			var del []types.DeleteMessageBatchRequestEntry
			for i, m := range out.Messages {
				del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
			}
			if len(del) > 0 {
				if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range out.Messages {
				if seen[*m.Body] {
					for _, nd := range c.nodes {
						t.Logf("%s's log ends:\n%s", nd.id, nd.tail(400))
					}
					t.Fatalf("%s delivered %s twice, after %d others", url, *m.Body, len(got))
				}
				seen[*m.Body] = true
				got = append(got, m)
			}
		}
		last := map[string]int{}
		for _, m := range got {
			i, _ := strconv.Atoi((*m.Body)[1:])
			g := "g" + strconv.Itoa(i%3)
			if p, ok := last[g]; ok && i < p {
				t.Fatalf("%s: m%d came after m%d in group %s", url, i, p, g)
			}
			last[g] = i
		}
		return got
	}

	deadLetter(0, 12)
	got := collect(dlqURL, 1, 12)
	for _, m := range got {
		if src := m.Attributes["DeadLetterQueueSourceArn"]; src != srcArn {
			t.Fatalf("%s: DeadLetterQueueSourceArn %q, want %q", *m.Body, src, srcArn)
		}
	}

	// Across kills: the dead-letter queue's leader first, so that the
	// messages wait in the outbox, then the queue's own.
	dlqLeader := c.shardLeader("dead.fifo")
	t.Logf("killing %s, the dead-letter queue's shard leader", dlqLeader.id)
	c.kill(dlqLeader)
	deadLetter(12, 12)
	srcLeader := c.shardLeader("src.fifo")
	if srcLeader != dlqLeader {
		t.Logf("killing %s, the queue's shard leader, with its outbox full", srcLeader.id)
		c.kill(srcLeader)
		c.restart(srcLeader)
	}
	c.restart(dlqLeader)
	more := collect(dlqURL, 2, 12)
	for _, m := range more {
		if i, _ := strconv.Atoi((*m.Body)[1:]); i < 12 {
			t.Fatalf("%s came back to the dead-letter queue", *m.Body)
		}
	}

	for i, nd := range c.nodes {
		out, err := retryingClient(nd).ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL)})
		if err != nil {
			t.Fatalf("ListDeadLetterSourceQueues through node %d: %v", i, err)
		}
		if len(out.QueueUrls) != 1 || !urlNames(out.QueueUrls[0], "src.fifo") {
			t.Fatalf("ListDeadLetterSourceQueues through node %d = %v, want src.fifo", i, out.QueueUrls)
		}
	}

	// Back to the queue they came from, by a move task: the dead-letter
	// queue holds six messages, which go back across the shards.
	deadLetter(24, 6)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Attributes["ApproximateNumberOfMessages"] == "6" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead-letter queue holds %s messages, want 6", out.Attributes["ApproximateNumberOfMessages"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := cl.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)}); err != nil {
		t.Fatal(err)
	}
	back := collect(srcURL, 1, 6)
	for _, m := range back {
		if _, ok := m.Attributes["DeadLetterQueueSourceArn"]; ok {
			t.Fatalf("%s moved back keeps DeadLetterQueueSourceArn", *m.Body)
		}
	}
}

// urlNames reports whether a queue URL ends in the queue name.
func urlNames(url, name string) bool {
	return len(url) > len(name) && url[len(url)-len(name)-1:] == "/"+name
}
