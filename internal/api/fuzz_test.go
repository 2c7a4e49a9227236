package api

import (
	"encoding/json"
	"testing"
)

// FuzzValidate decodes arbitrary JSON into the request of an arbitrary
// action, as the AWS JSON codec does, and checks that Validate never panics,
// answers only with *Error, and that what it accepts keeps the invariants
// the engine relies on.
func FuzzValidate(f *testing.F) {
	seeds := []struct {
		action byte
		body   string
	}{
		{17, `{"QueueUrl":"http://h/0/q","MessageBody":"hi","MessageAttributes":{"a":{"DataType":"Number","StringValue":"1e5"}}}`},
		{17, `{"QueueUrl":"/0/q","MessageBody":"x","MessageGroupId":"g","MessageDeduplicationId":"d","DelaySeconds":3}`},
		{18, `{"QueueUrl":"/0/q","Entries":[{"Id":"a","MessageBody":"x"},{"Id":"b","MessageBody":"\u0000"}]}`},
		{4, `{"QueueName":"q.fifo","Attributes":{"FifoQueue":"true","RedrivePolicy":"{\"deadLetterTargetArn\":\"arn:aws:sqs:r:1:d.fifo\",\"maxReceiveCount\":3}"}}`},
		{15, `{"QueueUrl":"/0/q","MaxNumberOfMessages":10,"WaitTimeSeconds":20,"AttributeNames":["All"]}`},
		{3, `{"QueueUrl":"/0/q","Entries":[{"Id":"a","ReceiptHandle":"r","VisibilityTimeout":1}]}`},
	}
	for _, s := range seeds {
		f.Add(s.action, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, action byte, body []byte) {
		r, ok := NewRequest(Actions[int(action)%len(Actions)])
		if !ok {
			t.Fatal("NewRequest failed for a listed action")
		}
		if json.Unmarshal(body, r) != nil {
			return
		}
		err := Validate(r)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Validate returned %T %v", err, err)
			}
			return
		}
		switch r := r.(type) {
		case *SendMessageRequest:
			if !validMessageText(r.MessageBody) || r.MessageBody == "" {
				t.Fatalf("accepted body %q", r.MessageBody)
			}
			if n := MessageSize(r.MessageBody, r.MessageAttributes); n > MaxMessageSizeLimit {
				t.Fatalf("accepted a message of %d bytes", n)
			}
			if len(r.MessageAttributes) > 0 && len(MD5OfMessageAttributes(r.MessageAttributes)) != 32 {
				t.Fatal("no digest for accepted attributes")
			}
		case *SendMessageBatchRequest:
			if len(r.Entries) == 0 || len(r.Entries) > MaxBatchEntries {
				t.Fatalf("accepted %d entries", len(r.Entries))
			}
			for i := range r.Entries {
				if err := ValidateSendEntry(&r.Entries[i]); err != nil {
					if _, ok := err.(*Error); !ok {
						t.Fatalf("ValidateSendEntry returned %T", err)
					}
				}
			}
		case *CreateQueueRequest:
			if len(r.QueueName) == 0 || len(r.QueueName) > MaxQueueNameLength {
				t.Fatalf("accepted queue name %q", r.QueueName)
			}
			fifo := IsFIFOName(r.QueueName) && IsTrueAttr(r.Attributes[AttrFifoQueue])
			if err := ValidateQueueAttributes(r.Attributes, fifo); err != nil {
				t.Fatalf("CreateQueue accepted attributes that ValidateQueueAttributes refuses: %v", err)
			}
		}
	})
}
