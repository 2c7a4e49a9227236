package api

// This file's bodies are being written; the signatures are the contract the
// engine and codecs are built against.

// Validate checks the rules of a request that do not depend on any queue's
// state: required parameters, ranges, batch rules, identifier formats,
// message body characters, message attribute rules, sizes against the
// absolute limits. It returns an *Error with SQS's code.
func Validate(r Request) error { panic("api.Validate: not written yet") }

// ValidateQueueAttribute checks one settable queue attribute's name and value
// for a queue of the given kind (fifo). It returns InvalidAttributeName for a
// name that is unknown or read-only, and InvalidAttributeValue for a bad value.
func ValidateQueueAttribute(name, value string, fifo bool) error {
	panic("api.ValidateQueueAttribute: not written yet")
}

// RedrivePolicy is the parsed RedrivePolicy queue attribute.
type RedrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

// ParseRedrivePolicy parses and validates a RedrivePolicy attribute value.
func ParseRedrivePolicy(s string) (RedrivePolicy, error) {
	panic("api.ParseRedrivePolicy: not written yet")
}

// RedriveAllowPolicy is the parsed RedriveAllowPolicy queue attribute.
type RedriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"` // allowAll, denyAll or byQueue
	SourceQueueArns   []string `json:"sourceQueueArns,omitempty"`
}

// ParseRedriveAllowPolicy parses and validates a RedriveAllowPolicy attribute value.
func ParseRedriveAllowPolicy(s string) (RedriveAllowPolicy, error) {
	panic("api.ParseRedriveAllowPolicy: not written yet")
}

// MD5OfBody is the hex MD5 of the body's UTF-8 bytes.
func MD5OfBody(body string) string { panic("api.MD5OfBody: not written yet") }

// MD5OfMessageAttributes is the hex MD5 of the message attributes, encoded
// as SQS does (names sorted; length-prefixed name, data type, transport type
// byte and value). It is "" when there are no attributes.
func MD5OfMessageAttributes(attrs map[string]MessageAttributeValue) string {
	panic("api.MD5OfMessageAttributes: not written yet")
}

// ContentDeduplicationID is the deduplication id of a message sent to a
// queue with ContentBasedDeduplication: the hex SHA-256 of its body.
func ContentDeduplicationID(body string) string {
	panic("api.ContentDeduplicationID: not written yet")
}

// MessageSize is the size that counts against MaximumMessageSize: the body's
// bytes plus, for every message attribute, its name, data type and value.
func MessageSize(body string, attrs map[string]MessageAttributeValue) int {
	panic("api.MessageSize: not written yet")
}
