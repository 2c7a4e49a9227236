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

	"github.com/fifoq/fifoq/internal/api"
)

// waitLayout waits until every member's map has queue q in want
// partitions, each in a shard of its own (the shards of the first group
// excluded), and returns the shards.
func (c *memCluster) waitLayout(q api.QueueKey, want int) []uint32 {
	c.t.Helper()
	var shards []uint32
	for _, nd := range c.nodes {
		c.retrying(fmt.Sprintf("%s's map has %s in %d partitions", nd.id, q.Name, want), func() error {
			n := nd.node()
			if n == nil {
				return fmt.Errorf("%s is not running", nd.id)
			}
			parts := n.Shards.Parts(q)
			if parts == nil {
				parts = []uint32{0} // whole
			}
			seen := map[uint32]bool{}
			shards = shards[:0]
			for _, p := range parts {
				k := q
				k.Part = p
				id := n.Shards.Of(k)
				if id == 0 || seen[id] {
					return fmt.Errorf("partitions %v: partition %d is in shard %d, with another or in the first group", parts, p, id)
				}
				seen[id] = true
				shards = append(shards, id)
			}
			if len(parts) != want {
				return fmt.Errorf("partitions %v, want %d", parts, want)
			}
			return nil
		})
	}
	return shards
}

// drainGroups receives from queue url, through clients in turn, and
// deletes what it receives, until got holds want messages in all, each
// body under its group; it fails the test after tries receives.
func (c *memCluster) drainGroups(clients []*sqs.Client, url string, got map[string][]string, want, tries int) {
	c.t.Helper()
	for i := 0; countAll(got) < want; i++ {
		if i >= tries {
			c.t.Fatalf("after %d receives, got %d of %d messages", tries, countAll(got), want)
		}
		var out *sqs.ReceiveMessageOutput
		c.retrying("receive", func() error {
			var err error
			out, err = clients[i%len(clients)].ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
				MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
			return err
		})
		for _, m := range out.Messages {
			g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			got[g] = append(got[g], *m.Body)
			c.retrying("delete", func() error {
				_, err := clients[0].DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
				return err
			})
		}
	}
}

// TestHighThroughputQueueSpreadsAndGathers creates a high-throughput FIFO
// queue in a cluster of three shards and sends to it at once and on:
// with no one asking, the first group's leader splits it into one
// partition per shard, each in a shard of its own, while the messages
// arrive. Every message is then received once, in its group's order.
// Switched to perQueue throughput and the queue's deduplication scope,
// the queue is gathered back into one partition, with the messages it
// held. A plain FIFO queue beside it stays whole.
func TestHighThroughputQueueSpreadsAndGathers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := newMemCluster(t, 3, 3, 41)
	c.logTailsOnFailure(40)
	c.waitShards(4)
	url := c.createQueue("ht.fifo", highThroughputFIFO)
	c.createQueue("plain.fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup"})
	q := api.QueueKey{Account: "000000000000", Name: "ht.fifo"}
	plain := api.QueueKey{Account: "000000000000", Name: "plain.fifo"}
	clients := c.memberClients()

	// Messages in 30 groups, sent in rounds, through every member in
	// turn, from before the queue spreads until it has.
	const groups = 30
	sent := map[string][]string{}
	send := func(g string, k int) error {
		body := fmt.Sprintf("%s-%d", g, k)
		var err error
		for try := 0; try < 100; try++ {
			if _, err = clients[k%len(clients)].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String(body), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(body)}); err == nil {
				sent[g] = append(sent[g], body)
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("send %s: %w", body, err)
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	rounds := 0
	go func() {
		for k := 0; ; k++ {
			for i := range groups {
				if err := send("g"+strconv.Itoa(i), k); err != nil {
					done <- err
					return
				}
			}
			select {
			case <-stop:
				rounds = k + 1
				done <- nil
				return
			default:
			}
		}
	}()
	shards := c.waitLayout(q, 3)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The sends ran from before the spread (which the first of them
	// starts) until every member's map had it whole.
	t.Logf("ht.fifo spread over shards %v while %d rounds of sends ran", shards, rounds)
	if parts := c.nodes[0].node().Shards.Parts(plain); parts != nil {
		t.Fatalf("the plain FIFO queue has partitions %v", parts)
	}

	got := map[string][]string{}
	// A receive takes at most 10: the tries grow with the messages,
	// whose number grows with the time the spread took.
	drain := func(want int) { c.drainGroups(clients, url, got, want, max(300, want/3)) }
	drain(countAll(sent))
	for g, want := range sent {
		if fmt.Sprint(got[g]) != fmt.Sprint(want) {
			t.Fatalf("group %s received %v, want %v", g, got[g], want)
		}
	}

	// Switched out of high throughput, with messages in it, as SQS lets
	// any such queue (localstack test_sqs.snapshot.json:
	// test_fifo_change_to_regular_throughput_after_creation): gathered
	// into partition 0, which holds them all.
	for i := range groups {
		if err := send("g"+strconv.Itoa(i), rounds); err != nil {
			t.Fatal(err)
		}
	}
	c.retrying("switch to perQueue", func() error {
		_, err := clients[1].SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
			Attributes: map[string]string{"FifoThroughputLimit": "perQueue", "DeduplicationScope": "queue"}})
		return err
	})
	c.waitLayout(q, 1)
	drain(countAll(sent))
	for g, want := range sent {
		if fmt.Sprint(got[g]) != fmt.Sprint(want) {
			t.Fatalf("after the gathering, group %s received %v, want %v", g, got[g], want)
		}
	}
	var attrs *sqs.GetQueueAttributesOutput
	c.retrying("attributes", func() error {
		var err error
		attrs, err = clients[2].GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		return err
	})
	if a := attrs.Attributes; a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Fatalf("the drained queue's counts: %v", a)
	}
	for _, nd := range c.nodes {
		if parts := nd.node().Shards.Parts(plain); parts != nil {
			t.Fatalf("%s: the plain FIFO queue has partitions %v", nd.id, parts)
		}
	}
}

// TestPartitionMovesFromAShardTheLeaderDoesNotHold moves a partition
// other than 0 out of a shard of which the first group's leader holds no
// replica, so that the leader asks one of the shard's replicas for the
// partition's image (GET /cluster/export-queue): the image must be the
// partition's, not partition 0's, and the move must end with the
// partition's messages in its new shard.
func TestPartitionMovesFromAShardTheLeaderDoesNotHold(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("four in-process members; skipped in -short mode")
	}
	c := newHandSplitCluster(t, 4, 4, 42)
	c.logTailsOnFailure(30)
	c.waitShards(5)
	url := c.createQueue("far.fifo", highThroughputFIFO)
	q := api.QueueKey{Account: "000000000000", Name: "far.fifo"}
	one := q
	one.Part = 1
	cl := newClient(c.nodes[0].httpAddr, 30*time.Second)
	const groups = 20
	for i := range groups {
		g := "g" + strconv.Itoa(i)
		c.retrying("send "+g, func() error {
			_, err := cl.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(g),
				MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(g)})
			return err
		})
	}
	var far, to uint32
	c.retrying("put the queue where the leader holds no replica, split it, move partition 1", func() error {
		lead := c.leaderOf(0)
		if lead == nil {
			return fmt.Errorf("no leader of the first group")
		}
		n := lead.node()
		if n == nil {
			return fmt.Errorf("%s is not running", lead.id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		far, to = 0, 0
		for _, id := range n.Shards.Named() {
			held := false
			for _, p := range n.Shards.Replicas(id) {
				held = held || p.ID == lead.id
			}
			if !held && far == 0 {
				far = id
			} else if held && to == 0 {
				to = id
			}
		}
		if far == 0 || to == 0 {
			return fmt.Errorf("every shard has a replica on %s, or none does", lead.id)
		}
		if _, err := n.Shards.Move(ctx, q, far); err != nil {
			return fmt.Errorf("move partition 0 to shard %d: %w", far, err)
		}
		if n.Shards.Of(one) == 0 {
			if _, err := n.Shards.Split(ctx, q, 1<<31); err != nil {
				return fmt.Errorf("split: %w", err)
			}
		}
		if _, err := n.Shards.Move(ctx, one, to); err != nil {
			return fmt.Errorf("move partition 1 from shard %d to %d: %w", far, to, err)
		}
		return nil
	})
	t.Logf("partition 0 in shard %d, partition 1 moved to shard %d", far, to)
	got := map[string][]string{}
	c.drainGroups([]*sqs.Client{cl}, url, got, groups, 100)
	for i := range groups {
		if g := "g" + strconv.Itoa(i); fmt.Sprint(got[g]) != fmt.Sprint([]string{g}) {
			t.Fatalf("group %s received %v", g, got[g])
		}
	}
}

// TestHighThroughputQueueDeadLettersAndRedrivesBack gives a queue that is
// spread over three shards a dead-letter queue (a plain FIFO queue, in one
// shard): messages received more than maxReceiveCount times leave every
// partition for it, through each partition's outbox; a message move task
// on the dead-letter queue then returns every message to the spread
// queue, each to the partition its group hashes to (engine.byGroup and
// the outbox relay's routeByGroup), where it is received once, in its
// group's order. Twice: back to the messages' source (no DestinationArn),
// then to the queue named as the destination.
func TestHighThroughputQueueDeadLettersAndRedrivesBack(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := newMemCluster(t, 3, 3, 43)
	c.logTailsOnFailure(40)
	c.waitShards(4)
	ctx := context.Background()
	clients := c.memberClients()
	arnOf := func(url string) string {
		var out *sqs.GetQueueAttributesOutput
		c.retrying("QueueArn", func() error {
			var err error
			out, err = clients[0].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
			return err
		})
		return out.Attributes["QueueArn"]
	}
	dlqURL := c.createQueue("dead.fifo", map[string]string{"FifoQueue": "true"})
	dlqArn := arnOf(dlqURL)
	url := c.createQueue("ht.fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqArn)})
	q := api.QueueKey{Account: "000000000000", Name: "ht.fifo"}

	// count returns the messages queue url holds, visible or not.
	count := func(url string) int {
		var out *sqs.GetQueueAttributesOutput
		c.retrying("counts", func() error {
			var err error
			out, err = clients[1].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
					types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			return err
		})
		a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
		b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
		return a + b
	}
	const groups = 20
	for round, dest := range []string{"", arnOf(url)} {
		// Two messages in each of 20 groups; the first spreads the
		// queue.
		sent := map[string][]string{}
		for k := range 2 {
			for i := range groups {
				g := "g" + strconv.Itoa(i)
				body := fmt.Sprintf("r%d-%s-%d", round, g, k)
				c.retrying("send "+body, func() error {
					_, err := clients[(i+k)%len(clients)].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
						MessageBody: aws.String(body), MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(body)})
					return err
				})
				sent[g] = append(sent[g], body)
			}
		}
		c.waitLayout(q, 3)
		if parts := c.nodes[0].node().Shards.Parts(api.QueueKey{Account: q.Account, Name: "dead.fifo"}); parts != nil {
			t.Fatalf("the dead-letter queue was split: partitions %v", parts)
		}

		// Each message received once with a visibility timeout of 1 s,
		// and not deleted, is dead-lettered by the receive that would
		// take it a second time.
		for try := 0; count(url) > 0 || count(dlqURL) < 2*groups; try++ {
			if try > 300 {
				t.Fatalf("after %d receives the queue holds %d messages and its dead-letter queue %d, of %d", try, count(url), count(dlqURL), 2*groups)
			}
			c.retrying("receive to dead-letter", func() error {
				_, err := clients[try%len(clients)].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
					MaxNumberOfMessages: 10, VisibilityTimeout: 1, WaitTimeSeconds: 1})
				return err
			})
		}
		if n := count(dlqURL); n != 2*groups {
			t.Fatalf("the dead-letter queue holds %d messages, want %d", n, 2*groups)
		}

		var task *sqs.StartMessageMoveTaskOutput
		c.retrying("StartMessageMoveTask", func() error {
			in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)}
			if dest != "" {
				in.DestinationArn = aws.String(dest)
			}
			var err error
			task, err = clients[2].StartMessageMoveTask(ctx, in)
			return err
		})
		c.retryingFor("the move task to complete", 2*time.Minute, func() error {
			out, err := clients[0].ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)})
			if err != nil {
				return err
			}
			for _, r := range out.Results {
				if aws.ToString(r.TaskHandle) != aws.ToString(task.TaskHandle) && r.TaskHandle != nil {
					continue
				}
				switch s := aws.ToString(r.Status); {
				case s == "COMPLETED" && r.ApproximateNumberOfMessagesMoved == int64(2*groups):
					return nil
				case s == "FAILED" || s == "CANCELLED":
					t.Fatalf("round %d: the move task ended %s: %s", round, s, aws.ToString(r.FailureReason))
				}
				return fmt.Errorf("task %s: %d moved", aws.ToString(r.Status), r.ApproximateNumberOfMessagesMoved)
			}
			return fmt.Errorf("no such task among %d", len(out.Results))
		})
		got := map[string][]string{}
		c.drainGroups(clients, url, got, 2*groups, 300)
		for g, want := range sent {
			if fmt.Sprint(got[g]) != fmt.Sprint(want) {
				t.Fatalf("round %d: group %s received %v after the redrive, want %v", round, g, got[g], want)
			}
		}
		if n := count(dlqURL); n != 0 {
			t.Fatalf("round %d: the dead-letter queue still holds %d messages", round, n)
		}
	}
}
