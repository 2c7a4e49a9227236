package api

import "testing"

func TestValidateQueueAttribute(t *testing.T) {
	tests := []struct {
		name, value string
		fifo        bool
		code, msg   string
	}{
		// Integer attributes: bounds, and only plain decimal digits.
		{"DelaySeconds", "0", false, "", ""},
		{"DelaySeconds", "900", false, "", ""},
		{"DelaySeconds", "901", false, "InvalidAttributeValue", "Invalid value for the parameter DelaySeconds."},
		{"DelaySeconds", "-45", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", " 6", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "6 ", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "+6", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "544.43", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "true", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "0x10", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "99999999999999999999999", false, "InvalidAttributeValue", "DelaySeconds"},
		{"DelaySeconds", "0000000000000000000010", false, "", ""},
		{"MaximumMessageSize", "1024", false, "", ""},
		{"MaximumMessageSize", "1023", false, "InvalidAttributeValue", "Invalid value for the parameter MaximumMessageSize."},
		{"MaximumMessageSize", "1048576", false, "", ""},
		{"MaximumMessageSize", "1048577", false, "InvalidAttributeValue", "MaximumMessageSize"},
		{"MessageRetentionPeriod", "60", false, "", ""},
		{"MessageRetentionPeriod", "59", false, "InvalidAttributeValue", "MessageRetentionPeriod"},
		{"MessageRetentionPeriod", "1209600", false, "", ""},
		{"MessageRetentionPeriod", "1209601", false, "InvalidAttributeValue", "MessageRetentionPeriod"},
		{"ReceiveMessageWaitTimeSeconds", "20", false, "", ""},
		{"ReceiveMessageWaitTimeSeconds", "21", false, "InvalidAttributeValue", "ReceiveMessageWaitTimeSeconds"},
		{"VisibilityTimeout", "43200", true, "", ""},
		{"VisibilityTimeout", "43201", true, "InvalidAttributeValue", "Invalid value for the parameter VisibilityTimeout."},
		{"KmsDataKeyReusePeriodSeconds", "60", false, "", ""},
		{"KmsDataKeyReusePeriodSeconds", "59", false, "InvalidAttributeValue", "KmsDataKeyReusePeriodSeconds"},
		{"KmsDataKeyReusePeriodSeconds", "86400", false, "", ""},
		{"KmsDataKeyReusePeriodSeconds", "86405", false, "InvalidAttributeValue", "KmsDataKeyReusePeriodSeconds"},

		// Booleans and enumerations are case-sensitive.
		{"SqsManagedSseEnabled", "true", false, "", ""},
		{"SqsManagedSseEnabled", "false", true, "", ""},
		// Booleans are read in any letter case, as SQS reads them.
		{"SqsManagedSseEnabled", "True", false, "", ""},
		{"SqsManagedSseEnabled", "FALSE", false, "", ""},
		{"SqsManagedSseEnabled", "yes", false, "InvalidAttributeValue", "Invalid value for the parameter SqsManagedSseEnabled."},
		{"ContentBasedDeduplication", "TRUE", true, "", ""},
		{"FifoQueue", "True", true, "", ""},
		{"ContentBasedDeduplication", "true", true, "", ""},
		{"ContentBasedDeduplication", "false", true, "", ""},
		{"ContentBasedDeduplication", "yes", true, "InvalidAttributeValue", "Invalid value for the parameter ContentBasedDeduplication."},
		{"DeduplicationScope", "messageGroup", true, "", ""},
		{"DeduplicationScope", "queue", true, "", ""},
		{"DeduplicationScope", "group", true, "InvalidAttributeValue", "DeduplicationScope"},
		{"FifoThroughputLimit", "perQueue", true, "", ""},
		{"FifoThroughputLimit", "perMessageGroupId", true, "", ""},
		{"FifoThroughputLimit", "perGroup", true, "InvalidAttributeValue", "FifoThroughputLimit"},
		{"FifoQueue", "true", true, "", ""},
		{"FifoQueue", "false", true, "InvalidAttributeName", "Unknown Attribute FifoQueue."},
		{"FifoQueue", "yes", true, "InvalidAttributeValue", "Invalid value for the parameter FifoQueue."},

		// FIFO-only names on a standard queue.
		{"FifoQueue", "true", false, "InvalidAttributeName", "Unknown Attribute FifoQueue."},
		{"FifoQueue", "false", false, "InvalidAttributeName", "Unknown Attribute FifoQueue."},
		{"ContentBasedDeduplication", "true", false, "InvalidAttributeName", "Unknown Attribute ContentBasedDeduplication."},
		{"DeduplicationScope", "queue", false, "InvalidAttributeName", "You can specify the DeduplicationScope only when FifoQueue is set to true."},
		{"FifoThroughputLimit", "perQueue", false, "InvalidAttributeName", "You can specify the FifoThroughputLimit only when FifoQueue is set to true."},

		// Unknown and read-only names.
		{"Bogus", "1", false, "InvalidAttributeName", "Unknown Attribute Bogus."},
		{"visibilityTimeout", "1", false, "InvalidAttributeName", "Unknown Attribute visibilityTimeout."},
		{"All", "1", true, "InvalidAttributeName", "Unknown Attribute All."},
		{"ApproximateNumberOfMessages", "1", false, "InvalidAttributeName", "ApproximateNumberOfMessages"},
		{"ApproximateNumberOfMessagesNotVisible", "1", false, "InvalidAttributeName", "ApproximateNumberOfMessagesNotVisible"},
		{"ApproximateNumberOfMessagesDelayed", "1", false, "InvalidAttributeName", "ApproximateNumberOfMessagesDelayed"},
		{"CreatedTimestamp", "1", false, "InvalidAttributeName", "CreatedTimestamp"},
		{"LastModifiedTimestamp", "1", false, "InvalidAttributeName", "LastModifiedTimestamp"},
		{"QueueArn", "arn:aws:sqs:r:1:q", false, "InvalidAttributeName", "QueueArn"},

		// Documents, and empty values that remove a setting.
		{"Policy", `{"Version":"2012-10-17","Statement":[]}`, false, "", ""},
		{"Policy", "", false, "", ""},
		{"Policy", "badjson", false, "InvalidAttributeValue", "Invalid value for the parameter Policy."},
		{"Policy", "[]", false, "InvalidAttributeValue", "Policy"},
		{"Policy", `"string"`, false, "InvalidAttributeValue", "Policy"},
		{"Policy", "533", false, "InvalidAttributeValue", "Policy"},
		{"Policy", "null", false, "InvalidAttributeValue", "Policy"},
		{"Policy", `{"a":1} {"b":2}`, false, "InvalidAttributeValue", "Policy"},
		{"RedrivePolicy", "", false, "", ""},
		{"RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"3"}`, false, "", ""},
		{"RedrivePolicy", " ", false, "InvalidAttributeValue", "Redrive policy is not a valid JSON map."},
		{"RedriveAllowPolicy", "", false, "", ""},
		{"RedriveAllowPolicy", `{"redrivePermission":"denyAll"}`, true, "", ""},
		{"RedriveAllowPolicy", "badjson", false, "InvalidAttributeValue", "unsupported format"},
		{"KmsMasterKeyId", "alias/aws/sqs", false, "", ""},
		{"KmsMasterKeyId", "", false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			checkErr(t, ValidateQueueAttribute(tt.name, tt.value, tt.fifo), tt.code, tt.msg)
		})
	}
}

func TestValidateQueueAttributes(t *testing.T) {
	tests := []struct {
		name      string
		attrs     map[string]string
		fifo      bool
		code, msg string
	}{
		{"none", nil, false, "", ""},
		{"valid", map[string]string{"DelaySeconds": "1", "VisibilityTimeout": "2"}, false, "", ""},
		{"first bad in name order", map[string]string{"VisibilityTimeout": "-1", "Bogus": "1", "DelaySeconds": "-1"}, false,
			"InvalidAttributeName", "Unknown Attribute Bogus."},
		{"SSE conflict", map[string]string{"SqsManagedSseEnabled": "true", "KmsMasterKeyId": "k"}, true, "InvalidAttributeName",
			"You can use one type of server-side encryption (SSE) at one time."},
		{"SSE-SQS with KMS removed", map[string]string{"SqsManagedSseEnabled": "true", "KmsMasterKeyId": ""}, false, "", ""},
		{"per group throughput is not checked against the queue", map[string]string{"FifoThroughputLimit": "perMessageGroupId"}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, ValidateQueueAttributes(tt.attrs, tt.fifo), tt.code, tt.msg)
		})
	}
}

// TestQueueAttributeNamesMatchModel checks that every name of the model's
// QueueAttributeName enum is known, and nothing else.
func TestQueueAttributeNamesMatchModel(t *testing.T) {
	model := []string{"All", "Policy", "VisibilityTimeout", "MaximumMessageSize", "MessageRetentionPeriod",
		"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "CreatedTimestamp",
		"LastModifiedTimestamp", "QueueArn", "ApproximateNumberOfMessagesDelayed", "DelaySeconds",
		"ReceiveMessageWaitTimeSeconds", "RedrivePolicy", "FifoQueue", "ContentBasedDeduplication",
		"KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "DeduplicationScope", "FifoThroughputLimit",
		"RedriveAllowPolicy", "SqsManagedSseEnabled"}
	if len(model) != len(queueAttrKinds) {
		t.Errorf("%d names known, the model has %d", len(queueAttrKinds), len(model))
	}
	for _, name := range model {
		if !IsQueueAttributeName(name) {
			t.Errorf("model name %s is unknown", name)
		}
	}
}
