package fifoqtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/clock"
	"github.com/fifoq/fifoq/internal/config"
	"github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/server"
)

// Defaults of a Server without options.
const (
	// DefaultAccount is the account id of the server's queues and callers.
	DefaultAccount = server.DefaultAccount
	// DefaultRegion is the region of queue ARNs and of Config.
	DefaultRegion = server.DefaultRegion
)

// The access key Config signs with when the server requires none: any
// signature is accepted then, but the SDK insists on signing.
const (
	placeholderKeyID  = "fifoqtest"
	placeholderSecret = "fifoqtest"
)

// stopTimeout bounds Close's wait for requests in flight.
const stopTimeout = 10 * time.Second

// Server is a running fifoq server: the one fifoq serve runs, in this
// process, listening on a free port of 127.0.0.1.
type Server struct {
	url      string
	account  string
	region   string
	creds    aws.CredentialsProvider
	clock    *Clock
	srv      *server.Server
	served   chan error // Serve's result
	client   *http.Client
	closeErr error
	once     sync.Once
}

// New starts a server for the test t, with opts, and stops it when the
// test ends (t.Cleanup). It fails the test at once if the server cannot
// start or an option is wrong (a queue that SQS would refuse, an account
// id that is not 12 digits). The queues of WithQueues exist when it
// returns.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var tl *testLogger
	o := collect(opts)
	if o.logger == nil {
		tl = &testLogger{t: t}
		o.logger = slog.New(slog.NewTextHandler(tl, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s, err := start(o)
	if err != nil {
		t.Fatalf("fifoqtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("fifoqtest: stop the server: %v", err)
		}
		if tl != nil {
			tl.close()
		}
	})
	return s
}

// Start starts a server with opts, for use outside a test function: in
// TestMain, to share one server among a package's tests, or in a program.
// The caller stops it with Close. Its log lines are discarded unless
// WithLogger says where they go.
func Start(opts ...Option) (*Server, error) {
	o := collect(opts)
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	return start(o)
}

func collect(opts []Option) *options {
	o := &options{account: DefaultAccount, region: DefaultRegion}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// start wires the server as fifoq serve does: an engine, the command log
// (in memory, or durable in the data dir), the signature verifier, the
// server, then the declared queues, and only then the listener's first
// connection.
func start(o *options) (*Server, error) {
	if !api.IsAccountID(o.account) {
		return nil, fmt.Errorf("account id %q is not 12 digits", o.account)
	}
	if o.region == "" {
		return nil, errors.New("empty region")
	}
	var file *config.File
	if len(o.queues) > 0 {
		var err error
		if file, err = declare(o.queues); err != nil {
			return nil, err
		}
	}
	var creds []auth.Credential
	keyID, secret := placeholderKeyID, placeholderSecret
	if o.keyID != "" || o.secret != "" {
		creds = append(creds, auth.Credential{AccessKeyID: o.keyID, SecretAccessKey: o.secret, Account: o.account})
		keyID, secret = o.keyID, o.secret
	}
	store, err := auth.NewStore(creds)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	var clk clock.Clock = clock.Real{}
	if o.clock != nil {
		clk = o.clock.fake
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	// Signatures are checked against the real time, which the SDK signs
	// with, whatever clock the server stamps its commands with.
	verifier := &auth.Verifier{Store: store, DefaultAccount: o.account, Region: o.region, Now: time.Now}
	n, err := node.Open(node.Config{Account: o.account, Region: o.region, InMemory: o.dataDir == "", DataDir: o.dataDir,
		Logger: o.logger, Clock: clk, Verifier: verifier,
		RecreateDelay: cooldown(o.recreateDelay), PurgeDelay: cooldown(o.purgeDelay), Queues: file})
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := n.Server
	transport := http.DefaultTransport.(*http.Transport).Clone()
	s := &Server{
		url:     "http://" + ln.Addr().String(),
		account: o.account,
		region:  o.region,
		creds:   credentials.NewStaticCredentialsProvider(keyID, secret, ""),
		clock:   o.clock,
		srv:     srv,
		served:  make(chan error, 1),
		client:  &http.Client{Transport: transport},
	}
	go func() { s.served <- srv.Serve(ln) }()
	return s, nil
}

// cooldown turns a delay option, where 0 turns the rule off and unset is
// SQS's default, into node.Config's convention.
func cooldown(d *time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return node.Cooldown(*d)
}

// declare checks the queues of WithQueues as fifoq serve checks a config
// file's.
func declare(queues []Queue) (*config.File, error) {
	cq := make([]config.Queue, len(queues))
	for i, q := range queues {
		attrs := make(map[string]string, len(q.Attributes)+1)
		for k, v := range q.Attributes {
			attrs[k] = v
		}
		if q.Policy != "" {
			if _, dup := attrs[api.AttrPolicy]; dup {
				return nil, fmt.Errorf("queue %s: Policy and the Policy attribute both give the policy; keep one", q.Name)
			}
			attrs[api.AttrPolicy] = q.Policy
		}
		cq[i] = config.Queue{Name: q.Name, Account: q.Account, Attributes: attrs, Tags: q.Tags}
		if d := q.DeadLetter; d != nil {
			cq[i].DeadLetter = &config.DeadLetter{Queue: d.Queue, MaxReceiveCount: d.MaxReceiveCount}
		}
	}
	return config.Declare("fifoqtest.WithQueues", cq)
}

// URL returns the server's endpoint, http://127.0.0.1:PORT: the
// BaseEndpoint of an SDK, the --endpoint-url of the AWS CLI.
func (s *Server) URL() string { return s.url }

// QueueURL returns the URL of the server's account's queue name, as
// CreateQueue and GetQueueUrl answer it.
func (s *Server) QueueURL(name string) string {
	return s.url + "/" + s.account + "/" + name
}

// Config returns an aws-sdk-go-v2 configuration for the server: its
// endpoint, its region, and static credentials it accepts. It reads
// nothing from the environment or ~/.aws, so that a developer's settings
// cannot send a test's requests elsewhere.
func (s *Server) Config() aws.Config {
	return aws.Config{
		Region:       s.region,
		Credentials:  s.creds,
		BaseEndpoint: aws.String(s.url),
		HTTPClient:   s.client,
	}
}

// Client returns an SQS client of Config, changed by optFns.
func (s *Server) Client(optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(s.Config(), optFns...)
}

// Clock returns the fake clock of WithClock, or nil.
func (s *Server) Clock() *Clock { return s.clock }

// Close stops the server: it stops accepting connections, answers the
// long polls waiting, waits for requests in flight, and closes the log.
// New's server is closed when its test ends; Close stops it sooner, for a
// test that starts another on the same WithDataDir. A second call returns
// the first's result.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if serr := <-s.served; err == nil {
			err = serr
		}
		// The clients' idle connections go with the server: no goroutine
		// or file descriptor of them outlives it.
		s.client.CloseIdleConnections()
		s.closeErr = err
	})
	return s.closeErr
}

// testLogger writes the server's log lines to the test's log until the
// test ends; later lines are dropped, since testing forbids logging after
// a test completes.
type testLogger struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Logf("fifoq: %s", bytes.TrimRight(p, "\n"))
	}
	return len(p), nil
}

func (w *testLogger) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

var _ io.Writer = (*testLogger)(nil)
