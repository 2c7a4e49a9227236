package api

import (
	"net/url"
	"strings"
)

// QueueKey identifies a queue: the account that owns it and its name.
type QueueKey struct {
	Account string
	Name    string
}

// String returns "ACCOUNT/NAME", the path of the queue's URL without the leading slash.
func (k QueueKey) String() string { return k.Account + "/" + k.Name }

// Path returns the path of the queue's URL: "/ACCOUNT/NAME".
func (k QueueKey) Path() string { return "/" + k.Account + "/" + k.Name }

// ARN returns the queue's ARN in the given region.
func (k QueueKey) ARN(region string) string {
	return "arn:aws:sqs:" + region + ":" + k.Account + ":" + k.Name
}

// IsFIFOName reports whether a queue name has the FIFO suffix.
func IsFIFOName(name string) bool { return strings.HasSuffix(name, FIFOSuffix) }

// ParseQueueURL extracts the queue key from a queue URL. It accepts the
// absolute URLs fifoq hands out ("http://host:port/ACCOUNT/NAME"), whatever
// their host, and their bare paths ("/ACCOUNT/NAME"), as SQS accepts a URL of
// another endpoint form for the same queue. It returns InvalidAddress when
// the URL cannot name a queue.
func ParseQueueURL(raw string) (QueueKey, error) {
	if raw == "" {
		return QueueKey{}, ErrMissingParameter("QueueUrl")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return QueueKey{}, ErrInvalidAddress(raw)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return QueueKey{}, ErrInvalidAddress(raw)
	}
	return QueueKey{Account: parts[0], Name: parts[1]}, nil
}

// ParseQueueARN extracts the region and queue key of an SQS queue ARN
// ("arn:aws:sqs:REGION:ACCOUNT:NAME"). ok is false if raw is not such an ARN.
func ParseQueueARN(raw string) (region string, key QueueKey, ok bool) {
	parts := strings.Split(raw, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] != "sqs" ||
		parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return "", QueueKey{}, false
	}
	return parts[3], QueueKey{Account: parts[4], Name: parts[5]}, true
}
