package replog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/bodystore"
	"github.com/fifoq/fifoq/internal/engine"
	raftwal "github.com/fifoq/fifoq/internal/third_party/raftwal"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/metadb"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/segment"
	"github.com/fifoq/fifoq/internal/walfs"
)

// OpenRaft opens (or creates) the log in cfg.Dir, makes its engine
// (cfg.Engine), restores the engine from the latest snapshot, replays the log after it, and returns once the node leads
// its cluster of one and every entry on disk has been applied.
//
// Each step that takes something the process must give back (the data
// dir's lock, the log's files, the transport, Raft itself) pushes how to
// give it back on one undo stack; when a later step fails, the stack runs
// in reverse, so that a failed open leaves the data dir unlocked and
// nothing running.
func OpenRaft(cfg RaftConfig) (_ *Raft, err error) {
	cfg.setDefaults()
	if err := cfg.Shard.check(&cfg); err != nil {
		return nil, err
	}
	if cfg.Shard != nil {
		// Every line of a shard's log, Raft's own included, says which.
		cfg.Logger = cfg.Logger.With("shard", cfg.Shard.ID)
	}
	eng := newLogEngine(cfg.Engine)
	o := &opening{cfg: cfg, hlog: newHCLogger(cfg.Logger)}
	defer func() {
		if err != nil {
			o.undo.run()
		}
	}()
	if err := o.lock(); err != nil {
		return nil, err
	}
	// Before anything of the dir is opened, restored or replayed (region.go).
	if err := o.checkRegion(); err != nil {
		return nil, err
	}
	if err := o.openStorage(eng); err != nil {
		return nil, err
	}
	// Raft falls back to an older snapshot when the newest cannot be
	// restored, and the log entries between them may be compacted away:
	// that would silently lose data. Restore the newest one here, checking
	// its checksums as it is read (one pass over the file), and refuse to
	// start if it is damaged; Raft then takes only its index, term and
	// configuration (NoSnapshotRestoreOnStart, raftConfig).
	o.fsm = &fsm{eng: eng, logger: cfg.Logger, walDir: o.walDir, observer: cfg.Observer, snapshotAt: cfg.SnapshotBytes, bodies: o.wal.bodyStore(),
		faults: o.faults, fatalCh: make(chan struct{}), reject: cfg.rejectCommands,
		nodeID: cfg.NodeID, region: cfg.Engine.Region}
	snaps := o.snaps
	o.fsm.snapshotConfig = func() (uint64, raft.Configuration, bool) {
		list, err := snaps.List()
		if err != nil || len(list) == 0 {
			return 0, raft.Configuration{}, false
		}
		return list[0].ConfigurationIndex, list[0].Configuration, true
	}
	if err := restoreLatestSnapshot(o.snaps, cfg.Dir, o.fsm, cfg.RestoreHeapBytes); err != nil {
		return nil, err
	}
	rc := o.raftConfig()
	if err := o.openNetwork(); err != nil {
		return nil, err
	}
	snapReq := make(chan struct{}, 1)
	// l is set below, before any entry is held: the fsm answers only held
	// entries, which commit creates once the log is running.
	var l *Raft
	o.fsm.onBytes = func() {
		select {
		case snapReq <- struct{}{}:
		default:
		}
	}
	o.fsm.answer = func(e *entry, results []applyResult, err error) { l.answer(e, results, err) }
	existing, err := o.bootstrap(rc)
	if err != nil {
		return nil, err
	}
	stable := &stableGate{StableStore: o.wal}
	r, err := raft.NewRaft(rc, o.fsm, o.logStore(), stable, o.store, o.transport)
	if err != nil {
		return nil, fmt.Errorf("start log in %s: %w", cfg.Dir, err)
	}
	l = &Raft{
		cfg: o.cfg, logger: cfg.Logger, raft: r, fsm: o.fsm, wal: o.wal, stable: stable, snaps: o.snaps, store: o.store, lock: o.dirLock, cluster: o.cluster,
		submit:   make(chan *pending, 4096),
		inflight: make(chan struct{}, maxInflightEntries),
		quit:     make(chan struct{}),
		stopped:  make(chan struct{}),
		closed:   make(chan struct{}),
		snapReq:  snapReq,
		faults:   o.faults,

		incarnation: o.incarnation,
		beats:       o.beats,
	}
	if cfg.Shard != nil {
		l.host = cfg.Shard.Host
	}
	// Raft's shutdown closes the transport too; closing it again, as the
	// transport's own undo does, is harmless.
	o.undo.push(func() {
		if err := r.Shutdown().Error(); err != nil {
			l.logger.Warn("stop raft after a failed open", "err", err)
		}
		l.stopCluster()
	})
	l.watchRaft()
	if err := l.checkMembership(existing); err != nil {
		return nil, err
	}
	if o.cluster != nil {
		// A member of a cluster serves at once: a follower forwards to
		// the leader, and no leader may be elected until more nodes start.
		l.startCluster()
	} else {
		standNow(r, cfg.Logger)
		if err := l.waitReady(); err != nil {
			return nil, err
		}
	}
	l.run()
	return l, nil
}

// undo is what an open has taken so far, as the functions that give each
// piece back, in the order taken.
type undo []func()

// push adds fn, which gives back what a step just took.
func (u *undo) push(fn func()) { *u = append(*u, fn) }

// run gives everything back, the last taken first.
func (u undo) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// opening is what OpenRaft assembles, step by step, before Raft runs.
type opening struct {
	cfg  RaftConfig
	hlog hclog.Logger
	undo undo

	dirLock     *dirLock
	walDir      string
	wal         durableLog
	snaps       *raft.FileSnapshotStore
	store       *snapshotStore // snaps as Raft opens them: bodies put back in
	faults      *faultStop
	fsm         *fsm
	incarnation string
	addr        raft.ServerAddress
	transport   raft.Transport
	cluster     *clusterState // nil for a cluster of one
	// beats is a shard's transport, whose heartbeats its node coalesces
	// (beats.go); nil for a node's first group.
	beats *beatTransport
}

// lock creates the data dir if need be and locks it.
func (o *opening) lock() error {
	if err := os.MkdirAll(o.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("create data dir %s: %w", o.cfg.Dir, err)
	}
	lock, err := lockDir(o.cfg.Dir)
	if err != nil {
		return err
	}
	o.dirLock = lock
	o.undo.push(lock.release)
	return nil
}

// openStorage opens what the node keeps on disk beside its lock: the log
// (raft-wal on walfs, or its group in the node's shared log for a shard
// that has one: sharedlog.go), the body store, which it gives the engine,
// and the snapshots.
func (o *opening) openStorage(eng *engine.Engine) error {
	cfg := &o.cfg
	var err error
	if o.wal, o.walDir, err = o.openLogStore(); err != nil {
		return err
	}
	o.undo.push(func() {
		if err := o.wal.Close(); err != nil {
			cfg.Logger.Warn("close the log after a failed open", "dir", o.walDir, "err", err)
		}
	})
	// The engine must have no message yet: its store is set before the
	// snapshot is restored.
	bodies, err := openBodies(filepath.Join(cfg.Dir, bodiesDir), cfg.BodyFileSize)
	if err != nil {
		return fmt.Errorf("open body store in %s: %w", cfg.Dir, err)
	}
	o.wal.setBodies(bodies)
	bodies.observer = cfg.Observer
	eng.SetBodyStore(bodies)
	o.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.Dir, cfg.SnapshotsRetained, o.hlog)
	if err == nil {
		err = removeSpoolFiles(cfg.Dir)
	}
	if err != nil {
		return fmt.Errorf("open snapshots in %s: %w", cfg.Dir, err)
	}
	o.faults = newFaultStop(cfg.Logger, cfg.Dir)
	o.store = &snapshotStore{FileSnapshotStore: o.snaps, dir: cfg.Dir, bodies: bodies, faults: o.faults}
	return nil
}

// raftConfig is Raft's configuration for this node.
func (o *opening) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(o.cfg.NodeID)
	rc.Logger = o.hlog
	// A cluster of one elects itself as soon as it starts (standNow).
	rc.HeartbeatTimeout = soloHeartbeat
	rc.ElectionTimeout = soloHeartbeat
	rc.LeaderLeaseTimeout = soloLeaderLease
	rc.MaxAppendEntries = 1024
	rc.BatchApplyCh = true
	rc.SnapshotThreshold = o.cfg.SnapshotEntries
	rc.SnapshotInterval = 30 * time.Second
	rc.TrailingLogs = 1024
	if o.cfg.trailingLogs > 0 {
		rc.TrailingLogs = o.cfg.trailingLogs
	}
	// The newest snapshot, if any, is already restored.
	rc.NoSnapshotRestoreOnStart = true
	if o.cfg.Cluster != nil {
		o.cfg.Cluster.tune(rc)
		if o.cfg.Shard != nil {
			rc.CommitTimeout = shardCommitTimeout
		}
	}
	return rc
}

// openNetwork reads the data dir's incarnation, which the node says in its
// hellos, and opens its transport: in memory alone, the Raft port in a
// cluster.
func (o *opening) openNetwork() error {
	var err error
	if o.cfg.Shard != nil {
		return o.openShardNetwork()
	}
	if o.incarnation, err = loadIncarnation(o.cfg.Dir); err != nil {
		return err
	}
	if o.addr, o.transport, o.cluster, err = openTransport(&o.cfg, o.hlog, o.incarnation); err != nil {
		return err
	}
	if c := o.cluster; c != nil {
		o.undo.push(func() {
			c.trans.Close()
			c.mux.Close()
		})
	}
	return nil
}

// bootstrap writes the initial membership into a data dir with no state
// yet, if this node is to bootstrap at all (bootConfiguration), and reports
// whether the dir had state.
func (o *opening) bootstrap(rc *raft.Config) (existing bool, err error) {
	existing, err = raft.HasExistingState(o.wal, o.wal, o.store)
	if err != nil {
		return false, fmt.Errorf("inspect log %s: %w", o.cfg.Dir, err)
	}
	if existing {
		return true, nil
	}
	boot, doBoot, err := bootConfiguration(&o.cfg, o.addr)
	if o.cfg.Shard != nil {
		boot, doBoot, err = o.cfg.Shard.bootConfiguration(o.cfg.NodeID, o.addr)
	}
	if err == nil && doBoot {
		err = raft.BootstrapCluster(rc, o.wal, o.wal, o.store, o.transport, boot)
	}
	if err != nil {
		return false, fmt.Errorf("bootstrap log in %s: %w", o.cfg.Dir, err)
	}
	return false, nil
}

// logStore is the log store Raft is given: the WAL, wrapped by a test's
// wrapStore if any, in a cluster beneath recentLogs, inside the storeGate.
// Only a leader reads back the entries it has just written (to send them
// to followers): a node alone would hold recentLogs' megabytes for
// nothing, and at a small memory budget they are a large share of it.
func (o *opening) logStore() raft.LogStore {
	var store raft.LogStore = o.wal
	if o.cfg.wrapStore != nil {
		store = o.cfg.wrapStore(o.wal)
	}
	if o.cfg.Cluster != nil {
		store = newRecentLogs(store)
	}
	// Outermost, so that an entry counts as stored only once every layer
	// beneath has returned without error.
	return &storeGate{LogStore: store, fsm: o.fsm, faults: o.faults, snaps: o.store, restores: &o.fsm.restores}
}

// watchRaft learns when Raft stops, whether by a storage fault, by Close
// or under us, so that no wait for an outcome outlives it.
func (l *Raft) watchRaft() {
	l.faults.setStop(func() {
		l.markStopped()
		// Waiting for the stop also closes the transport, so that the
		// other nodes see this one gone at once rather than time out on
		// connections nobody reads.
		if err := l.shutdownRaft().Error(); err != nil {
			l.logger.Warn("stop raft after a fault", "err", err)
		}
	})
	// Raft calls the filter on the goroutine that changes its state; it
	// only closes a channel, and lets nothing through to the channel.
	l.raftObs = raft.NewObserver(make(chan raft.Observation, 1), false, func(o *raft.Observation) bool {
		if st, ok := o.Data.(raft.RaftState); ok && st == raft.Shutdown {
			l.markStopped()
		}
		return false
	})
	l.raft.RegisterObserver(l.raftObs)
}

// run starts the log's own goroutines (see doc.go), once it is open.
func (l *Raft) run() {
	l.refreshFormat()
	l.wg.Add(2)
	go l.batchLoop()
	go l.snapshotLoop()
	if l.host != nil {
		// The first group checks peers, records identities and raises
		// the format for every shard of the node.
		l.wg.Add(2)
		go l.leaveOnFatal()
		go l.followHost()
		return
	}
	if c := l.cluster; c != nil {
		c.mux.checks.Store(&peerChecks{recorded: l.recordedIncarnation, expectedAt: l.expectedAt, memberAt: l.memberAt, learned: l.learned, fence: l.fence,
			tooOld: l.tooOld, outdated: l.outdated, stateIndex: l.stateIndex, clusterID: l.clusterID})
		l.wg.Add(3)
		go l.leaveOnFatal()
		go l.recordIncarnations()
		go l.keepFormat()
	}
}

// restoreLatestSnapshot restores the newest snapshot into f's engine,
// reading it once: the engine checks the snapshot's checksums as it
// decodes and swaps the state in only if they match, so a damaged snapshot
// stops the start with its file named and the engine untouched. The file
// is read directly rather than through the store's Open, which would read
// it a second time for a checksum of its own; the payload's checksums
// cover the same bytes.
func restoreLatestSnapshot(snaps *raft.FileSnapshotStore, dir string, f *fsm, heapBytes int64) error {
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
	err = withGCHeld(restoreHeapBudget(list[0].Size, heapBytes), func() error { return f.restore(file, true) })
	if errors.Is(err, errNewerSnapshot) {
		return fmt.Errorf("snapshot %s: %w; refusing to start", path, err)
	} else if err != nil {
		return fmt.Errorf("snapshot %s is damaged: %w; refusing to start", path, err)
	}
	f.markApplied(list[0].Index)
	f.noteConfiguration(list[0].ConfigurationIndex, list[0].Configuration)
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

// durableLog is the log store a group is opened with, and the body store
// closed with it: the group's own raft-wal (closingWAL), or its group in
// the node's shared log (sharedGroup).
type durableLog interface {
	raft.LogStore
	raft.StableStore
	Close() error
	// setBodies gives the log the body store it closes; bodyStore returns
	// it.
	setBodies(*bodies)
	bodyStore() *bodies
}

// openWAL opens a raft-wal log in dir (created if need be) on walfs, as
// cfg says: with the free space it keeps and the observer of its
// segments. Closing it closes whichever of its parts are open, also after
// an error.
func openWAL(dir string, cfg *RaftConfig, hlog hclog.Logger) (*closingWAL, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create log dir %s: %w", dir, err)
	}
	// The WAL does not close the meta database it opens itself, which would
	// keep the directory locked for the life of the process; give it one we
	// close.
	meta := &metadb.BoltMetaDB{}
	files, err := walfs.New(dir, max(cfg.MinFreeBytes, 0), observeSegment(cfg.Observer))
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	segmentSize := raftwal.DefaultSegmentSize
	if cfg.walSegmentSize > 0 {
		segmentSize = cfg.walSegmentSize
	}
	w := &closingWAL{meta: meta, files: files}
	w.WAL, err = raftwal.Open(dir, raftwal.WithLogger(hlog), raftwal.WithMetaStore(meta), raftwal.WithSegmentFiler(segment.NewFiler(dir, files)), raftwal.WithSegmentSize(segmentSize))
	if err != nil {
		if cerr := w.Close(); cerr != nil {
			cfg.Logger.Warn("close the log after a failed open", "dir", dir, "err", cerr)
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return w, nil
}

// closingWAL is the log store: a raft-wal WAL whose Close also closes its
// meta database and the file system its segments are on.
type closingWAL struct {
	*raftwal.WAL
	meta   *metadb.BoltMetaDB
	files  *walfs.FS
	bodies *bodies // the engine's body store, closed with the log
}

func (w *closingWAL) setBodies(b *bodies) { w.bodies = b }
func (w *closingWAL) bodyStore() *bodies  { return w.bodies }

// Close closes the WAL, then the body store, its meta database and its
// file system: those of them that are open (a failed open closes what it
// opened).
func (w *closingWAL) Close() error {
	var err error
	if w.WAL != nil {
		err = w.WAL.Close()
	}
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
