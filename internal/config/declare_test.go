package config

import (
	"strings"
	"testing"
)

func TestDeclareChecksQueuesAsTheFileDoes(t *testing.T) {
	good := []Queue{
		{Name: "orders-dlq.fifo", Attributes: map[string]string{"FifoQueue": "true"}},
		{Name: "orders.fifo", Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "30"},
			DeadLetter: &DeadLetter{Queue: "orders-dlq.fifo", MaxReceiveCount: 3}, Tags: map[string]string{"team": "payments"}},
	}
	f, err := Declare("test queues", good)
	if err != nil {
		t.Fatalf("Declare: %v", err)
	}
	if len(f.Queues) != 2 || f.Queues[1].DeadLetter == good[1].DeadLetter {
		t.Fatalf("Declare kept %d queues, or shares the caller's dead-letter link", len(f.Queues))
	}
	steps, err := f.plan("123456789012", "eu-west-1")
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if steps[0].key.Name != "orders-dlq.fifo" || !strings.Contains(steps[1].attrs["RedrivePolicy"], "arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo") {
		t.Errorf("plan = %+v, want the dead-letter queue first and its ARN in the RedrivePolicy", steps)
	}

	for _, tc := range []struct {
		name   string
		queues []Queue
		want   string
	}{
		{"no name", []Queue{{}}, "name is missing"},
		{"fifo name without the attribute", []Queue{{Name: "a.fifo"}}, "FifoQueue: true"},
		{"bad attribute", []Queue{{Name: "a", Attributes: map[string]string{"VisibilityTimeout": "-1"}}}, "VisibilityTimeout"},
		{"twice", []Queue{{Name: "a"}, {Name: "a"}}, "declared twice"},
		{"own dead-letter queue", []Queue{{Name: "a", DeadLetter: &DeadLetter{Queue: "a", MaxReceiveCount: 1}}}, "its own dead-letter queue"},
		{"receive count", []Queue{{Name: "a", DeadLetter: &DeadLetter{Queue: "b", MaxReceiveCount: 0}}}, "out of range"},
		{"two links", []Queue{{Name: "a", DeadLetter: &DeadLetter{Queue: "b", MaxReceiveCount: 1},
			Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:b","maxReceiveCount":1}`}}}, "keep one"},
	} {
		_, err := Declare("test queues", tc.queues)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "test queues: ") {
			t.Errorf("%s: Declare error %v, want one naming the queues and saying %q", tc.name, err, tc.want)
		}
	}
}
