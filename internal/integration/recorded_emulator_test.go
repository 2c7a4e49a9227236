package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
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

// motoSuite names moto's SQS test file in sources; its tests named here
// are not marked aws_verified.
const motoSuite = "moto tests/test_sqs/test_sqs.py "

// TestRecordedEmulatorSuiteMessages pins, on both protocols, further
// answers AWS was recorded giving where moto's suite expects other ones
// (docs/compatibility.md, "Where moto's suite expects otherwise").
func TestRecordedEmulatorSuiteMessages(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			// moto answers MessageAttributesInvalid "The message attribute
			// 'timestamp' has an invalid message attribute type, ..."
			// (test_message_with_attributes_invalid_datatype). The
			// recording is of a connector's test suite run against AWS
			// (eu-north-1); it was commented out in later versions.
			name: "SendMessage with an unknown attribute type",
			source: "ballerina-platform/module-ballerinax-aws.sqs ballerina/tests/send_message_test.bal: " +
				"testSendMessageWithInvalidAttributes (run against AWS)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", nil)
				return "SendMessage", params{"QueueUrl": u, "MessageBody": "derp",
					"MessageAttributes": map[string]params{"timestamp": {"DataType": "InvalidNumber", "StringValue": "149314735990a"}}}
			},
			want: invalidParameter("The type of message (user) attribute 'timestamp' is invalid. You must use only the following supported type prefixes: Binary, Number, String."),
		},
		{
			// moto expects "... Reason: can't find label on existing
			// policy." of a queue that never had a policy
			// (test_remove_permission_errors). The 2024 recording is of a
			// queue whose last statement was removed, which leaves no
			// Policy attribute either: the same state.
			name:   "RemovePermission on a queue without a policy",
			source: sweepSnapshot + "test_sqs_permission_lifecycle/get-queue-policy-attribute-delete-non-existent-label",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "no-policy", nil)
				return "RemovePermission", params{"QueueUrl": u, "Label": "test"}
			},
			want: invalidParameter("Value test for parameter Label is invalid. Reason: can't find label."),
		},
	})
}

// TestRecordedRedrivePolicyCanonical: SQS returns a RedrivePolicy in its
// own form, not as it was set: compact JSON, deadLetterTargetArn first and
// maxReceiveCount a number even when it was sent as a string. AWS's answer
// to a policy set as `{\n    "maxReceiveCount": "3",\n    "deadLetterTargetArn":
// ...}` is quoted in hashicorp/terraform#5119 (2016) as
// `{"deadLetterTargetArn":"arn:aws:sqs:...","maxReceiveCount":3}`; the
// provider then normalized its own copy (hashicorp/terraform#5888: the API
// "accepts either, but will always return an integer"). moto's
// test_get_queue_attributes expects the text as set (Python's json.dumps,
// with spaces).
func TestRecordedRedrivePolicyCanonical(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		dlq := mustCreate(t, c, "test-dlr-queue", nil)
		arn := queueARN(t, c, dlq)
		for _, set := range []string{
			`{"deadLetterTargetArn": "` + arn + `", "maxReceiveCount": 2}`,
			"{\n    \"maxReceiveCount\": \"2\",\n    \"deadLetterTargetArn\": \"" + arn + "\"\n}\n",
		} {
			u := mustCreate(t, c, "src", map[string]string{"RedrivePolicy": set})
			want := `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":2}`
			if got := must(c.GetAttrs(ctx, u, "RedrivePolicy"))(t)["RedrivePolicy"]; got != want {
				t.Errorf("RedrivePolicy set as %q\n  got  %s\n  want %s (hashicorp/terraform#5119)", set, got, want)
			}
			ok(t, c.DeleteQueue(ctx, u))
			env.Clock.Advance(61 * time.Second) // past the recreate delay
		}
	})
}

// TestRecordedEmulatorBatchDeduplicationID: moto's
// test_message_delay_is_more_than_15_minutes sends a batch to a standard
// queue whose entries carry a MessageDeduplicationId, and expects the
// entry with a valid delay to be sent and its deduplication id returned.
// AWS refuses a deduplication id on a standard queue (the SendMessage
// recording of TestRecordedEmulatorSuiteDepartures); in a batch fifoq fails
// that entry alone with the single action's answer, as it does every entry
// error. The entry with DelaySeconds 1800 fails with the wording AWS was
// recorded giving a SendMessage with a delay over 900
// (ballerina-platform/module-ballerinax-aws.sqs
// ballerina/tests/send_message_test.bal: testSendMessageWithExcessiveDelay,
// run against AWS).
func TestRecordedEmulatorBatchDeduplicationID(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "q", nil)
		got := s.msgSendBatch(t, params{"QueueUrl": u, "Entries": []params{
			{"Id": "id_1", "MessageBody": "body_1", "DelaySeconds": 3, "MessageDeduplicationId": "message_deduplication_id_1"},
			{"Id": "id_2", "MessageBody": "body_2", "DelaySeconds": 1800},
			{"Id": "id_3", "MessageBody": "body_3", "DelaySeconds": 3},
		}})
		if len(got.Successful) != 1 || got.Successful[0].Id != "id_3" {
			t.Errorf("Successful %+v, want id_3 alone", got.Successful)
		}
		want := map[string]string{
			"id_1": "Value message_deduplication_id_1 for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type.",
			"id_2": "Value 1800 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.",
		}
		if len(got.Failed) != len(want) {
			t.Fatalf("Failed %+v, want id_1 and id_2", got.Failed)
		}
		for _, f := range got.Failed {
			if f.Code != "InvalidParameterValue" || !f.SenderFault || f.Message != want[f.Id] {
				t.Errorf("Failed entry %+v, want InvalidParameterValue %q", f, want[f.Id])
			}
		}
	})
}

// TestUnrecordedErrorsAsMotoExpects: errors no AWS recording shows, answered
// as moto's SQS suite expects, which is plausible and agrees with SQS's
// documentation and with the recorded answers nearest to them. Each case
// names moto's test and what it rests on.
func TestUnrecordedErrorsAsMotoExpects(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			// An empty name breaks the documented "1 to 80" length of
			// CreateQueue's QueueName; the wording is the one AWS was
			// recorded giving a name with a slash
			// (ballerina-platform/module-ballerinax-aws.sqs
			// ballerina/tests/create_queue_test.bal:
			// testCreateQueueWithInvalidName, run against AWS).
			name:   "CreateQueue with an empty name",
			source: motoSuite + "test_create_fifo_queue_invalid_name[] (unrecorded)",
			call: func(t *testing.T, s *scene) (string, params) {
				return "CreateQueue", params{"QueueName": ""}
			},
			want: invalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"),
		},
		{
			// An empty list of principals verifies none: the recorded form
			// of an unverifiable principal list ("Value [xk3mq9] ...",
			// TestRecordedPermissionErrors) with nothing in it.
			name:   "AddPermission with an empty list of accounts",
			source: motoSuite + "test_add_permission_errors (unrecorded)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "perms", nil)
				return "AddPermission", params{"QueueUrl": u, "Label": "test-2", "AWSAccountIds": []string{}, "Actions": []string{"ReceiveMessage"}}
			},
			want: invalidParameter("Value [] for parameter PrincipalId is invalid. Reason: Unable to verify."),
		},
		{
			// SQS documents at most 7 actions per AddPermission statement
			// and OverLimit as the answer to a quota exceeded.
			name:   "AddPermission with eight actions",
			source: motoSuite + "test_add_permission_errors (unrecorded)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "perms", nil)
				return "AddPermission", params{"QueueUrl": u, "Label": "test-2", "AWSAccountIds": []string{"111111111111"},
					"Actions": []string{"ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
						"ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}}
			},
			want: awsAnswer{Status: http.StatusForbidden, Code: "OverLimit", Message: "8 Actions were found, maximum allowed is 7."},
		},
		{
			// SQS documents tag keys of 1 to 128 characters; a list sent
			// empty names no key of that length.
			name:   "UntagQueue with an empty list of keys",
			source: motoSuite + "test_untag_queue_errors (unrecorded)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "tagged", nil)
				return "UntagQueue", params{"QueueUrl": u, "TagKeys": []string{}}
			},
			want: invalidParameter("Tag keys must be between 1 and 128 characters in length."),
		},
	})
}
