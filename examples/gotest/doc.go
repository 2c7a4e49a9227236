// Package gotest shows how a Go project tests its SQS code against
// fifoq's in-process server, github.com/fifoq/fifoq/fifoqtest: it is a
// module of its own, as a user's project would be, and its tests are the
// example (see orders_test.go). Orders is the code under test: a small
// order pipeline over a FIFO queue.
package gotest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Orders publishes and consumes the orders of customers over a FIFO
// queue: one message group per customer keeps each customer's orders in
// order, and the order id deduplicates a publish retried by mistake.
type Orders struct {
	Client   *sqs.Client
	QueueURL string
}

// Publish sends one order.
func (o *Orders) Publish(ctx context.Context, customer, orderID, body string) (messageID string, err error) {
	out, err := o.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(o.QueueURL),
		MessageBody:            aws.String(body),
		MessageGroupId:         aws.String(customer),
		MessageDeduplicationId: aws.String(orderID),
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.MessageId), nil
}

// Handle receives up to 10 orders, without waiting for more, and deletes
// each one that handle accepts (returns nil for); the others come back
// after the queue's visibility timeout. It returns the bodies handled.
func (o *Orders) Handle(ctx context.Context, handle func(body string) error) ([]string, error) {
	out, err := o.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(o.QueueURL),
		MaxNumberOfMessages: 10,
	})
	if err != nil {
		return nil, err
	}
	var done []string
	for _, m := range out.Messages {
		if handle(aws.ToString(m.Body)) != nil {
			continue
		}
		if _, err := o.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(o.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return done, err
		}
		done = append(done, aws.ToString(m.Body))
	}
	return done, nil
}
