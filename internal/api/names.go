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

// ParseQueueURL extracts the queue key from a QueueUrl member, as SQS
// resolves it. A URL whose path is /ACCOUNT/NAME names that queue, whatever
// its scheme and host ("http://host:port/ACCOUNT/NAME", the bare path
// "/ACCOUNT/NAME", another endpoint's form of the same queue). Any other
// value is taken as a queue name in the caller's account, as SQS takes a
// bare name ("my-queue") given as QueueUrl: the key's Account is then
// empty, for ResolveQueueURL to fill. A value that names no queue this way
// ("http://host/x") names no queue that can exist, and the action answers
// AWS.SimpleQueueService.NonExistentQueue, as SQS does, rather than
// InvalidAddress. Only an empty QueueUrl is an error: MissingParameter.
func ParseQueueURL(raw string) (QueueKey, error) {
	if raw == "" {
		return QueueKey{}, ErrMissingParameter("QueueUrl")
	}
	if u, err := url.Parse(raw); err == nil {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if len(parts) == 2 && parts[0] != "" && parts[1] != "" {
			return QueueKey{Account: parts[0], Name: parts[1]}, nil
		}
	}
	return QueueKey{Name: raw}, nil
}

// ResolveQueueURL is ParseQueueURL with a bare queue name resolved in the
// caller's account.
func ResolveQueueURL(raw, caller string) (QueueKey, error) {
	k, err := ParseQueueURL(raw)
	if err == nil && k.Account == "" {
		k.Account = caller
	}
	return k, err
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
