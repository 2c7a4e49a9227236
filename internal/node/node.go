// Package node builds a fifoq node: the engine, its command log (in
// memory, durable in a data dir, or a member of a cluster), the HTTP
// server over them, and the queues of a config file. It is the one place
// that assembles these, from one Config: fifoq serve, fifoq restore,
// fifoqtest and the integration tests all build their nodes here, so that
// a test's server is wired as a production one is.
//
// The node does not listen: its caller hands the Server a listener
// (Server.Serve), so that it chooses the address, TLS, and when the first
// connection is accepted (after Open has declared the config file's
// queues).
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/backup"
	"github.com/fifoq/fifoq/internal/clock"
	"github.com/fifoq/fifoq/internal/config"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/metrics"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/shards"
)

// Config is everything a node is built from. Its zero value, with a
// DataDir, is a durable server alone with SQS's defaults.
type Config struct {
	// Account is the account of unauthenticated callers and of the config
	// file's queues (server.DefaultAccount if empty); Region the node's own
	// region (server.DefaultRegion if empty); SingleRegion puts every
	// request in Region, whatever it is signed for (server.Config).
	Account      string
	Region       string
	SingleRegion bool
	// Version is the fifoq version the node runs, recorded in backups.
	Version string

	// InMemory keeps the state in memory only; otherwise it is durable in
	// DataDir.
	InMemory bool
	DataDir  string
	// MinFreeBytes, SnapshotBytes and BodyFileSize are the durable log's
	// (replog.RaftConfig): 0 is its default.
	MinFreeBytes  int64
	SnapshotBytes int64
	BodyFileSize  int64
	// RestoreHeapBytes is the durable log's (replog.RaftConfig): what a
	// start's restore may leave on the heap as garbage.
	RestoreHeapBytes int64
	// NodeID is the durable log's id of this node (replog's default if
	// empty): a cluster member's id among its peers.
	NodeID string
	// Cluster makes the node a member of a networked cluster; nil, it is
	// a server alone. It needs a DataDir.
	Cluster *Cluster
	// Shards is how many Raft groups are to hold the cluster's new queues,
	// beside its first group (internal/shards): the first group's leader
	// adds shards up to it; 0 or 1 adds none, and new queues stay in the
	// first group; ShardsAuto, one per voting member, added as members
	// join. A member runs the shards the cluster has, whatever its own
	// setting.
	Shards int
	// PartitionSplitRate is the commands a second above which a partition
	// of a high-throughput FIFO queue splits in two (shards.Config's
	// SplitRate: shards.DefaultSplitRate if 0, never if negative);
	// PartitionSpread, how often high-throughput queues are spread over
	// the shards (shards.Config's Spread: negative, never, for tests that
	// split queues by hand).
	PartitionSplitRate float64
	PartitionSpread    time.Duration

	// Logger receives the node's log lines (slog.Default() if nil).
	Logger *slog.Logger
	// Clock timestamps commands and times long polls (the real clock if
	// nil): a fake one makes waits end when it is advanced.
	Clock clock.Clock
	// Verifier authenticates requests; nil accepts every request, as
	// server.Config says.
	Verifier *auth.Verifier
	// Metrics is the registry the node's metrics go to (a new one if nil).
	Metrics *metrics.Registry
	// LogRequests logs one line per API request.
	LogRequests bool
	// RecreateDelay and PurgeDelay are SQS's two cool-downs, in the
	// convention of every config of fifoq's: 0 is SQS's 60 seconds, a
	// negative value turns the rule off. Cooldown converts a user's
	// setting, where 0 turns it off.
	RecreateDelay time.Duration
	PurgeDelay    time.Duration
	// Memory and MaxBodyBytesInFlight bound the memory requests may take
	// (server.Config).
	Memory               server.MemoryGuard
	MaxBodyBytesInFlight int64

	// Queues, if not nil, is the config file whose queues are declared:
	// by Open, before it returns, on a server alone; by the leader, each
	// time a member becomes it, in a cluster.
	Queues *config.File
}

// ShardsAuto is Config.Shards for as many shards as the cluster has
// voting members (shards.Auto).
const ShardsAuto = shards.Auto

// Cluster is what makes a node a member of a cluster.
type Cluster struct {
	// Raft is the member's cluster settings (the node-to-node address,
	// the peers, TLS, the clock bound).
	Raft replog.ClusterConfig
	// AdvertiseURL is the URL clients reach this member's SQS endpoint by.
	AdvertiseURL string
}

// Node is a built node. Its Server serves once given a listener; Close
// (or Server.Shutdown) stops it and closes the log.
type Node struct {
	// Server answers the SQS API and the node's other endpoints.
	Server *server.Server
	// Raft is the durable log (the first group, in a cluster with
	// shards); nil for a node in memory.
	Raft *replog.Raft
	// Shards are a cluster member's other groups; nil for a server alone.
	Shards *shards.Set
	// Log is the command log the server applies commands through.
	Log replog.Log
}

// applyTimeout bounds the declaration of a config file's queues.
const applyTimeout = 2 * time.Minute

// Cooldown turns a user's setting of a cool-down, where 0 turns the rule
// off (fifoq serve --recreate-delay 0, fifoqtest.WithRecreateDelay(0)), into
// Config's convention, where 0 is SQS's default and a negative value turns
// it off.
func Cooldown(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// Open builds a node from cfg: the engine, the log (restoring the data
// dir's state), the server, and on a server alone the config file's
// queues. On error nothing is left open.
func Open(cfg Config) (*Node, error) {
	if cfg.Account == "" {
		cfg.Account = server.DefaultAccount
	}
	if cfg.Region == "" {
		cfg.Region = server.DefaultRegion
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Queues != nil {
		if err := cfg.Queues.Check(cfg.Account, cfg.Region); err != nil {
			return nil, err
		}
	}
	n := &Node{}
	if err := n.openLog(cfg); err != nil {
		return nil, err
	}
	if err := n.openShards(cfg); err != nil {
		n.Log.Close()
		return nil, err
	}
	srv, err := server.New(n.serverConfig(cfg))
	if err != nil {
		if n.Shards != nil {
			n.Shards.Close()
		}
		n.Log.Close()
		return nil, err
	}
	n.Server = srv
	if n.Shards != nil {
		n.Shards.SetSteps(srv.MoveSteps())
	}
	if cfg.Queues != nil && cfg.Cluster == nil {
		// The file's queues are declared before the caller serves, so
		// that clients never see the server without them.
		if err := declare(context.Background(), srv, cfg); err != nil {
			srv.Shutdown(context.Background())
			return nil, fmt.Errorf("declare the config file's queues: %w", err)
		}
	}
	return n, nil
}

// openLog opens the log of cfg, which makes its engine (restoring the
// data dir's state).
func (n *Node) openLog(cfg Config) error {
	engineCfg := engine.Config{Region: cfg.Region}
	switch {
	case cfg.InMemory:
		if cfg.Cluster != nil {
			return errors.New("node: a cluster member needs a data dir")
		}
		n.Log = replog.NewMemory(engineCfg)
		return nil
	case cfg.DataDir == "":
		return errors.New("node: no data dir (or InMemory)")
	}
	rc := replog.RaftConfig{Engine: engineCfg, Dir: cfg.DataDir, NodeID: cfg.NodeID, Logger: cfg.Logger, MinFreeBytes: cfg.MinFreeBytes,
		SnapshotBytes: cfg.SnapshotBytes, BodyFileSize: cfg.BodyFileSize, RestoreHeapBytes: cfg.RestoreHeapBytes}
	if cfg.Metrics != nil {
		rc.Observer = cfg.Metrics.LogObserver()
	}
	if c := cfg.Cluster; c != nil {
		raftCluster := c.Raft
		rc.Cluster = &raftCluster
	}
	raftLog, err := replog.OpenRaft(rc)
	if err != nil {
		return fmt.Errorf("open data dir %s: %w", cfg.DataDir, err)
	}
	n.Raft, n.Log = raftLog, raftLog
	return nil
}

// openShards opens a cluster member's shards beside its first group. A
// server alone has none, and refuses a data dir whose map names some (a
// cluster's backup restored): their queues would be missing.
func (n *Node) openShards(cfg Config) error {
	if cfg.Cluster == nil {
		if n.Raft != nil {
			if ids := shards.Recorded(n.Raft); len(ids) > 0 {
				return fmt.Errorf("the data dir %s holds %d shards of a cluster (its queues are in them): serve it as a cluster member, with --raft-addr (and --node-id %s)",
					cfg.DataDir, len(ids), n.Raft.NodeID())
			}
		}
		return nil
	}
	sc := replog.RaftConfig{Logger: cfg.Logger, MinFreeBytes: cfg.MinFreeBytes, SnapshotBytes: cfg.SnapshotBytes,
		BodyFileSize: cfg.BodyFileSize, RestoreHeapBytes: cfg.RestoreHeapBytes}
	shc := shards.Config{Count: cfg.Shards, Dir: cfg.DataDir, Shard: sc, Logger: cfg.Logger,
		SplitRate: cfg.PartitionSplitRate, Spread: cfg.PartitionSpread}
	if cfg.Metrics != nil {
		// Each shard's body store and snapshots are its own.
		obs := cfg.Metrics.LogObserver()
		shc.Observe = func(id uint32) replog.Observer { return obs.Group(id) }
		shc.Forget = obs.ForgetGroup
		shc.Moved = cfg.Metrics.QueueMoved
	}
	set, err := shards.Open(n.Raft, shc)
	if err != nil {
		return fmt.Errorf("open the shards in %s: %w", cfg.DataDir, err)
	}
	n.Shards = set
	return nil
}

// Restore makes dir, which must be empty, the data dir of a new server
// alone holding the state a backup (fifoq backup) reads from r: a node
// with the id nodeID (a cluster's others then join it), in region, which
// must be the backup's; empty, it is the backup's. The data dir belongs to
// that region from then on. The backup's header and its first snapshot's
// head are read before anything is written (replog.CheckBackup): a backup
// of another region, or one this fifoq cannot install, is refused before
// dir is made. It waits up to timeout for the restored state to be
// applied, and leaves the log closed.
//
// A backup of a cluster with shards (format 2) restores each shard into
// its replica's dir (dir/shards/N) and the first group into dir, whose
// map then puts every shard on this node (shards.Adopt): the data dir is
// served as a cluster member (fifoq serve --raft-addr), which others may
// join. The header returned is then the first group's, with the messages
// of every part and the backup's Groups.
func Restore(dir, nodeID, region string, r io.Reader, timeout time.Duration, logger *slog.Logger) (backup.Header, error) {
	f, err := backup.Open(r)
	if err != nil {
		return backup.Header{}, err
	}
	sharded := f.Version == backup.GroupsVersion
	var total backup.Header
	var messages int64
	for {
		hdr, snap, err := f.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return total, err
		}
		if hdr, snap, err = replog.CheckBackup(hdr, snap); err != nil {
			return hdr, err
		}
		switch {
		case region == "":
			region = hdr.Region
		case region != hdr.Region:
			return hdr, fmt.Errorf("the backup is of region %s, not %s, and a data dir cannot change region: restore it without --region (it takes the backup's), or with --region %s",
				hdr.Region, region, hdr.Region)
		}
		groupDir := dir
		if hdr.Shard != 0 {
			groupDir = filepath.Join(dir, "shards", strconv.FormatUint(uint64(hdr.Shard), 10))
		}
		if err := restoreGroup(groupDir, nodeID, region, hdr, snap, timeout, logger, sharded && hdr.Shard == 0); err != nil {
			if hdr.Shard != 0 {
				err = fmt.Errorf("shard %d: %w", hdr.Shard, err)
			}
			return hdr, err
		}
		messages += hdr.Messages
		total = hdr
	}
	total.Messages = messages
	total.Groups = f.Header.Groups
	return total, nil
}

// restoreGroup installs one group's backup into a new log in dir; adopt
// makes the map of a restored first group put every shard on this node.
func restoreGroup(dir, nodeID, region string, hdr backup.Header, snap io.Reader, timeout time.Duration, logger *slog.Logger, adopt bool) error {
	n := &Node{}
	if err := n.openLog(Config{DataDir: dir, NodeID: nodeID, Region: region, Logger: logger}); err != nil {
		return err
	}
	err := n.Raft.RestoreBackup(hdr, snap, timeout)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err = liftHolds(ctx, n.Raft)
		if err == nil && adopt {
			err = shards.Adopt(ctx, n.Raft)
		}
		cancel()
	}
	if err == nil {
		// What the restore applied after installing the backup (the
		// forgotten incarnations, the lifted holds, the adopted map) goes
		// into the snapshot the node starts from: a node serves its
		// newest snapshot's state until it leads again, and the backup's
		// map routes requests to the cluster the backup was taken of.
		err = n.Raft.SnapshotNow()
	}
	if cerr := n.Raft.Close(); err == nil {
		err = cerr
	}
	return err
}

// liftHolds lifts the holds of departures that a restored group's state
// carries: a backup of a cluster with shards holds every group while it
// reads them (engine.HoldDeparturesRequest), so each part holds it too,
// for up to two minutes after it was read. That backup is over; the
// restored cluster need not wait out its hold before it relays messages
// between shards and moves queues.
func liftHolds(ctx context.Context, l *replog.Raft) error {
	var keys []string
	l.Read(func(e *engine.Engine) { keys = e.MetaKeys(engine.HoldPrefix) })
	for _, k := range keys {
		id := strings.TrimPrefix(k, engine.HoldPrefix)
		if _, err := l.Apply(ctx, &engine.Command{Request: &engine.HoldDeparturesRequest{ID: id}}); err != nil {
			return fmt.Errorf("lift the backup's hold %s: %w", id, err)
		}
	}
	return nil
}

// serverConfig is the server's part of cfg, over n's log.
func (n *Node) serverConfig(cfg Config) server.Config {
	sc := server.Config{Account: cfg.Account, Region: cfg.Region, SingleRegion: cfg.SingleRegion, Version: cfg.Version,
		Logger: cfg.Logger, Clock: cfg.Clock, Log: n.Log, Verifier: cfg.Verifier, Metrics: cfg.Metrics,
		LogRequests: cfg.LogRequests, RecreateDelay: cfg.RecreateDelay, PurgeDelay: cfg.PurgeDelay,
		Memory: cfg.Memory, MaxBodyBytesInFlight: cfg.MaxBodyBytesInFlight}
	if n.Raft != nil {
		sc.Raft = n.Raft // not a nil *Raft in the interface
	}
	if n.Shards != nil {
		sc.Shards = n.Shards
	}
	if c := cfg.Cluster; c != nil {
		sc.AdvertiseURL = c.AdvertiseURL
		sc.MaxClockOffset = c.Raft.MaxClockOffset
		if cfg.Queues != nil {
			// Each leader declares the file's queues as it takes over; the
			// server is set before any member can lead.
			sc.OnLeader = func(ctx context.Context) {
				go func() {
					n.awaitShardMap(ctx, cfg)
					// Declaring is idempotent: a try that met a shard
					// without a leader yet is made again.
					for try := 1; ; try++ {
						err := declare(ctx, n.Server, cfg)
						if err == nil || ctx.Err() != nil {
							return
						}
						if try == declareTries {
							cfg.Logger.Error("cannot apply the config file on becoming leader", "err", err)
							return
						}
						cfg.Logger.Warn("could not apply the config file on becoming leader; trying again", "err", err)
						select {
						case <-time.After(time.Second):
						case <-ctx.Done():
							return
						}
					}
				}()
			}
		}
	}
	return sc
}

// declareTries is how many times a new leader tries to declare the config
// file's queues, a second apart.
const declareTries = 5

// shardMapWait bounds how long a new leader waits for the shard map
// before it declares the config file's queues.
const shardMapWait = 30 * time.Second

// awaitShardMap waits, on a member configured with shards, until the
// first group's map names them (the leader writes it as it takes over, or
// once every member reads its format), so that the config file's queues
// are placed in the shards as any new queue is, rather than all in the
// first group. It gives up after shardMapWait (an older member in a
// rolling upgrade holds the map back): the queues then stay in the first
// group, where they work as before.
func (n *Node) awaitShardMap(ctx context.Context, cfg Config) {
	if n.Shards == nil || (cfg.Shards < 2 && cfg.Shards != ShardsAuto) {
		return
	}
	want := cfg.Shards
	if want == ShardsAuto {
		want = 1 // as many as the voters: the leader writes them at once
	}
	deadline := time.Now().Add(shardMapWait)
	for len(n.Shards.Named()) < want {
		if time.Now().After(deadline) {
			cfg.Logger.Warn("the shard map is not written yet: the config file's new queues go to the first group", "shards", cfg.Shards)
			return
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// declare declares the config file's queues through srv, and logs what
// it did.
func declare(ctx context.Context, srv *server.Server, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	f := cfg.Queues
	res, err := f.Apply(ctx, srv, cfg.Account, cfg.Region)
	if err != nil {
		return err
	}
	cfg.Logger.Info("config file loaded", "file", f.Path,
		"queues_created", res.Count(config.Created), "queues_updated", res.Count(config.Updated),
		"queues_unchanged", res.Count(config.Unchanged),
		"created", res.Names(config.Created), "updated", res.Names(config.Updated))
	return nil
}

// Halted returns a channel closed once a storage fault or a fence has
// stopped the node's durable log, its first group or any of its shards
// (see Fault): the node answers no more requests, and its process should
// exit, so that a supervisor restarts it on a sound disk. Nil, never
// closed, for a node in memory.
func (n *Node) Halted() <-chan struct{} {
	if n.Raft == nil {
		return nil
	}
	if n.Shards == nil {
		return n.Raft.Halted()
	}
	return n.Shards.Halted() // the first group's halt included
}

// Fault returns what stopped the node (Halted), or nil.
func (n *Node) Fault() error {
	if n.Raft == nil {
		return nil
	}
	if err := n.Raft.Fault(); err != nil || n.Shards == nil {
		return err
	}
	return n.Shards.Fault()
}

// Close stops the node at once: the server stops taking requests, waits
// up to ctx for those in flight, and closes the log.
func (n *Node) Close(ctx context.Context) error {
	return n.Server.Shutdown(ctx)
}
