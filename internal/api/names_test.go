package api

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// parseQueueURLByNetURL is ParseQueueURL without its fast path: every
// QueueUrl through url.Parse, and the path's parts read plainly. The fast
// path must answer as it does.
func parseQueueURLByNetURL(raw string) (QueueKey, error) {
	if raw == "" {
		return QueueKey{}, ErrMissingParameter("QueueUrl")
	}
	if u, err := url.Parse(raw); err == nil {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		nonEmpty := !slices.Contains(parts, "")
		switch {
		case len(parts) == 2 && parts[0] == "queue" && nonEmpty: // ElasticMQ
			return QueueKey{Name: parts[1]}, nil
		case len(parts) == 4 && parts[0] == "queue" && nonEmpty: // LocalStack
			return QueueKey{Account: parts[2], Name: parts[3]}, nil
		case len(parts) == 2 && nonEmpty:
			return QueueKey{Account: parts[0], Name: parts[1]}, nil
		}
	}
	return QueueKey{Name: raw}, nil
}

var queueURLSeeds = []string{
	"", "q", "my-queue", "q.fifo", "a/b", "/a/b", "/a/b/", "//a/b", "///a/b", "/a//b", "a//b", "/a/b/c",
	"http://127.0.0.1:19975/000000000000/bench.fifo", "https://sqs.us-east-1.amazonaws.com/123456789012/q",
	"http://localhost/123456789012/q", "http://host", "http://host/", "http://host/x", "http://host:/a/b",
	"http://host:123456/a/b", "http://host:abc/a/b", "http://:80/a/b", "http:///a/b", "http://h_st/a/b",
	"http://[::1]:80/a/b", "http://u@h/a/b", "http://h/a%2Fb", "http://h/a/b?x=1", "http://h/a/b#f",
	"HTTP://h/a/b", "http://h:80:80/a/b", "http://h/a/b c", "http://h/a/b\x00", "a:b", "/a:b/c", "..", "/../..",
	"http://h/./.", "http://h/a/\u00e9", "http://h%41/a/b", "http://h/%zz/b",
	// ElasticMQ's and LocalStack's forms, and what is near them.
	"http://localhost:9324/queue/q.fifo", "/queue/q", "queue/q", "/queue/", "/queue", "/queue//",
	"http://localhost:4566/queue/us-east-1/000000000000/q", "/queue/us-east-1/000000000000/q/",
	"/queue/r/a", "/queue/r/a/b/c", "/queue//a/b", "/queue/r//b", "http://h/queue/q%2Fx",
	"/000000000000/queue",
}

// TestEmulatorQueueURLs checks the forms other SQS emulators give their
// queues: ElasticMQ's /queue/NAME names NAME in the caller's account,
// LocalStack's /queue/REGION/ACCOUNT/NAME the queue /ACCOUNT/NAME.
func TestEmulatorQueueURLs(t *testing.T) {
	for raw, want := range map[string]QueueKey{
		"http://localhost:9324/queue/orders.fifo":                     {Name: "orders.fifo"},
		"http://localhost:4566/queue/us-east-1/000000000000/orders":   {Account: "000000000000", Name: "orders"},
		"http://localstack:4566/queue/eu-west-1/123456789012/orders/": {Account: "123456789012", Name: "orders"},
		"/queue/orders":           {Name: "orders"},
		"/000000000000/queue":     {Account: "000000000000", Name: "queue"},
		"/queue/us-east-1/orders": {Name: "/queue/us-east-1/orders"},
	} {
		got, err := ResolveQueueURL(raw, "")
		if err != nil || got != want {
			t.Errorf("ResolveQueueURL(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
		if path := strings.TrimPrefix(raw, "http://"); strings.HasPrefix(raw, "http://") {
			path = path[strings.IndexByte(path, '/'):]
			if IsQueuePath(path) != (want.Name != raw) {
				t.Errorf("IsQueuePath(%q) = %v", path, IsQueuePath(path))
			}
		}
	}
	if got, _ := ResolveQueueURL("http://localhost:9324/queue/orders", "111122223333"); got != (QueueKey{Account: "111122223333", Name: "orders"}) {
		t.Errorf("ElasticMQ's form resolves to %+v, want the caller's account", got)
	}
}

// TestParseQueueURLMatchesNetURL checks the fast path against url.Parse on
// the shapes clients send and on the odd ones around them.
func TestParseQueueURLMatchesNetURL(t *testing.T) {
	for _, raw := range queueURLSeeds {
		checkParseQueueURL(t, raw)
	}
}

// FuzzParseQueueURL compares ParseQueueURL with its url.Parse form on
// arbitrary strings: the same key, the same error.
func FuzzParseQueueURL(f *testing.F) {
	for _, raw := range queueURLSeeds {
		f.Add(raw)
	}
	f.Fuzz(checkParseQueueURL)
}

func checkParseQueueURL(t *testing.T, raw string) {
	got, gotErr := ParseQueueURL(raw)
	want, wantErr := parseQueueURLByNetURL(raw)
	if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("ParseQueueURL(%q) = %+v, %v; url.Parse's answer is %+v, %v", raw, got, gotErr, want, wantErr)
	}
}

// BenchmarkParseQueueURL times the QueueUrl an AWS SDK sends.
func BenchmarkParseQueueURL(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseQueueURL("http://127.0.0.1:19975/000000000000/bench.fifo"); err != nil {
			b.Fatal(err)
		}
	}
}
