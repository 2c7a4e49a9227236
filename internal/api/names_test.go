package api

import (
	"net/url"
	"strings"
	"testing"
)

// parseQueueURLByNetURL is ParseQueueURL as it was before its fast path:
// every QueueUrl through url.Parse. The fast path must answer as it does.
func parseQueueURLByNetURL(raw string) (QueueKey, error) {
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

var queueURLSeeds = []string{
	"", "q", "my-queue", "q.fifo", "a/b", "/a/b", "/a/b/", "//a/b", "///a/b", "/a//b", "a//b", "/a/b/c",
	"http://127.0.0.1:19975/000000000000/bench.fifo", "https://sqs.us-east-1.amazonaws.com/123456789012/q",
	"http://localhost/123456789012/q", "http://host", "http://host/", "http://host/x", "http://host:/a/b",
	"http://host:123456/a/b", "http://host:abc/a/b", "http://:80/a/b", "http:///a/b", "http://h_st/a/b",
	"http://[::1]:80/a/b", "http://u@h/a/b", "http://h/a%2Fb", "http://h/a/b?x=1", "http://h/a/b#f",
	"HTTP://h/a/b", "http://h:80:80/a/b", "http://h/a/b c", "http://h/a/b\x00", "a:b", "/a:b/c", "..", "/../..",
	"http://h/./.", "http://h/a/\u00e9", "http://h%41/a/b", "http://h/%zz/b",
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
