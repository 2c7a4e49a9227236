package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/api"
)

// TestSplitQueueNamedAsDeadLetterQueue: a high-throughput FIFO queue
// spread over three shards is named as the dead-letter queue of one queue
// created with the redrive policy and of another given it by
// SetQueueAttributes, as SQS takes any FIFO queue for a FIFO queue's
// dead-letter queue. Both requests succeed (each may first be answered
// the retryable 503 while the queue is gathered into one partition, as
// an SDK retries); the dead-letter queue ends whole in every member's
// map and stays so, each source's message is dead-lettered into it, and
// ListDeadLetterSourceQueues names both sources.
func TestSplitQueueNamedAsDeadLetterQueue(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := splitAndPlainCluster(t)
	clients := c.memberClients()
	ctx := context.Background()
	// splitQueue creates a high-throughput queue and waits until every
	// member's map has it spread over the three shards, and empty again.
	splitQueue := func(name string) (string, api.QueueKey) {
		url := c.createQueue(name, highThroughputFIFO)
		c.retrying("first send", func() error {
			_, err := clients[0].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String("first"), MessageGroupId: aws.String("first"), MessageDeduplicationId: aws.String("first")})
			return err
		})
		q := api.QueueKey{Account: "000000000000", Name: name}
		c.waitLayout(q, 3)
		c.drainGroups(clients, url, map[string][]string{}, 1, 60)
		return url, q
	}
	redrive := func(q api.QueueKey) string {
		return fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:%s","maxReceiveCount":"1"}`, q.Name)
	}
	// untilNotRefused retries fn while it is answered a server error, as
	// an SDK does, and fails the test on a client error: a split
	// dead-letter queue refused as a bad redrive policy.
	untilNotRefused := func(what string, fn func() error) {
		t.Helper()
		c.retrying(what, func() error {
			err := fn()
			var re *awshttp.ResponseError
			if errors.As(err, &re) && re.HTTPStatusCode() < 500 {
				t.Fatalf("%s: %v", what, err)
			}
			return err
		})
	}

	createdDLQURL, createdDLQ := splitQueue("dlq-created.fifo")
	var createdURL string
	untilNotRefused("CreateQueue with a redrive policy naming a split queue", func() error {
		out, err := clients[1].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("src-created.fifo"),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "1", "RedrivePolicy": redrive(createdDLQ)}})
		if err == nil {
			createdURL = *out.QueueUrl
		}
		return err
	})
	c.waitLayout(createdDLQ, 1)

	setDLQURL, setDLQ := splitQueue("dlq-set.fifo")
	setURL := c.createQueue("src-set.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "1"})
	untilNotRefused("SetQueueAttributes naming a split queue", func() error {
		_, err := clients[2].SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(setURL),
			Attributes: map[string]string{"RedrivePolicy": redrive(setDLQ)}})
		return err
	})
	c.waitLayout(setDLQ, 1)

	// Each source's message: received once (its one receive allowed),
	// then dead-lettered by the receive after its visibility timeout.
	for i, pair := range [][2]string{{createdURL, createdDLQURL}, {setURL, setDLQURL}} {
		url, dlqURL := pair[0], pair[1]
		body := fmt.Sprintf("dead %d", i)
		c.retrying("send to "+url, func() error {
			_, err := clients[i].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageGroupId: aws.String("g")})
			return err
		})
		received := 0
		c.retrying("the message of "+url+" received once, then dead-lettered", func() error {
			out, err := clients[i].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				return err
			}
			received += len(out.Messages)
			if received > 1 {
				t.Fatalf("%s: its message was received %d times; its redrive policy allows one", url, received)
			}
			if received == 0 {
				return errors.New("not received yet")
			}
			attrs, err := clients[i].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err != nil {
				return err
			}
			if n := attrs.Attributes["ApproximateNumberOfMessages"] + "/" + attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]; n != "0/0" {
				time.Sleep(500 * time.Millisecond)
				return fmt.Errorf("the queue holds %s messages visible/in flight", n)
			}
			return nil
		})
		got := map[string][]string{}
		c.drainGroups(clients, dlqURL, got, 1, 60)
		if want := []string{body}; !slices.Equal(got["g"], want) {
			t.Fatalf("the dead-letter queue held %v, want %v in group g", got, want)
		}
		c.retrying("ListDeadLetterSourceQueues", func() error {
			out, err := clients[0].ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL)})
			if err != nil {
				return err
			}
			if len(out.QueueUrls) != 1 || !strings.HasSuffix(out.QueueUrls[0], url[strings.LastIndex(url, "/"):]) {
				return fmt.Errorf("sources %v, want %s", out.QueueUrls, url)
			}
			return nil
		})
	}
	// Still whole: a dead-letter queue is not spread again.
	time.Sleep(3 * time.Second)
	for _, nd := range c.running() {
		for _, q := range []api.QueueKey{createdDLQ, setDLQ} {
			if parts := nd.node().Shards.Parts(q); len(parts) > 1 {
				t.Fatalf("%s's map has dead-letter queue %s in partitions %v", nd.id, q.Name, parts)
			}
		}
	}
}
