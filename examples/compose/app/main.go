// Command app is the example application of examples/compose and
// examples/compose-cluster: a producer and a consumer of orders over one
// of fifoq's FIFO queues. The producer sends MESSAGES orders spread over
// GROUPS customers (message groups); the consumer long-polls, deletes
// what it handled, and checks that each customer's orders arrive in the
// order they were sent, once each. It exits 0 when every order arrived
// so, 1 otherwise, which is what "docker compose up --exit-code-from app"
// reports.
//
// It is configured by the environment, as a container is:
//
//	FIFOQ_ENDPOINT         the server, e.g. http://fifoq:9324
//	QUEUE_NAME             the FIFO queue (declared by fifoq's config file)
//	MESSAGES, GROUPS       how many orders, over how many customers
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION   as for any SDK
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number", name, v)
	}
	return n, nil
}

func run(ctx context.Context) error {
	endpoint := os.Getenv("FIFOQ_ENDPOINT")
	queue := os.Getenv("QUEUE_NAME")
	if endpoint == "" || queue == "" {
		return errors.New("FIFOQ_ENDPOINT and QUEUE_NAME must be set")
	}
	messages, err := envInt("MESSAGES", 100)
	if err != nil {
		return err
	}
	groups, err := envInt("GROUPS", 4)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	url, err := findQueue(ctx, client, queue)
	if err != nil {
		return fmt.Errorf("find queue %s: %w", queue, err)
	}

	// Each run sends orders of its own, so that a rerun on a kept volume
	// is not deduplicated against the last run's, nor confused by them.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	produced := make(chan error, 1)
	go func() { produced <- produce(ctx, client, url.QueueUrl, run, messages, groups) }()
	consumed := consume(ctx, client, url.QueueUrl, run, messages)
	if err := <-produced; err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	if consumed != nil {
		return fmt.Errorf("consume: %w", consumed)
	}
	fmt.Printf("app: %d orders of %d customers sent and received, each customer's in order, none twice\n", messages, groups)
	return nil
}

// findQueue returns the queue's URL. A cluster's leader declares the
// config file's queues just after it is elected, so a node can be ready a
// moment before they exist: a missing queue is looked up again for a while.
func findQueue(ctx context.Context, client *sqs.Client, queue string) (*sqs.GetQueueUrlOutput, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
		var missing *types.QueueDoesNotExist
		if err == nil || !errors.As(err, &missing) || time.Now().After(deadline) {
			return url, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// produce sends the orders: order i belongs to customer i%groups.
func produce(ctx context.Context, client *sqs.Client, url *string, run string, messages, groups int) error {
	for i := range messages {
		group := fmt.Sprintf("customer-%d", i%groups)
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:               url,
			MessageBody:            aws.String(fmt.Sprintf("%s %s %d", run, group, i)),
			MessageGroupId:         aws.String(group),
			MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d", run, i)),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// consume receives until all of this run's orders arrived, and checks
// each customer's order.
func consume(ctx context.Context, client *sqs.Client, url *string, run string, messages int) error {
	last := map[string]int{}
	seen := 0
	for seen < messages {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 5})
		if err != nil {
			return err
		}
		for _, m := range out.Messages {
			fields := strings.Fields(aws.ToString(m.Body))
			if len(fields) == 3 && fields[0] == run {
				n, _ := strconv.Atoi(fields[2])
				if prev, ok := last[fields[1]]; ok && n <= prev {
					return fmt.Errorf("%s: order %d after order %d", fields[1], n, prev)
				}
				last[fields[1]] = n
				seen++
			}
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				return err
			}
		}
	}
	return nil
}
