package replog

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/bodystore"
	"github.com/fifoq/fifoq/internal/engine"
)

// RaftConfig configures a durable, Raft-backed log.
type RaftConfig struct {
	// Engine configures the log's engine (its region; the log sets its
	// body store).
	Engine engine.Config
	// Dir holds the log, the snapshots and the lock file.
	Dir string
	// NodeID names this node in the Raft configuration.
	NodeID string
	// Logger receives the log's messages (slog.Default() if nil).
	Logger *slog.Logger
	// MaxBatchCommands and MaxBatchBytes bound one group commit: how many
	// commands, and how many encoded bytes, one log entry may carry.
	MaxBatchCommands int
	MaxBatchBytes    int
	// SnapshotEntries and SnapshotBytes trigger a snapshot: after this many
	// log entries, or this many bytes of them, since the last one.
	SnapshotEntries uint64
	SnapshotBytes   int64
	// RestoreHeapBytes bounds the garbage a start may leave on the heap
	// while it restores the newest snapshot with the collector held off
	// (see withGCHeld); 0 bounds it by the snapshot's size alone.
	// RestoreHeapWithin gives the value that fits a memory budget.
	RestoreHeapBytes int64
	// BodyFileSize is the size of the body store's files
	// (bodystore.DefaultFileSize if 0): a file is removed, or compacted,
	// as a whole, so smaller files give space back sooner, for more files.
	BodyFileSize int64
	// SnapshotsRetained is how many snapshots are kept on disk.
	SnapshotsRetained int
	// trailingLogs, if not 0, is how many entries a snapshot leaves in
	// the log (1024 if 0): tests lower it to make followers install
	// snapshots.
	trailingLogs uint64
	// walSegmentSize, if not 0, is the size of the log's segment files:
	// a follower needs a snapshot only once the entries it lacks are
	// gone with their segment (raft-wal still reads entries compacted
	// away that are in the segment written to).
	walSegmentSize int
	// MinFreeBytes is the free space the data dir's file system must keep:
	// below it, writes are refused with ServiceUnavailable (reads go on)
	// until space returns, so that the log never runs into a full disk in
	// the middle of a write. Negative disables the check.
	MinFreeBytes int64
	// Observer, if not nil, is told of every group commit and snapshot,
	// for metrics.
	Observer Observer
	// CloseTimeout bounds Close (DefaultCloseTimeout if zero); see Close.
	CloseTimeout time.Duration

	// wrapStore, if set, wraps the log store Raft is given: tests use it
	// to make a disk write hang, which a real disk cannot be made to do
	// on demand.
	wrapStore func(raft.LogStore) raft.LogStore
	// tidyEvery, if not 0, is how often the log tidies its body store
	// (snapshotForSpaceEvery if 0): a test that looks itself sets it
	// beyond its own length, so that no look of the loop's comes between.
	tidyEvery time.Duration
	// sharedLog, if set, is a shared log a log that is not a shard keeps
	// its entries in, as a shard given ShardConfig.Log does: tests and
	// benchmarks use it to share one among single-node logs.
	sharedLog *SharedLog
	// rejectCommands, if set, makes this node's state machine refuse the
	// entries whose commands it returns an error for, as a fifoq that
	// cannot read them would (fsm.reject).
	rejectCommands func([]*engine.Command) error
	// Cluster, if not nil, makes the log a member of a cluster over TCP
	// (cluster.go); nil is a cluster of one, as the data dir always was.
	Cluster *ClusterConfig
	// Shard, if not nil, makes the log one shard of a cluster member
	// (shard.go): a Raft group beside the member's first one, whose
	// connections, identity and entry format it shares. Cluster is then
	// the first group's, and is not to be set.
	Shard *ShardConfig
}

func (c *RaftConfig) setDefaults() {
	if c.NodeID == "" {
		c.NodeID = "node-1"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBatchCommands == 0 {
		c.MaxBatchCommands = 256
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = 1 << 20
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = 16384
	}
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = DefaultSnapshotBytes
	}
	if c.SnapshotsRetained == 0 {
		c.SnapshotsRetained = 2
	}
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = DefaultMinFreeBytes
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
}

// DefaultBodyFileSize is RaftConfig.BodyFileSize's default.
const DefaultBodyFileSize = bodystore.DefaultFileSize

// DefaultSnapshotBytes is RaftConfig.SnapshotBytes's default.
const DefaultSnapshotBytes = 256 << 20

// SnapshotBytesWithin returns the SnapshotBytes that keeps a restart within
// a memory budget (0 for none: the default). A start replays the log
// entries after the newest snapshot, and Raft reads them ahead of the
// state machine with nothing to bound it (up to 128 batches of
// MaxAppendEntries entries): the whole tail is in memory at once, beside
// the state it rebuilds. A tenth of the budget fits between the point
// where sends are refused (70 %) and the runtime's soft limit (90 %); the
// cost is more snapshots while a large backlog is near the budget.
func SnapshotBytesWithin(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return max(min(DefaultSnapshotBytes, budget/10), 4<<20)
}

// RestoreHeapWithin returns the RestoreHeapBytes that keeps a start within
// a memory budget (0 for none). A start at the budget holds a backlog's
// state near the point where sends are refused (70 % of the budget); the
// garbage the restore makes meanwhile must fit in the tenth up to the
// runtime's soft limit, beside the log's tail, which SnapshotBytesWithin
// bounds to the same tenth in its turn.
func RestoreHeapWithin(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return max(budget/10, 4<<20)
}

// DefaultMinFreeBytes is the free disk space below which writes are refused.
const DefaultMinFreeBytes = 64 << 20

// Raft is a Log kept in a hashicorp/raft log on disk (raft-wal segments
// and file snapshots). A single node bootstraps itself as a cluster of one.
//
// A command is acknowledged only after the log entry that carries it is
// fsynced and applied. Concurrent commands are coalesced into one entry
// (group commit), so one fsync serves many requests.
type Raft struct {
	cfg    RaftConfig
	logger *slog.Logger
	raft   *raft.Raft
	fsm    *fsm
	wal    durableLog
	// stable is the gate Raft writes its term and vote through, closed
	// before wal (stable_gate.go).
	stable *stableGate
	snaps  *raft.FileSnapshotStore
	store  *snapshotStore // snaps as Raft opens them: bodies put back in
	lock   *dirLock

	submit   chan *pending
	inflight chan struct{}
	quit     chan struct{} // closed by Close: take no more commands
	// stopped is closed once no outcome can come any more: when Raft has
	// shut down (by Close, or under us). Every wait for an outcome also
	// watches it, so that none outlives the pipeline.
	stopped  chan struct{}
	stopOnce sync.Once
	raftObs  *raft.Observer
	cluster  *clusterState // nil for a cluster of one
	snapReq  chan struct{} // the fsm asks for a snapshot by size
	lowDisk  atomic.Bool   // writes are being refused for lack of space
	faults   *faultStop    // the storage fault that stopped the node, if any
	// transfers follows the writes Raft refuses for a leadership transfer
	// in progress (wedge.go).
	transfers transferWatch
	// wedgeProbe, set only by tests, stands in for the barrier that
	// probes whether writes are still refused (wedge.go).
	wedgeProbe atomic.Pointer[func() error]
	// transferGuard holds back leadership transfers that could wedge
	// Raft (wedge.go).
	transferGuard transferGuard
	// pace slows an idle shard's heartbeats (pace.go).
	pace pace
	// beats is a shard's transport, whose heartbeats go coalesced with
	// the node's other shards' (beats.go); nil for a first group.
	beats *beatTransport
	// handedOver: this node handed its leadership to another as it
	// stopped (Close).
	handedOver atomic.Bool
	// incarnation is the data dir's (identity.go).
	incarnation string
	// host is the node's first group when this log is one of its other
	// shards (shard.go), nil otherwise.
	host *Raft
	// format is the log entry format this node writes (format.go);
	// raiseMu makes one command at a time raise it (formatFor).
	format  atomic.Uint32
	raiseMu sync.Mutex
	wg      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	// raftDown is Raft's shutdown future, taken once (see shutdownRaft);
	// closed is closed when Close's work is all done, perhaps after Close
	// returned, and closeWork is that work's error, read after closed.
	raftDownOnce sync.Once
	raftDown     raft.Future
	closed       chan struct{}
	closeWork    error
}

// pending is a command waiting for its group commit.
type pending struct {
	cmd  *engine.Command
	done chan applyResult
}

// applyResult is the engine's answer to one command.
type applyResult struct {
	resp api.Response
	err  error
}

// ErrClosed is returned by Apply after Close.
var ErrClosed = errors.New("command log is closed")
