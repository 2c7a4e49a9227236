package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Answers that moto's SQS test suite, run against fifoq in server mode,
// expects otherwise than AWS was seen answering. Each is pinned here with
// the evidence of AWS's own answer, so that a change made to please that
// suite cannot quietly move fifoq away from AWS.

// TestRecordedEmulatorSuiteDepartures replays the error answers.
func TestRecordedEmulatorSuiteDepartures(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			// moto accepts FifoQueue=false (and "tru") on a standard
			// queue; AWS refuses any FifoQueue attribute there, false
			// included.
			name:   "CreateQueue standard with FifoQueue false",
			source: "aws/aws-sdk-php issue #1331: AWS's answer to CreateQueue bar_queue with FifoQueue=false, quoted in the issue",
			call: func(t *testing.T, s *scene) (string, params) {
				return "CreateQueue", params{"QueueName": "bar_queue", "Attributes": map[string]string{"FifoQueue": "false"}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute FifoQueue."},
		},
		{
			// Since fair queues (2025) a standard queue takes a
			// MessageGroupId, yet still refuses a MessageDeduplicationId:
			// the recorded request carried both, and AWS named the
			// deduplication id (moto accepts it).
			name: "SendMessage standard with a deduplication id",
			source: "a live eu-west-1 deploy log (June 2026) quoted in a public project's plan, stored file id 62286693265: " +
				"SendMessage to a standard queue with MessageGroupId and MessageDeduplicationId",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "cmd-topic", nil)
				return "SendMessage", params{"QueueUrl": u, "MessageBody": "retire", "MessageGroupId": "plugin-1",
					"MessageDeduplicationId": "5f0c2a9e-1b7d-4c3e-9a61-2d8f4b7e0c11"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException",
				Message: "Value 5f0c2a9e-1b7d-4c3e-9a61-2d8f4b7e0c11 for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type."},
		},
	})
}

// TestDocumentedGetQueueAttributesWithoutNames: no AWS recording was
// found; SQS's API reference (GetQueueAttributes, AttributeNames) says
// "if you don't specify values for this parameter, the request returns
// empty results". moto's suite expects "Unknown Attribute ." for an empty
// list instead. An empty JSON list and a Query request without any
// AttributeName.N both answer 200 with no attributes.
func TestDocumentedGetQueueAttributesWithoutNames(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "no-names", nil)
		var r rawResponse
		if c.Proto() == "json" {
			r = rawPost(t, env, map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.GetQueueAttributes"},
				jsonBody(t, params{"QueueUrl": u, "AttributeNames": []string{}}))
		} else {
			r = rawPost(t, env, map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
				formBody("GetQueueAttributes", params{"QueueUrl": u}))
		}
		if r.status != http.StatusOK {
			t.Fatalf("HTTP %d, documented 200: %.400s", r.status, r.body)
		}
		if c.Proto() == "json" {
			var body map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 0 {
				t.Errorf("body %q (%v), documented empty results", r.body, err)
			}
		} else if strings.Contains(string(r.body), "<Attribute>") {
			t.Errorf("body %q, documented empty results", r.body)
		}
	})
}
