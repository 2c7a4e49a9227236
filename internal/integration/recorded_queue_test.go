package integration

import (
	"net/http"
	"testing"
)

// TestRecordedQueueErrors replays recorded AWS answers about queues.
func TestRecordedQueueErrors(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			name:   "create queue with different attributes",
			source: "localstack test_sqs.snapshot.json: test_create_queue_with_different_attributes_raises_exception/create_queue_01",
			call: func(t *testing.T, s *scene) (string, params) {
				s.queue(t, "differs", map[string]string{"DelaySeconds": "1"})
				return "CreateQueue", params{"QueueName": "differs", "Attributes": map[string]string{"DelaySeconds": "2"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "QueueAlreadyExists", Type: "QueueNameExists",
				Message: "A queue already exists with the same name and a different value for attribute DelaySeconds"},
		},
	})
}
