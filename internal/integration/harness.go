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

	clockpkg "github.com/fifoq/fifoq/internal/clock"
)

// Account and Region are the account and region of every test server.
const (
	Account = "000000000000"
	Region  = "us-east-1"
)

// Clock is the server's clock in a test: a fake clock that stands still
// until the test advances it, so that what a test sees does not depend on
// how fast the machine runs it. The server stamps its time into every
// command and waits on it, so Advance jumps over SQS's periods (the
// 5-minute deduplication interval, visibility timeouts, delays) and ends
// the long polls whose wait time it passes.
//
// A long poll on a queue that stays empty therefore waits until the test
// advances the clock past its wait time: a test receives with a wait time
// of 0, or advances the clock once the server counts the poll as waiting
// (waitForWaiters). A message move task moves messages at its rate of this
// clock's time, so a test advances the clock while it waits for the task.
// The server's own tickers (housekeeping, move task ticks) still run in
// real time and read this clock when they fire, so what Advance makes due
// is done within about a second of real time.
//
// SigV4 signatures are checked against the real time, which the SDKs sign
// with, plus the Env's SignatureSkew: advancing this clock does not expire
// a client's signatures.
type Clock struct {
	fake *clockpkg.Fake
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time { return c.fake.Now() }

// Advance moves the clock forward by d, which must not be negative: the
// server's time never goes backwards.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("integration: Clock.Advance with a negative duration")
	}
	c.fake.Advance(d)
}

// Skew is the offset from the real time of the clock that the server's
// SigV4 verifier checks request times against: a test sets it to play a
// client whose clock is off.
type Skew struct {
	offset atomic.Int64
}

// Set makes the verifier's clock read the real time plus d.
func (s *Skew) Set(d time.Duration) { s.offset.Store(int64(d)) }

// now returns the real time plus the skew.
func (s *Skew) now() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) }

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
	// SignatureSkew is how far from the real time the server's SigV4
	// verifier reads the time.
	SignatureSkew *Skew
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
