package replog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/bodystore"
	"github.com/fifoq/fifoq/internal/engine"
)

// fsm is the Raft finite-state machine: it applies each committed entry's
// commands to the engine, in order, and snapshots and restores the engine.
type fsm struct {
	mu     sync.RWMutex // guards eng: Apply and Restore write, reads share
	eng    *engine.Engine
	logger *slog.Logger
	walDir string // for naming the segment of an entry that cannot be applied
	// observer, if not nil, is told of snapshots written and restored.
	observer Observer
	// bodies, if not nil, is the engine's body store (bodies.go).
	bodies *bodies
	// faults stops the node when a write of a body or a snapshot fails.
	faults *faultStop
	// nodeID and region are this node's, for the check that a member is
	// of its cluster's region (cluster_region.go); region is "" where
	// nothing is checked.
	nodeID, region string

	// fatal is the first entry that could not be decoded: its error and
	// index. Raft has already committed it, so the state machine cannot
	// skip it without diverging from the log: the node refuses writes
	// instead (and a restart refuses to start), and a cluster member
	// leaves (Raft.leaveOnFatal). Every command asks for it before it is
	// queued, so it is an atomic pointer, read without a lock. fatalCh is
	// closed when it is set.
	fatal     atomic.Pointer[fatalEntry]
	fatalCh   chan struct{}
	fatalOnce sync.Once
	// reject, if not nil, refuses the commands of an entry as if they
	// could not be decoded: a test's stand-in for a fifoq that cannot
	// read an entry another wrote (RaftConfig.rejectCommands).
	reject func([]*engine.Command) error

	// appliedBytes counts entry bytes applied since the last snapshot; when
	// it passes the configured size, onBytes asks for a snapshot.
	appliedBytes int64
	snapshotAt   int64
	onBytes      func()

	// held maps the bytes of each entry this node handed to Raft, by the
	// address of their first byte, to the entry, so that the leader
	// applies the commands it already holds instead of decoding what it
	// has just encoded (see hold for what Raft must do for it to work).
	// The log's bytes are for replay and for followers. A slice is in the
	// map only while its entry is alive, so no other slice can share its
	// address meanwhile.
	heldMu sync.Mutex
	held   map[*byte]*entry
	// heldApplied counts the entries applied from held commands.
	heldApplied atomic.Uint64
	// answer hands a held entry's results to its callers (Raft.answer).
	answer func(e *entry, results []applyResult, err error)

	// applied is the index of the last command or membership entry whose
	// changes the engine holds: Apply (StoreConfiguration) stores it once
	// they are in. Raft's own applied index runs ahead of it (see
	// Raft.applied).
	applied atomic.Uint64
	// restored is set by a restore from a snapshot whose index the fsm is
	// not told (Raft passes only its bytes), and cleared by the next Apply:
	// meanwhile every command up to the newest snapshot's index is in the
	// engine, and applied says nothing of them.
	restored atomic.Bool
	// installing is set while RestoreBackup has Raft install an operator's
	// snapshot, whose failed restore Raft answers with a panic
	// (restoreUserSnapshot): Restore then keeps the error in installErr
	// for RestoreBackup, and tells Raft it succeeded.
	installing atomic.Bool
	installErr atomic.Pointer[error]

	// committedConf is the group's membership as last committed, as far
	// as this replica has applied its log or restored a snapshot
	// (noteConfiguration); nil until it knows one. Raft's own
	// GetConfiguration answers the latest, which a leader uses as soon as
	// it appends it and which may never commit: a replica that took its
	// own removal from there for done left its group a voter short.
	committedConf atomic.Pointer[committedConfiguration]
	// snapshotConfig returns the membership of the newest snapshot in the
	// store, for a snapshot Raft installs (it hands Restore the bytes
	// alone).
	snapshotConfig func() (index uint64, c raft.Configuration, ok bool)
	// restores tells the log store of every restore (storeGate's
	// keepAfterInstall).
	restores restoreMark
}

// committedConfiguration is a membership the group committed, and the
// index of its entry.
type committedConfiguration struct {
	index   uint64
	servers []raft.Server
}

// noteConfiguration records c, committed at index, unless a later one is
// known.
func (f *fsm) noteConfiguration(index uint64, c raft.Configuration) {
	next := &committedConfiguration{index: index, servers: slices.Clone(c.Servers)}
	for {
		old := f.committedConf.Load()
		if old != nil && old.index > index {
			return
		}
		if f.committedConf.CompareAndSwap(old, next) {
			return
		}
	}
}

// hold records an entry about to be handed to Raft, to be found again by
// the address of its data's first byte, not by its bytes.
//
// The contract this relies on, which hashicorp/raft does not document:
// the leader that appended an entry hands FSM.Apply, and LogStore.StoreLogs
// (storeGate), a raft.Log whose Data is the very slice given to
// Raft.Apply, the same array and length, not a copy. raft 1.8 does: the
// leader stores &logFuture.log (dispatchLogs) and applies it from the
// future it keeps for each entry in flight (processLogs, prepareLog). An
// entry read back from the log store (on a follower, in a replay, or one
// applied after this node lost the leadership it appended it under) is a
// new slice, and not held.
//
// Should Raft copy the data, nothing goes wrong but speed: no lookup finds
// the entry (take and peek match by address, and a live entry's address
// is no other slice's); Apply decodes it as a follower does, and returns
// the results through the entry's future, from which awaitEntry answers
// its callers and releases it; the decoded commands are the held ones
// (encodeEntryHeld), so the state is the same. On a node alone, storeGate
// no longer sees the entry stored, and the next entry waits for this one
// to be answered rather than written: smaller group commits.
//
// TestLeaderAnswersFromHeldCommands guards the contract (it fails when no
// entry is applied from held commands, as after a copy), and
// TestNextEntryLeavesOnceStored the storeGate's side of it;
// TestCopiedEntryFallsBack hands Raft a copy and checks the fallback.
func (f *fsm) hold(e *entry) {
	f.heldMu.Lock()
	if f.held == nil {
		f.held = make(map[*byte]*entry)
	}
	f.held[&e.data[0]] = e
	f.heldMu.Unlock()
}

// release forgets a held entry that Raft will not apply here.
func (f *fsm) release(e *entry) {
	f.heldMu.Lock()
	if f.held[&e.data[0]] == e {
		delete(f.held, &e.data[0])
	}
	f.heldMu.Unlock()
}

// take returns and forgets the held entry whose bytes are data, or nil.
func (f *fsm) take(data []byte) *entry { return f.lookup(data, true) }

// peek returns the held entry whose bytes are data, or nil, and keeps it.
func (f *fsm) peek(data []byte) *entry { return f.lookup(data, false) }

// lookup finds the held entry whose bytes are data (the same slice, not
// equal bytes), forgetting it if forget is set.
func (f *fsm) lookup(data []byte, forget bool) *entry {
	if len(data) == 0 {
		return nil
	}
	f.heldMu.Lock()
	defer f.heldMu.Unlock()
	e := f.held[&data[0]]
	if e == nil || len(e.data) != len(data) {
		return nil
	}
	if forget {
		delete(f.held, &data[0])
	}
	return e
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	if _, err := f.failure(); err != nil {
		// Past an entry that could not be applied, the state would no
		// longer be the log's: apply nothing more.
		f.markApplied(l.Index)
		return nil
	}
	// The leader's own entry, found by the address of its bytes (see hold
	// for why that works, and what happens if it does not): apply the
	// commands it holds (the codec gives back exactly the commands it
	// encodes, see encodeEntryHeld), and answer their callers here,
	// without waiting for Raft to pass the result on through the entry's
	// future.
	held := f.take(l.Data)
	var cmds []*engine.Command
	var err error
	if held != nil {
		cmds = held.cmds
		f.heldApplied.Add(1)
	} else {
		cmds, err = decodeEntry(l.Data)
	}
	if err == nil && f.reject != nil {
		err = f.reject(cmds)
	}
	if err == nil {
		if err = f.checkRegionRecord(cmds); err != nil && f.faults != nil {
			f.faults.halt(err)
		}
	}
	if err != nil {
		err = fmt.Errorf("log entry %d (term %d) in %s: %w", l.Index, l.Term, f.segmentOf(l.Index), err)
		if f.fatal.CompareAndSwap(nil, &fatalEntry{err: err, index: l.Index}) {
			f.logger.Error("cannot apply log entry; refusing writes", "err", err)
			f.fatalOnce.Do(func() { close(f.fatalCh) })
		}
		f.markApplied(l.Index)
		return nil
	}
	results := make([]applyResult, len(cmds))
	f.mu.Lock()
	for i, c := range cmds {
		results[i].resp, results[i].err = f.eng.Apply(c)
		if f.bodies != nil {
			if err := f.eng.TakeBodyError(); err != nil {
				// The messages were received all the same (the state does
				// not depend on a body's bytes): they come back once their
				// visibility timeout runs out. The client gets an error,
				// never a wrong or empty body.
				f.logger.Error("cannot read a message body back", "err", err)
				results[i] = applyResult{err: api.ErrInternalFailure("A message body could not be read back from disk (see the server log); the messages received come back after their visibility timeout.")}
			}
		}
	}
	var bodyErr error
	if f.bodies != nil {
		bodyErr = f.bodies.failure()
		if bodyErr == nil {
			bodyErr = f.bodies.reclaim(time.Now(), f.eng)
		}
	}
	f.mu.Unlock()
	if bodyErr != nil {
		// A body that could not be written leaves a message without one.
		f.faults.fail("write the body store", fmt.Errorf("log entry %d (term %d): %w", l.Index, l.Term, bodyErr))
	}
	f.markApplied(l.Index)
	f.appliedBytes += int64(len(l.Data))
	if f.onBytes != nil && f.snapshotAt > 0 && f.appliedBytes >= f.snapshotAt {
		f.appliedBytes = 0
		f.onBytes()
	}
	if held != nil && f.answer != nil {
		f.answer(held, results, nil)
	}
	return results
}

// StoreConfiguration implements raft.ConfigurationStore. A membership
// change changes nothing in the engine, which holds every change up to
// it once Raft hands it over (in order, after the entries before it).
// Being told of it is what makes Raft count the entry applied to the
// state: else a group whose last entry is a membership change (a shard
// idle since a replica was added to it) cannot take a snapshot, nor a
// backup, until a command follows ("wait until the configuration entry
// at N has been applied").
//
// It also records the membership as committed (committedConf).
func (f *fsm) StoreConfiguration(index uint64, c raft.Configuration) {
	f.noteConfiguration(index, c)
	f.markApplied(index)
}

var _ raft.ConfigurationStore = (*fsm)(nil)

// markApplied records that the engine holds every change of the log up to
// entry index, a command or a membership change (or that it will hold
// none of a command's, past an entry that could not be applied).
func (f *fsm) markApplied(index uint64) {
	f.applied.Store(index)
	f.restored.Store(false)
}

// segmentOf names the raft-wal segment file that holds log entry index:
// the one with the highest base index not above it.
func (f *fsm) segmentOf(index uint64) string {
	files, _ := filepath.Glob(filepath.Join(f.walDir, "*.wal"))
	best, bestBase := f.walDir, uint64(0)
	for _, file := range files {
		var base, id uint64
		if _, err := fmt.Sscanf(filepath.Base(file), "%020d-%016x.wal", &base, &id); err != nil {
			continue
		}
		if base <= index && base >= bestBase {
			best, bestBase = file, base
		}
	}
	return best
}

// failure returns the error of the first entry that could not be applied,
// with its index, or nil.
func (f *fsm) failure() (index uint64, err error) {
	if e := f.fatal.Load(); e != nil {
		return e.index, e.err
	}
	return 0, nil
}

// fatalEntry is an entry that could not be applied: its index and why.
type fatalEntry struct {
	err   error
	index uint64
}

// snapshotMagic starts every snapshot file's payload, followed by the
// format version (4 bytes, big-endian) and then, by version:
//
//	1: a CRC-32C of the engine state (4 bytes), then the engine state.
//	   The writer had to hold the whole state in memory to checksum it
//	   first; still read, never written.
//	2: the engine state, streamed: it ends with a CRC-32C of its own
//	   (see engine.Snapshot), so the container adds none.
//	3: as 2, with the engine state in its format 2 or later (a chunk's
//	   records beside its gob value, and deduplication records keyed by a
//	   digest; see engine.Snapshot). The layout of the frame is that of 2:
//	   the version tells a fifoq that reads frames up to 2, and engine
//	   states of format 1 only, that the snapshot is newer than it, rather
//	   than damaged. Versions 1 and 2, with an engine state of format 1,
//	   still restore.
//	4: the body store's Position when the state was taken (file and
//	   offset, 4 bytes each, big-endian), then an engine state of format 3
//	   whose bodies are referred to in the node's body store (bodies.go).
//	   Written by a node for itself; a snapshot sent to another node is
//	   turned into version 3 on the way (snapshotStore.Open).
//	5: as 4, with an engine state of format 4 (whose message payloads in
//	   the body store begin with the MessageId and MD5OfBody). The layout
//	   of the frame is that of 4: the version tells a fifoq that reads
//	   engine states up to format 3 that the snapshot is newer than it,
//	   rather than damaged. Version 4 still restores.
var snapshotMagic = [8]byte{'F', 'I', 'F', 'O', 'Q', 'F', 'S', 'M'}

// snapshotFormatVersion is the version of the snapshot payload layout this
// fifoq writes for itself; it reads every version from 1 to this one.
// snapshotInlineVersion is the version it writes with the bodies in the
// snapshot, and sends to other nodes. snapshotRefsVersion is the first
// version whose bodies are in the node's body store.
const (
	snapshotFormatVersion = 5
	snapshotInlineVersion = 3
	snapshotRefsVersion   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot implements raft.FSM. Raft calls it on the goroutine that
// applies entries, so writes wait while it runs: it only takes a view of
// the engine (pointers to its records, see engine.SnapshotView), and
// Persist writes the view out while entries go on being applied. With a
// body store, the view refers to the bodies in it, and records the
// store's position and the files it refers to.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := &snapshot{fsm: f}
	if f.bodies != nil {
		// The records the view refers to must be in their files before
		// Persist syncs them from its own goroutine: write what is
		// gathered, here on the appender's goroutine.
		if err := f.bodies.store.Flush(); err != nil {
			f.bodies.failed.CompareAndSwap(nil, &err)
			return nil, fmt.Errorf("snapshot engine: %w", err)
		}
		s.at, s.files = f.bodies.store.Position(), f.bodies.liveFiles()
	}
	view, err := f.eng.BeginSnapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot engine: %w", err)
	}
	s.view = view
	if f.bodies != nil {
		view.BodiesByReference()
		f.bodies.views.Add(1) // before a write can release a body the view holds
	}
	return s, nil
}

// Restore implements raft.FSM: it restores a snapshot installed from the
// leader, or by the operator, which carries its bodies. It streams the
// snapshot into the engine; the engine swaps the new state in only once
// the whole snapshot has been read and checked.
func (f *fsm) Restore(rc io.ReadCloser) error {
	err := f.restore(rc, false)
	if err == nil {
		f.restores.restored()
	}
	if err == nil && f.snapshotConfig != nil {
		// Raft restores the newest snapshot of the store, the one it has
		// just written.
		if index, c, ok := f.snapshotConfig(); ok {
			f.noteConfiguration(index, c)
		}
	}
	if err != nil && f.installing.Load() {
		// The engine keeps its state, the empty one of a new data dir.
		f.installErr.Store(&err)
		return nil
	}
	return err
}

// restore restores the snapshot rc. atStart is set for the snapshot a
// start restores, the node's own: one that refers to the body store
// (version 4) is restored only then, after the store is cut back to the
// position it records; one that carries its bodies empties the store
// first.
func (f *fsm) restore(rc io.ReadCloser, atStart bool) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	version, want, err := readSnapshotHeader(br)
	if err != nil {
		return err
	}
	var at bodystore.Position
	if version >= snapshotRefsVersion {
		if at, err = readPosition(br); err != nil {
			return err
		}
		if !atStart || f.bodies == nil {
			return errors.New("snapshot refers to message bodies in a node's body store: it is restored only by that node, at its start")
		}
	}
	var state io.Reader = br
	var verify func() error
	if version == 1 {
		// The state's checksum comes first: sum while the engine reads,
		// and check before it swaps the state in.
		h := crc32.New(castagnoli)
		state = io.TeeReader(br, h)
		verify = func() error {
			if got := h.Sum32(); got != want {
				return fmt.Errorf("snapshot checksum mismatch over the state after byte offset 16: stored %08x, computed %08x", want, got)
			}
			return nil
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if atStart && f.bodies != nil {
		if err := f.bodies.atStart(at); err != nil {
			return err
		}
	}
	err = f.eng.RestoreVerified(state, verify)
	if !atStart && !f.installing.Load() {
		// A snapshot the leader sent: one of another region would be
		// sent again and again, and never restored.
		if refusal := f.installRegionRefusal(err); refusal != nil && f.faults != nil {
			f.faults.halt(refusal)
			err = refusal
		}
	}
	if f.bodies != nil {
		// Whether the new state is in or the old one stays, the bodies
		// the restore wrote for it, or the old state's, are what is live.
		if cerr := f.bodies.recount(f.eng); cerr != nil && err == nil {
			err = fmt.Errorf("the snapshot refers to a message body the body store does not have (was %s lost or replaced?): %w", bodiesDir, cerr)
		}
		// A start's snapshot is the newest on disk; one installed from
		// the leader carries its bodies and needs none of the store's.
		protected := map[uint32]bool{}
		if atStart && version >= snapshotRefsVersion {
			protected = f.bodies.liveFiles()
		}
		f.bodies.protect(protected)
		f.bodies.report()
	}
	if err != nil {
		return fmt.Errorf("restore engine from snapshot (format version %d): %w", version, err)
	}
	f.applied.Store(0)
	f.restored.Store(true)
	f.observeSnapshot()
	return nil
}

// readPosition reads the body store position of a snapshot of version 4.
func readPosition(r io.Reader) (bodystore.Position, error) {
	var b [8]byte
	if n, err := io.ReadFull(r, b[:]); err != nil {
		return bodystore.Position{}, fmt.Errorf("snapshot header truncated at byte offset %d: %w", 12+n, err)
	}
	return bodystore.Position{File: binary.BigEndian.Uint32(b[:4]), Off: binary.BigEndian.Uint32(b[4:])}, nil
}

// errNewerSnapshot marks a snapshot in a format version newer than this
// fifoq reads: it was written by a newer fifoq, and is not damaged.
var errNewerSnapshot = errors.New("snapshot written by a newer fifoq")

// readSnapshotHeader reads a snapshot's header: its magic and version, and
// for version 1 the checksum of the state that follows (want).
func readSnapshotHeader(r io.Reader) (version, want uint32, err error) {
	var hdr [12]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, fmt.Errorf("snapshot header truncated at byte offset %d: %w", n, err)
	}
	if !bytes.Equal(hdr[:8], snapshotMagic[:]) {
		return 0, 0, fmt.Errorf("not a fifoq snapshot: bad magic %q at byte offset 0", hdr[:8])
	}
	switch v := binary.BigEndian.Uint32(hdr[8:12]); {
	case v > snapshotFormatVersion:
		return 0, 0, fmt.Errorf("%w: snapshot format version %d at byte offset 8, and this fifoq reads versions up to %d; run a fifoq that reads version %d", errNewerSnapshot, v, snapshotFormatVersion, v)
	case v == 0:
		return 0, 0, fmt.Errorf("snapshot format version 0 at byte offset 8; this fifoq reads versions 1 to %d", snapshotFormatVersion)
	case v == 1:
		var sum [4]byte
		if n, err := io.ReadFull(r, sum[:]); err != nil {
			return 0, 0, fmt.Errorf("snapshot header truncated at byte offset %d: %w", 12+n, err)
		}
		return v, binary.BigEndian.Uint32(sum[:]), nil
	default:
		return v, 0, nil
	}
}

// verifySnapshotPayload reads a snapshot written by Persist to its end and
// checks its magic, version and checksum, in constant memory.
func verifySnapshotPayload(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	version, want, err := readSnapshotHeader(br)
	if err != nil {
		return err
	}
	if version >= snapshotRefsVersion {
		if _, err := readPosition(br); err != nil {
			return err
		}
	}
	if version == 1 {
		h := crc32.New(castagnoli)
		n, err := io.Copy(h, br)
		if err != nil {
			return fmt.Errorf("read snapshot after byte offset 16: %w", err)
		}
		if got := h.Sum32(); got != want {
			return fmt.Errorf("snapshot checksum mismatch over byte offsets 16-%d: stored %08x, computed %08x", 16+n, want, got)
		}
		return nil
	}
	if err := engine.VerifySnapshot(br); err != nil {
		return fmt.Errorf("snapshot state after byte offset 12: %w", err)
	}
	return nil
}

// snapshot is a view of the engine waiting to be written. With a body
// store, at is the store's position when the view was taken and files the
// files the view refers to.
type snapshot struct {
	fsm   *fsm
	view  *engine.SnapshotView
	at    bodystore.Position
	files map[uint32]bool
}

// Persist implements raft.FSMSnapshot. It runs on Raft's snapshot
// goroutine, while entries are applied, reading messages under the fsm's
// lock (for reading).
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	b := s.fsm.bodies
	hdr := make([]byte, 12, 20)
	copy(hdr[:8], snapshotMagic[:])
	if b != nil {
		binary.BigEndian.PutUint32(hdr[8:12], snapshotFormatVersion)
		hdr = binary.BigEndian.AppendUint32(hdr, s.at.File)
		hdr = binary.BigEndian.AppendUint32(hdr, s.at.Off)
	} else {
		binary.BigEndian.PutUint32(hdr[8:12], snapshotInlineVersion)
	}
	// A failed write of the snapshot is a storage fault (the sink's, see
	// snapshotStore.Create), and so is a failed sync of the bodies it
	// refers to; a body that cannot be read back is not: the snapshot
	// fails, and the node goes on.
	if _, err := sink.Write(hdr); err != nil {
		sink.Cancel()
		return fmt.Errorf("write snapshot header: %w", err)
	}
	if _, err := s.view.WriteTo(sink, s.fsm.mu.RLocker()); err != nil {
		sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	if b != nil {
		// The bodies the snapshot refers to must be durable before it is.
		if err := b.store.SyncThrough(s.at); err != nil {
			sink.Cancel()
			b.failed.CompareAndSwap(nil, &err)
			return s.fsm.faults.fail("sync the body store", err)
		}
	}
	if err := sink.Close(); err != nil {
		return err
	}
	if b != nil {
		b.protect(s.files)
	}
	s.fsm.observeSnapshot()
	return nil
}

// Release implements raft.FSMSnapshot: the engine stops keeping copies of
// the messages changed since the view was taken.
func (s *snapshot) Release() {
	s.fsm.mu.Lock()
	s.view.Release()
	if s.fsm.bodies != nil {
		s.fsm.bodies.views.Add(-1)
	}
	s.fsm.mu.Unlock()
}
