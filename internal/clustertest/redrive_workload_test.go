package clustertest

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// redriveWorkload dead-letters messages all the time, from a FIFO queue
// to its dead-letter queue, while the nemesis moves the two between
// shards (so that they are often apart, and the messages go through the
// queue's outbox: engine/outbox.go). Each message is sent once, with a
// body of its own, received once, and dead-lettered by the next receive
// (maxReceiveCount 1, visibility timeout 0). At the end every message
// whose send was acknowledged must be in the dead-letter queue, once.
type redriveWorkload struct {
	srcURL, dlqURL string
	clients        []*sqs.Client

	mu        sync.Mutex
	acked     map[string]bool // bodies whose send was acknowledged
	attempted map[string]bool // bodies sent, acknowledged or not
}

// newRedriveWorkload creates the two queues through c's first member.
func newRedriveWorkload(t *testing.T, c *memCluster) *redriveWorkload {
	dlqURL := c.createQueue("redrive-dead.fifo", map[string]string{"FifoQueue": "true"})
	arn := "arn:aws:sqs:us-east-1:000000000000:redrive-dead.fifo"
	srcURL := c.createQueue("redrive-src.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true",
		"VisibilityTimeout": "0", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, arn)})
	w := &redriveWorkload{srcURL: srcURL, dlqURL: dlqURL, acked: map[string]bool{}, attempted: map[string]bool{}}
	for _, nd := range c.nodes {
		w.clients = append(w.clients, newClient(nd.httpAddr, clientTimeout))
	}
	return w
}

// run sends and receives until ctx ends.
func (w *redriveWorkload) run(ctx context.Context, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	for n := 0; ctx.Err() == nil; n++ {
		body := "r" + strconv.Itoa(n)
		w.mu.Lock()
		w.attempted[body] = true
		w.mu.Unlock()
		cl := w.clients[rng.Intn(len(w.clients))]
		if _, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.srcURL), MessageBody: aws.String(body),
			MessageGroupId: aws.String("g" + strconv.Itoa(n%4))}); err == nil {
			w.mu.Lock()
			w.acked[body] = true
			w.mu.Unlock()
		}
		cl = w.clients[rng.Intn(len(w.clients))]
		_, _ = cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.srcURL), MaxNumberOfMessages: 10})
		select {
		case <-time.After(time.Duration(10+rng.Intn(30)) * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// check dead-letters what the queue still holds, drains the dead-letter
// queue, and reports every acknowledged message missing from it, any
// message in it twice, and any it holds that was never sent.
func (w *redriveWorkload) check(t *testing.T) []string {
	ctx := context.Background()
	cl := func(i int) *sqs.Client { return retryingClientOf(w.clients[i%len(w.clients)]) }
	count := func(url string) int {
		for i := 0; ; i++ {
			out, err := cl(i).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
					types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err == nil {
				a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
				b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
				return a + b
			}
			if i == 50 {
				t.Fatalf("attributes of %s: %v", url, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Dead-letter what is left: receive until the queue is empty.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; count(w.srcURL) > 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds messages after 60 s of receives", w.srcURL)
		}
		_, _ = cl(i).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.srcURL), MaxNumberOfMessages: 10})
	}
	// Drain the dead-letter queue until it has been empty for a while:
	// the last messages may still be in the outbox.
	got := map[string]int{}
	quiet := time.Time{}
	deadline = time.Now().Add(90 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the dead-letter queue was not drained within 90 s")
		}
		out, err := cl(i).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.dlqURL), MaxNumberOfMessages: 10,
			VisibilityTimeout: 60, WaitTimeSeconds: 1})
		if err != nil {
			continue
		}
		if len(out.Messages) == 0 {
			if quiet.IsZero() {
				quiet = time.Now()
			} else if time.Since(quiet) > 5*time.Second {
				break
			}
			continue
		}
		quiet = time.Time{}
		var del []types.DeleteMessageBatchRequestEntry
		for k, m := range out.Messages {
			got[*m.Body]++
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := cl(i).DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(w.dlqURL), Entries: del}); err != nil {
			t.Fatalf("deleting from the dead-letter queue: %v", err)
		}
	}
	var problems []string
	w.mu.Lock()
	defer w.mu.Unlock()
	for body := range w.acked {
		if got[body] == 0 {
			problems = append(problems, fmt.Sprintf("redrive: %s was acknowledged and never reached the dead-letter queue", body))
		}
	}
	for body, n := range got {
		switch {
		case n > 1:
			problems = append(problems, fmt.Sprintf("redrive: %s reached the dead-letter queue %d times", body, n))
		case !w.attempted[body]:
			problems = append(problems, fmt.Sprintf("redrive: %s is in the dead-letter queue and was never sent", body))
		}
	}
	t.Logf("redrive: %d messages sent and acknowledged, %d dead-lettered", len(w.acked), len(got))
	return problems
}

// retryingClientOf is cl with the SDK's retries, for the final checks.
func retryingClientOf(cl *sqs.Client) *sqs.Client {
	return sqs.New(cl.Options(), func(o *sqs.Options) { o.RetryMaxAttempts = 10 })
}
