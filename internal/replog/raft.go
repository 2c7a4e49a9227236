package replog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/bodystore"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/walfs"
)

// RaftConfig configures a durable, Raft-backed log.
type RaftConfig struct {
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
	// rejectCommands, if set, makes this node's state machine refuse the
	// entries whose commands it returns an error for, as a fifoq that
	// cannot read them would (fsm.reject).
	rejectCommands func([]*engine.Command) error
	// Cluster, if not nil, makes the log a member of a cluster over TCP
	// (cluster.go); nil is a cluster of one, as the data dir always was.
	Cluster *ClusterConfig
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
	wal    *closingWAL
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
	// handedOver: this node handed its leadership to another as it
	// stopped (Close).
	handedOver atomic.Bool
	// incarnation is the data dir's (identity.go).
	incarnation string
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

// OpenRaft opens (or creates) the log in cfg.Dir, restores eng from the
// latest snapshot, replays the log after it, and returns once the node leads
// its cluster of one and every entry on disk has been applied.
func OpenRaft(cfg RaftConfig, eng *engine.Engine) (*Raft, error) {
	cfg.setDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.Dir, err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.release()
		}
	}()

	hlog := hclog.New(&hclog.LoggerOptions{
		Name:   "raft",
		Level:  hclog.Warn,
		Output: slogWriter{cfg.Logger},
	})
	walDir := filepath.Join(cfg.Dir, "wal")
	if err := os.MkdirAll(walDir, 0o750); err != nil {
		return nil, fmt.Errorf("create log dir %s: %w", walDir, err)
	}
	// The WAL does not close the meta database it opens itself, which would
	// keep the directory locked for the life of the process; give it one we
	// close.
	meta := &metadb.BoltMetaDB{}
	files, err := walfs.New(walDir, max(cfg.MinFreeBytes, 0), observeSegment(cfg.Observer))
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", walDir, err)
	}
	segmentSize := raftwal.DefaultSegmentSize
	if cfg.walSegmentSize > 0 {
		segmentSize = cfg.walSegmentSize
	}
	w, err := raftwal.Open(walDir, raftwal.WithLogger(hlog), raftwal.WithMetaStore(meta), raftwal.WithSegmentFiler(segment.NewFiler(walDir, files)), raftwal.WithSegmentSize(segmentSize))
	if err != nil {
		meta.Close()
		files.Close()
		return nil, fmt.Errorf("open log %s: %w", walDir, err)
	}
	wal := &closingWAL{WAL: w, meta: meta, files: files}
	// The engine must have no message yet: its store is set before the
	// snapshot is restored.
	if wal.bodies, err = openBodies(filepath.Join(cfg.Dir, bodiesDir), cfg.BodyFileSize); err != nil {
		wal.Close()
		return nil, fmt.Errorf("open body store in %s: %w", cfg.Dir, err)
	}
	wal.bodies.observer = cfg.Observer
	eng.SetBodyStore(wal.bodies)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, cfg.SnapshotsRetained, hlog)
	if err == nil {
		err = removeSpoolFiles(cfg.Dir)
	}
	if err != nil {
		wal.Close()
		return nil, fmt.Errorf("open snapshots in %s: %w", cfg.Dir, err)
	}
	faults := newFaultStop(cfg.Logger, cfg.Dir)
	sending := &snapshotStore{FileSnapshotStore: snaps, dir: cfg.Dir, bodies: wal.bodies, faults: faults}

	// Raft falls back to an older snapshot when the newest cannot be
	// restored, and the log entries between them may be compacted away:
	// that would silently lose data. Restore the newest one here, checking
	// its checksums as it is read (one pass over the file), and refuse to
	// start if it is damaged; Raft then takes only its index, term and
	// configuration (NoSnapshotRestoreOnStart below).
	f := &fsm{eng: eng, logger: cfg.Logger, walDir: walDir, observer: cfg.Observer, snapshotAt: cfg.SnapshotBytes, bodies: wal.bodies, faults: faults,
		fatalCh: make(chan struct{}), reject: cfg.rejectCommands}
	if err := restoreLatestSnapshot(snaps, cfg.Dir, f); err != nil {
		wal.Close()
		return nil, err
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	// A cluster of one elects itself as soon as it starts (standNow).
	rc.HeartbeatTimeout = soloHeartbeat
	rc.ElectionTimeout = soloHeartbeat
	rc.LeaderLeaseTimeout = soloLeaderLease
	rc.MaxAppendEntries = 1024
	rc.BatchApplyCh = true
	rc.SnapshotThreshold = cfg.SnapshotEntries
	rc.SnapshotInterval = 30 * time.Second
	rc.TrailingLogs = 1024
	if cfg.trailingLogs > 0 {
		rc.TrailingLogs = cfg.trailingLogs
	}
	// The newest snapshot, if any, is already restored.
	rc.NoSnapshotRestoreOnStart = true
	if cfg.Cluster != nil {
		cfg.Cluster.tune(rc)
	}

	incarnation, err := loadIncarnation(cfg.Dir)
	if err != nil {
		wal.Close()
		return nil, err
	}
	addr, transport, cluster, err := openTransport(&cfg, hlog, incarnation)
	if err != nil {
		wal.Close()
		return nil, err
	}
	closeTransport := func() {
		if cluster != nil {
			cluster.trans.Close()
			cluster.mux.Close()
		}
	}
	snapReq := make(chan struct{}, 1)
	// l is set below, before any entry is held: the fsm answers only held
	// entries, which commit creates once the log is running.
	var l *Raft
	f.onBytes = func() {
		select {
		case snapReq <- struct{}{}:
		default:
		}
	}
	f.answer = func(e *entry, results []applyResult, err error) { l.answer(e, results, err) }

	existing, err := raft.HasExistingState(wal, wal, sending)
	if err != nil {
		closeTransport()
		wal.Close()
		return nil, fmt.Errorf("inspect log %s: %w", cfg.Dir, err)
	}
	if !existing {
		boot, doBoot, err := bootConfiguration(&cfg, addr)
		if err == nil && doBoot {
			err = raft.BootstrapCluster(rc, wal, wal, sending, transport, boot)
		}
		if err != nil {
			closeTransport()
			wal.Close()
			return nil, fmt.Errorf("bootstrap log in %s: %w", cfg.Dir, err)
		}
	}
	var store raft.LogStore = wal
	if cfg.wrapStore != nil {
		store = cfg.wrapStore(wal)
	}
	// Outermost, so that an entry counts as stored only once every layer
	// beneath has returned without error.
	store = &storeGate{LogStore: store, fsm: f, faults: faults}
	r, err := raft.NewRaft(rc, f, store, wal, sending, transport)
	if err != nil {
		closeTransport()
		wal.Close()
		return nil, fmt.Errorf("start log in %s: %w", cfg.Dir, err)
	}
	l = &Raft{
		cfg: cfg, logger: cfg.Logger, raft: r, fsm: f, wal: wal, snaps: snaps, store: sending, lock: lock, cluster: cluster,
		submit:   make(chan *pending, 4096),
		inflight: make(chan struct{}, maxInflightEntries),
		quit:     make(chan struct{}),
		stopped:  make(chan struct{}),
		closed:   make(chan struct{}),
		snapReq:  snapReq,
		faults:   faults,

		incarnation: incarnation,
	}
	faults.setStop(func() {
		l.markStopped()
		// Waiting for the stop also closes the transport, so that the
		// other nodes see this one gone at once rather than time out on
		// connections nobody reads.
		_ = l.shutdownRaft().Error()
	})
	// Raft calls the filter on the goroutine that changes its state; it
	// only closes a channel, and lets nothing through to the channel.
	l.raftObs = raft.NewObserver(make(chan raft.Observation, 1), false, func(o *raft.Observation) bool {
		if st, ok := o.Data.(raft.RaftState); ok && st == raft.Shutdown {
			l.markStopped()
		}
		return false
	})
	r.RegisterObserver(l.raftObs)
	if err := l.checkMembership(existing); err != nil {
		r.Shutdown().Error()
		l.stopCluster()
		wal.Close()
		return nil, err
	}
	if cluster != nil {
		// A member of a cluster serves at once: a follower forwards to
		// the leader, and no leader may be elected until more nodes start.
		l.startCluster()
	} else {
		standNow(r)
		if err := l.waitReady(); err != nil {
			r.Shutdown().Error()
			wal.Close()
			return nil, err
		}
	}
	ok = true
	l.refreshFormat()
	l.wg.Add(2)
	go l.batchLoop()
	go l.snapshotLoop()
	if cluster != nil {
		cluster.mux.checks.Store(&peerChecks{recorded: l.recordedIncarnation, expectedAt: l.expectedAt, learned: l.learned, fence: l.fence,
			tooOld: l.tooOld, outdated: l.outdated})
		l.wg.Add(3)
		go l.leaveOnFatal()
		go l.recordIncarnations()
		go l.keepFormat()
	}
	return l, nil
}

// restoreLatestSnapshot restores the newest snapshot into f's engine,
// reading it once: the engine checks the snapshot's checksums as it
// decodes and swaps the state in only if they match, so a damaged snapshot
// stops the start with its file named and the engine untouched. The file
// is read directly rather than through the store's Open, which would read
// it a second time for a checksum of its own; the payload's checksums
// cover the same bytes.
func restoreLatestSnapshot(snaps *raft.FileSnapshotStore, dir string, f *fsm) error {
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("list snapshots in %s: %w", dir, err)
	}
	if len(list) == 0 {
		if f.bodies != nil {
			// The log holds every body: the replay appends them again.
			return f.bodies.atStart(bodystore.Position{})
		}
		return nil
	}
	path := filepath.Join(dir, "snapshots", list[0].ID, "state.bin")
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("snapshot %s is damaged: %w; refusing to start (move it away only if the log still holds every entry it covers)", path, err)
	}
	if st, err := file.Stat(); err == nil && st.Size() != list[0].Size {
		file.Close()
		return fmt.Errorf("snapshot %s is damaged: %d bytes, its metadata says %d; refusing to start (move it away only if the log still holds every entry it covers)", path, st.Size(), list[0].Size)
	}
	// f.Restore closes the file. Nothing else runs yet: hold the garbage
	// collector off while the state is built (see withGCHeld).
	err = withGCHeld(restoreHeapBudget(list[0].Size), func() error { return f.restore(file, true) })
	if errors.Is(err, errNewerSnapshot) {
		return fmt.Errorf("snapshot %s: %w; refusing to start", path, err)
	} else if err != nil {
		return fmt.Errorf("snapshot %s is damaged: %w; refusing to start", path, err)
	}
	f.markApplied(list[0].Index)
	return nil
}

// waitReady waits until the node leads and has applied every entry on
// disk, so that the first request sees the whole recovered state.
func (l *Raft) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for l.raft.State() != raft.Leader {
		if time.Now().After(deadline) {
			return fmt.Errorf("log in %s: no leader after 30s", l.cfg.Dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A barrier is applied after every entry before it: once it is done,
	// the replay is complete.
	if err := l.raft.Barrier(0).Error(); err != nil {
		return fmt.Errorf("replay log in %s: %w", l.cfg.Dir, err)
	}
	if _, err := l.fsm.failure(); err != nil {
		return fmt.Errorf("replay log in %s: %w", l.cfg.Dir, err)
	}
	return nil
}

// markStopped closes stopped, once.
func (l *Raft) markStopped() { l.stopOnce.Do(func() { close(l.stopped) }) }

// closingWAL is the log store: a raft-wal WAL whose Close also closes its
// meta database and the file system its segments are on.
type closingWAL struct {
	*raftwal.WAL
	meta   *metadb.BoltMetaDB
	files  *walfs.FS
	bodies *bodies // the engine's body store, closed with the log
}

// Close closes the WAL, then its meta database and its file system, and
// the body store.
func (w *closingWAL) Close() error {
	err := w.WAL.Close()
	if w.bodies != nil {
		if berr := w.bodies.store.Close(); berr != nil && err == nil {
			err = berr
		}
	}
	if merr := w.meta.Close(); merr != nil && err == nil {
		err = merr
	}
	if w.files != nil {
		if ferr := w.files.Close(); ferr != nil && err == nil {
			err = ferr
		}
	}
	return err
}
