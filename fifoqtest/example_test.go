package fifoqtest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/fifoqtest"
)

// In a test, New(t) starts the server and stops it when the test ends;
// outside one, Start and Close do the same.
func Example() {
	srv, err := fifoqtest.Start() // in a test: srv := fifoqtest.New(t)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	client := srv.Client()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		log.Fatal(err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(*out.Messages[0].Body)
	// Output: hello
}

// Queues can be declared up front, with the config file's schema; a
// dead-letter link becomes the queue's RedrivePolicy.
func ExampleWithQueues() {
	srv, err := fifoqtest.Start(fifoqtest.WithQueues(
		fifoqtest.Queue{Name: "orders-dlq.fifo", Attributes: map[string]string{"FifoQueue": "true"}},
		fifoqtest.Queue{
			Name:       "orders.fifo",
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"},
			DeadLetter: &fifoqtest.DeadLetter{Queue: "orders-dlq.fifo", MaxReceiveCount: 3},
		},
	))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	attrs, err := srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(srv.QueueURL("orders.fifo")),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Attributes["RedrivePolicy"])
	// Output: {"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq.fifo","maxReceiveCount":3}
}

// With a fake clock, a test moves time forward instead of sleeping: here
// past a message's visibility timeout, so that it is received again.
func ExampleClock() {
	clock := fifoqtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	srv, err := fifoqtest.Start(fifoqtest.WithClock(clock), fifoqtest.WithQueues(
		fifoqtest.Queue{Name: "jobs", Attributes: map[string]string{"VisibilityTimeout": "30"}},
	))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	client := srv.Client()
	url := aws.String(srv.QueueURL("jobs"))
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("job 1")}); err != nil {
		log.Fatal(err)
	}
	receive := func() int {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		if err != nil {
			log.Fatal(err)
		}
		return len(out.Messages)
	}
	fmt.Println("received:", receive())
	fmt.Println("again, while in flight:", receive())
	clock.Advance(30 * time.Second)
	fmt.Println("after the visibility timeout:", receive())
	// Output:
	// received: 1
	// again, while in flight: 0
	// after the visibility timeout: 1
}

// WithCredentials makes the server require signatures by one key; the
// server's Config signs with it, and other keys are refused.
func ExampleWithCredentials() {
	srv, err := fifoqtest.Start(fifoqtest.WithCredentials("AKIDTEST", "secret"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	_, err = srv.Client().ListQueues(ctx, &sqs.ListQueuesInput{})
	fmt.Println("signed with the key:", err == nil)

	other := srv.Config()
	other.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDOTHER", SecretAccessKey: "secret"}, nil
	})
	_, err = sqs.NewFromConfig(other).ListQueues(ctx, &sqs.ListQueuesInput{})
	fmt.Println("signed with another key:", err == nil)
	// Output:
	// signed with the key: true
	// signed with another key: false
}
