package gotest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/fifoqtest"
)

// queues are the queues of the application: a FIFO queue of orders whose
// messages go to a dead-letter queue after three failed receives.
var queues = []fifoqtest.Queue{
	{Name: "orders-dlq.fifo", Attributes: map[string]string{"FifoQueue": "true"}},
	{
		Name:       "orders.fifo",
		Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "30"},
		DeadLetter: &fifoqtest.DeadLetter{Queue: "orders-dlq.fifo", MaxReceiveCount: 3},
	},
}

func TestFIFOSendReceiveDelete(t *testing.T) {
	srv := fifoqtest.New(t, fifoqtest.WithQueues(queues...))
	orders := &Orders{Client: srv.Client(), QueueURL: srv.QueueURL("orders.fifo")}
	ctx := context.Background()

	for _, o := range []struct{ customer, id, body string }{
		{"alice", "a1", "alice: book"}, {"bob", "b1", "bob: pen"}, {"alice", "a2", "alice: lamp"}, {"alice", "a3", "alice: desk"},
	} {
		if _, err := orders.Publish(ctx, o.customer, o.id, o.body); err != nil {
			t.Fatalf("publish %s: %v", o.id, err)
		}
	}
	var got []string
	for range 4 {
		handled, err := orders.Handle(ctx, func(string) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, handled...)
	}
	var alice []string
	for _, b := range got {
		if b[:5] == "alice" {
			alice = append(alice, b)
		}
	}
	if len(got) != 4 || !slices.Equal(alice, []string{"alice: book", "alice: lamp", "alice: desk"}) {
		t.Fatalf("handled %q; want all four, alice's in the order she placed them", got)
	}
	// Deleted: nothing is left, even after the visibility timeout.
	left, err := srv.Client().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(orders.QueueURL), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, nv := left.Attributes["ApproximateNumberOfMessages"], left.Attributes["ApproximateNumberOfMessagesNotVisible"]; v != "0" || nv != "0" {
		t.Fatalf("after deleting every order the queue holds %s visible and %s in-flight messages", v, nv)
	}
}

func TestFailingOrderReachesTheDeadLetterQueue(t *testing.T) {
	clock := fifoqtest.NewClock(time.Time{})
	srv := fifoqtest.New(t, fifoqtest.WithClock(clock), fifoqtest.WithQueues(queues...))
	orders := &Orders{Client: srv.Client(), QueueURL: srv.QueueURL("orders.fifo")}
	dlq := &Orders{Client: srv.Client(), QueueURL: srv.QueueURL("orders-dlq.fifo")}
	ctx := context.Background()

	if _, err := orders.Publish(ctx, "carol", "c1", "carol: broken"); err != nil {
		t.Fatal(err)
	}
	failing := errors.New("cannot handle this order")
	attempts := 0
	for range 3 {
		if _, err := orders.Handle(ctx, func(string) error { attempts++; return failing }); err != nil {
			t.Fatal(err)
		}
		// Past the visibility timeout, without sleeping: the order is
		// received again.
		clock.Advance(30 * time.Second)
	}
	if attempts != 3 {
		t.Fatalf("the order was handled %d times, want 3 (its maxReceiveCount)", attempts)
	}
	// The fourth receive moves it to the dead-letter queue instead.
	if handled, err := orders.Handle(ctx, func(string) error { attempts++; return nil }); err != nil || len(handled) != 0 {
		t.Fatalf("a fourth receive handled %q (err %v); the order should have moved to the dead-letter queue", handled, err)
	}
	dead, err := dlq.Handle(ctx, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dead, []string{"carol: broken"}) {
		t.Fatalf("dead-letter queue held %q, want the failing order", dead)
	}
}

func TestDuplicatePublishWithinTheDeduplicationInterval(t *testing.T) {
	clock := fifoqtest.NewClock(time.Time{})
	srv := fifoqtest.New(t, fifoqtest.WithClock(clock), fifoqtest.WithQueues(queues...))
	orders := &Orders{Client: srv.Client(), QueueURL: srv.QueueURL("orders.fifo")}
	ctx := context.Background()

	first, err := orders.Publish(ctx, "dave", "d1", "dave: chair")
	if err != nil {
		t.Fatal(err)
	}
	// A retry four minutes later is the same order: SQS answers with the
	// first message's id and stores nothing.
	clock.Advance(4 * time.Minute)
	retry, err := orders.Publish(ctx, "dave", "d1", "dave: chair")
	if err != nil {
		t.Fatal(err)
	}
	if retry != first {
		t.Fatalf("a publish retried within 5 minutes got message id %s, want the first's %s", retry, first)
	}
	// Past the 5-minute interval the same id is a new message: the test
	// gets there without waiting five minutes.
	clock.Advance(time.Minute)
	again, err := orders.Publish(ctx, "dave", "d1", "dave: chair")
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Fatal("a publish 5 minutes after the first was deduplicated")
	}
	handled, err := orders.Handle(ctx, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(handled) != 2 {
		t.Fatalf("handled %q, want two orders: the first and the one published after the interval, not the retry", handled)
	}
}
