package integration

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// Recorded AWS answers about sending and receiving messages: validation of
// SendMessage, SendMessageBatch and ReceiveMessage, which batch errors fail
// the whole request and which only their entry, and which attributes a
// receive returns.

// TestRecordedMessageErrors replays recorded AWS errors of the message
// actions.
func TestRecordedMessageErrors(t *testing.T) {
	runRecorded(t, slices.Concat(sendMessageErrorCases(), messageIDErrorCases(), batchErrorCases(), receiveMessageErrorCases()))
}

// stdQueue and fifoQueue create the standard and the FIFO queue a case
// sends to.
func stdQueue(t *testing.T, s *scene) string { return s.queue(t, "q", nil) }
func fifoQueue(t *testing.T, s *scene) string {
	return s.queue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
}

// batchEntries returns n SendMessageBatch entries with distinct ids.
func batchEntries(n int) []params {
	var out []params
	for i := range n {
		out = append(out, params{"Id": "message-" + string(rune('a'+i)), "MessageBody": "messageBody"})
	}
	return out
}

// The reasons SQS gives for a group or deduplication id it refuses, after
// the id itself, and an id one character too long.
const (
	groupIDReason = " for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."
	dedupIDReason = " for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."
)

var longID = strings.Repeat("a", 129)

// sendMessageErrorCases are SendMessage's recorded errors.
func sendMessageErrorCases() []recordedCase {
	return []recordedCase{
		{
			name:   "send without a body",
			source: "localstack test_sqs.snapshot.json: test_send_empty_message/send_empty_message",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": ""}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "MissingParameter", Type: "MissingRequiredParameterException",
				Message: "The request must contain the parameter MessageBody."},
		},
		{
			name:   "send with no MessageBody member",
			source: "localstack test_sqs.py test_valid_action_with_missing_parameter_raises_exception (AWS-validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s)}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "MissingParameter", Type: "MissingRequiredParameterException",
				Message: "The request must contain the parameter MessageBody."},
		},
		{
			name:   "FIFO send with a per-message delay",
			source: "localstack test_sqs.snapshot.json: test_fifo_queue_send_message_with_delay_seconds_fails/send_message",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
				return "SendMessage", params{"QueueUrl": u, "MessageBody": "message-1", "MessageGroupId": "1", "DelaySeconds": 2}
			},
			want: invalidParameter("Value 2 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."),
		},
		{
			name:   "FIFO send without a deduplication id",
			source: "localstack test_sqs.snapshot.json: test_posting_to_fifo_requires_deduplicationid_group_id/invalid-parameter-value",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": fifoQueue(t, s), "MessageBody": "test", "MessageGroupId": "fifo_group-1"}
			},
			want: invalidParameter("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"),
		},
		{
			name:   "FIFO send without a group id",
			source: "localstack test_sqs.snapshot.json: test_posting_to_fifo_requires_deduplicationid_group_id/missing-parameter",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": fifoQueue(t, s), "MessageBody": "test", "MessageDeduplicationId": "fifo_dedup-1"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "MissingParameter", Type: "MissingRequiredParameterException",
				Message: "The request must contain the parameter MessageGroupId."},
		},
		{
			// The recording's queue had the default size, 1 MiB since 2025;
			// this queue names it, so that the row does not depend on the
			// default.
			name:   "send over 1 MiB",
			source: "localstack test_sqs.snapshot.json: test_send_oversized_message/send_oversized_message",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q", map[string]string{"MaximumMessageSize": "1048576"})
				return "SendMessage", params{"QueueUrl": u, "MessageBody": strings.Repeat("a", api.MaxMessageSizeLimit+1)}
			},
			want: invalidParameter("One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes."),
		},
		{
			name:   "send over a lowered MaximumMessageSize",
			source: "localstack test_sqs.snapshot.json: test_send_message_with_updated_maximum_message_size/send_oversized_message",
			call: func(t *testing.T, s *scene) (string, params) {
				u := stdQueue(t, s)
				ok(t, s.c.SetAttrs(ctxT(t), u, map[string]string{"MaximumMessageSize": "1024"}))
				return "SendMessage", params{"QueueUrl": u, "MessageBody": strings.Repeat("a", 1025)}
			},
			want: invalidParameter("One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."),
		},
		{
			name:   "empty String attribute",
			source: "localstack test_sqs.snapshot.json: test_send_message_with_empty_string_attribute/empty-string-attr",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": "test",
					"MessageAttributes": map[string]params{"ErrorDetails": {"StringValue": "", "DataType": "String"}}}
			},
			want: invalidParameter("Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'."),
		},
		{
			// Recorded: the code only; the message is fifoq's.
			name:   "control characters in a String attribute",
			source: "localstack test_sqs.py test_invalid_string_attributes_cause_invalid_parameter_value_error (AWS-validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": "test",
					"MessageAttributes": map[string]params{"attr1": {"StringValue": "Invalid-\b,\v", "DataType": "String"}}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException"},
		},
		{
			// Recorded: the code only.
			name:   "control characters in the body",
			source: "localstack test_sqs.py test_send_message_with_invalid_payload_characters (AWS-validated)",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": "Invalid-\b-\x13-\uffff"}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidMessageContents"},
		},
	}
}

// messageIDErrorCases are SendMessage's recorded errors for a group or
// deduplication id SQS refuses.
func messageIDErrorCases() []recordedCase {
	return []recordedCase{
		{
			name:   "standard queue, group id sent empty",
			source: "localstack test_sqs.snapshot.json: test_send_message_to_standard_queue_with_invalid_message_group_id[empty]/error-response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": "message", "MessageGroupId": ""}
			},
			want: invalidParameter("Value " + groupIDReason),
		},
		{
			name:   "standard queue, group id of 129",
			source: "localstack test_sqs.snapshot.json: test_send_message_to_standard_queue_with_invalid_message_group_id[too_long]/error-response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": "message", "MessageGroupId": longID}
			},
			want: invalidParameter("Value " + longID + groupIDReason),
		},
		{
			name:   "standard queue, group id with a space",
			source: "localstack test_sqs.snapshot.json: test_send_message_to_standard_queue_with_invalid_message_group_id[spaces]/error-response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": stdQueue(t, s), "MessageBody": "message", "MessageGroupId": "group 123"}
			},
			want: invalidParameter("Value group 123" + groupIDReason),
		},
		{
			name:   "deduplication id sent empty",
			source: "localstack test_sqs.snapshot.json: test_message_deduplication_id_invalid[empty]/error-response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": fifoQueue(t, s), "MessageBody": "message", "MessageGroupId": "g", "MessageDeduplicationId": ""}
			},
			want: invalidParameter("Value " + dedupIDReason),
		},
		{
			name:   "deduplication id of 129",
			source: "localstack test_sqs.snapshot.json: test_message_deduplication_id_invalid[too_long]/error-response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": fifoQueue(t, s), "MessageBody": "message", "MessageGroupId": "g", "MessageDeduplicationId": longID}
			},
			want: invalidParameter("Value " + longID + dedupIDReason),
		},
		{
			name:   "deduplication id with a space",
			source: "localstack test_sqs.snapshot.json: test_message_deduplication_id_invalid[spaces]/error-response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessage", params{"QueueUrl": fifoQueue(t, s), "MessageBody": "message", "MessageGroupId": "g", "MessageDeduplicationId": "group 123"}
			},
			want: invalidParameter("Value group 123" + dedupIDReason),
		},
	}
}

// batchErrorCases are the recorded errors of the batch actions: those of
// SendMessageBatch that fail the whole request, and those of
// DeleteMessageBatch and ChangeMessageVisibilityBatch.
func batchErrorCases() []recordedCase {
	return []recordedCase{
		{
			name:   "batch entry id with a colon",
			source: "localstack test_sqs.snapshot.json: test_invalid_batch_id/test_invalid_batch_id",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": []params{{"Id": "message:abc", "MessageBody": "messageBody-abc"}}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Type: "InvalidBatchEntryId",
				Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		},
		{
			name:   "send batch of 20",
			source: "localstack test_sqs.snapshot.json: test_too_many_entries_in_batch_request/test_too_many_entries_in_batch_request",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": batchEntries(20)}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Type: "TooManyEntriesInBatchRequest",
				Message: "Maximum number of entries per request are 10. You have sent 20."},
		},
		{
			name:   "FIFO batch entry without a deduplication id",
			source: "localstack test_sqs.snapshot.json: test_send_batch_missing_deduplication_id_for_fifo_queue/test_missing_deduplication_id_for_fifo_queue",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false"})
				return "SendMessageBatch", params{"QueueUrl": u, "Entries": []params{
					{"Id": "message-1", "MessageBody": "messageBody", "MessageGroupId": "test-group", "MessageDeduplicationId": "dedup-1"},
					{"Id": "message-2", "MessageBody": "messageBody", "MessageGroupId": "test-group"},
				}}
			},
			want: invalidParameter("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"),
		},
		{
			name:   "FIFO batch entry without a group id",
			source: "localstack test_sqs.snapshot.json: test_send_batch_missing_message_group_id_for_fifo_queue/test_missing_message_group_id_for_fifo_queue",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false"})
				return "SendMessageBatch", params{"QueueUrl": u, "Entries": []params{
					{"Id": "message-1", "MessageBody": "messageBody", "MessageGroupId": "test-group", "MessageDeduplicationId": "dedup-1"},
					{"Id": "message-2", "MessageBody": "messageBody", "MessageDeduplicationId": "dedup-2"},
				}}
			},
			want: invalidParameter("The request must contain the parameter MessageGroupId."),
		},
		{
			// One entry of exactly 1 MiB (body and attribute) and one of
			// a byte: 1,048,577 bytes in all.
			name:   "batch over 1 MiB in all",
			source: "localstack test_sqs.snapshot.json: test_send_message_batch_with_oversized_contents/send_oversized_message_batch",
			call: func(t *testing.T, s *scene) (string, params) {
				return "SendMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": []params{
					{"Id": "1", "MessageBody": strings.Repeat("a", api.MaxMessageSizeLimit-len("k")-len("String")-len("x")),
						"MessageAttributes": map[string]params{"k": {"DataType": "String", "StringValue": "x"}}},
					{"Id": "2", "MessageBody": "a"},
				}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.BatchRequestTooLong", Type: "BatchRequestTooLong",
				Message: "Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes."},
		},

		// DeleteMessageBatch and ChangeMessageVisibilityBatch.
		{
			name:   "delete batch entry id empty",
			source: "localstack test_sqs.snapshot.json: test_delete_message_batch_invalid_msg_id[sqs-]/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "DeleteMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": []params{{"Id": "", "ReceiptHandle": "testHandle1"}}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Type: "InvalidBatchEntryId",
				Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		},
		{
			name:   "delete batch entry id of 100",
			source: "localstack test_sqs.snapshot.json: test_delete_message_batch_invalid_msg_id[sqs-testLongId...]/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "DeleteMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": []params{{"Id": strings.Repeat("testLongId", 10), "ReceiptHandle": "testHandle1"}}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Type: "InvalidBatchEntryId",
				Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		},
		{
			name:   "delete batch entry id with a colon",
			source: "localstack test_sqs.snapshot.json: test_delete_message_batch_invalid_msg_id[sqs-invalid:id]/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				return "DeleteMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": []params{{"Id": "invalid:id", "ReceiptHandle": "testHandle1"}}}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Type: "InvalidBatchEntryId",
				Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		},
		{
			name:   "delete batch of 20",
			source: "localstack test_sqs.snapshot.json: test_delete_message_batch_with_too_large_batch/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				var es []params
				for i := range 20 {
					es = append(es, params{"Id": string(rune('a' + i)), "ReceiptHandle": "h"})
				}
				return "DeleteMessageBatch", params{"QueueUrl": stdQueue(t, s), "Entries": es}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Type: "TooManyEntriesInBatchRequest",
				Message: "Maximum number of entries per request are 10. You have sent 20."},
		},
		{
			name:   "change visibility batch of 20",
			source: "localstack test_sqs.snapshot.json: test_change_message_visibility_batch_with_too_large_batch/error_response",
			call: func(t *testing.T, s *scene) (string, params) {
				var es []params
				for i := range 20 {
					es = append(es, params{"Id": string(rune('a' + i)), "ReceiptHandle": "h", "VisibilityTimeout": 123})
				}
				return "ChangeMessageVisibilityBatch", params{"QueueUrl": stdQueue(t, s), "Entries": es}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Type: "TooManyEntriesInBatchRequest",
				Message: "Maximum number of entries per request are 10. You have sent 20."},
		},
	}
}

// receiveMessageErrorCases are ReceiveMessage's recorded errors.
func receiveMessageErrorCases() []recordedCase {
	return []recordedCase{
		{
			name:   "receive 11",
			source: "localstack test_sqs.snapshot.json: test_send_receive_max_number_of_messages/send_max_number_of_messages",
			call: func(t *testing.T, s *scene) (string, params) {
				return "ReceiveMessage", params{"QueueUrl": stdQueue(t, s), "MaxNumberOfMessages": 11}
			},
			want: invalidParameter("Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided."),
		},
		{
			name:   "wait 21 seconds",
			source: "localstack test_sqs.snapshot.json: test_send_receive_wait_time_seconds/recieve_message_error_too_large",
			call: func(t *testing.T, s *scene) (string, params) {
				return "ReceiveMessage", params{"QueueUrl": stdQueue(t, s), "WaitTimeSeconds": 21}
			},
			want: invalidParameter("Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."),
		},
		{
			name:   "wait -1 seconds",
			source: "localstack test_sqs.snapshot.json: test_send_receive_wait_time_seconds/recieve_message_error_too_small",
			call: func(t *testing.T, s *scene) (string, params) {
				return "ReceiveMessage", params{"QueueUrl": stdQueue(t, s), "WaitTimeSeconds": -1}
			},
			want: invalidParameter("Value -1 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."),
		},
	}
}

// msgWire is a received message decoded from either protocol's answer.
type msgWire struct {
	ID, Body, MD5Body, MD5Attrs string
	Sys                         map[string]string
	Attrs                       map[string]Attr
}

// msgReceive posts a ReceiveMessage built from p in the scene's protocol
// and decodes the messages of the answer, so that a case can ask for the
// attributes exactly as the recording did (the SDK clients ask for all).
func (s *scene) msgReceive(t *testing.T, p params) []msgWire {
	t.Helper()
	r := s.post(t, "ReceiveMessage", p)
	if r.status != http.StatusOK {
		t.Fatalf("ReceiveMessage: HTTP %d: %.400s", r.status, r.body)
	}
	var out []msgWire
	if s.proto == "json" {
		var body struct {
			Messages []struct {
				MessageId, Body, MD5OfBody, MD5OfMessageAttributes string
				Attributes                                         map[string]string
				MessageAttributes                                  map[string]struct {
					DataType, StringValue string
					BinaryValue           []byte
				}
			}
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("ReceiveMessage answer: %v: %.400s", err, r.body)
		}
		for _, m := range body.Messages {
			w := msgWire{ID: m.MessageId, Body: m.Body, MD5Body: m.MD5OfBody, MD5Attrs: m.MD5OfMessageAttributes, Sys: m.Attributes}
			for name, v := range m.MessageAttributes {
				if w.Attrs == nil {
					w.Attrs = map[string]Attr{}
				}
				w.Attrs[name] = Attr{DataType: v.DataType, String: v.StringValue, Binary: v.BinaryValue}
			}
			out = append(out, w)
		}
		return out
	}
	var body struct {
		Messages []struct {
			MessageId, Body, MD5OfBody, MD5OfMessageAttributes string
			Attribute                                          []struct{ Name, Value string }
			MessageAttribute                                   []struct {
				Name  string
				Value struct{ DataType, StringValue, BinaryValue string }
			}
		} `xml:"ReceiveMessageResult>Message"`
	}
	if err := xml.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("ReceiveMessage answer: %v: %.400s", err, r.body)
	}
	for _, m := range body.Messages {
		w := msgWire{ID: m.MessageId, Body: m.Body, MD5Body: m.MD5OfBody, MD5Attrs: m.MD5OfMessageAttributes}
		for _, a := range m.Attribute {
			if w.Sys == nil {
				w.Sys = map[string]string{}
			}
			w.Sys[a.Name] = a.Value
		}
		for _, a := range m.MessageAttribute {
			if w.Attrs == nil {
				w.Attrs = map[string]Attr{}
			}
			bin, err := base64.StdEncoding.DecodeString(a.Value.BinaryValue)
			if err != nil {
				t.Fatalf("BinaryValue %q: %v", a.Value.BinaryValue, err)
			}
			if len(bin) == 0 {
				bin = nil
			}
			w.Attrs[a.Name] = Attr{DataType: a.Value.DataType, String: a.Value.StringValue, Binary: bin}
		}
		out = append(out, w)
	}
	return out
}

// msgReceiveOne receives with p and fails unless exactly one message comes.
func (s *scene) msgReceiveOne(t *testing.T, p params) msgWire {
	t.Helper()
	got := s.msgReceive(t, p)
	if len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	return got[0]
}

// msgProtocols runs f once per protocol, each on a server of its own, with
// the scene the raw requests of this file need.
func msgProtocols(t *testing.T, f func(t *testing.T, s *scene)) {
	t.Helper()
	t.Parallel()
	for _, proto := range []string{"json", "query"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			f(t, newScene(t, proto))
		})
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// TestRecordedReceiveMessageAttributeNames replays
// localstack test_sqs.snapshot.json: test_receive_message_message_attribute_names_filters:
// MessageAttributeNames selects attributes by name, by "Prefix.*" and by
// All, "*" or ".*", never refuses a name, and MD5OfMessageAttributes covers
// exactly the attributes returned (the MD5s are AWS's).
func TestRecordedReceiveMessageAttributeNames(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "q", map[string]string{"VisibilityTimeout": "0"})
		sent, err := s.c.Send(ctxT(t), u, SendIn{Body: "msg", Attrs: map[string]Attr{
			"Help.Me": {DataType: "String", String: "Me"},
			"Hello":   {DataType: "String", String: "There"},
			"General": {DataType: "String", String: "Kenobi"},
		}})
		ok(t, err)
		if sent.MD5Attrs != "4c360f3fdafd970e05fae2f149d997f5" || sent.MD5Body != "6e2baaf3b97dbeef01c0043275f9a0e7" {
			t.Fatalf("send_message_response: %+v", sent)
		}
		for _, tc := range []struct {
			key     string
			names   []string
			want    []string
			wantMD5 string
		}{
			{"empty_filter", nil, nil, ""},
			{"all_name", []string{"All"}, []string{"General", "Hello", "Help.Me"}, "4c360f3fdafd970e05fae2f149d997f5"},
			{"all_wildcard_asterisk", []string{"*"}, []string{"General", "Hello", "Help.Me"}, "4c360f3fdafd970e05fae2f149d997f5"},
			{"all_wildcard", []string{".*"}, []string{"General", "Hello", "Help.Me"}, "4c360f3fdafd970e05fae2f149d997f5"},
			{"only_non_existing_names", []string{"Foo", "Help"}, nil, ""},
			{"only_existing", []string{"Hello", "General"}, []string{"General", "Hello"}, "fca026605781cb4126a1e9044df24232"},
			{"existing_and_non_existing", []string{"Foo", "Hello"}, []string{"Hello"}, "a311262e065454b75da111d535b8dacd"},
			{"prefix_filter", []string{"Hel.*"}, []string{"Hello", "Help.Me"}, "83fee93c1bcd8b9a5a923ffacdc636c7"},
			{"illegal_name_1", []string{"AWS."}, nil, ""},
			{"illegal_name_2", []string{"..foo"}, nil, ""},
		} {
			p := params{"QueueUrl": u}
			if tc.names != nil {
				p["MessageAttributeNames"] = tc.names
			}
			m := s.msgReceiveOne(t, p)
			if got := sortedKeys(m.Attrs); !slices.Equal(got, tc.want) {
				t.Errorf("%s: attributes %v, recorded %v", tc.key, got, tc.want)
			}
			if m.MD5Attrs != tc.wantMD5 {
				t.Errorf("%s: MD5OfMessageAttributes %q, recorded %q", tc.key, m.MD5Attrs, tc.wantMD5)
			}
			if m.MD5Body != "6e2baaf3b97dbeef01c0043275f9a0e7" || m.Body != "msg" || m.Sys != nil {
				t.Errorf("%s: %+v", tc.key, m)
			}
		}
	})
}

// TestRecordedReceiveSystemAttributeNames replays
// localstack test_sqs.snapshot.json: test_receive_message_attribute_names_filters,
// test_receive_message_message_system_attribute_names_filters and
// test_message_system_attribute_names_with_attribute_names: AttributeNames
// and MessageSystemAttributeNames select the same attributes, a name that
// does not apply to the queue (SequenceNumber of a standard queue) is
// skipped, and when both lists come the JSON protocol answers
// MessageSystemAttributeNames, the Query protocol AttributeNames.
func TestRecordedReceiveSystemAttributeNames(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "q", map[string]string{"VisibilityTimeout": "0"})
		_, err := s.c.Send(ctxT(t), u, SendIn{Body: "msg", Attrs: map[string]Attr{"Foo": {DataType: "String", String: "Bar"}}})
		ok(t, err)
		all := []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"}
		for _, list := range []string{"AttributeNames", "MessageSystemAttributeNames"} {
			for _, tc := range []struct {
				key       string
				names     []string
				msgAttrs  []string
				want      []string
				wantAttrs []string
			}{
				{"all_attributes", []string{"All"}, nil, all, nil},
				{"all_system_and_message_attributes", []string{"All"}, []string{"All"}, all, []string{"Foo"}},
				{"single_attribute", []string{"SenderId"}, nil, []string{"SenderId"}, nil},
				{"multiple_attributes", []string{"SenderId", "SequenceNumber"}, nil, []string{"SenderId"}, nil},
			} {
				p := params{"QueueUrl": u, list: tc.names}
				if tc.msgAttrs != nil {
					p["MessageAttributeNames"] = tc.msgAttrs
				}
				m := s.msgReceiveOne(t, p)
				if got := sortedKeys(m.Sys); !slices.Equal(got, tc.want) {
					t.Errorf("%s %s: attributes %v, recorded %v", list, tc.key, got, tc.want)
				}
				if got := sortedKeys(m.Attrs); !slices.Equal(got, tc.wantAttrs) {
					t.Errorf("%s %s: message attributes %v, recorded %v", list, tc.key, got, tc.wantAttrs)
				}
				if tc.wantAttrs != nil && m.MD5Attrs != "ae7155c6026991b6d54b11589678bf9c" {
					t.Errorf("%s %s: MD5OfMessageAttributes %q", list, tc.key, m.MD5Attrs)
				}
			}
		}
		m := s.msgReceiveOne(t, params{"QueueUrl": u, "MessageSystemAttributeNames": []string{"All"}, "AttributeNames": []string{"All"}})
		if got := sortedKeys(m.Sys); !slices.Equal(got, all) {
			t.Errorf("same_values: %v", got)
		}
		m = s.msgReceiveOne(t, params{"QueueUrl": u, "MessageSystemAttributeNames": []string{"All"}, "AttributeNames": []string{"SenderId"}})
		want := all
		if s.proto == "query" {
			want = []string{"SenderId"}
		}
		if got := sortedKeys(m.Sys); !slices.Equal(got, want) {
			t.Errorf("different_values: %v, recorded %v", got, want)
		}
	})
}

// msgBatchAnswer is a SendMessageBatch answer decoded from either protocol.
type msgBatchAnswer struct {
	Successful []struct{ Id, MessageId, MD5OfMessageBody, MD5OfMessageAttributes string }
	Failed     []struct {
		Id, Code, Message string
		SenderFault       bool
	}
}

// msgSendBatch posts a SendMessageBatch built from p and decodes its answer.
func (s *scene) msgSendBatch(t *testing.T, p params) msgBatchAnswer {
	t.Helper()
	r := s.post(t, "SendMessageBatch", p)
	if r.status != http.StatusOK {
		t.Fatalf("SendMessageBatch: HTTP %d: %.400s", r.status, r.body)
	}
	var out msgBatchAnswer
	if s.proto == "json" {
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatalf("SendMessageBatch answer: %v: %.400s", err, r.body)
		}
		return out
	}
	var body struct {
		Successful []struct{ Id, MessageId, MD5OfMessageBody, MD5OfMessageAttributes string } `xml:"SendMessageBatchResult>SendMessageBatchResultEntry"`
		Failed     []struct {
			Id, Code, Message string
			SenderFault       bool
		} `xml:"SendMessageBatchResult>BatchResultErrorEntry"`
	}
	if err := xml.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("SendMessageBatch answer: %v: %.400s", err, r.body)
	}
	out.Successful, out.Failed = body.Successful, body.Failed
	return out
}

// TestRecordedSendBatchEntrySize replays
// localstack test_sqs.snapshot.json: test_send_batch_message_size and
// test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size:
// an entry over the queue's MaximumMessageSize fails alone, in Failed, with
// the batch's own wording, and an entry of exactly the maximum is sent.
func TestRecordedSendBatchEntrySize(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "q", map[string]string{"MaximumMessageSize": "1024"})
		got := s.msgSendBatch(t, params{"QueueUrl": u, "Entries": []params{
			{"Id": "a4cff0d1-1961-44bd-ae53-c6d5ed71ed08", "MessageBody": strings.Repeat("a", 1024)},
			{"Id": "35b535ed-b76a-4ebd-b749-6eb35cdb55ee", "MessageBody": strings.Repeat("a", 1025)},
		}})
		if len(got.Successful) != 1 || got.Successful[0].Id != "a4cff0d1-1961-44bd-ae53-c6d5ed71ed08" ||
			got.Successful[0].MD5OfMessageBody != "c9a34cfc85d982698c6ac89f76071abd" {
			t.Errorf("send-message-batch-result Successful: %+v", got.Successful)
		}
		if len(got.Failed) != 1 || got.Failed[0].Id != "35b535ed-b76a-4ebd-b749-6eb35cdb55ee" || got.Failed[0].Code != "InvalidParameterValue" ||
			!got.Failed[0].SenderFault || got.Failed[0].Message != "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes." {
			t.Errorf("send-message-batch-result Failed: %+v", got.Failed)
		}

		ok(t, s.c.SetAttrs(ctxT(t), u, map[string]string{"MaximumMessageSize": "2048"}))
		got = s.msgSendBatch(t, params{"QueueUrl": u, "Entries": []params{
			{"Id": "1", "MessageBody": strings.Repeat("a", 2048-len("k")-len("String")-len("x")),
				"MessageAttributes": map[string]params{"k": {"DataType": "String", "StringValue": "x"}}},
			{"Id": "2", "MessageBody": "a"},
		}})
		if len(got.Failed) != 0 || len(got.Successful) != 2 ||
			got.Successful[0].MD5OfMessageAttributes != "a45daa70926828a2f0a1db3418e6feb4" || got.Successful[0].MD5OfMessageBody != "f44facf5a7ee0af446ecf3e0f854441e" ||
			got.Successful[1].MD5OfMessageBody != "0cc175b9c0f1b6a831c399e269772661" {
			t.Errorf("send_oversized_message_batch: %+v", got)
		}
	})
}

// TestRecordedFIFOBatchFailsWhole checks that the recorded request-level
// FIFO batch errors send nothing, not even the valid entries before them
// (localstack test_sqs.snapshot.json:
// test_send_batch_missing_deduplication_id_for_fifo_queue,
// test_send_batch_missing_message_group_id_for_fifo_queue: the answer is an
// error, so no entry can have been sent).
func TestRecordedFIFOBatchFailsWhole(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "q.fifo", map[string]string{"FifoQueue": "true"})
		_, _, err := c.SendBatch(ctxT(t), u, []BatchSend{
			{ID: "ok", SendIn: SendIn{Body: "one", Group: "g", Dedup: "1"}},
			{ID: "nodedup", SendIn: SendIn{Body: "two", Group: "g"}},
		})
		wantErr(t, err, "InvalidParameterValue")
		msgs, err := c.Receive(ctxT(t), u, RecvIn{Max: 10})
		ok(t, err)
		if len(msgs) != 0 {
			t.Errorf("a failed batch sent %d messages", len(msgs))
		}
	})
}

// TestRecordedTraceHeader replays localstack test_sqs.py
// test_system_attributes_have_no_effect_on_attr_md5 (AWS-validated) and
// test_sqs.snapshot.json: test_aws_trace_header_propagation/xray-msg and
// test_dead_letter_queue_message_attributes/rec-pre-dlq: AWSTraceHeader,
// set as a system attribute or by the X-Amzn-Trace-Id header of the send,
// is returned when asked for, and has its own MD5 apart from the message
// attributes'.
func TestRecordedTraceHeader(t *testing.T) {
	const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	const xray = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1"
	timestamp := map[string]params{"timestamp": {"StringValue": "1493147359900", "DataType": "Number"}}
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "q", nil)
		send := func(p params, header map[string]string) map[string]string {
			t.Helper()
			var r rawResponse
			if s.proto == "json" {
				h := map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage"}
				maps.Copy(h, header)
				r = rawPost(t, s.env, h, jsonBody(t, p))
			} else {
				h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
				maps.Copy(h, header)
				r = rawPost(t, s.env, h, formBody("SendMessage", p))
			}
			if r.status != http.StatusOK {
				t.Fatalf("SendMessage: HTTP %d: %.400s", r.status, r.body)
			}
			out := map[string]string{}
			for _, name := range []string{"MD5OfMessageAttributes", "MD5OfMessageSystemAttributes"} {
				if s.proto == "json" {
					var body map[string]any
					if err := json.Unmarshal(r.body, &body); err != nil {
						t.Fatal(err)
					}
					if v, ok := body[name].(string); ok {
						out[name] = v
					}
				} else if _, rest, found := strings.Cut(string(r.body), "<"+name+">"); found {
					out[name], _, _ = strings.Cut(rest, "</")
				}
			}
			return out
		}
		plain := send(params{"QueueUrl": u, "MessageBody": "test", "MessageAttributes": timestamp}, nil)
		traced := send(params{"QueueUrl": u, "MessageBody": "test", "MessageAttributes": timestamp,
			"MessageSystemAttributes": map[string]params{"AWSTraceHeader": {"StringValue": trace, "DataType": "String"}}}, nil)
		if plain["MD5OfMessageAttributes"] != "235c5c510d26fb653d073faed50ae77c" || traced["MD5OfMessageAttributes"] != plain["MD5OfMessageAttributes"] {
			t.Errorf("MD5OfMessageAttributes %q and %q, recorded 235c5c510d26fb653d073faed50ae77c for both", plain["MD5OfMessageAttributes"], traced["MD5OfMessageAttributes"])
		}
		if plain["MD5OfMessageSystemAttributes"] != "" || traced["MD5OfMessageSystemAttributes"] != "5ae4d5d7636402d80f4eb6d213245a88" {
			t.Errorf("MD5OfMessageSystemAttributes %q and %q, recorded none and 5ae4d5d7636402d80f4eb6d213245a88", plain["MD5OfMessageSystemAttributes"], traced["MD5OfMessageSystemAttributes"])
		}
		send(params{"QueueUrl": u, "MessageBody": "xray", "MessageAttributes": timestamp}, map[string]string{"X-Amzn-Trace-Id": xray})

		got := s.msgReceive(t, params{"QueueUrl": u, "MaxNumberOfMessages": 10, "AttributeNames": []string{"SentTimestamp", "AWSTraceHeader"},
			"MessageAttributeNames": []string{"All"}})
		traces := map[string]string{}
		for _, m := range got {
			traces[m.Body+"/"+m.Sys["AWSTraceHeader"]] = strings.Join(sortedKeys(m.Sys), ",")
		}
		want := map[string]string{
			"test/":         "SentTimestamp",
			"test/" + trace: "AWSTraceHeader,SentTimestamp",
			"xray/" + xray:  "AWSTraceHeader,SentTimestamp",
		}
		if len(got) != 3 || !maps.Equal(traces, want) {
			t.Errorf("received %v, want %v", traces, want)
		}
	})
}

// TestRecordedFairQueueGroupID replays localstack test_sqs.snapshot.json:
// test_fair_queue_with_message_group_id: a standard queue takes a
// MessageGroupId (fair queues) and returns it as a system attribute; the
// send answers no SequenceNumber.
func TestRecordedFairQueueGroupID(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "q", nil)
		sent, err := c.Send(ctxT(t), u, SendIn{Body: "message", Group: "test"})
		ok(t, err)
		if sent.Seq != "" || sent.MD5Body != "78e731027d8fd50ed642340b7c9a63b3" {
			t.Errorf("send_message: %+v", sent)
		}
		msgs, err := c.Receive(ctxT(t), u, RecvIn{})
		ok(t, err)
		if len(msgs) != 1 {
			t.Fatalf("received %d messages", len(msgs))
		}
		want := []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "MessageGroupId", "SenderId", "SentTimestamp"}
		if got := sortedKeys(msgs[0].Sys); !slices.Equal(got, want) || msgs[0].Sys["MessageGroupId"] != "test" {
			t.Errorf("get-message-with-deduplication-id: %v", msgs[0].Sys)
		}
	})
}

// TestRecordedFIFOZeroDelay replays localstack test_sqs.snapshot.json:
// test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay: a
// FIFO message may say DelaySeconds=0, and the queue's delay still applies.
func TestRecordedFIFOZeroDelay(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "DelaySeconds": "2"})
		sent, err := c.Send(ctxT(t), u, SendIn{Body: "message-1", Group: "1", Delay: i32(0)})
		ok(t, err)
		if sent.Seq == "" || sent.MD5Body != "3d6b824fd8c1520e9a047d21fee6fb1f" {
			t.Errorf("send_message_result: %+v", sent)
		}
		if msgs, err := c.Receive(ctxT(t), u, RecvIn{Wait: i32(0)}); err != nil || len(msgs) != 0 {
			t.Fatalf("receive_message_initial_result: %d messages, %v", len(msgs), err)
		}
		env.Clock.Advance(3 * time.Second)
		msgs, err := c.Receive(ctxT(t), u, RecvIn{})
		ok(t, err)
		if len(msgs) != 1 || msgs[0].Body != "message-1" {
			t.Errorf("receive_message_after_delay_result: %+v", msgs)
		}
	})
}

// TestRecordedFIFOSystemAttributes replays localstack
// test_sqs.snapshot.json: test_fifo_message_attributes: a FIFO message
// received with All carries its deduplication id (the one sent, on a queue
// that also deduplicates by content), group id and sequence number beside
// the standard attributes, and its receive count grows.
func TestRecordedFIFOSystemAttributes(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "0",
			"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		sent, err := c.Send(ctxT(t), u, SendIn{Body: "message-body-1", Group: "group-1", Dedup: "dedup-1"})
		ok(t, err)
		if sent.MD5Body != "19c9e282d65f9733bc6b35d50062c7ee" || sent.Seq == "" || sent.MD5Attrs != "" {
			t.Fatalf("send_message: %+v", sent)
		}
		want := []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "MessageDeduplicationId", "MessageGroupId",
			"SenderId", "SentTimestamp", "SequenceNumber"}
		for i, count := range []string{"1", "2"} {
			msgs, err := c.Receive(ctxT(t), u, RecvIn{})
			ok(t, err)
			if len(msgs) != 1 {
				t.Fatalf("receive_message_%d: %d messages", i, len(msgs))
			}
			sys := msgs[0].Sys
			if got := sortedKeys(sys); !slices.Equal(got, want) || sys["ApproximateReceiveCount"] != count ||
				sys["MessageDeduplicationId"] != "dedup-1" || sys["MessageGroupId"] != "group-1" || sys["SequenceNumber"] != sent.Seq {
				t.Errorf("receive_message_%d: %v", i, sys)
			}
		}
	})
}

// TestRecordedMessageAttributeNameRules replays localstack test_sqs.py
// test_send_message_with_invalid_string_attributes (AWS-validated, which
// checks the code only): SQS takes an attribute name with letters beyond
// ASCII, and refuses control characters in a String value, the reserved
// prefixes in any case, a leading or trailing period, symbols, names over
// 256 bytes, an unknown type and a type over 256 bytes, all with
// InvalidParameterValue.
func TestRecordedMessageAttributeNameRules(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "q", nil)
		valid := func(v string) Attr { return Attr{DataType: "String", String: v} }
		_, err := c.Send(ctxT(t), u, SendIn{Body: "test", Attrs: map[string]Attr{"attr.1øßä": valid("Valida")}})
		ok(t, err)
		bad := []map[string]Attr{
			{"attr1": valid("Invalid-\b,\v")},
			{"aWs.-Invalid-attr": valid("Valid")},
			{"AMAZON.-Invalid-attr": valid("Valid")},
			{".-Invalid-attr": valid("Valid")},
			{"Invalid-!-attr": valid("Valid")},
			{`Invalid-"-attr`: valid("Valid")},
			{"Invalid-§-attr": valid("Valid")},
			{"Invalid-(-attr": valid("Valid")},
			{"Invalid-?-attr": valid("Valid")},
			{strings.Repeat("L", 257): valid("Valid")},
			{"Attribute_name": {DataType: "Invalid", String: "Valid"}},
			{"Attribute_name": {DataType: "Number." + strings.Repeat("L", 256), String: "Valid"}},
			{"Invalid.": valid("Valid")},
		}
		for _, attrs := range bad {
			_, err := c.Send(ctxT(t), u, SendIn{Body: "test", Attrs: attrs})
			if e, _ := apiErr(err); e.Code != "InvalidParameterValue" {
				t.Errorf("%q: error %v, recorded InvalidParameterValue", sortedKeys(attrs), err)
			}
		}
	})
}

// TestRecordedBinaryAttributeMD5 replays localstack test_sqs.snapshot.json:
// test_send_message_with_binary_attributes/binary-attrs-msg: the MD5 of a
// Binary attribute, on the send and on the receive, is AWS's.
func TestRecordedBinaryAttributeMD5(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "q", nil)
		attrs := map[string]Attr{"attr1": {DataType: "Binary", Binary: []byte("traceparent\x1e00-774062d6c37081a5a0b9b5b88e30627c-2d2482211f6489da-01")}}
		sent, err := c.Send(ctxT(t), u, SendIn{Body: "test", Attrs: attrs})
		ok(t, err)
		msgs, err := c.Receive(ctxT(t), u, RecvIn{})
		ok(t, err)
		if len(msgs) != 1 {
			t.Fatalf("received %d messages", len(msgs))
		}
		const want = "8cbe4db156db8a94db8b801b7addb984"
		if sent.MD5Attrs != want || msgs[0].MD5Attrs != want || msgs[0].MD5Body != "098f6bcd4621d373cade4e832627b4f6" {
			t.Errorf("MD5OfMessageAttributes sent %q, received %q, recorded %s", sent.MD5Attrs, msgs[0].MD5Attrs, want)
		}
		if got := msgs[0].Attrs["attr1"]; got.DataType != "Binary" || string(got.Binary) != string(attrs["attr1"].Binary) {
			t.Errorf("attribute %+v", got)
		}
	})
}
