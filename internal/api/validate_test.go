package api

import (
	"strings"
	"testing"
)

const testURL = "http://localhost:9324/000000000000/q"

type validateCase struct {
	name string
	req  Request
	code string // "" for a valid request
	msg  string // a part of the expected message
}

func runValidateCases(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, Validate(tt.req), tt.code, tt.msg)
		})
	}
}

func TestValidateEveryActionHasRules(t *testing.T) {
	for _, a := range Actions {
		r, ok := NewRequest(a)
		if !ok {
			t.Fatalf("NewRequest(%s) failed", a)
		}
		// A zero request of an action without required members is valid;
		// the point is that no action falls through to the default.
		if err := Validate(r); err != nil {
			if e := err.(*Error); e.Code == "InvalidAction" || e.Code == "InternalFailure" {
				t.Errorf("%s: %v", a, err)
			}
		}
	}
}

func TestValidateNil(t *testing.T) {
	checkErr(t, Validate(nil), "InternalFailure", "no request")
	checkErr(t, Validate((*SendMessageRequest)(nil)), "InternalFailure", "no request")
}

func TestValidateQueueURL(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"missing", &DeleteQueueRequest{}, "MissingParameter", "The request must contain the parameter QueueUrl."},
		// A QueueUrl that is not of the /ACCOUNT/NAME form is a queue name,
		// which the engine answers NonExistentQueue for if there is none.
		{"not a queue", &PurgeQueueRequest{QueueUrl: "http://localhost:9324/"}, "", ""},
		{"too deep", &ListQueueTagsRequest{QueueUrl: "http://h/a/b/c"}, "", ""},
		{"bare name", &ListQueueTagsRequest{QueueUrl: "my-queue"}, "", ""},
		{"path only", &DeleteQueueRequest{QueueUrl: "/000000000000/q"}, "", ""},
		{"absolute", &PurgeQueueRequest{QueueUrl: testURL}, "", ""},
	})
}

func TestValidateSendMessage(t *testing.T) {
	var cases []validateCase
	cases = append(cases, sendMessageBodyCases()...)
	cases = append(cases, sendMessageAttributeCases()...)
	cases = append(cases, sendMessageSystemAttributeCases()...)
	cases = append(cases, sendMessageTokenCases()...)
	runValidateCases(t, cases)
}

// send is a valid SendMessageRequest changed by mod (if not nil), so that
// each case states only what makes it differ from a valid request.
func send(mod func(*SendMessageRequest)) *SendMessageRequest {
	r := &SendMessageRequest{QueueUrl: testURL, MessageBody: "hello"}
	if mod != nil {
		mod(r)
	}
	return r
}

// attrs is a change to a SendMessageRequest that sets its message
// attributes to m.
func attrs(m map[string]MessageAttributeValue) func(*SendMessageRequest) {
	return func(r *SendMessageRequest) { r.MessageAttributes = m }
}

// one is a change to a SendMessageRequest that gives it the single message
// attribute name with value v.
func one(name string, v MessageAttributeValue) func(*SendMessageRequest) {
	return attrs(map[string]MessageAttributeValue{name: v})
}

// many is n valid String message attributes with distinct names, for the
// limit on the number of attributes.
func many(n int) map[string]MessageAttributeValue {
	m := map[string]MessageAttributeValue{}
	for i := 0; i < n; i++ {
		m["a"+strings.Repeat("x", i)] = strAttr("String", "v")
	}
	return m
}

// sendMessageBodyCases are TestValidateSendMessage's cases for the queue
// URL, the body, its size and the delay.
func sendMessageBodyCases() []validateCase {
	return []validateCase{
		{"valid", send(nil), "", ""},
		{"missing queue url", send(func(r *SendMessageRequest) { r.QueueUrl = "" }), "MissingParameter", "QueueUrl"},
		{"missing body", send(func(r *SendMessageRequest) { r.MessageBody = "" }), "MissingParameter", "The request must contain the parameter MessageBody."},
		{"blank body is a body", send(func(r *SendMessageRequest) { r.MessageBody = " " }), "", ""},
		{"invalid character", send(func(r *SendMessageRequest) { r.MessageBody = "a\x00b" }), "InvalidMessageContents", "Invalid binary character"},
		{"invalid utf-8", send(func(r *SendMessageRequest) { r.MessageBody = "a\xffb" }), "InvalidMessageContents", ""},
		{"largest body", send(func(r *SendMessageRequest) { r.MessageBody = strings.Repeat("a", MaxMessageSizeLimit) }), "", ""},
		{"body too long", send(func(r *SendMessageRequest) { r.MessageBody = strings.Repeat("a", MaxMessageSizeLimit+1) }),
			"InvalidParameterValue", "One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes."},
		{"attributes count in size", send(func(r *SendMessageRequest) {
			r.MessageBody = strings.Repeat("a", MaxMessageSizeLimit-10)
			r.MessageAttributes = map[string]MessageAttributeValue{"name": strAttr("String", "value")}
		}), "InvalidParameterValue", "Message must be shorter than"},
		{"system attributes do not count in size", send(func(r *SendMessageRequest) {
			r.MessageBody = strings.Repeat("a", MaxMessageSizeLimit)
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"AWSTraceHeader": strAttr("String", "Root=1-5759e988-bd862e3fe1be46a994272793")}
		}), "", ""},
		{"delay 0", send(func(r *SendMessageRequest) { r.DelaySeconds = intp(0) }), "", ""},
		{"delay 900", send(func(r *SendMessageRequest) { r.DelaySeconds = intp(900) }), "", ""},
		{"delay 901", send(func(r *SendMessageRequest) { r.DelaySeconds = intp(901) }),
			"InvalidParameterValue", "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900."},
		{"delay -1", send(func(r *SendMessageRequest) { r.DelaySeconds = intp(-1) }), "InvalidParameterValue", "Value -1 for parameter DelaySeconds"},
	}
}

// sendMessageAttributeCases are TestValidateSendMessage's cases for message
// (user) attributes: their number, names, types and values.
func sendMessageAttributeCases() []validateCase {
	return []validateCase{
		{"string attribute", send(one("a", strAttr("String", "x"))), "", ""},
		{"custom string", send(one("a", strAttr("String.json", "{}"))), "", ""},
		{"number attribute", send(one("a", strAttr("Number", "-1.5e3"))), "", ""},
		{"custom number", send(one("a", strAttr("Number.int", "7"))), "", ""},
		{"binary attribute", send(one("a", binAttr("Binary", []byte{0}))), "", ""},
		{"custom binary", send(one("a", binAttr("Binary.gif", []byte{1}))), "", ""},
		{"ten attributes", send(attrs(many(10))), "", ""},
		{"eleven attributes", send(attrs(many(11))), "InvalidParameterValue", "Number of message attributes [11] exceeds the allowed maximum [10]."},
		{"empty name", send(one("", strAttr("String", "x"))), "InvalidParameterValue", "The request must contain non-empty message (user) attribute names."},
		{"256-character name", send(one(strings.Repeat("a", 256), strAttr("String", "x"))), "", ""},
		{"257-character name", send(one(strings.Repeat("a", 257), strAttr("String", "x"))), "InvalidParameterValue", "Message (user) attribute name must be shorter than 256 bytes."},
		{"name with space", send(one("a b", strAttr("String", "x"))), "InvalidParameterValue", "can only contain upper and lower score characters"},
		// SQS accepts letters beyond ASCII and refuses symbols (moto / localstack
		// test_send_message_with_invalid_string_attributes, AWS-validated).
		{"name with a symbol", send(one("Invalid-§-attr", strAttr("String", "x"))), "InvalidParameterValue", "can only contain"},
		{"name with letters beyond ASCII", send(one("attr.1øßä", strAttr("String", "Valida"))), "", ""},
		{"name with all allowed characters", send(one("aZ09_-.x", strAttr("String", "x"))), "", ""},
		{"reserved AWS.", send(one("AWS.x", strAttr("String", "x"))), "InvalidParameterValue", "beginning with 'AWS.' or 'Amazon.'"},
		{"reserved aws. any case", send(one("aWs.x", strAttr("String", "x"))), "InvalidParameterValue", "reserved for internal use"},
		{"reserved amazon.", send(one("amazon.x", strAttr("String", "x"))), "InvalidParameterValue", "reserved"},
		{"AWS without period is fine", send(one("AWSx", strAttr("String", "x"))), "", ""},
		{"leading period", send(one(".x", strAttr("String", "x"))), "InvalidParameterValue", "cannot start or end with '.'"},
		{"trailing period", send(one("x.", strAttr("String", "x"))), "InvalidParameterValue", "cannot start or end with '.'"},
		{"successive periods", send(one("a..b", strAttr("String", "x"))), "InvalidParameterValue", "must not have successive '.' characters"},
		{"no value at all", send(one("Hello", MessageAttributeValue{})), "InvalidParameterValue", "The message (user) attribute 'Hello' must contain a non-empty message attribute value."},
		{"no data type", send(one("Hello", MessageAttributeValue{StringValue: str("x")})), "InvalidParameterValue", "must contain a non-empty message attribute type"},
		{"unknown type", send(one("Hello", strAttr("InvalidType", "x"))), "InvalidParameterValue",
			"The type of message (user) attribute 'Hello' is invalid. You must use only the following supported type prefixes: Binary, Number, String."},
		{"lower-case type", send(one("Hello", strAttr("string", "x"))), "InvalidParameterValue", "is invalid"},
		{"type prefix without period", send(one("Hello", strAttr("Stringy", "x"))), "InvalidParameterValue", "is invalid"},
		{"empty custom label", send(one("Hello", strAttr("Number.", "1"))), "InvalidParameterValue", "is invalid"},
		{"type of 256 characters", send(one("a", strAttr("String."+strings.Repeat("a", 249), "x"))), "", ""},
		{"type too long", send(one("a", strAttr("String."+strings.Repeat("a", 250), "x"))), "InvalidParameterValue", "Message (user) attribute type must be shorter than 256 bytes."},
		{"empty string", send(one("Hello", strAttr("String", ""))), "InvalidParameterValue", "Message (user) attribute 'Hello' must contain a non-empty value of type 'String'."},
		{"string given as binary", send(one("Hello", binAttr("String", []byte("x")))), "InvalidParameterValue", "non-empty value of type 'String'"},
		{"empty number", send(one("n", strAttr("Number", ""))), "InvalidParameterValue", "non-empty value of type 'Number'"},
		{"not a number", send(one("Hello", strAttr("Number", "world"))), "InvalidParameterValue", "Can't cast the value of message (user) attribute 'Hello' to a number."},
		{"number too precise", send(one("n", strAttr("Number", strings.Repeat("1", 39)))), "InvalidParameterValue", "out of range"},
		{"number too large", send(one("n", strAttr("Number", "1e200"))), "InvalidParameterValue", "out of range"},
		{"empty binary", send(one("b", binAttr("Binary", []byte{}))), "InvalidParameterValue", "non-empty value of type 'Binary'"},
		{"binary given as string", send(one("b", strAttr("Binary", "x"))), "InvalidParameterValue", "non-empty value of type 'Binary'"},
		{"string list", send(one("l", MessageAttributeValue{DataType: "String", StringListValues: []string{"x"}})), "InvalidParameterValue", "Message attribute list values in SendMessage operation are not supported."},
		{"binary list", send(one("l", MessageAttributeValue{DataType: "Binary", BinaryListValues: [][]byte{{1}}})), "InvalidParameterValue", "list values"},
		// InvalidParameterValue, not the body's InvalidMessageContents (localstack
		// test_invalid_string_attributes_cause_invalid_parameter_value_error).
		{"invalid character in string value", send(one("s", strAttr("String", "\x01"))), "InvalidParameterValue", "contains invalid characters"},
		{"first bad attribute in name order", send(attrs(map[string]MessageAttributeValue{
			"b": strAttr("Number", "x"), "a": strAttr("Bogus", "x"),
		})), "InvalidParameterValue", "attribute 'a' is invalid"},
	}
}

// sendMessageSystemAttributeCases are TestValidateSendMessage's cases for
// message system attributes (AWSTraceHeader is the only one).
func sendMessageSystemAttributeCases() []validateCase {
	return []validateCase{
		{"trace header", send(func(r *SendMessageRequest) {
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"AWSTraceHeader": strAttr("String", "Root=1-abc")}
		}), "", ""},
		{"unknown system attribute", send(func(r *SendMessageRequest) {
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"Hello": strAttr("String", "World")}
		}), "InvalidParameterValue", "Message system attribute name 'Hello' is invalid."},
		{"trace header of type Number", send(func(r *SendMessageRequest) {
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"AWSTraceHeader": strAttr("Number", "1")}
		}), "InvalidParameterValue", "must be of type 'String'"},
		{"trace header list", send(func(r *SendMessageRequest) {
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"AWSTraceHeader": {DataType: "String", StringListValues: []string{"x"}}}
		}), "InvalidParameterValue", "list values"},
		{"trace header with a control character", send(func(r *SendMessageRequest) {
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"AWSTraceHeader": strAttr("String", "Root=\x00")}
		}), "InvalidParameterValue", "contains invalid characters"},
		{"empty trace header", send(func(r *SendMessageRequest) {
			r.MessageSystemAttributes = map[string]MessageSystemAttributeValue{"AWSTraceHeader": strAttr("String", "")}
		}), "InvalidParameterValue", "non-empty value"},
	}
}

// sendMessageTokenCases are TestValidateSendMessage's cases for the FIFO
// tokens: the message group id and the deduplication id.
func sendMessageTokenCases() []validateCase {
	return []validateCase{
		{"group id", send(func(r *SendMessageRequest) { r.MessageGroupId = `g!"#$%&'()*+,-./:;<=>?@[\]^_` + "`{|}~" }), "", ""},
		{"group id with space", send(func(r *SendMessageRequest) { r.MessageGroupId = "CTC#QA-CS5A INTERIOR" }), "InvalidParameterValue",
			"Value CTC#QA-CS5A INTERIOR for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{"group id of 128", send(func(r *SendMessageRequest) { r.MessageGroupId = strings.Repeat("g", 128) }), "", ""},
		{"group id of 129", send(func(r *SendMessageRequest) { r.MessageGroupId = strings.Repeat("g", 129) }), "InvalidParameterValue", "for parameter MessageGroupId is invalid"},
		{"group id non-ascii", send(func(r *SendMessageRequest) { r.MessageGroupId = "é" }), "InvalidParameterValue", "MessageGroupId"},
		{"dedup id", send(func(r *SendMessageRequest) { r.MessageDeduplicationId = strings.Repeat("d", 128) }), "", ""},
		{"dedup id too long", send(func(r *SendMessageRequest) { r.MessageDeduplicationId = strings.Repeat("d", 129) }), "InvalidParameterValue",
			"for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{"dedup id with tab", send(func(r *SendMessageRequest) { r.MessageDeduplicationId = "a\tb" }), "InvalidParameterValue", "MessageDeduplicationId"},
		// An id sent empty is malformed (localstack test_sqs.snapshot.json:
		// test_send_message_to_standard_queue_with_invalid_message_group_id[empty],
		// test_message_deduplication_id_invalid[empty]); one not sent is absent.
		{"group id sent empty", send(func(r *SendMessageRequest) { r.MessageGroupIdSet = true }), "InvalidParameterValue",
			"Value  for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{"dedup id sent empty", send(func(r *SendMessageRequest) { r.MessageDeduplicationIdSet = true }), "InvalidParameterValue",
			"Value  for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
	}
}

func TestValidateSendMessageBatch(t *testing.T) {
	entries := func(ids ...string) []SendMessageBatchRequestEntry {
		out := make([]SendMessageBatchRequestEntry, len(ids))
		for i, id := range ids {
			out[i] = SendMessageBatchRequestEntry{Id: id, MessageBody: "m"}
		}
		return out
	}
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "id" + strings.Repeat("x", i)
		}
		return out
	}
	runValidateCases(t, []validateCase{
		{"valid", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries("a", "b-1", "C_2")}, "", ""},
		{"missing queue url", &SendMessageBatchRequest{Entries: entries("a")}, "MissingParameter", "QueueUrl"},
		// The Query protocol cannot send an empty list: no entries is an empty batch.
		{"missing entries", &SendMessageBatchRequest{QueueUrl: testURL}, "EmptyBatchRequest", "There should be at least one SendMessageBatchRequestEntry in the request."},
		{"empty entries", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries()}, "EmptyBatchRequest",
			"There should be at least one SendMessageBatchRequestEntry in the request."},
		{"ten entries", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries(ids(10)...)}, "", ""},
		{"eleven entries", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries(ids(11)...)}, "TooManyEntriesInBatchRequest",
			"Maximum number of entries per request are 10. You have sent 11."},
		// An empty or absent Id is malformed (localstack test_sqs.snapshot.json:
		// test_delete_message_batch_invalid_msg_id[sqs-]).
		{"missing id", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries("1", "", "3")}, "InvalidBatchEntryId",
			"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		{"invalid id", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries("é")}, "InvalidBatchEntryId",
			"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		{"blank id", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries(" ")}, "InvalidBatchEntryId", ""},
		{"id of 80", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries(strings.Repeat("i", 80))}, "", ""},
		{"id of 81", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries(strings.Repeat("i", 81))}, "InvalidBatchEntryId", ""},
		{"repeated id", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries("some-id", "x", "some-id")}, "BatchEntryIdsNotDistinct", "Id some-id repeated."},
		{"ids are case-sensitive", &SendMessageBatchRequest{QueueUrl: testURL, Entries: entries("a", "A")}, "", ""},
		{"entry content is not checked", &SendMessageBatchRequest{QueueUrl: testURL, Entries: []SendMessageBatchRequestEntry{
			{Id: "1"}, {Id: "2", MessageBody: "\x00", DelaySeconds: intp(-5)},
		}}, "", ""},
		{"total at the limit", &SendMessageBatchRequest{QueueUrl: testURL, Entries: []SendMessageBatchRequestEntry{
			{Id: "1", MessageBody: strings.Repeat("a", MaxMessageSizeLimit/2)},
			{Id: "2", MessageBody: strings.Repeat("b", MaxMessageSizeLimit/2)},
		}}, "", ""},
		{"total too long", &SendMessageBatchRequest{QueueUrl: testURL, Entries: []SendMessageBatchRequestEntry{
			{Id: "1", MessageBody: strings.Repeat("a", MaxMessageSizeLimit/2)},
			{Id: "2", MessageBody: strings.Repeat("b", MaxMessageSizeLimit/2), MessageAttributes: map[string]MessageAttributeValue{"k": strAttr("String", "v")}},
		}}, "BatchRequestTooLong", "Batch requests cannot be longer than 1048576 bytes. You have sent 1048584 bytes."},
	})
}

func TestValidateSendEntry(t *testing.T) {
	tests := []struct {
		name      string
		entry     SendMessageBatchRequestEntry
		code, msg string
	}{
		{"valid", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", DelaySeconds: intp(5), MessageGroupId: "g", MessageDeduplicationId: "d"}, "", ""},
		{"missing body", SendMessageBatchRequestEntry{Id: "1"}, "MissingParameter", "The request must contain the parameter MessageBody."},
		{"bad body", SendMessageBatchRequestEntry{Id: "1", MessageBody: "\uFFFF"}, "InvalidMessageContents", ""},
		{"bad delay", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", DelaySeconds: intp(1000)}, "InvalidParameterValue", "Value 1000 for parameter DelaySeconds is invalid."},
		{"bad attribute", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", MessageAttributes: map[string]MessageAttributeValue{"n": strAttr("Number", "x")}},
			"InvalidParameterValue", "Can't cast the value of message (user) attribute 'n' to a number."},
		{"bad system attribute", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", MessageSystemAttributes: map[string]MessageSystemAttributeValue{"X": strAttr("String", "v")}},
			"InvalidParameterValue", "Message system attribute name 'X' is invalid."},
		{"too long", SendMessageBatchRequestEntry{Id: "1", MessageBody: strings.Repeat("a", MaxMessageSizeLimit+1)}, "InvalidParameterValue", "Message must be shorter than 1048576 bytes."},
		{"bad group", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", MessageGroupId: "a b"}, "InvalidParameterValue", "MessageGroupId"},
		{"bad dedup", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", MessageDeduplicationId: "a b"}, "InvalidParameterValue", "MessageDeduplicationId"},
		{"group sent empty", SendMessageBatchRequestEntry{Id: "1", MessageBody: "m", MessageGroupIdSet: true}, "InvalidParameterValue", "Value  for parameter MessageGroupId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, ValidateSendEntry(&tt.entry), tt.code, tt.msg)
		})
	}
}

func TestValidateReceiveMessage(t *testing.T) {
	recv := func(mod func(*ReceiveMessageRequest)) *ReceiveMessageRequest {
		r := &ReceiveMessageRequest{QueueUrl: testURL}
		mod(r)
		return r
	}
	runValidateCases(t, []validateCase{
		{"valid", recv(func(r *ReceiveMessageRequest) {}), "", ""},
		{"missing queue url", &ReceiveMessageRequest{}, "MissingParameter", "QueueUrl"},
		{"max 1", recv(func(r *ReceiveMessageRequest) { r.MaxNumberOfMessages = intp(1) }), "", ""},
		{"max 10", recv(func(r *ReceiveMessageRequest) { r.MaxNumberOfMessages = intp(10) }), "", ""},
		{"max 11", recv(func(r *ReceiveMessageRequest) { r.MaxNumberOfMessages = intp(11) }), "InvalidParameterValue",
			"Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided."},
		{"max 0", recv(func(r *ReceiveMessageRequest) { r.MaxNumberOfMessages = intp(0) }), "InvalidParameterValue", "Value 0 for parameter MaxNumberOfMessages"},
		{"visibility 43200", recv(func(r *ReceiveMessageRequest) { r.VisibilityTimeout = intp(43200) }), "", ""},
		{"visibility 43201", recv(func(r *ReceiveMessageRequest) { r.VisibilityTimeout = intp(43201) }), "InvalidParameterValue",
			"Value 43201 for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided."},
		{"visibility -1", recv(func(r *ReceiveMessageRequest) { r.VisibilityTimeout = intp(-1) }), "InvalidParameterValue", "VisibilityTimeout"},
		{"wait 20", recv(func(r *ReceiveMessageRequest) { r.WaitTimeSeconds = intp(20) }), "", ""},
		{"wait 21", recv(func(r *ReceiveMessageRequest) { r.WaitTimeSeconds = intp(21) }), "InvalidParameterValue",
			"Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."},
		{"wait -1", recv(func(r *ReceiveMessageRequest) { r.WaitTimeSeconds = intp(-1) }), "InvalidParameterValue", "WaitTimeSeconds"},
		{"attempt id", recv(func(r *ReceiveMessageRequest) { r.ReceiveRequestAttemptId = "attempt-1!" }), "", ""},
		{"attempt id too long", recv(func(r *ReceiveMessageRequest) { r.ReceiveRequestAttemptId = strings.Repeat("a", 129) }), "InvalidParameterValue",
			"for parameter ReceiveRequestAttemptId is invalid. Reason: ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{"system attribute names", recv(func(r *ReceiveMessageRequest) {
			r.MessageSystemAttributeNames = []string{"All", "SenderId", "SentTimestamp", "ApproximateReceiveCount",
				"ApproximateFirstReceiveTimestamp", "SequenceNumber", "MessageDeduplicationId", "MessageGroupId",
				"AWSTraceHeader", "DeadLetterQueueSourceArn"}
		}), "", ""},
		{"unknown system attribute name", recv(func(r *ReceiveMessageRequest) { r.MessageSystemAttributeNames = []string{"SenderId", "Bogus"} }),
			"InvalidAttributeName", "Unknown Attribute Bogus."},
		{"queue attribute as system attribute", recv(func(r *ReceiveMessageRequest) { r.MessageSystemAttributeNames = []string{"QueueArn"} }),
			"InvalidAttributeName", "QueueArn"},
		{"deprecated attribute names", recv(func(r *ReceiveMessageRequest) { r.AttributeNames = []string{"All", "SentTimestamp", "QueueArn"} }), "", ""},
		{"unknown deprecated attribute name", recv(func(r *ReceiveMessageRequest) { r.AttributeNames = []string{"sentTimestamp"} }),
			"InvalidAttributeName", "Unknown Attribute sentTimestamp."},
		{"message attribute names are a filter", recv(func(r *ReceiveMessageRequest) { r.MessageAttributeNames = []string{"All", ".*", "foo.*", "bad name!"} }), "", ""},
	})
}

func TestValidateDeleteMessage(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"valid", &DeleteMessageRequest{QueueUrl: testURL, ReceiptHandle: "rh"}, "", ""},
		{"missing queue url", &DeleteMessageRequest{ReceiptHandle: "rh"}, "MissingParameter", "QueueUrl"},
		{"missing receipt handle", &DeleteMessageRequest{QueueUrl: testURL}, "MissingParameter", "The request must contain the parameter ReceiptHandle."},
		{"blank receipt handle", &DeleteMessageRequest{QueueUrl: testURL, ReceiptHandle: " "}, "MissingParameter", "ReceiptHandle"},
	})
}

func TestValidateDeleteMessageBatch(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"valid", &DeleteMessageBatchRequest{QueueUrl: testURL, Entries: []DeleteMessageBatchRequestEntry{{Id: "a", ReceiptHandle: "r"}}}, "", ""},
		{"missing entries", &DeleteMessageBatchRequest{QueueUrl: testURL}, "EmptyBatchRequest", "There should be at least one DeleteMessageBatchRequestEntry in the request."},
		{"empty entries", &DeleteMessageBatchRequest{QueueUrl: testURL, Entries: []DeleteMessageBatchRequestEntry{}}, "EmptyBatchRequest",
			"There should be at least one DeleteMessageBatchRequestEntry in the request."},
		{"eleven", &DeleteMessageBatchRequest{QueueUrl: testURL, Entries: make([]DeleteMessageBatchRequestEntry, 11)}, "TooManyEntriesInBatchRequest", "You have sent 11."},
		{"missing id", &DeleteMessageBatchRequest{QueueUrl: testURL, Entries: []DeleteMessageBatchRequestEntry{{Id: "id-1", ReceiptHandle: "r"}, {ReceiptHandle: "r2"}}},
			"InvalidBatchEntryId", "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		{"repeated id", &DeleteMessageBatchRequest{QueueUrl: testURL, Entries: []DeleteMessageBatchRequestEntry{{Id: "id-1"}, {Id: "id-1"}}},
			"BatchEntryIdsNotDistinct", "Id id-1 repeated."},
		{"missing receipt handle is per entry", &DeleteMessageBatchRequest{QueueUrl: testURL, Entries: []DeleteMessageBatchRequestEntry{{Id: "id-1"}}}, "", ""},
	})
	checkErr(t, ValidateDeleteMessageBatchEntry(&DeleteMessageBatchRequestEntry{Id: "1", ReceiptHandle: "r"}), "", "")
	checkErr(t, ValidateDeleteMessageBatchEntry(&DeleteMessageBatchRequestEntry{Id: "1"}), "MissingParameter", "The request must contain the parameter ReceiptHandle.")
	checkErr(t, ValidateDeleteMessageBatchEntry(&DeleteMessageBatchRequestEntry{Id: "1", ReceiptHandle: " "}), "MissingParameter", "ReceiptHandle")
}

func TestValidateChangeMessageVisibility(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"valid", &ChangeMessageVisibilityRequest{QueueUrl: testURL, ReceiptHandle: "r", VisibilityTimeout: intp(0)}, "", ""},
		{"max", &ChangeMessageVisibilityRequest{QueueUrl: testURL, ReceiptHandle: "r", VisibilityTimeout: intp(43200)}, "", ""},
		{"missing receipt handle", &ChangeMessageVisibilityRequest{QueueUrl: testURL, VisibilityTimeout: intp(34)}, "MissingParameter",
			"The request must contain the parameter ReceiptHandle."},
		{"missing timeout", &ChangeMessageVisibilityRequest{QueueUrl: testURL, ReceiptHandle: "r"}, "MissingParameter",
			"The request must contain the parameter VisibilityTimeout."},
		{"negative", &ChangeMessageVisibilityRequest{QueueUrl: testURL, ReceiptHandle: "r", VisibilityTimeout: intp(-10)}, "InvalidParameterValue",
			"Value -10 for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200."},
		{"too long", &ChangeMessageVisibilityRequest{QueueUrl: testURL, ReceiptHandle: "r", VisibilityTimeout: intp(43201)}, "InvalidParameterValue", "Value 43201"},
	})
}

func TestValidateChangeMessageVisibilityBatch(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"valid", &ChangeMessageVisibilityBatchRequest{QueueUrl: testURL, Entries: []ChangeMessageVisibilityBatchRequestEntry{{Id: "1", ReceiptHandle: "r", VisibilityTimeout: intp(5)}}}, "", ""},
		{"missing entries", &ChangeMessageVisibilityBatchRequest{QueueUrl: testURL}, "EmptyBatchRequest", "There should be at least one ChangeMessageVisibilityBatchRequestEntry in the request."},
		{"empty entries", &ChangeMessageVisibilityBatchRequest{QueueUrl: testURL, Entries: []ChangeMessageVisibilityBatchRequestEntry{}}, "EmptyBatchRequest",
			"There should be at least one ChangeMessageVisibilityBatchRequestEntry in the request."},
		{"missing id", &ChangeMessageVisibilityBatchRequest{QueueUrl: testURL, Entries: []ChangeMessageVisibilityBatchRequestEntry{{Id: "1"}, {ReceiptHandle: "d"}, {Id: "3"}}},
			"InvalidBatchEntryId", "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."},
		{"invalid id", &ChangeMessageVisibilityBatchRequest{QueueUrl: testURL, Entries: []ChangeMessageVisibilityBatchRequestEntry{{Id: "é"}}}, "InvalidBatchEntryId", ""},
		{"entry content is not checked", &ChangeMessageVisibilityBatchRequest{QueueUrl: testURL, Entries: []ChangeMessageVisibilityBatchRequestEntry{{Id: "1", VisibilityTimeout: intp(-1)}}}, "", ""},
	})
	tests := []struct {
		entry     ChangeMessageVisibilityBatchRequestEntry
		code, msg string
	}{
		{ChangeMessageVisibilityBatchRequestEntry{Id: "1", ReceiptHandle: "r", VisibilityTimeout: intp(20)}, "", ""},
		{ChangeMessageVisibilityBatchRequestEntry{Id: "1", VisibilityTimeout: intp(20)}, "MissingParameter", "The request must contain the parameter ReceiptHandle."},
		{ChangeMessageVisibilityBatchRequestEntry{Id: "1", ReceiptHandle: "r"}, "MissingParameter", "VisibilityTimeout"},
		{ChangeMessageVisibilityBatchRequestEntry{Id: "1", ReceiptHandle: "r", VisibilityTimeout: intp(-85)}, "InvalidParameterValue",
			"Value -85 for parameter VisibilityTimeout is invalid. Reason: VisibilityTimeout must be an integer between 0 and 43200."},
	}
	for _, tt := range tests {
		checkErr(t, ValidateChangeMessageVisibilityBatchEntry(&tt.entry), tt.code, tt.msg)
	}
}

func TestValidateCreateQueue(t *testing.T) {
	create := func(name string, attrs map[string]string) *CreateQueueRequest {
		return &CreateQueueRequest{QueueName: name, Attributes: attrs}
	}
	fifo := func(more ...string) map[string]string {
		m := map[string]string{"FifoQueue": "true"}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i]] = more[i+1]
		}
		return m
	}
	tags := func(n int) map[string]string {
		m := map[string]string{}
		for i := 0; i < n; i++ {
			m["k"+strings.Repeat("x", i)] = "v"
		}
		return m
	}
	runValidateCases(t, []validateCase{
		{"standard", create("orders_1-a", nil), "", ""},
		{"fifo", create("orders.fifo", fifo()), "", ""},
		{"missing name", create("", nil), "InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"80 characters", create(strings.Repeat("q", 80), nil), "", ""},
		{"81 characters", create(strings.Repeat("q", 81), nil), "InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"period in standard name", create("in.fo", nil), "InvalidParameterValue", "Can only include alphanumeric characters"},
		{"non-ascii name", create("ééwwà)", nil), "InvalidParameterValue", "Can only include"},
		{".fifo without FifoQueue", create("example.fifo", nil), "InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{"FifoQueue without .fifo", create("example", fifo()), "InvalidParameterValue", "must end with .fifo suffix"},
		{"FifoQueue false", create("example.fifo", map[string]string{"FifoQueue": "false"}), "InvalidAttributeName", "Unknown Attribute FifoQueue."},
		{"FifoQueue false on standard name", create("example", map[string]string{"FifoQueue": "false"}), "InvalidAttributeName", "Unknown Attribute FifoQueue."},
		{"fifo name of 80", create(strings.Repeat("q", 75)+".fifo", fifo()), "", ""},
		{"fifo name of 81", create(strings.Repeat("q", 76)+".fifo", fifo()), "InvalidParameterValue",
			"The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length."},
		{"bare .fifo", create(".fifo", fifo()), "InvalidParameterValue", "The name of a FIFO queue"},
		{"bad fifo name", create("a.b.fifo", fifo()), "InvalidParameterValue", "The name of a FIFO queue"},
		{"all settable attributes", create("q", map[string]string{
			"DelaySeconds": "900", "MaximumMessageSize": "1048576", "MessageRetentionPeriod": "60",
			"ReceiveMessageWaitTimeSeconds": "20", "VisibilityTimeout": "43200", "Policy": `{"Version":"2012-10-17","Statement":[]}`,
			"RedrivePolicy":      `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":5}`,
			"RedriveAllowPolicy": `{"redrivePermission":"allowAll"}`, "KmsMasterKeyId": "alias/aws/sqs",
			"KmsDataKeyReusePeriodSeconds": "86400", "SqsManagedSseEnabled": "false",
		}), "", ""},
		{"all fifo attributes", create("q.fifo", fifo("ContentBasedDeduplication", "true", "DeduplicationScope", "messageGroup",
			"FifoThroughputLimit", "perMessageGroupId")), "", ""},
		{"bad value", create("q", map[string]string{"VisibilityTimeout": "43201"}), "InvalidAttributeValue", "Invalid value for the parameter VisibilityTimeout."},
		{"unknown attribute", create("q", map[string]string{"Bogus": "1"}), "InvalidAttributeName", "Unknown Attribute Bogus."},
		{"read-only attribute", create("q", map[string]string{"QueueArn": "arn:aws:sqs:r:1:q"}), "InvalidAttributeName", "Unknown Attribute QueueArn."},
		{"content-based dedup on standard", create("q", map[string]string{"ContentBasedDeduplication": "true"}), "InvalidAttributeName",
			"Unknown Attribute ContentBasedDeduplication."},
		{"dedup scope on standard", create("q", map[string]string{"DeduplicationScope": "queue"}), "InvalidAttributeName",
			"You can specify the DeduplicationScope only when FifoQueue is set to true."},
		{"first bad attribute in name order", create("q", map[string]string{"VisibilityTimeout": "x", "DelaySeconds": "x"}), "InvalidAttributeValue", "DelaySeconds"},
		{"attributes before name", create("bad name", map[string]string{"DelaySeconds": "x"}), "InvalidAttributeValue", "DelaySeconds"},
		{"per group throughput needs group scope", create("q.fifo", fifo("FifoThroughputLimit", "perMessageGroupId")), "InvalidAttributeValue",
			"The perMessageGroupId value is allowed only when the value for DeduplicationScope is messageGroup"},
		{"per group throughput with queue scope", create("q.fifo", fifo("FifoThroughputLimit", "perMessageGroupId", "DeduplicationScope", "queue")),
			"InvalidAttributeValue", "perMessageGroupId"},
		{"SSE conflict", create("q", map[string]string{"SqsManagedSseEnabled": "true", "KmsMasterKeyId": "alias/aws/sqs"}), "InvalidAttributeName",
			"You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE."},
		{"SSE-SQS off with a KMS key", create("q", map[string]string{"SqsManagedSseEnabled": "false", "KmsMasterKeyId": "k"}), "", ""},
		{"bad redrive policy", create("q", map[string]string{"RedrivePolicy": "{}"}), "InvalidParameterValue", "Redrive policy does not contain mandatory attribute: maxReceiveCount."},
		{"50 tags", &CreateQueueRequest{QueueName: "q", Tags: tags(50)}, "", ""},
		{"51 tags", &CreateQueueRequest{QueueName: "q", Tags: tags(51)}, "InvalidParameterValue", "Too many tags added for queue q."},
		{"empty tag key", &CreateQueueRequest{QueueName: "q", Tags: map[string]string{"": "v"}}, "InvalidParameterValue", "Tag keys must be between 1 and 128"},
		{"empty tag value", &CreateQueueRequest{QueueName: "q", Tags: map[string]string{"k": ""}}, "", ""},
	})
}

func TestValidateGetQueueUrl(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"valid", &GetQueueUrlRequest{QueueName: "q"}, "", ""},
		{"with owner", &GetQueueUrlRequest{QueueName: "q", QueueOwnerAWSAccountId: "123456789012"}, "", ""},
		{"missing name", &GetQueueUrlRequest{}, "InvalidParameterValue", "Must specify a queue name."},
		{"unknown names are not malformed", &GetQueueUrlRequest{QueueName: "no such queue"}, "", ""},
	})
}

func TestValidateGetQueueAttributes(t *testing.T) {
	all := make([]string, 0, len(queueAttrKinds))
	for name := range queueAttrKinds {
		all = append(all, name)
	}
	runValidateCases(t, []validateCase{
		{"no names", &GetQueueAttributesRequest{QueueUrl: testURL}, "", ""},
		{"every name", &GetQueueAttributesRequest{QueueUrl: testURL, AttributeNames: all}, "", ""},
		{"unknown name", &GetQueueAttributesRequest{QueueUrl: testURL, AttributeNames: []string{"All", "Bogus"}}, "InvalidAttributeName", "Unknown Attribute Bogus."},
		{"message attribute name", &GetQueueAttributesRequest{QueueUrl: testURL, AttributeNames: []string{"SentTimestamp"}}, "InvalidAttributeName", "SentTimestamp"},
		{"missing queue url", &GetQueueAttributesRequest{}, "MissingParameter", "QueueUrl"},
	})
}

func TestValidateSetQueueAttributes(t *testing.T) {
	set := func(attrs map[string]string) *SetQueueAttributesRequest {
		return &SetQueueAttributesRequest{QueueUrl: testURL, Attributes: attrs}
	}
	runValidateCases(t, []validateCase{
		{"valid", set(map[string]string{"DelaySeconds": "54"}), "", ""},
		{"values are the engine's", set(map[string]string{"DelaySeconds": "bogus"}), "", ""},
		{"fifo names are the engine's", set(map[string]string{"ContentBasedDeduplication": "true"}), "", ""},
		{"missing attributes", set(nil), "MissingParameter", "The request must contain the parameter Attribute.Name."},
		{"empty attributes", set(map[string]string{}), "MissingParameter", "Attribute.Name"},
		{"unknown name", set(map[string]string{"Bogus": "1"}), "InvalidAttributeName", "Unknown Attribute Bogus."},
		{"read-only name", set(map[string]string{"CreatedTimestamp": "1"}), "InvalidAttributeName", "Unknown Attribute CreatedTimestamp."},
		{"All", set(map[string]string{"All": "1"}), "InvalidAttributeName", "Unknown Attribute All."},
		{"SSE conflict", set(map[string]string{"SqsManagedSseEnabled": "true", "KmsMasterKeyId": "alias/aws/sqs"}), "InvalidAttributeName", "one type of server-side encryption"},
		{"missing queue url", &SetQueueAttributesRequest{Attributes: map[string]string{"DelaySeconds": "1"}}, "MissingParameter", "QueueUrl"},
	})
}

func TestValidateTags(t *testing.T) {
	tags := func(n int) map[string]string {
		m := map[string]string{}
		for i := 0; i < n; i++ {
			m["k"+strings.Repeat("x", i)] = "v"
		}
		return m
	}
	runValidateCases(t, []validateCase{
		{"tag", &TagQueueRequest{QueueUrl: testURL, Tags: map[string]string{"env": "prod"}}, "", ""},
		{"missing tags", &TagQueueRequest{QueueUrl: testURL}, "MissingParameter", "The request must contain the parameter Tags."},
		{"50 tags", &TagQueueRequest{QueueUrl: testURL, Tags: tags(50)}, "", ""},
		{"51 tags", &TagQueueRequest{QueueUrl: testURL, Tags: tags(51)}, "InvalidParameterValue", "Too many tags added for queue q."},
		{"key of 128", &TagQueueRequest{QueueUrl: testURL, Tags: map[string]string{strings.Repeat("é", 128): "v"}}, "", ""},
		{"key of 129", &TagQueueRequest{QueueUrl: testURL, Tags: map[string]string{strings.Repeat("k", 129): "v"}}, "InvalidParameterValue", "Tag keys must be between 1 and 128 characters in length."},
		{"value of 256", &TagQueueRequest{QueueUrl: testURL, Tags: map[string]string{"k": strings.Repeat("é", 256)}}, "", ""},
		{"value of 257", &TagQueueRequest{QueueUrl: testURL, Tags: map[string]string{"k": strings.Repeat("v", 257)}}, "InvalidParameterValue", "Tag values must be at most 256 characters long."},
		{"missing queue url", &TagQueueRequest{Tags: map[string]string{"a": "b"}}, "MissingParameter", "QueueUrl"},
		{"untag", &UntagQueueRequest{QueueUrl: testURL, TagKeys: []string{"env"}}, "", ""},
		{"untag without keys", &UntagQueueRequest{QueueUrl: testURL}, "MissingParameter", "The request must contain the parameter TagKeys."},
		{"untag empty key", &UntagQueueRequest{QueueUrl: testURL, TagKeys: []string{""}}, "InvalidParameterValue", "Tag keys"},
		{"untag empty key list", &UntagQueueRequest{QueueUrl: testURL, TagKeys: []string{}}, "InvalidParameterValue", "Tag keys must be between 1 and 128 characters in length."},
		{"list tags", &ListQueueTagsRequest{QueueUrl: testURL}, "", ""},
	})
}

func TestValidatePermissions(t *testing.T) {
	add := func(mod func(*AddPermissionRequest)) *AddPermissionRequest {
		r := &AddPermissionRequest{QueueUrl: testURL, Label: "AliceSendMessage", AWSAccountIds: []string{"123456789012"}, Actions: []string{"SendMessage"}}
		mod(r)
		return r
	}
	runValidateCases(t, []validateCase{
		{"valid", add(func(r *AddPermissionRequest) {}), "", ""},
		{"seven grantable actions", add(func(r *AddPermissionRequest) {
			r.Actions = []string{"*", "SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "GetQueueAttributes", "GetQueueUrl"}
		}), "", ""},
		{"the other grantable actions", add(func(r *AddPermissionRequest) {
			r.Actions = []string{"ListDeadLetterSourceQueues", "PurgeQueue"}
		}), "", ""},
		{"eight actions", add(func(r *AddPermissionRequest) {
			r.Actions = []string{"ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
				"ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}
		}), "OverLimit", "8 Actions were found, maximum allowed is 7."},
		{"missing label", add(func(r *AddPermissionRequest) { r.Label = "" }), "MissingParameter", "The request must contain the parameter Label."},
		{"label of 80", add(func(r *AddPermissionRequest) { r.Label = strings.Repeat("l", 80) }), "", ""},
		{"label of 81", add(func(r *AddPermissionRequest) { r.Label = strings.Repeat("l", 81) }), "InvalidParameterValue", "for parameter Label is invalid"},
		{"label with space", add(func(r *AddPermissionRequest) { r.Label = "a b" }), "InvalidParameterValue", "Value a b for parameter Label is invalid."},
		{"missing accounts", add(func(r *AddPermissionRequest) { r.AWSAccountIds = nil }), "MissingParameter", "The request must contain the parameter PrincipalId."},
		{"empty accounts", add(func(r *AddPermissionRequest) { r.AWSAccountIds = []string{} }), "InvalidParameterValue", "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify."},
		{"short account", add(func(r *AddPermissionRequest) { r.AWSAccountIds = []string{"12345"} }), "InvalidParameterValue", "Value [12345] for parameter PrincipalId is invalid. Reason: Unable to verify."},
		{"account with letters", add(func(r *AddPermissionRequest) { r.AWSAccountIds = []string{"123456789012", "12345678901a", "x"} }), "InvalidParameterValue", "Value [12345678901a, x] for parameter PrincipalId"},
		{"missing actions", add(func(r *AddPermissionRequest) { r.Actions = nil }), "MissingParameter", "The request must contain the parameter Actions."},
		{"empty actions", add(func(r *AddPermissionRequest) { r.Actions = []string{} }), "MissingParameter", "parameter Actions."},
		{"batch action", add(func(r *AddPermissionRequest) { r.Actions = []string{"SendMessageBatch"} }), "InvalidParameterValue",
			"Value SQS:SendMessageBatch for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions."},
		{"owner action", add(func(r *AddPermissionRequest) { r.Actions = []string{"SendMessage", "CreateQueue"} }), "InvalidParameterValue",
			"Value SQS:CreateQueue for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."},
		{"unknown action", add(func(r *AddPermissionRequest) { r.Actions = []string{"sendmessage"} }), "InvalidParameterValue", "WSDL"},
		{"remove", &RemovePermissionRequest{QueueUrl: testURL, Label: "x"}, "", ""},
		{"remove without label", &RemovePermissionRequest{QueueUrl: testURL}, "MissingParameter", "Label"},
	})
}

func TestValidateLists(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"list queues", &ListQueuesRequest{}, "", ""},
		{"list queues 1", &ListQueuesRequest{MaxResults: intp(1)}, "", ""},
		{"list queues 1000", &ListQueuesRequest{MaxResults: intp(1000), QueueNamePrefix: "x"}, "", ""},
		{"list queues 0", &ListQueuesRequest{MaxResults: intp(0)}, "InvalidParameterValue",
			"Value for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000."},
		{"list queues 1001", &ListQueuesRequest{MaxResults: intp(1001)}, "InvalidParameterValue", "MaxResults"},
		{"dead letter sources", &ListDeadLetterSourceQueuesRequest{QueueUrl: testURL, MaxResults: intp(1000)}, "", ""},
		{"dead letter sources -23", &ListDeadLetterSourceQueuesRequest{QueueUrl: testURL, MaxResults: intp(-23)}, "InvalidParameterValue",
			"Value for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000."},
		{"dead letter sources without url", &ListDeadLetterSourceQueuesRequest{}, "MissingParameter", "QueueUrl"},
	})
}

func TestValidateMoveTasks(t *testing.T) {
	const src = "arn:aws:sqs:us-east-1:000000000000:dlq"
	runValidateCases(t, []validateCase{
		{"start", &StartMessageMoveTaskRequest{SourceArn: src}, "", ""},
		{"start with all", &StartMessageMoveTaskRequest{SourceArn: src, DestinationArn: "arn:aws:sqs:us-east-1:000000000000:q", MaxNumberOfMessagesPerSecond: intp(500)}, "", ""},
		{"start without source", &StartMessageMoveTaskRequest{}, "MissingParameter", "The request must contain the parameter SourceArn."},
		{"start with bad source", &StartMessageMoveTaskRequest{SourceArn: "dlq"}, "InvalidParameterValue",
			"You must use this format to specify the SourceArn: arn:<partition>:<service>:<region>:<account-id>:<resource-id>"},
		{"start with bad destination", &StartMessageMoveTaskRequest{SourceArn: src, DestinationArn: "invalid"}, "InvalidParameterValue",
			"You must use this format to specify the DestinationArn"},
		{"arn with an empty part", &StartMessageMoveTaskRequest{SourceArn: "arn:aws::us-east-1:000000000000:dlq"}, "InvalidParameterValue", "SourceArn"},
		{"arn with too few parts", &ListMessageMoveTasksRequest{SourceArn: "arn:aws:sqs:us-east-1:dlq"}, "InvalidParameterValue", "SourceArn"},
		{"non-sqs arn is well formed", &StartMessageMoveTaskRequest{SourceArn: "arn:aws:sns:us-east-1:000000000000:t"}, "", ""},
		{"rate 0", &StartMessageMoveTaskRequest{SourceArn: src, MaxNumberOfMessagesPerSecond: intp(0)}, "InvalidParameterValue",
			"Value for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: You must enter a number that's between 1 and 500."},
		{"rate 501", &StartMessageMoveTaskRequest{SourceArn: src, MaxNumberOfMessagesPerSecond: intp(501)}, "InvalidParameterValue", "between 1 and 500"},
		{"list", &ListMessageMoveTasksRequest{SourceArn: src, MaxResults: intp(10)}, "", ""},
		{"list without source", &ListMessageMoveTasksRequest{}, "MissingParameter", "SourceArn"},
		{"list 11", &ListMessageMoveTasksRequest{SourceArn: src, MaxResults: intp(11)}, "InvalidParameterValue", "Value for parameter MaxResults is invalid."},
		{"list 0", &ListMessageMoveTasksRequest{SourceArn: src, MaxResults: intp(0)}, "InvalidParameterValue", "MaxResults"},
		{"cancel", &CancelMessageMoveTaskRequest{TaskHandle: "h"}, "", ""},
		{"cancel without handle", &CancelMessageMoveTaskRequest{}, "MissingParameter", "The request must contain the parameter TaskHandle."},
	})
}

// TestOwnerOnlyActions checks the owner-only list against the API: SQS names
// 12 actions no other account can be granted, and every one is an action.
func TestOwnerOnlyActions(t *testing.T) {
	n := 0
	for _, a := range Actions {
		if IsOwnerOnlyAction(string(a)) {
			n++
		}
	}
	if n != len(ownerOnlyActions) || n != 12 {
		t.Errorf("%d owner-only actions are actions, %d listed; want SQS's 12", n, len(ownerOnlyActions))
	}
	for _, a := range []string{"SendMessage", "ReceiveMessage", "*", "sendmessage"} {
		if IsOwnerOnlyAction(a) {
			t.Errorf("IsOwnerOnlyAction(%q) = true", a)
		}
	}
}

// TestResolveQueueURL checks how a QueueUrl names a queue: /ACCOUNT/NAME
// with any host, else a queue name in the caller's account.
func TestResolveQueueURL(t *testing.T) {
	for raw, want := range map[string]QueueKey{
		"http://localhost:9324/000000000000/q":               {Account: "000000000000", Name: "q"},
		"https://sqs.eu-west-1.amazonaws.com/111111111111/q": {Account: "111111111111", Name: "q"},
		"/000000000000/q/":                                   {Account: "000000000000", Name: "q"},
		"q":                                                  {Account: "222222222222", Name: "q"},
		"orders.fifo":                                        {Account: "222222222222", Name: "orders.fifo"},
		"http://h/a/b/c":                                     {Account: "222222222222", Name: "http://h/a/b/c"},
		"::not a url":                                        {Account: "222222222222", Name: "::not a url"},
		"http://localhost:9324/":                             {Account: "222222222222", Name: "http://localhost:9324/"},
	} {
		got, err := ResolveQueueURL(raw, Scope{Account: "222222222222"}, "us-east-1")
		if err != nil || got != want {
			t.Errorf("ResolveQueueURL(%q) = %v, %v; want %v", raw, got, err, want)
		}
	}
	if _, err := ResolveQueueURL("", Scope{Account: "222222222222"}, "us-east-1"); err == nil {
		t.Errorf("an empty QueueUrl resolved")
	}
}
