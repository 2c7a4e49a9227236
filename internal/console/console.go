package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/engine"
)

// Path is where the console is mounted.
const Path = "/console/"

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 12 * time.Hour

// Backend is what the console acts through: the server, as an account.
// Every method checks that the account may do what it asks, as the SQS API
// would.
type Backend interface {
	// Do carries out an SQS request as account, with the API's validation
	// and queue-policy authorization. Queue URLs in results are paths
	// (/ACCOUNT/NAME).
	Do(ctx context.Context, account string, req api.Request) (api.Response, error)
	// Statuses returns the summary and counters of each of the queues, in
	// their order, leaving out those that no longer exist or that account
	// may not read the attributes of.
	Statuses(ctx context.Context, account string, queues []api.QueueKey) []QueueStatus
	// Groups returns a page of the message groups of queue q.
	Groups(ctx context.Context, account string, q api.QueueKey, opts engine.GroupsOptions) (engine.GroupsPage, error)
	// Peek returns the first messages of queue q without receiving them.
	Peek(ctx context.Context, account string, q api.QueueKey, opts engine.PeekOptions) ([]engine.PeekedMessage, error)
}

// QueueStatus is a queue's summary with its counters since the server
// started.
type QueueStatus struct {
	engine.QueueSummary
	Counters Counters
	// Shard is the Raft group of the cluster that holds the queue; nil
	// where the server has no shards.
	Shard *uint32
}

// Counters are a queue's running totals since the server started, the
// CloudWatch counters of SQS; the browser turns them into rates.
type Counters struct {
	Sent, SentBytes, Received, Deleted, EmptyReceives uint64
}

// Config configures a Console.
type Config struct {
	// Backend carries out what the console does. Required.
	Backend Backend
	// Credentials are the access keys operators sign in with. Empty means
	// no credentials are configured: the console opens without sign-in as
	// DefaultAccount, and only under a loopback host name or an IP address
	// (see hostAllowed).
	Credentials *auth.Store
	// DefaultAccount is the account of the console without credentials.
	DefaultAccount string
	// Region is the region of queue ARNs.
	Region string
	// Logger receives sign-in and error lines (slog.Default() if nil).
	Logger *slog.Logger
	// Now is the clock (time.Now if nil); it must be the server's, since
	// message ages are computed from it.
	Now func() time.Time
	// SessionTTL is how long a sign-in lasts (DefaultSessionTTL if 0).
	SessionTTL time.Duration
}

// Console serves the web console. It is an http.Handler for Path and
// everything under it.
type Console struct {
	cfg      Config
	mux      *http.ServeMux
	sessions *sessionKeeper
	limiter  *loginLimiter
	assets   *assetSet
}

// New returns a Console for cfg.
func New(cfg Config) (*Console, error) {
	if cfg.Backend == nil {
		return nil, errors.New("console config: no Backend")
	}
	if cfg.DefaultAccount == "" && cfg.Credentials.Empty() {
		return nil, errors.New("console config: no DefaultAccount and no Credentials")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	keeper, err := newSessionKeeper(cfg.SessionTTL, cfg.Now)
	if err != nil {
		return nil, err
	}
	assets, err := loadAssets()
	if err != nil {
		return nil, err
	}
	c := &Console{
		cfg:      cfg,
		sessions: keeper,
		limiter:  newLoginLimiter(cfg.Now),
		assets:   assets,
	}
	c.routes()
	return c, nil
}

// authRequired tells whether operators must sign in.
func (c *Console) authRequired() bool { return !c.cfg.Credentials.Empty() }

func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /console/{$}", c.serveIndex)
	m.HandleFunc("GET /console/static/{file}", c.serveAsset)

	m.Handle("GET /console/api/session", c.endpoint(anyone, c.getSession))
	m.Handle("POST /console/api/login", c.endpoint(anyone, c.login))
	m.Handle("POST /console/api/logout", c.endpoint(signedIn, c.logout))

	m.Handle("GET /console/api/queues", c.endpoint(signedIn, c.listQueues))
	m.Handle("GET /console/api/queues/{name}", c.endpoint(signedIn, c.getQueue))
	m.Handle("GET /console/api/queues/{name}/groups", c.endpoint(signedIn, c.listGroups))
	m.Handle("GET /console/api/queues/{name}/messages", c.endpoint(signedIn, c.peek))
	m.Handle("POST /console/api/queues/{name}/messages", c.endpoint(signedIn, c.sendMessage))
	m.Handle("POST /console/api/queues/{name}/purge", c.endpoint(signedIn, c.purge))
	m.Handle("POST /console/api/queues/{name}/move-tasks", c.endpoint(signedIn, c.startMoveTask))
	m.Handle("POST /console/api/move-tasks/cancel", c.endpoint(signedIn, c.cancelMoveTask))

	m.Handle("/console/api/", c.endpoint(anyone, func(*http.Request, *actor) (any, error) {
		return nil, errNotFound("no such console API endpoint")
	}))
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "404 page not found", http.StatusNotFound)
	})
	c.mux = m
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The console's own assets only: no inline script or style, no
	// framing (clickjacking), no sniffing, no referrer to other sites.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if !c.authRequired() && !hostAllowed(r.Host) {
		// Without credentials anyone who reaches the console is its
		// operator; a web page could reach it by rebinding its own
		// host name to 127.0.0.1. Such a request names that host.
		http.Error(w, "Without credentials the console answers only at a loopback or IP address (http://127.0.0.1:PORT/console/); configure credentials to use it under a host name.", http.StatusMisdirectedRequest)
		return
	}
	c.mux.ServeHTTP(w, r)
}
