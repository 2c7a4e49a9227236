package integration

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
)

// Account and Region are the account and region of every test server.
const (
	Account = "000000000000"
	Region  = "us-east-1"
)

// Clock is a clock a test can move forward: real time plus an offset. Real
// time keeps passing, so the server's timers (long polls, move tasks) work
// as in production, while Advance jumps over intervals a test cannot wait
// for (the 5-minute deduplication interval, visibility timeouts).
type Clock struct {
	offset atomic.Int64
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.offset.Add(int64(d))
}

// WireRequest is what a client put on the wire for one request.
type WireRequest struct {
	Header http.Header
	Body   []byte
}

// WireLog records every request a client sends, so that a test can check
// which protocol the client really speaks.
type WireLog struct {
	mu   sync.Mutex
	reqs []WireRequest
}

// Requests returns the requests recorded so far.
func (w *WireLog) Requests() []WireRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WireRequest(nil), w.reqs...)
}

func (w *WireLog) add(r WireRequest) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reqs = append(w.reqs, r)
}

// recordingTransport copies each request's headers and body into a WireLog
// before sending it.
type recordingTransport struct {
	log  *WireLog
	next http.RoundTripper
}

func (t *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	t.log.add(WireRequest{Header: r.Header.Clone(), Body: body})
	return t.next.RoundTrip(r)
}

// Env is one running server and the clients that talk to it.
type Env struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string
	// Clock is the server's clock.
	Clock *Clock
	// V2 is an aws-sdk-go-v2 SQS client (AWS JSON 1.0) with MD5 checksum
	// validation on and no retries, so that every server answer is seen.
	V2 *sqsv2.Client
	// V1 is an aws-sdk-go v1 SQS client (AWS Query) with no retries.
	V1 *sqsv1.SQS
	// V2Wire and V1Wire record what each client sent.
	V2Wire, V1Wire *WireLog
	// HTTP is a plain HTTP client for raw requests.
	HTTP *http.Client
	// Durable tells that the server runs on the durable Raft log (see
	// Durable) rather than in memory.
	Durable bool
}

// LogEnv is the environment variable that selects the command log of every
// test server: "raft" runs it on the durable Raft log in a temporary data
// dir, as fifoq serve does by default; empty or "memory" runs it in memory,
// as fifoq serve --in-memory does. CI runs the suite both ways, since the
// two logs differ in what a command goes through before its answer
// (encoding, group commit, fsync, snapshots).
const LogEnv = "FIFOQ_TEST_LOG"

// Durable reports whether LogEnv selects the durable log. An unknown value
// is taken as durable, so that a typo cannot silently test memory only.
func Durable() bool {
	v := os.Getenv(LogEnv)
	return v != "" && v != "memory"
}

// Start starts a server on a free loopback port and returns its Env. The
// server is shut down when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartWith(t, Options{})
}

// testLogWriter sends the server's warnings and errors to the test log
// until the test ends; later lines (from goroutines still finishing) are
// dropped, since testing forbids logging after a test completes.
type testLogWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Logf("server: %s", bytes.TrimRight(p, "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
