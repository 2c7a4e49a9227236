package api

import (
	"net/url"
	"strconv"
	"strings"
)

// QueueKey identifies a queue: the region it lives in, the account that
// owns it and its name. As in SQS, the same name in two regions is two
// queues.
//
// Region is empty for the server's own region (fifoq serve --region, the
// home region), where nearly every queue lives; only other regions are
// spelled out. So a region has one spelling in a key, keys that were
// written into logs and snapshots before queues had regions name the same
// queues as they did, and a key never needs the home region to be compared.
// A key made from a region that may be the home one goes through InRegion.
//
// Part numbers a partition of a queue split by the hash of its message
// groups (a high-throughput FIFO queue on a cluster with shards: see
// GroupHash): each partition is a queue of its own in the engine, with the
// queue's ARN, URL and attributes. Every queue is partition 0 until it is
// split, so a key that names no partition names the queue as it always
// has.
type QueueKey struct {
	Region  string
	Account string
	Name    string
	// Part is left out of JSON when 0, so that a key of a queue never
	// split is written as it always was, and read by every fifoq.
	Part uint32 `json:",omitempty"`
}

// Whole returns the key of the queue k is a partition of: k with Part 0.
func (k QueueKey) Whole() QueueKey {
	k.Part = 0
	return k
}

// GroupHash is the hash of a message group id that places the group in a
// partition of a split queue, which owns a range of it: the high 32 bits
// of its FNV-1a 64-bit hash, mixed by MurmurHash3's 64-bit finalizer.
// FNV-1a alone spreads its high bits badly: ids that differ in their last
// byte ("order-41", "order-42") differ only in bits 40 to 47, so that a
// queue's groups would crowd into a few narrow ranges. It never changes:
// every replica of every version must place a group alike.
func GroupHash(group string) uint32 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(group); i++ {
		h ^= uint64(group[i])
		h *= prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return uint32(h >> 32)
}

// InRegion returns k in the given region, home being the server's own:
// Region is region, or empty if region is home (or empty).
func (k QueueKey) InRegion(region, home string) QueueKey {
	if region == home {
		region = ""
	}
	k.Region = region
	return k
}

// String returns the path of the queue's URL without the leading slash:
// "ACCOUNT/NAME" in the home region, "REGION/ACCOUNT/NAME" in another.
//
// A partition other than 0 adds "#PART".
func (k QueueKey) String() string {
	s := k.Account + "/" + k.Name
	if k.Region != "" {
		s = k.Region + "/" + s
	}
	if k.Part != 0 {
		s += "#" + strconv.FormatUint(uint64(k.Part), 10)
	}
	return s
}

// Path returns the path of the queue's URL: "/ACCOUNT/NAME", SQS's form,
// in the home region; in another, LocalStack's path form
// "/queue/REGION/ACCOUNT/NAME", which names the region (SQS names it in the
// URL's host, which fifoq does not read) and which every emulator's users
// already know.
func (k QueueKey) Path() string {
	if k.Region != "" {
		return "/" + emulatorPrefix + k.Region + "/" + k.Account + "/" + k.Name
	}
	return "/" + k.Account + "/" + k.Name
}

// ARN returns the queue's ARN, home being the server's own region.
func (k QueueKey) ARN(home string) string {
	region := k.Region
	if region == "" {
		region = home
	}
	return "arn:aws:sqs:" + region + ":" + k.Account + ":" + k.Name
}

// Scope is where a request acts: the caller's account and the region the
// request was signed for, empty for the server's own. A queue that a
// request names by a bare name, or by a URL that names no region, is a
// queue of this account (unless the URL says another) and region.
type Scope struct {
	Account string
	Region  string
}

// IsRegionName reports whether s can be a region's name: 1 to 32
// lowercase ASCII letters, digits and hyphens ("us-east-1",
// "eu-central-1", "local"). A request signed for anything else is taken
// to be in the server's own region, and a URL that names one names no
// queue.
func IsRegionName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

// IsFIFOName reports whether a queue name has the FIFO suffix.
func IsFIFOName(name string) bool { return strings.HasSuffix(name, FIFOSuffix) }

// ParseQueueURL extracts the queue key from a QueueUrl member, as SQS
// resolves it. A URL whose path is /ACCOUNT/NAME names that queue, whatever
// its scheme and host ("http://host:port/ACCOUNT/NAME", the bare path
// "/ACCOUNT/NAME", another endpoint's form of the same queue); so do the
// forms other SQS emulators give their queues, so that code and scripts
// written against them work unchanged: ElasticMQ's /queue/NAME (in the
// caller's account and region) and LocalStack's path form
// /queue/REGION/ACCOUNT/NAME, the only form that names a region (the
// key's Region is REGION as written: ResolveQueueURL places it against the
// home region). A URL of any other form names a queue in the region the
// request was signed for, as SQS's regional endpoints do. Any other value is
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
		case len(parts) == 3 && IsRegionName(parts[0]) && parts[1] != "" && parts[2] != "":
			return QueueKey{Region: parts[0], Account: parts[1], Name: parts[2]}
		}
		return QueueKey{Name: raw}
	}
	account, name, found := strings.Cut(trimmed, "/")
	if !found || account == "" || name == "" || strings.IndexByte(name, '/') >= 0 {
		return QueueKey{Name: raw}
	}
	return QueueKey{Account: account, Name: name}
}

// ResolveQueueURL is ParseQueueURL with what the URL does not say taken
// from the request's scope: the account of a bare name or of ElasticMQ's
// form, and the region of every form but LocalStack's path form, whose
// region is placed against home, the server's own region (see QueueKey).
func ResolveQueueURL(raw string, in Scope, home string) (QueueKey, error) {
	k, err := ParseQueueURL(raw)
	if err != nil {
		return k, err
	}
	if k.Account == "" {
		k.Account = in.Account
	}
	if k.Region == "" {
		k.Region = in.Region
	} else {
		k = k.InRegion(k.Region, home)
	}
	return k, nil
}

// ParseQueueARN extracts the region and queue key of an SQS queue ARN
// ("arn:aws:sqs:REGION:ACCOUNT:NAME"). ok is false if raw is not such an
// ARN. The key's Region is left empty: QueueOfARN places it.
func ParseQueueARN(raw string) (region string, key QueueKey, ok bool) {
	parts := strings.Split(raw, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] != "sqs" ||
		parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return "", QueueKey{}, false
	}
	return parts[3], QueueKey{Account: parts[4], Name: parts[5]}, true
}

// QueueOfARN returns the queue an SQS queue ARN names, in its region
// placed against home, the server's own region (see QueueKey). ok is false
// if raw is not such an ARN.
func QueueOfARN(raw, home string) (QueueKey, bool) {
	region, key, ok := ParseQueueARN(raw)
	if !ok {
		return QueueKey{}, false
	}
	return key.InRegion(region, home), true
}
