package replog

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/bodystore"
	"github.com/fifoq/fifoq/internal/engine"
)

// The durable log keeps the engine's message bodies on disk, in a body
// store under the data dir (bodies/): the engine holds a 12-byte reference
// per message, so that a backlog is bounded by disk, not memory.
//
// The node's own snapshots refer to the bodies in the store rather than
// carry them (snapshot frame version 5, engine snapshot format 4; frame 4
// and format 3 before the payloads held their message's ids): a
// snapshot of a backlog of many GiB writes the records of its messages,
// and a restart finds the bodies where they are. So the store is part of
// the node's state, kept consistent with its snapshots this way:
//
//   - A snapshot records the store's Position when its view is taken, all
//     the records it refers to being before it, and syncs the store up to
//     there before it is made the newest (SyncThrough).
//   - A start cuts the store back to the newest snapshot's Position and
//     replays the log after it, which appends again the bodies of the
//     entries that follow; with no snapshot, or one that carries its
//     bodies, it empties the store. A start whose snapshot refers to a
//     record the store lacks (the directory lost or replaced) refuses.
//   - A file is removed only when none of its bodies is referenced by the
//     engine or by the newest snapshot on disk (protected), and no
//     snapshot view is open or being sent (views).
//   - A snapshot sent to another node (a follower's InstallSnapshot) has
//     its bodies put back in on the way out (snapshotStore.Open).
//
// Space is reclaimed by file: the engine releases a body when its message
// goes for good (deleted, expired, purged, its queue deleted); a file none
// of whose bodies is referenced any more is removed, and the live bodies
// of a mostly dead file are copied out of it first (compact).

// bodies adapts a bodystore.Store to engine.BodyStore. Put and Release are
// called by whoever holds the fsm's write lock; Get also under its read
// lock (reads, and a snapshot view being written).
type bodies struct {
	store *bodystore.Store
	// failed is the first error of writing a body: the state can no longer
	// be served (its message has no body), so the fsm stops applying.
	failed atomic.Pointer[error]
	// views counts the snapshot views open and the snapshots being made
	// inline to be sent: while one is, no file is removed, since it may
	// read a body released since.
	views atomic.Int32
	// protected holds the files the newest snapshot on disk refers to:
	// a restart would need them. It is read under the fsm's write lock
	// (by the apply goroutine and the snapshot loop); protectMu guards it
	// against the snapshot goroutine that sets it.
	protectMu sync.Mutex
	protected map[uint32]bool
	// lastReclaim is when reclaim last looked; it looks once a second at
	// most. Only the apply goroutine reads and writes it.
	lastReclaim time.Time
	bufs        sync.Pool
	// observer, if not nil, is told of the files and of the bodies moved.
	observer Observer
	// moveBuf is compact's buffer, and unmovable the files it found a
	// damaged record in; only the apply goroutine uses them.
	moveBuf   []byte
	unmovable map[uint32]bool
}

// bodiesDir is the body store's directory under the data dir.
const bodiesDir = "bodies"

// openBodies opens the body store in dir, with files of fileSize bytes
// (bodystore.DefaultFileSize if 0). The files are taken as they are: the
// start cuts them back to its snapshot (atStart).
func openBodies(dir string, fileSize int64) (*bodies, error) {
	if fileSize <= 0 {
		fileSize = bodystore.DefaultFileSize
	}
	s, err := bodystore.Open(dir, fileSize)
	if err != nil {
		return nil, err
	}
	return &bodies{store: s}, nil
}

// atStart prepares the store for the state a start restores: the records
// after p are cut (p is the Position of the snapshot restored, the zero
// Position if it carries its bodies or there is none), so that the replay
// of the log after it appends their bodies again.
func (b *bodies) atStart(p bodystore.Position) error {
	if err := b.store.TruncateAfter(p); err != nil {
		return fmt.Errorf("cut the body store back to the snapshot's position %d:%d: %w", p.File, p.Off, err)
	}
	return nil
}

// badRef is the reference given to a body that could not be written: no
// file has its number, so reading it is an error, never another body.
var badRef = engine.BodyRef{File: math.MaxUint32}

// Put implements engine.BodyStore.
func (b *bodies) Put(body string) engine.BodyRef {
	ref, err := b.store.Append(body)
	if err != nil {
		b.failed.CompareAndSwap(nil, &err)
		return badRef
	}
	return engine.BodyRef{File: ref.File, Off: ref.Off, Len: ref.Len}
}

// storeRef is the store's form of the engine's reference.
func storeRef(ref engine.BodyRef) bodystore.Ref {
	return bodystore.Ref{File: ref.File, Off: ref.Off, Len: ref.Len}
}

// Get implements engine.BodyStore.
func (b *bodies) Get(ref engine.BodyRef) (string, error) {
	buf, _ := b.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	body, err := b.store.Read(storeRef(ref), *buf)
	s := string(body)
	if cap(body) <= 1<<20 { // keep the usual sizes; let a rare large one go
		*buf = body[:0]
		b.bufs.Put(buf)
	}
	return s, err
}

// Release implements engine.BodyStore.
func (b *bodies) Release(ref engine.BodyRef) {
	b.store.Release(storeRef(ref))
}

// failure returns the first error of writing a body, or nil.
func (b *bodies) failure() error {
	if p := b.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// recount makes the store's live bytes those of the engine's messages, after
// a restore replaced the state (the old messages went without a Release).
// A reference the store cannot hold is an error: the state restored refers
// to bodies this node does not have. The caller holds the fsm's write lock.
func (b *bodies) recount(eng *engine.Engine) error {
	b.store.ResetLive()
	var first error
	eng.BodyRefs(func(ref engine.BodyRef) {
		if err := b.store.Hold(storeRef(ref)); err != nil && first == nil {
			first = err
		}
	})
	return first
}

// liveFiles returns the files that hold a body the engine refers to: what
// a snapshot view taken now refers to.
func (b *bodies) liveFiles() map[uint32]bool {
	files := map[uint32]bool{}
	for _, f := range b.store.Stats() {
		if f.Live > 0 {
			files[f.ID] = true
		}
	}
	return files
}

// protect records files as those the newest snapshot on disk refers to.
func (b *bodies) protect(files map[uint32]bool) {
	b.protectMu.Lock()
	b.protected = files
	b.protectMu.Unlock()
}

// reclaim removes the files none of whose bodies is referenced, and moves
// some live bodies out of a mostly dead file (compact), at most once a
// second and only while no snapshot view is open. The caller holds the
// fsm's write lock, so no read is under way, and is the appender.
func (b *bodies) reclaim(now time.Time, eng *engine.Engine) error {
	if now.Sub(b.lastReclaim) < time.Second || b.views.Load() > 0 {
		return nil
	}
	b.lastReclaim = now
	_, _, _, err := b.removeDead()
	if err == nil {
		err = b.compact(eng)
	}
	b.report()
	return err
}

// Files only the newest snapshot still needs are given back once a newer
// one is taken. The log looks every snapshotForSpaceEvery, and takes one
// when they are snapshotForSpaceFiles files or more and a quarter of the
// store (see Raft.snapshotLoop): a quiet node gives the space of a
// drained backlog back, and a busy one takes no more snapshots for it.
const (
	snapshotForSpaceFiles = 4
	snapshotForSpaceEvery = 10 * time.Second
)

// heldForSnapshot removes the files nothing refers to (removeDead) and
// reports whether those kept only for the newest snapshot are worth a new
// one. The caller holds the fsm's write lock.
func (b *bodies) heldForSnapshot() (bool, error) {
	files, held, total, err := b.removeDead()
	if err != nil || held == 0 {
		return false, err
	}
	// Counted in files, not in bytes of full files: a file is closed
	// when the next body would not fit, a little short of the file
	// size, so that four held files may never add up to four files'
	// bytes, and a quiet node would keep them for good.
	return files >= snapshotForSpaceFiles && held >= total/4, nil
}

// removeDead removes the files none of whose bodies is referenced, by the
// engine or by the newest snapshot, unless a snapshot view is open, and
// returns the bytes of the files kept only for that snapshot and of all
// the files kept, with how many files are so held. The caller holds the
// fsm's write lock; it need not be the appender, since the file appended
// to is never removed.
func (b *bodies) removeDead() (files int, held, total int64, err error) {
	if b.views.Load() > 0 {
		return 0, 0, 0, nil
	}
	b.protectMu.Lock()
	protected := b.protected
	b.protectMu.Unlock()
	for _, f := range b.store.Stats() {
		switch {
		case f.Live > 0 || f.Active:
		case protected[f.ID]:
			files++
			held += f.Size
		default:
			if err := b.store.Remove(f.ID); err != nil {
				return files, held, total, err
			}
			continue
		}
		total += f.Size
	}
	return files, held, total, nil
}

// report tells the observer, if any, of the store's files.
func (b *bodies) report() {
	if b.observer == nil {
		return
	}
	var bytes, live int64
	stats := b.store.Stats()
	for _, f := range stats {
		bytes += f.Size
		live += f.Live
	}
	b.observer.BodyStore(len(stats), bytes, live)
}

// A file is compacted, its live bodies moved to the end of the store so
// that it can be removed, once less than 1/compactLiveShare of its bytes
// are live: a few long-lived messages would otherwise keep whole files of
// dead ones. compactBytesPerTick bounds the bytes moved per reclaim, and so
// the time a reclaim holds up the entries being applied.
const (
	compactLiveShare    = 4
	compactBytesPerTick = 8 << 20
	compactFilesPerTick = 4
)

// compact moves up to compactBytesPerTick of the live bodies of the files
// mostly dead, those with the fewest live bytes first, walking the
// engine's messages once per file for at most compactFilesPerTick files.
// A file is removed by a later reclaim, once the newest snapshot no longer
// refers to it.
func (b *bodies) compact(eng *engine.Engine) error {
	var victims []bodystore.FileStats
	for _, f := range b.store.Stats() {
		if !f.Active && f.Live > 0 && f.Live*compactLiveShare < f.Size && !b.unmovable[f.ID] {
			victims = append(victims, f)
		}
	}
	slices.SortFunc(victims, func(x, y bodystore.FileStats) int { return cmp.Compare(x.Live, y.Live) })
	budget := int64(compactBytesPerTick)
	defer func() {
		if moved := compactBytesPerTick - budget; moved > 0 && b.observer != nil {
			b.observer.BodiesMoved(moved)
		}
	}()
	var failed error
	for i := 0; i < len(victims) && i < compactFilesPerTick && budget > 0 && failed == nil; i++ {
		eng.MoveBodies(victims[i].ID, func(ref engine.BodyRef) (engine.BodyRef, bool, bool) {
			body, err := b.store.Read(storeRef(ref), b.moveBuf)
			if err != nil {
				// A damaged record stays where it is, reported when its
				// message is received; its file is left as it is.
				if b.unmovable == nil {
					b.unmovable = map[uint32]bool{}
				}
				b.unmovable[ref.File] = true
				return ref, false, true
			}
			b.moveBuf = body[:0]
			moved, err := b.store.Append(string(body))
			if err != nil {
				failed = err
				return ref, false, true
			}
			b.store.Release(storeRef(ref))
			budget -= int64(len(body))
			return engine.BodyRef{File: moved.File, Off: moved.Off, Len: moved.Len}, true, budget <= 0
		})
	}
	if failed != nil {
		b.failed.CompareAndSwap(nil, &failed)
	}
	return failed
}
