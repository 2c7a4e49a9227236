package integration

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	credentialsv2 "github.com/aws/aws-sdk-go-v2/credentials"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	credentialsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	defaultsv1 "github.com/aws/aws-sdk-go/aws/defaults"
	sessionv1 "github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/fifoq/fifoq/internal/server"
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
}

// Start starts a server on a free loopback port and returns its Env. The
// server is shut down when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	clock := &Clock{}
	logw := &testLogWriter{t: t}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.New(server.Config{Account: Account, Region: Region, Now: clock.Now, Logger: logger})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	transport.Proxy = nil // the server is on loopback: never go through a proxy
	env := &Env{
		URL:    "http://" + ln.Addr().String(),
		Clock:  clock,
		V2Wire: &WireLog{},
		V1Wire: &WireLog{},
		HTTP:   &http.Client{Transport: transport, Timeout: 30 * time.Second},
	}
	env.V2 = newV2Client(env.URL, &http.Client{Transport: &recordingTransport{log: env.V2Wire, next: transport}})
	env.V1 = newV1Client(env.URL, &http.Client{Transport: &recordingTransport{log: env.V1Wire, next: transport}})

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Idle keep-alive connections are closed first: Shutdown waits for
		// every connection to become idle, and one the server has just
		// answered may not yet be marked idle on its side.
		transport.CloseIdleConnections()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("server Serve: %v", err)
		}
		transport.CloseIdleConnections()
		logw.close()
	})
	return env
}

// newV2Client builds an aws-sdk-go-v2 SQS client for url. Its
// configuration is built by hand rather than loaded, so that nothing of the
// machine (AWS_* variables such as AWS_CA_BUNDLE, ~/.aws) can change it;
// it does not retry, so that every answer of the server is seen.
func newV2Client(url string, hc *http.Client) *sqsv2.Client {
	cfg := awsv2.Config{
		Region:      Region,
		Credentials: awsv2.NewCredentialsCache(credentialsv2.NewStaticCredentialsProvider("test", "test", "")),
		HTTPClient:  hc,
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}
	return sqsv2.NewFromConfig(cfg, func(o *sqsv2.Options) {
		o.BaseEndpoint = awsv2.String(url)
	})
}

// newV1Client builds an aws-sdk-go v1 SQS client for url, likewise
// without reading the environment and without retries.
func newV1Client(url string, hc *http.Client) *sqsv1.SQS {
	cfg := defaultsv1.Config().
		WithRegion(Region).
		WithEndpoint(url).
		WithCredentials(credentialsv1.NewStaticCredentials("test", "test", "")).
		WithHTTPClient(hc).
		WithMaxRetries(0)
	return sqsv1.New(&sessionv1.Session{Config: cfg, Handlers: defaultsv1.Handlers()})
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
