package api

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strconv"
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
		case len(parts) == 4 && parts[0] == "queue" && nonEmpty && IsRegionName(parts[1]): // LocalStack
			return QueueKey{Region: parts[1], Account: parts[2], Name: parts[3]}, nil
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
// queues: ElasticMQ's /queue/NAME names NAME in the caller's account and
// region, LocalStack's /queue/REGION/ACCOUNT/NAME the queue /ACCOUNT/NAME
// of REGION (empty when it is the home region, here us-east-1).
func TestEmulatorQueueURLs(t *testing.T) {
	for raw, want := range map[string]QueueKey{
		"http://localhost:9324/queue/orders.fifo":                     {Name: "orders.fifo"},
		"http://localhost:4566/queue/us-east-1/000000000000/orders":   {Account: "000000000000", Name: "orders"},
		"http://localstack:4566/queue/eu-west-1/123456789012/orders/": {Region: "eu-west-1", Account: "123456789012", Name: "orders"},
		"/queue/EU/123456789012/orders":                               {Name: "/queue/EU/123456789012/orders"},
		"/queue/orders":                                               {Name: "orders"},
		"/000000000000/queue":                                         {Account: "000000000000", Name: "queue"},
		"/queue/us-east-1/orders":                                     {Name: "/queue/us-east-1/orders"},
	} {
		got, err := ResolveQueueURL(raw, Scope{}, "us-east-1")
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
	if got, _ := ResolveQueueURL("http://localhost:9324/queue/orders", Scope{Account: "111122223333"}, "us-east-1"); got != (QueueKey{Account: "111122223333", Name: "orders"}) {
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

// TestQueueRegions checks where a queue URL places its queue: in the
// region the request was signed for unless the URL (LocalStack's path
// form) names one; the home region is always spelled "" in a key, and a
// key outside it has a URL and an ARN that say its region.
func TestQueueRegions(t *testing.T) {
	const home = "us-east-1"
	in := Scope{Account: "111122223333", Region: "eu-west-1"}
	for raw, want := range map[string]QueueKey{
		"http://localhost:9324/000000000000/q": {Region: "eu-west-1", Account: "000000000000", Name: "q"},
		"q":                                    {Region: "eu-west-1", Account: "111122223333", Name: "q"},
		"/queue/q":                             {Region: "eu-west-1", Account: "111122223333", Name: "q"},
		"/queue/us-east-1/000000000000/q":      {Account: "000000000000", Name: "q"},
		"/queue/ap-south-1/000000000000/q":     {Region: "ap-south-1", Account: "000000000000", Name: "q"},
		"http://h:4566/queue/eu-west-1/000000000000/q.fifo": {Region: "eu-west-1", Account: "000000000000", Name: "q.fifo"},
	} {
		if got, err := ResolveQueueURL(raw, in, home); err != nil || got != want {
			t.Errorf("ResolveQueueURL(%q) in eu-west-1 = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	k := QueueKey{Account: "000000000000", Name: "q"}
	if got := k.InRegion(home, home); got != k {
		t.Errorf("InRegion(home) = %+v, want the region left empty", got)
	}
	far := k.InRegion("eu-west-1", home)
	for _, c := range []struct{ got, want string }{
		{k.Path(), "/000000000000/q"},
		{k.ARN(home), "arn:aws:sqs:us-east-1:000000000000:q"},
		{far.Path(), "/queue/eu-west-1/000000000000/q"},
		{far.ARN(home), "arn:aws:sqs:eu-west-1:000000000000:q"},
		{far.String(), "eu-west-1/000000000000/q"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// A URL made from a key names the key again, in any region.
	for _, key := range []QueueKey{k, far} {
		if got, err := ResolveQueueURL("http://h"+key.Path(), Scope{Account: "999999999999"}, home); err != nil || got != key {
			t.Errorf("the URL of %+v resolves to %+v, %v", key, got, err)
		}
		if got, ok := QueueOfARN(key.ARN(home), home); !ok || got != key {
			t.Errorf("the ARN of %+v names %+v, %v", key, got, ok)
		}
	}
	for _, bad := range []string{"", "EU", "eu_west", "eu/west", strings.Repeat("a", 33)} {
		if IsRegionName(bad) {
			t.Errorf("IsRegionName(%q) = true", bad)
		}
	}
}

// TestGroupHash pins GroupHash to the high half of FNV-1a 64 (hash/fnv):
// partitions of split queues are placed by it, so it may never change.
func TestGroupHash(t *testing.T) {
	fmix := func(h uint64) uint64 {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		return h ^ h>>33
	}
	for _, g := range []string{"", "g", "order-42", "日本", strings.Repeat("x", 128)} {
		h := fnv.New64a()
		h.Write([]byte(g))
		if got, want := GroupHash(g), uint32(fmix(h.Sum64())>>32); got != want {
			t.Errorf("GroupHash(%q) = %d, want %d", g, got, want)
		}
	}
	// Two values written down, so that a change of both functions
	// together fails too.
	if GroupHash("") != 0xefd01f60 || GroupHash("g") != 0x4124d7a0 {
		t.Errorf("GroupHash(\"\") = %#x, GroupHash(\"g\") = %#x", GroupHash(""), GroupHash("g"))
	}
	// Ids that differ in a character or two spread over the whole range:
	// of 16 equal ranges, none holds under half or over twice its share.
	for _, name := range []func(int) string{
		func(i int) string { return "g" + strconv.Itoa(i) },
		func(i int) string { return "order-" + strconv.Itoa(100000+i) },
		func(i int) string { return fmt.Sprintf("device/%08x", i) },
	} {
		var in [16]int
		const n = 1600
		for i := range n {
			in[GroupHash(name(i))>>28]++
		}
		for r, c := range in {
			if c < n/16/2 || c > n/16*2 {
				t.Errorf("ids like %q: range %d of 16 holds %d of %d: %v", name(0), r, c, n, in)
				break
			}
		}
	}
}

func TestQueueKeyPart(t *testing.T) {
	k := QueueKey{Account: "000000000000", Name: "q.fifo", Part: 3}
	if k.String() != "000000000000/q.fifo#3" || k.Whole().String() != "000000000000/q.fifo" {
		t.Errorf("String = %q, Whole().String = %q", k.String(), k.Whole().String())
	}
	if k.Path() != k.Whole().Path() || k.ARN("us-east-1") != k.Whole().ARN("us-east-1") {
		t.Errorf("a partition's path %q or ARN %q is not its queue's", k.Path(), k.ARN("us-east-1"))
	}
}
