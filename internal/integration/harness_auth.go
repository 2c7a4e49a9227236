package integration

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	credentialsv2 "github.com/aws/aws-sdk-go-v2/credentials"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	credentialsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	defaultsv1 "github.com/aws/aws-sdk-go/aws/defaults"
	sessionv1 "github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/fifoq/fifoq/internal/auth"
	clockpkg "github.com/fifoq/fifoq/internal/clock"
	"github.com/fifoq/fifoq/internal/node"
)

// Options configure a server started by StartWith. The zero Options start
// the same server as Start.
type Options struct {
	// Credentials, when not empty, are the access keys the server knows:
	// every request must then carry a valid SigV4 signature by one of them.
	// Empty, the server accepts any signature (or none), and a 12-digit
	// access key names the caller's account.
	Credentials []auth.Credential
	// AccessKeyID and SecretAccessKey sign the requests of the Env's V2
	// and V1 clients ("test" and "test" if empty, as with Start).
	AccessKeyID, SecretAccessKey string
	// RecreateDelay and PurgeDelay are node.Config's: zero keeps SQS's
	// 60 seconds, a negative value turns QueueDeletedRecently or
	// PurgeQueueInProgress off (for tests that delete and recreate, or
	// purge, in a loop).
	RecreateDelay, PurgeDelay time.Duration
	// SingleRegion is node.Config's: every request in Region.
	SingleRegion bool
}

// StartWith starts a server as Start does, configured by opts. The server
// runs on the Env's fake Clock; its request verifier checks X-Amz-Date
// against the real time plus the Env's SignatureSkew, so that a test moves
// the server's idea of "now" away from the clients' to test clock skew.
func StartWith(t testing.TB, opts Options) *Env {
	t.Helper()
	store, err := auth.NewStore(opts.Credentials)
	if err != nil {
		t.Fatalf("auth.NewStore: %v", err)
	}
	clock, skew := &Clock{fake: clockpkg.NewFake(time.Now())}, &Skew{}
	logw := &testLogWriter{t: t}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	verifier := &auth.Verifier{Store: store, Now: skew.now, DefaultAccount: Account, Region: Region}
	cfg := node.Config{Account: Account, Region: Region, SingleRegion: opts.SingleRegion, Clock: clock.fake,
		Logger: logger, Verifier: verifier, RecreateDelay: opts.RecreateDelay, PurgeDelay: opts.PurgeDelay, InMemory: true}
	durable := Durable()
	if durable {
		// As fifoq serve does by default: a Raft log in a data dir. The
		// dir is removed after the server's Shutdown (cleanups run
		// last-registered first), which closes the log.
		cfg.InMemory, cfg.DataDir = false, t.TempDir()
	}
	n, err := node.Open(cfg)
	if err != nil {
		t.Fatalf("node.Open: %v", err)
	}
	srv := n.Server
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
		URL:           "http://" + ln.Addr().String(),
		Clock:         clock,
		SignatureSkew: skew,
		Durable:       durable,
		V2Wire:        &WireLog{},
		V1Wire:        &WireLog{},
		HTTP:          &http.Client{Transport: transport, Timeout: 30 * time.Second},
	}
	key, secret := opts.AccessKeyID, opts.SecretAccessKey
	if key == "" {
		key, secret = "test", "test"
	}
	env.V2 = newV2Client(env.URL, &http.Client{Transport: &recordingTransport{log: env.V2Wire, next: transport}}, key, secret)
	env.V1 = newV1Client(env.URL, &http.Client{Transport: &recordingTransport{log: env.V1Wire, next: transport}}, key, secret)

	t.Cleanup(func() {
		// Close the clients' idle connections first: the server's Shutdown
		// waits up to 5 s for a connection on which no request came yet,
		// which the transport leaves behind when parallel dials race.
		transport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
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

// ClientsAs returns a v2 (AWS JSON) and a v1 (AWS Query) client of the
// Env's server that sign with the given key. wrap, if not nil, wraps the
// HTTP transport of both, so that a test can see or alter requests after
// the SDK signed them.
func (e *Env) ClientsAs(accessKeyID, secretAccessKey string, wrap func(http.RoundTripper) http.RoundTripper) (*sqsv2.Client, *sqsv1.SQS) {
	rt := e.HTTP.Transport
	if wrap != nil {
		rt = wrap(rt)
	}
	hc := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	return newV2Client(e.URL, hc, accessKeyID, secretAccessKey), newV1Client(e.URL, hc, accessKeyID, secretAccessKey)
}

// newV2Client builds an aws-sdk-go-v2 SQS client for url that signs with
// the given key. Its configuration is built by hand rather than loaded, so
// that nothing of the machine (AWS_* variables such as AWS_CA_BUNDLE,
// ~/.aws) can change it; it does not retry, so that every answer of the
// server is seen.
func newV2Client(url string, hc *http.Client, accessKeyID, secretAccessKey string) *sqsv2.Client {
	cfg := awsv2.Config{
		Region:      Region,
		Credentials: awsv2.NewCredentialsCache(credentialsv2.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, "")),
		HTTPClient:  hc,
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}
	return sqsv2.NewFromConfig(cfg, func(o *sqsv2.Options) {
		o.BaseEndpoint = awsv2.String(url)
	})
}

// newV1Client builds an aws-sdk-go v1 SQS client for url that signs with
// the given key, likewise without reading the environment and without
// retries.
func newV1Client(url string, hc *http.Client, accessKeyID, secretAccessKey string) *sqsv1.SQS {
	cfg := defaultsv1.Config().
		WithRegion(Region).
		WithEndpoint(url).
		WithCredentials(credentialsv1.NewStaticCredentials(accessKeyID, secretAccessKey, "")).
		WithHTTPClient(hc).
		WithMaxRetries(0)
	return sqsv1.New(&sessionv1.Session{Config: cfg, Handlers: defaultsv1.Handlers()})
}
