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
// "/ACCOUNT/NAME", another endpoint's form of the same queue); so do the
// forms other SQS emulators give their queues, so that code and scripts
// written against them work unchanged: ElasticMQ's /queue/NAME (in the
// caller's account) and LocalStack's path form /queue/REGION/ACCOUNT/NAME
// (fifoq serves one region, and does not compare it). Any other value is
// taken as a queue name in the caller's account, as SQS takes a bare name
// ("my-queue") given as QueueUrl: the key's Account is then empty, for
// ResolveQueueURL to fill. A value that names no queue this way
// ("http://host/x") names no queue that can exist, and the action answers
// AWS.SimpleQueueService.NonExistentQueue, as SQS does, rather than
// InvalidAddress. Only an empty QueueUrl is an error: MissingParameter.
func ParseQueueURL(raw string) (QueueKey, error) {
	if raw == "" {
		return QueueKey{}, ErrMissingParameter("QueueUrl")
	}
	if path, ok := simpleURLPath(raw); ok {
		return queueKeyOfPath(raw, path), nil
	}
	if u, err := url.Parse(raw); err == nil {
		return queueKeyOfPath(raw, u.Path), nil
	}
	return QueueKey{Name: raw}, nil
}

// emulatorPrefix starts the path of a queue URL in ElasticMQ's and
// LocalStack's forms. No account is called "queue" (accounts are 12
// digits), so the forms cannot be mistaken for /ACCOUNT/NAME.
const emulatorPrefix = "queue/"

// IsQueuePath reports whether an HTTP request's path is a queue's URL path,
// in any of the forms ParseQueueURL reads.
func IsQueuePath(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	k := queueKeyOfPath("", path)
	return k.Name != ""
}

// simpleURLPath returns the path of raw without net/url when raw has one
// of the shapes clients send ("http://host:port/ACCOUNT/NAME", the path
// "/ACCOUNT/NAME", a bare name) in bytes that need no unescaping: then
// url.Parse would succeed with exactly this path. ok is false for anything
// else, which is left to url.Parse. Parsing every request's QueueUrl with
// url.Parse, three times per request, cost a busy server 4% of its CPU.
func simpleURLPath(raw string) (path string, ok bool) {
	rest, hasScheme := strings.CutPrefix(raw, "http://")
	if !hasScheme {
		rest, hasScheme = strings.CutPrefix(raw, "https://")
	}
	if hasScheme {
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			slash = len(rest)
		}
		if !simpleAuthority(rest[:slash]) {
			return "", false
		}
		rest = rest[slash:]
	} else if strings.HasPrefix(raw, "//") {
		return "", false // an authority without a scheme
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' && c != '/' {
			return "", false
		}
	}
	return rest, true
}

// simpleAuthority reports whether a URL's authority is a nonempty host
// name of letters, digits, dots and hyphens, with an optional port of one
// to five digits: a host url.Parse accepts as it is.
func simpleAuthority(a string) bool {
	host, port, hasPort := strings.Cut(a, ":")
	if host == "" || (hasPort && (port == "" || len(port) > 5)) {
		return false
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// queueKeyOfPath is ParseQueueURL's answer for a URL whose path is path:
// the queue /ACCOUNT/NAME, /queue/NAME (Account empty: the caller's) or
// /queue/REGION/ACCOUNT/NAME, or raw as a bare name. The common form is
// split without allocating.
func queueKeyOfPath(raw, path string) QueueKey {
	trimmed := strings.Trim(path, "/")
	if rest, ok := strings.CutPrefix(trimmed, emulatorPrefix); ok {
		parts := strings.Split(rest, "/")
		switch {
		case len(parts) == 1 && parts[0] != "":
			return QueueKey{Name: parts[0]}
		case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
			return QueueKey{Account: parts[1], Name: parts[2]}
		}
		return QueueKey{Name: raw}
	}
	account, name, found := strings.Cut(trimmed, "/")
	if !found || account == "" || name == "" || strings.IndexByte(name, '/') >= 0 {
		return QueueKey{Name: raw}
	}
	return QueueKey{Account: account, Name: name}
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
