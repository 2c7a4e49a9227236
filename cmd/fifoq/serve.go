package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/config"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/memguard"
	"github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
)

// serveOptions are the flags of "fifoq serve".
type serveOptions struct {
	listen   string
	dataDir  string
	inMemory bool
	minFree  int64
	// maxMemory is --max-memory as given: "" for the cgroup's limit.
	maxMemory string
	// bodyFileSize is --body-file-size as given.
	bodyFileSize string
	creds        string
	insecure     bool
	singleRegion bool
	tlsCert      string
	tlsKey       string
	account      string
	region       string
	logJSON      bool
	logReqs      bool
	config       string
	// recreateDelay and purgeDelay are SQS's cool-downs; 0 turns one off.
	recreateDelay time.Duration
	purgeDelay    time.Duration
	// cluster holds the flags of a cluster member (serve_cluster.go).
	cluster clusterOptions
}

func serve(args []string, stdout, stderr io.Writer) int {
	var opts serveOptions
	fs := serveFlagSet(&opts, stderr)
	if exit, stop := parseArgs(fs, args, false, stdout, stderr); stop {
		return exit
	}
	return serveParsed(fs, &opts, stdout, stderr)
}

// serveFlagSet defines the flags of "fifoq serve" on opts: the one
// definition that parsing, shell completion and the man page all read.
func serveFlagSet(opts *serveOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.listen, "listen", "127.0.0.1:9324", "address to listen on (host:port)")
	fs.StringVar(&opts.dataDir, "data-dir", "./fifoq-data", "directory of the durable command log and snapshots")
	fs.Int64Var(&opts.minFree, "min-free-disk-mb", replog.DefaultMinFreeBytes>>20, "refuse writes (503) while the data dir's disk has less than this many MiB free")
	fs.StringVar(&opts.maxMemory, "max-memory", "", "memory budget, such as 1GiB: sends are refused (503, retryable) as memory nears it; 0 turns it off (default: the cgroup's memory limit, if there is one)")
	fs.StringVar(&opts.bodyFileSize, "body-file-size", memguard.FormatSize(replog.DefaultBodyFileSize), "size of the files message bodies are kept in on disk (64KiB to 1GiB): a file's space is given back whole, so smaller files give it back sooner, in more files")
	fs.BoolVar(&opts.inMemory, "in-memory", false, "keep all state in memory only (for tests and quick use): it is lost when the server stops")
	fs.StringVar(&opts.account, "account", server.DefaultAccount, "account id of callers and of the queues they create")
	fs.StringVar(&opts.region, "region", server.DefaultRegion, "the server's own region: of unsigned requests and the config file's queues")
	fs.BoolVar(&opts.logJSON, "log-json", false, "write log lines as JSON instead of text")
	fs.BoolVar(&opts.logReqs, "log-requests", false, "log one line per API request (id, action, account, queue, status, error code, duration)")
	fs.StringVar(&opts.creds, "credentials", "", "file of access keys (one \"ACCESS_KEY_ID SECRET_ACCESS_KEY ACCOUNT_ID\" per line); with credentials every request must be signed")
	fs.BoolVar(&opts.singleRegion, "single-region", false, "every request acts on the queues of --region, whatever region it is signed for (as ElasticMQ and fifoq before regions)")
	fs.BoolVar(&opts.insecure, "insecure", false, "allow listening beyond loopback without credentials: anyone who can reach the port can use every queue")
	fs.StringVar(&opts.tlsCert, "tls-cert", "", "serve HTTPS with this certificate file (PEM); needs --tls-key")
	fs.StringVar(&opts.tlsKey, "tls-key", "", "private key file (PEM) for --tls-cert")
	fs.DurationVar(&opts.recreateDelay, "recreate-delay", api.QueueDeletionCooldown, "how long after DeleteQueue a queue of the same name cannot be created (QueueDeletedRecently, as SQS); 0 turns it off")
	fs.DurationVar(&opts.purgeDelay, "purge-delay", api.PurgeInterval, "how long after PurgeQueue the queue cannot be purged again (PurgeQueueInProgress, as SQS); 0 turns it off")
	fs.StringVar(&opts.config, "config", "", "YAML config file of settings and queues to declare at start (env FIFOQ_CONFIG); flags and FIFOQ_* variables override its settings")
	opts.cluster.define(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: fifoq serve [flags]\n\nRuns the SQS-compatible server.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// serveParsed runs the server with the parsed flags; loadConfig sets the
// flags the command line did not, through fs, in *o.
func serveParsed(fs *flag.FlagSet, o *serveOptions, stdout, stderr io.Writer) int {
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fifoq serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq serve: %v\n", err)
		return 2
	}
	opts := *o
	set, err := checkServe(opts, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq serve: %v\n", err)
		return 2
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if opts.logJSON {
		handler = slog.NewJSONHandler(stderr, nil)
	}
	logger := slog.New(handler)
	cpuLimit := setMaxProcs(logger)
	limitCtx, stopFollowingLimit := context.WithCancel(context.Background())
	defer stopFollowingLimit()
	go cpuLimit.run(limitCtx)
	if opts.cluster.exposed() {
		logger.Warn("--raft-insecure: node-to-node traffic beyond loopback has no TLS; anyone who can reach the port can send Raft messages that rewrite every node's state, read the messages the nodes exchange, and pass for a member forwarding requests", "raft_addr", opts.cluster.raftAddr)
	}

	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		logger.Error("cannot listen", "addr", opts.listen, "err", err)
		return 1
	}
	// The budget's soft limit is set before the state is restored, so
	// that a restart holds to it too.
	var guard *memguard.Guard
	if set.budget > 0 {
		guard = memguard.New(set.budget, engine.OutsideHeapBytes, logger)
		engine.WatchOutsideHeap(guard.OutsideHeapChanged)
		defer engine.WatchOutsideHeap(nil)
		guardCtx, stopGuard := context.WithCancel(context.Background())
		defer stopGuard()
		go guard.Run(guardCtx)
		logger.Info("memory budget", "budget", memguard.HumanSize(set.budget), "from", set.budgetFrom,
			"go_soft_limit", memguard.HumanSize(guard.SoftLimit()))
	}
	nc, err := nodeConfig(opts, cfg, set, ln, guard, logger)
	if err != nil {
		ln.Close()
		logger.Error("cannot set up the cluster", "err", err)
		return 1
	}
	began := time.Now()
	n, err := node.Open(nc)
	if err != nil {
		ln.Close()
		logger.Error("cannot start", "dir", opts.dataDir, "err", err)
		return 1
	}
	if n.Raft != nil {
		logger.Info("recovered state", "dir", opts.dataDir, "took", time.Since(began).Round(time.Millisecond))
	}
	if set.store.Empty() && (!isLoopback(opts.listen) || opts.cluster.exposed()) {
		logger.Warn("--insecure: no credentials are configured and the server listens beyond loopback; every request is accepted, unsigned or not, and anyone who can reach it can read, write and delete every queue", "listen", opts.listen, "raft_addr", opts.cluster.raftAddr)
	}
	logStarted(logger, opts, set, ln)
	return runNode(n, ln, opts, cfg, logger)
}

// serveSettings are what checkServe derives from the flags.
type serveSettings struct {
	budget       int64  // the memory budget in bytes, 0 for none
	budgetFrom   string // where the budget came from
	bodyFileSize int64
	store        *auth.Store
	keys         int // the number of access keys in store
}

// checkServe checks the flags and the config file against each other,
// and derives the settings they give.
func checkServe(opts serveOptions, cfg *config.File) (serveSettings, error) {
	var set serveSettings
	var err error
	if opts.recreateDelay < 0 || opts.purgeDelay < 0 {
		return set, errors.New("--recreate-delay and --purge-delay cannot be negative (0 turns them off)")
	}
	if set.budget, set.budgetFrom, err = memoryBudget(opts.maxMemory); err != nil {
		return set, fmt.Errorf("--max-memory: %w", err)
	}
	if set.bodyFileSize, err = bodyFileSizeOf(opts.bodyFileSize); err != nil {
		return set, fmt.Errorf("--body-file-size: %w", err)
	}
	if !validAccount(opts.account) {
		return set, fmt.Errorf("--account must be 12 digits, got %q", opts.account)
	}
	if err := opts.cluster.check(opts.inMemory); err != nil {
		return set, err
	}
	if (opts.tlsCert == "") != (opts.tlsKey == "") {
		return set, errors.New("--tls-cert and --tls-key go together")
	}
	if cfg != nil {
		if err := cfg.Check(opts.account, opts.region); err != nil {
			return set, err
		}
	}
	if set.store, set.keys, err = loadCredentials(opts, cfg); err != nil {
		return set, err
	}
	if set.store.Empty() && !isLoopback(opts.listen) && !opts.insecure {
		return set, fmt.Errorf(`refusing to listen on %s without credentials: anyone who can reach it could read,
write and delete every queue. Either
  - configure credentials: --credentials FILE, or FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY;
  - listen on loopback only: --listen 127.0.0.1:9324;
  - or accept unauthenticated requests from the network: --insecure.`, opts.listen)
	}
	// A member's requests on the node-to-node port are served as they
	// come, so without credentials an exposed port serves every queue too.
	if set.store.Empty() && opts.cluster.exposed() && !opts.insecure {
		return set, fmt.Errorf(`refusing --raft-insecure on %s without credentials: anyone who can reach that port
could pass for a member and read, write and delete every queue. Either
  - configure credentials: --credentials FILE, or FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY;
  - or accept unauthenticated requests from the network: --insecure.`, opts.cluster.raftAddr)
	}
	return set, nil
}

// nodeConfig is the node the flags describe. It fails if the cluster's
// TLS files cannot be read: the flags' check does not read files.
func nodeConfig(opts serveOptions, cfg *config.File, set serveSettings, ln net.Listener, guard *memguard.Guard, logger *slog.Logger) (node.Config, error) {
	nc := node.Config{Account: opts.account, Region: opts.region, SingleRegion: opts.singleRegion, Version: readBuildInfo().version,
		InMemory: opts.inMemory, DataDir: opts.dataDir, MinFreeBytes: minFreeBytes(opts.minFree),
		SnapshotBytes: replog.SnapshotBytesWithin(set.budget), RestoreHeapBytes: replog.RestoreHeapWithin(set.budget), BodyFileSize: set.bodyFileSize, NodeID: opts.cluster.nodeID,
		Logger: logger, Verifier: &auth.Verifier{Store: set.store, DefaultAccount: opts.account, Region: opts.region},
		LogRequests: opts.logReqs, RecreateDelay: node.Cooldown(opts.recreateDelay), PurgeDelay: node.Cooldown(opts.purgeDelay),
		Memory: memoryGuard(guard), MaxBodyBytesInFlight: set.budget / 20, Queues: cfg}
	if opts.cluster.clustered() {
		rc, err := opts.cluster.raftCluster()
		if err != nil {
			return nc, err
		}
		nc.Cluster = &node.Cluster{Raft: *rc, AdvertiseURL: opts.cluster.advertise(ln, opts.tlsCert != "")}
		nc.Shards = int(opts.cluster.shards)
		nc.PartitionSplitRate = float64(opts.cluster.partitionSplitRate)
		if opts.cluster.partitionSplitRate == 0 {
			nc.PartitionSplitRate = -1 // the user's 0 is never; the node's, the default
		}
	}
	return nc, nil
}

// logStarted logs the line that says the server is up, and how.
func logStarted(logger *slog.Logger, opts serveOptions, set serveSettings, ln net.Listener) {
	storage := "memory only: all queues and messages are lost when the server stops"
	if !opts.inMemory {
		storage = "durable in " + opts.dataDir
	}
	authMode := "any signature accepted (no credentials configured; loopback only)"
	switch {
	case !set.store.Empty():
		authMode = fmt.Sprintf("SigV4 required (%d access keys)", set.keys)
	case !isLoopback(opts.listen) || opts.cluster.exposed():
		// Only --insecure gets a server without credentials this far.
		authMode = "no credentials configured; unsigned requests accepted from any address (--insecure)"
	}
	scheme := "http"
	if opts.tlsCert != "" {
		scheme = "https"
	}
	logger.Info("fifoq started", "version", readBuildInfo().version, "listen", scheme+"://"+ln.Addr().String(),
		"account", opts.account, "region", opts.region, "storage", storage, "auth", authMode, "log_requests", opts.logReqs,
		"recreate_delay", opts.recreateDelay, "purge_delay", opts.purgeDelay)
	if opts.cluster.clustered() {
		logger.Info("cluster member", "node_id", opts.cluster.nodeID, "raft_addr", opts.cluster.raftAddr,
			"peers", opts.cluster.peers, "join", opts.cluster.join, "raft_tls", opts.cluster.tlsCert != "")
	}
}

// runNode serves on ln until SIGINT or SIGTERM (a graceful stop, exit 0),
// the server fails, or a storage fault or fence stops the durable log
// (exit 1, so that a supervisor restarts the node, which then recovers
// from what its disk holds).
func runNode(n *node.Node, ln net.Listener, opts serveOptions, cfg *config.File, logger *slog.Logger) int {
	srv := n.Server
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	joinRefused := make(chan error, 1)
	if opts.cluster.join != "" {
		go func() {
			// A member behind the log may still claim this node's id
			// for the data dir before: once added, this node knows
			// better than to stop at its word (replog, Raft.Admitted).
			admitted := func() {
				if err := n.Raft.Admitted(); err != nil {
					logger.Warn("could not record that the cluster added this node", "err", err)
				}
			}
			if err := joinCluster(ctx, opts.cluster.join, opts.cluster, n.Raft.Incarnation(), clusterCredential(opts, cfg), opts.region, logger, admitted); err != nil {
				joinRefused <- err
			}
		}()
	}
	halted := n.Halted() // never closed for the in-memory log
	errc := make(chan error, 1)
	go func() {
		if opts.tlsCert != "" {
			errc <- srv.ServeTLS(ln, opts.tlsCert, opts.tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		if err != nil {
			logger.Error("server failed", "err", err)
			return 1
		}
		return 0
	case err := <-joinRefused:
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		logger.Error("exiting: this node cannot join the cluster", "err", err)
		return 1
	case <-halted:
		// The log has said why, in one line; answer what is in flight
		// (each request's outcome is known or said to be unknown).
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			logger.Warn("shutdown after the node stopped", "err", err)
		}
		logger.Error("exiting: this node stopped", "err", n.Fault())
		return 1
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	<-errc
	logger.Info("stopped")
	return 0
}

func validAccount(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// memoryBudget turns --max-memory into bytes, and says where the budget
// came from: the flag's value, or the cgroup's limit when the flag is not
// given. 0 means no budget.
func memoryBudget(flagValue string) (int64, string, error) {
	if flagValue == "" {
		if limit, dir, ok := memguard.CgroupLimit(); ok {
			return limit, "the memory limit of cgroup " + dir, nil
		}
		return 0, "", nil
	}
	n, err := memguard.ParseSize(flagValue)
	if err != nil {
		return 0, "", err
	}
	switch {
	case n == 0:
		return 0, "", nil
	case n < minMemoryBudget:
		return 0, "", fmt.Errorf("%s is below the smallest budget fifoq can keep to (%s)", flagValue, memguard.HumanSize(minMemoryBudget))
	}
	return n, "--max-memory", nil
}

// The bounds of --body-file-size: under 64 KiB, a file would hold few
// bodies of the largest size; a record's offset must fit 32 bits.
const minBodyFileSize, maxBodyFileSize = 64 << 10, 1 << 30

// bodyFileSizeOf turns --body-file-size into bytes.
func bodyFileSizeOf(flagValue string) (int64, error) {
	n, err := memguard.ParseSize(flagValue)
	if err != nil {
		return 0, err
	}
	if n < minBodyFileSize || n > maxBodyFileSize {
		return 0, fmt.Errorf("%s is not between %s and %s", flagValue, memguard.FormatSize(minBodyFileSize), memguard.FormatSize(maxBodyFileSize))
	}
	return n, nil
}

// memoryGuard returns g as the server's MemoryGuard: nil, not a nil
// pointer in an interface, when there is no budget.
func memoryGuard(g *memguard.Guard) server.MemoryGuard {
	if g == nil {
		return nil
	}
	return g
}

// minMemoryBudget is the smallest --max-memory taken: under it, the
// server's own working memory (buffers of a few requests of 1 MiB, Raft's
// and the runtime's) would keep sends refused from the start.
const minMemoryBudget = 64 << 20

// minFreeBytes turns --min-free-disk-mb into bytes; 0 turns the check off.
func minFreeBytes(mb int64) int64 {
	if mb <= 0 {
		return -1
	}
	return mb << 20
}

// loadCredentials gathers the access keys of --credentials, of the
// FIFOQ_ACCESS_KEY_ID / FIFOQ_SECRET_ACCESS_KEY environment variables and
// of the config file's credentials.keys (cfg may be nil).
func loadCredentials(opts serveOptions, cfg *config.File) (*auth.Store, int, error) {
	creds, err := gatherCredentials(opts, cfg)
	if err != nil {
		return nil, 0, err
	}
	store, err := auth.NewStore(creds)
	return store, len(creds), err
}

// gatherCredentials lists the access keys loadCredentials puts in a store.
func gatherCredentials(opts serveOptions, cfg *config.File) ([]auth.Credential, error) {
	var creds []auth.Credential
	if cfg != nil {
		creds = append(creds, cfg.Credentials(opts.account)...)
	}
	if opts.creds != "" {
		c, err := auth.LoadCredentialsFile(opts.creds)
		if err != nil {
			return nil, err
		}
		creds = append(creds, c...)
	}
	env, err := auth.CredentialsFromEnv(os.Getenv, opts.account)
	if err != nil {
		return nil, err
	}
	return append(creds, env...), nil
}

// isLoopback reports whether a listen address accepts connections from
// this machine only.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
