// Package server is fifoq's HTTP front: it decodes requests with the wire
// codecs, turns them into commands for the log, waits for long polls, and
// encodes the answers. It wires the other packages together and holds no
// queue state of its own.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/clock"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/memguard"
	"github.com/fifoq/fifoq/internal/metrics"
	"github.com/fifoq/fifoq/internal/replog"
)

// DefaultAccount is the account of callers when no credentials say otherwise.
const DefaultAccount = "000000000000"

// DefaultRegion is the server's own region by default (Config.Region).
const DefaultRegion = "us-east-1"

// MaxRequestBodyBytes bounds a request body. The largest valid SQS request is
// a batch of 1 MiB in total; the Query protocol's percent-encoding can triple
// that, so 8 MiB leaves room for every valid request and refuses the rest
// before they are buffered.
const MaxRequestBodyBytes = 8 << 20

// Config configures a Server.
type Config struct {
	// Account is the account id of unauthenticated callers (DefaultAccount if empty).
	Account string
	// Version is the fifoq version the server runs, recorded in backups.
	Version string
	// Region is the server's own region (DefaultRegion if empty): the
	// region of unsigned requests and of Do's, and the one whose queues
	// have SQS's URL form. A request signed for another region acts on
	// that region's queues (see api.QueueKey), unless SingleRegion.
	Region string
	// SingleRegion makes every request act on the queues of Region,
	// whatever region it is signed for or its queue URL names, as ElasticMQ
	// does: for applications whose clients sign for a region of their own
	// choosing (ElasticMQ's README signs for "elasticmq"), and for data
	// dirs whose clients relied on it before queues had regions.
	SingleRegion bool
	// Logger receives the server's log lines (slog.Default() if nil).
	Logger *slog.Logger
	// Clock timestamps commands, and the long polls wait on its timers
	// (their end, and a delayed or in-flight message becoming visible), so
	// that with a fake clock those waits end when the clock is advanced
	// (the real clock if nil).
	Clock clock.Clock
	// Log is the command log to apply commands through, which owns the
	// engine; the server registers its long-poll notifier with it. If
	// nil, the server creates an in-memory log.
	Log replog.Log
	// Raft is Log when it is the durable log (a replog.Raft): the server
	// reports its status (/cluster/node), and, when it is a networked
	// cluster's member, forwards to its leader, serves the node-to-node
	// port and the cluster endpoints. Nil for the in-memory log.
	Raft RaftLog
	// Shards, if not nil, are the shards of a cluster member beside its
	// first group (Log): every request is routed to the leader of its
	// queue's group (groups.go, route.go). Shutdown closes them, before
	// the log.
	Shards Shards
	// Verifier authenticates requests. If nil, every request is accepted as
	// from Account (or the account a 12-digit access key names). One
	// without a clock of its own (Now) checks a request's signing time
	// against Clock, the server's: a server whose clock is off (a test
	// build's FIFOQ_TEST_CLOCK_SKEW, or a machine's) judges signatures by
	// the time it stamps commands with.
	Verifier *auth.Verifier
	// MaxLongPolls bounds the receives waiting at once (DefaultMaxLongPolls
	// if 0); past it a receive answers at once, as a short poll would.
	MaxLongPolls int
	// Metrics is the registry the server's metrics go to and /metrics
	// serves. If nil, the server makes its own.
	Metrics *metrics.Registry
	// LogRequests logs one line per API request at Info level.
	LogRequests bool
	// RecreateDelay is how long after a DeleteQueue a queue of the same
	// name cannot be created (QueueDeletedRecently); PurgeDelay how long
	// after a PurgeQueue the queue cannot be purged again
	// (PurgeQueueInProgress). Zero means SQS's 60 seconds; a negative
	// value turns the rule off (what fifoq serve's 0 does). They reach the
	// engine inside the DeleteQueue and PurgeQueue commands, so that the
	// log replays the same whatever the settings of a later start.
	RecreateDelay time.Duration
	PurgeDelay    time.Duration
	// AdvertiseURL is the URL clients reach this node's SQS endpoint by,
	// answered by GET /cluster/leader and /cluster/status.
	AdvertiseURL string
	// MaxClockOffset is how far a cluster member's clock may be off the
	// majority's before it refuses to lead (DefaultMaxClockOffset if 0;
	// see clocks.go).
	MaxClockOffset time.Duration
	// OnLeader, if not nil, runs each time this node becomes its cluster's
	// leader (on a cluster of one: never; the caller does its work at
	// start), with a context that ends when the leadership does. It must
	// not block for long: it runs on the goroutine that follows leadership.
	OnLeader func(ctx context.Context)
	// Memory, if not nil, is the memory budget's guard (a
	// *memguard.Guard, which the caller runs): while it refuses, sends and
	// queue creations are answered with a retryable 503, and everything
	// else (receives, deletes, reads) goes on so that consumers can drain.
	Memory MemoryGuard
	// MaxBodyBytesInFlight, if more than 0, bounds the bytes of request
	// bodies being read and handled, and of receive answers being
	// written, at once: a request over smallRequestBytes that would pass
	// it is answered at once with a retryable 503 ServiceUnavailable,
	// before its body is read. A body of unknown length counts as
	// MaxRequestBodyBytes. It is raised to MaxRequestBodyBytes if lower,
	// so that any one valid request can be served.
	MaxBodyBytesInFlight int64
}

// MemoryGuard says whether the process is at its memory budget;
// *memguard.Guard is the one fifoq serve uses.
type MemoryGuard interface {
	// Admit returns nil if a write that grows the state may go ahead, or
	// the error to refuse it with.
	Admit() error
	// Refusing reports whether such writes are refused now.
	Refusing() bool
	// Budget is the budget, in bytes.
	Budget() int64
	// Live is the memory the process needed at the last measurement, in bytes.
	Live() int64
}

var _ MemoryGuard = (*memguard.Guard)(nil)

// DefaultMaxLongPolls is the default bound on receives waiting at once.
const DefaultMaxLongPolls = 10000

// Limits that keep slow or hostile clients from holding the server: headers
// are small in SQS requests, a request must arrive within ReadTimeout, a
// response (a 20 s long poll included, or the 40 s one LocalStack's
// override header may ask for: maxOverrideWait) must be written within
// WriteTimeout, and an idle keep-alive connection is closed after
// IdleTimeout.
const (
	MaxHeaderBytes    = 64 << 10
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 120 * time.Second
	// MaxStreamsPerConn bounds concurrent requests on one HTTP/2
	// connection, and so the long polls one connection can hold.
	MaxStreamsPerConn = 100
)

// Server serves the SQS API over HTTP.
type Server struct {
	cfg      Config
	log      replog.Log
	logger   *slog.Logger
	now      func() time.Time
	clock    clock.Clock
	notifier *notifier
	movers   *moveTaskDriver
	relay    *outboxRelay
	keeper   *housekeeper
	verifier *auth.Verifier
	// membershipSigs are the membership requests carried out here.
	membershipSigs seenSignatures
	// clocks are the last measurements of the peers' clocks.
	clocks   clockWatch
	policies policyCache
	stats    statsTable
	metrics  *metrics.Registry
	// pollSlots holds one token per receive waiting for messages.
	pollSlots chan struct{}
	// bodyBytes counts the request body bytes being handled, against
	// cfg.MaxBodyBytesInFlight.
	bodyBytes atomic.Int64

	// done is closed by Shutdown; long polls answer at once when it is.
	done     chan struct{}
	doneOnce sync.Once
	httpSrv  *http.Server
	// life orders Serve's start of the background work (move tasks,
	// housekeeping, the cluster's goroutines) before Shutdown's wait for
	// it: Serve starts it only if Shutdown has not begun (shutDown).
	life     sync.Mutex
	shutDown bool

	// status is Config.Raft; cluster is the same when the log is a
	// networked cluster's member.
	status    RaftLog
	cluster   RaftLog
	fwd       *forwarder
	clusterRT *clusterRuntime

	// first is the first group (Config.Log); shards and groups the
	// others, if Config.Shards (groups.go).
	first  *group
	shards Shards
	groups groupSet
	// leaders are the leaders 421 answers named, by shard, for the
	// shards this node holds no replica of (route.go).
	leaders sync.Map
	// legacyDo holds, by member, when it last refused POST /cluster/do's
	// query form: a fifoq from before it, sent envelopes (do_wire.go).
	legacyDo sync.Map
	// remoteViews are the shards' leaders as their replicas last named
	// them to this node (watchRemoteLeader), shared by the forwards that
	// wait on one leader.
	remoteViews remoteViews
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Account == "" {
		cfg.Account = DefaultAccount
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
		if faultClockSkew != 0 {
			cfg.Clock = clock.WithNow(func() time.Time { return time.Now().Add(faultClockSkew) })
		}
	}
	if cfg.Verifier != nil && cfg.Verifier.Now == nil {
		cfg.Verifier.Now = cfg.Clock.Now
	}
	if cfg.MaxClockOffset <= 0 {
		cfg.MaxClockOffset = DefaultMaxClockOffset
	}
	if cfg.MaxBodyBytesInFlight > 0 {
		cfg.MaxBodyBytesInFlight = max(cfg.MaxBodyBytesInFlight, MaxRequestBodyBytes)
	}
	if cfg.MaxLongPolls == 0 {
		cfg.MaxLongPolls = DefaultMaxLongPolls
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Verifier == nil {
		cfg.Verifier = &auth.Verifier{DefaultAccount: cfg.Account, Now: cfg.Clock.Now}
	}
	if cfg.Log == nil {
		cfg.Log = replog.NewMemory(engine.Config{Region: cfg.Region})
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Log,
		logger:    cfg.Logger,
		now:       cfg.Clock.Now,
		clock:     cfg.Clock,
		notifier:  newNotifier(),
		done:      make(chan struct{}),
		verifier:  cfg.Verifier,
		pollSlots: make(chan struct{}, cfg.MaxLongPolls),
		metrics:   cfg.Metrics,
	}
	if err := cfg.Metrics.WatchServer(metrics.ServerSource{Queues: s.queueFigures, LongPollWaiters: s.longPollWaiters, OutsideHeap: engine.OutsideHeapBytes}); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	if g := cfg.Memory; g != nil {
		if err := cfg.Metrics.WatchMemory(metrics.MemorySource{Budget: g.Budget(), Live: g.Live, Refusing: g.Refusing}); err != nil {
			return nil, fmt.Errorf("server config: %w", err)
		}
	}
	s.notifier.clock = cfg.Clock
	cfg.Log.SetAvailableHook(s.notifier.signal)
	s.first = &group{log: cfg.Log, raft: cfg.Raft}
	if cfg.Shards != nil {
		s.shards = cfg.Shards
		s.groups.byID = map[uint32]*group{}
	}
	s.movers = newMoveTaskDriver(s)
	s.relay = newOutboxRelay(s)
	s.keeper = newHousekeeper(s)
	s.initCluster()
	s.httpSrv = &http.Server{
		Handler:           s.Handler(),
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout, // above the 40 s of the longest poll (maxOverrideWait)
		IdleTimeout:       IdleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: MaxStreamsPerConn},
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Handler returns the HTTP handler of the SQS API, with the metrics
// (/metrics) and the health probes (/healthz, /readyz, and LocalStack's
// /_localstack/health for harnesses written for it) beside it. Those
// answer GET without a signature: they are for scrapers, load balancers
// and test harnesses. The web console is under /console/, behind its own
// sign-in. A queue URL has two path segments, the first an account id
// (twelve digits), so none is shadowed.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.serveRouted)
	s.registerCluster(mux)
	mux.Handle("GET /metrics", s.metrics.Handler(s.logger))
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.HandleFunc("GET /_localstack/health", s.serveLocalstackHealth)
	mux.Handle("/console/", s.newConsole())
	mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
	mux.HandleFunc("GET "+BackupPath, s.serveBackup)
	mux.HandleFunc("GET "+ExportPath, s.serveExport)
	mux.HandleFunc(devMessagesPath, s.serveDevMessages)
	mux.HandleFunc(devMessagesPath+"/", s.serveDevMessages)
	return mux
}

// Serve accepts connections on ln until Shutdown is called.
func (s *Server) Serve(ln net.Listener) error {
	s.life.Lock()
	if !s.shutDown {
		s.movers.start()
		s.relay.start()
		s.keeper.start()
		s.startCluster()
	}
	s.life.Unlock()
	err := s.httpSrv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeTLS is Serve over TLS with the given certificate and key files.
func (s *Server) ServeTLS(ln net.Listener, certFile, keyFile string) error {
	s.movers.start()
	s.relay.start()
	s.keeper.start()
	s.startCluster()
	err := s.httpSrv.ServeTLS(ln, certFile, keyFile)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, answers waiting long polls with
// empty results, waits for in-flight requests until ctx ends, and closes
// the log.
func (s *Server) Shutdown(ctx context.Context) error {
	s.life.Lock()
	s.shutDown = true
	s.life.Unlock()
	s.doneOnce.Do(func() { close(s.done) })
	err := s.httpSrv.Shutdown(ctx)
	s.stopCluster(ctx)
	s.movers.stop()
	s.relay.stop()
	s.keeper.stop()
	if s.shards != nil {
		if cerr := s.shards.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close shards: %w", cerr)
		}
	}
	if cerr := s.log.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close log: %w", cerr)
	}
	return err
}

// apply sends a state-changing command through the log of the group ctx
// is served in.
func (s *Server) apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	resp, err := s.groupIn(ctx).log.Apply(ctx, cmd)
	s.noteMoving(cmd, err)
	if err == nil || ctx.Err() != nil {
		// When the request ended before its outcome was known, the
		// command may still apply: do what its success needs anyway
		// (waking waiters and the move-task driver is harmless if not).
		s.afterApply(cmd)
	}
	return resp, err
}

// afterApply does what the server must do when a command succeeded: wake
// long polls of a deleted or purged queue so they notice, and start the
// move-task driver when a task begins.
func (s *Server) afterApply(cmd *engine.Command) {
	switch cmd.Request.(type) {
	case *api.DeleteQueueRequest, *api.PurgeQueueRequest, *engine.FenceQueueRequest, *engine.DropQueueRequest:
		s.notifier.broadcast(cmd.Queue)
	case *api.StartMessageMoveTaskRequest:
		s.movers.kick()
	case *api.ReceiveMessageRequest, *engine.TickRequest:
		// A receive may dead-letter a message, and a move task return
		// one, to a queue of another shard (engine/outbox.go).
		s.relay.kick()
	}
}

// read answers a read-only command from the engine of the group ctx is
// served in.
func (s *Server) read(ctx context.Context, cmd *engine.Command) (resp api.Response, err error) {
	s.groupIn(ctx).log.Read(func(e *engine.Engine) { resp, err = e.Read(cmd) })
	s.noteMoving(cmd, err)
	return resp, err
}

// noteMoving forgets where the node thought cmd's queue lives when its
// group answered that the queue is moving or moved away: the client's
// retry (the answer is a retryable 503) then reads the shard map again.
func (s *Server) noteMoving(cmd *engine.Command, err error) {
	if err != nil && s.shards != nil && engine.IsQueueMoving(err) {
		s.shards.Forget(cmd.Queue)
	}
}

// readQueue answers a read-only command from the engine of the group the
// request is served in (servedLog).
func (s *Server) readQueue(ctx context.Context, cmd *engine.Command) (resp api.Response, err error) {
	s.servedLog(ctx, cmd.Queue).Read(func(e *engine.Engine) { resp, err = e.Read(cmd) })
	return resp, err
}
