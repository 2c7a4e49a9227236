package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	fifoqnode "github.com/fifoq/fifoq/internal/node"
)

// TestRecreatedQueueJoinsItsDeadLetterQueue: a queue's name keeps its
// shard after the queue is deleted (its cool-down is kept there), so a
// queue created again is not placed anew. Created again with a redrive
// policy naming a dead-letter queue that lives in another shard, it must
// still be created, as SQS creates it: the dead-letter queue is moved
// beside it first, as for a new queue it is placed beside its
// dead-letter queue. Its message is then dead-lettered there. A
// dead-letter queue that does not exist is still refused with SQS's 400.
func TestRecreatedQueueJoinsItsDeadLetterQueue(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	// No cool-down after a delete, so that the name is free at once.
	c := startMemClusterWith(t, 3, 3, 45, 0, func(cfg *fifoqnode.Config) { cfg.RecreateDelay = -1 })
	c.logTailsOnFailure(40)
	c.waitShards(4)
	clients := c.memberClients()
	ctx := context.Background()

	fifo := map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
	srcURL := c.createQueue("src.fifo", fifo)
	srcShard := c.shardOf("src.fifo")
	c.retrying("DeleteQueue src.fifo", func() error {
		_, err := clients[0].DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(srcURL)})
		return err
	})
	dlqURL := c.createQueue("dlq.fifo", fifo)
	if at := c.shardOf("dlq.fifo"); at == srcShard {
		to := srcShard%3 + 1
		c.retrying("move dlq.fifo", func() error { return c.move(dlqURL, to) })
		c.waitQueueIn("dlq.fifo", to)
	}

	attrs := map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "1",
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq.fifo","maxReceiveCount":"1"}`}
	c.retrying("CreateQueue src.fifo again, its dead-letter queue in another shard", func() error {
		_, err := clients[1].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("src.fifo"), Attributes: attrs})
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() < 500 {
			t.Fatalf("CreateQueue src.fifo again: %v", err)
		}
		return err
	})
	// The name kept its shard; the dead-letter queue came to it.
	c.waitQueueIn("src.fifo", srcShard)
	c.waitQueueIn("dlq.fifo", srcShard)

	c.retrying("send to src.fifo", func() error {
		_, err := clients[2].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srcURL), MessageBody: aws.String("dead"), MessageGroupId: aws.String("g")})
		return err
	})
	received := 0
	c.retrying("src.fifo's message received once, then dead-lettered", func() error {
		out, err := clients[2].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			return err
		}
		received += len(out.Messages)
		if received > 1 {
			t.Fatalf("src.fifo's message was received %d times; its redrive policy allows one", received)
		}
		if received == 1 && len(out.Messages) == 0 {
			return nil // not delivered again after its visibility timeout
		}
		return fmt.Errorf("received %d so far", received)
	})
	got := map[string][]string{}
	c.drainGroups(clients, dlqURL, got, 1, 60)
	if want := []string{"dead"}; !slices.Equal(got["g"], want) {
		t.Fatalf("the dead-letter queue held %v, want %v in group g", got, want)
	}

	// A dead-letter queue that does not exist is still refused as SQS
	// refuses it, after the one question to the first group's leader.
	attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nowhere.fifo","maxReceiveCount":"1"}`
	_, err := clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other.fifo"), Attributes: attrs})
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != 400 || !strings.Contains(err.Error(), "Dead letter target does not exist.") {
		t.Fatalf("CreateQueue naming a dead-letter queue that does not exist: %v, want 400 InvalidParameterValue", err)
	}
}
