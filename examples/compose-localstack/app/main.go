// Command app is the example application of examples/compose-localstack:
// a program written for LocalStack, run unchanged against fifoq. It does
// what such programs do: it takes its endpoint from AWS_ENDPOINT_URL, uses
// the queue URLs LocalStack gave out (in its environment, as they were
// copied from the init script's output), and looks a queue up by name.
//
//	AWS_ENDPOINT_URL     the emulator, http://localstack:4566
//	ORDERS_QUEUE_URL     a FIFO queue with a dead-letter queue (orders-dlq.fifo)
//	EVENTS_QUEUE_URL     a standard queue
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION   as for any SDK
//
// It sends orders over several message groups and checks each group's
// order, moves a poison order to the dead-letter queue by receiving it
// too often, and sends and receives a batch of events. It exits 0 when
// all of that went as SQS says, 1 otherwise, which is what "docker compose
// up --exit-code-from app" reports.
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

func run(ctx context.Context) error {
	orders, events := os.Getenv("ORDERS_QUEUE_URL"), os.Getenv("EVENTS_QUEUE_URL")
	if os.Getenv("AWS_ENDPOINT_URL") == "" || orders == "" || events == "" {
		return errors.New("AWS_ENDPOINT_URL, ORDERS_QUEUE_URL and EVENTS_QUEUE_URL must be set")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The SDK reads AWS_ENDPOINT_URL itself: the app names no endpoint.
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	dlq, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders-dlq.fifo")})
	if err != nil {
		return fmt.Errorf("find orders-dlq.fifo: %w", err)
	}
	// Each run's messages are its own, so that content-based
	// deduplication does not drop a rerun's orders as the last run's.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := ordersInOrder(ctx, client, orders, run); err != nil {
		return fmt.Errorf("orders: %w", err)
	}
	if err := poisonToDLQ(ctx, client, orders, aws.ToString(dlq.QueueUrl), run); err != nil {
		return fmt.Errorf("dead-letter queue: %w", err)
	}
	if err := eventsBatch(ctx, client, events, run); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	fmt.Println("app: orders in order per customer, the poison order in orders-dlq.fifo, 10 events sent and received")
	return nil
}

// ordersInOrder sends 40 orders of 4 customers (message groups), without
// deduplication ids (the queue deduplicates by content), and checks that
// each customer's arrive in order.
func ordersInOrder(ctx context.Context, client *sqs.Client, url, run string) error {
	const n, customers = 40, 4
	for i := range n {
		group := fmt.Sprintf("customer-%d", i%customers)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
			MessageBody: aws.String(fmt.Sprintf("%s %s %d", run, group, i)), MessageGroupId: aws.String(group)}); err != nil {
			return err
		}
	}
	last := map[string]int{}
	for seen := 0; seen < n; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 5})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			return fmt.Errorf("%d of %d orders received, then none", seen, n)
		}
		for _, m := range out.Messages {
			f := strings.Fields(aws.ToString(m.Body))
			if len(f) != 3 || f[0] != run {
				return fmt.Errorf("unexpected order %q", aws.ToString(m.Body))
			}
			i, _ := strconv.Atoi(f[2])
			if prev, ok := last[f[1]]; ok && i <= prev {
				return fmt.Errorf("%s: order %d after order %d", f[1], i, prev)
			}
			last[f[1]] = i
			seen++
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return err
			}
		}
	}
	return nil
}

// poisonToDLQ receives an order three times (the queue's maxReceiveCount)
// without deleting it, making it visible again at once each time, and
// expects the next receive to have moved it to the dead-letter queue.
func poisonToDLQ(ctx context.Context, client *sqs.Client, url, dlq, run string) error {
	body := run + " poison"
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageGroupId: aws.String("poison")}); err != nil {
		return err
	}
	for i := 1; i <= 3; i++ {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5})
		if err != nil {
			return err
		}
		if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != body {
			return fmt.Errorf("receive %d: got %d messages, want the poison order", i, len(out.Messages))
		}
		if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
			ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			return err
		}
	}
	if out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil || len(out.Messages) != 0 {
		return fmt.Errorf("receive 4: %d messages (%v), want none: the order should have moved", len(out.Messages), err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameDeadLetterQueueSourceArn}})
	if err != nil {
		return err
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != body {
		return fmt.Errorf("%s holds %d messages, want the poison order", dlq, len(out.Messages))
	}
	if src := out.Messages[0].Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; !strings.HasSuffix(src, ":orders.fifo") {
		return fmt.Errorf("the poison order's DeadLetterQueueSourceArn is %q, want orders.fifo's", src)
	}
	_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq), ReceiptHandle: out.Messages[0].ReceiptHandle})
	return err
}

// eventsBatch sends 10 events in one batch and receives them all.
func eventsBatch(ctx context.Context, client *sqs.Client, url, run string) error {
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(fmt.Sprintf("%s event %d", run, i))})
	}
	sent, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return err
	}
	if len(sent.Failed) > 0 {
		return fmt.Errorf("%d events refused: %s", len(sent.Failed), aws.ToString(sent.Failed[0].Message))
	}
	got := map[string]bool{}
	for len(got) < 10 {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 5})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			return fmt.Errorf("%d of 10 events received, then none", len(got))
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			if strings.HasPrefix(aws.ToString(m.Body), run+" event ") {
				got[aws.ToString(m.Body)] = true
			}
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			return err
		}
	}
	return nil
}
