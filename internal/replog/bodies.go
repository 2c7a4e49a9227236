package replog

import (
	"fmt"
	"math"
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
// The store is a cache of the node's own, not a second copy to keep
// consistent: every body is also in the snapshot (which writes the bodies
// it reads back from the store) or in a log entry after it. So a start
// empties the store, and the restore and the replay that rebuild the
// engine write the bodies again; nothing in the store needs a sync, and a
// crash at any moment leaves nothing to repair.
//
// Space is reclaimed by file: the engine releases a body when its message
// goes for good (deleted, expired, purged, its queue deleted); a file none
// of whose bodies is referenced any more is removed, once no snapshot view
// that may still write one of them is open.

// bodies adapts a bodystore.Store to engine.BodyStore. Put and Release are
// called by whoever holds the fsm's write lock; Get also under its read
// lock (reads, and a snapshot view being written).
type bodies struct {
	store *bodystore.Store
	// failed is the first error of writing a body: the state can no longer
	// be served (its message has no body), so the fsm stops applying.
	failed atomic.Pointer[error]
	// views counts the snapshot views open: while one is, no file is
	// removed, since the view may write a body released after it was
	// taken.
	views atomic.Int32
	// lastReclaim is when reclaim last looked; it looks once a second at
	// most. Only the apply goroutine reads and writes it.
	lastReclaim time.Time
	bufs        sync.Pool
}

// bodiesDir is the body store's directory under the data dir.
const bodiesDir = "bodies"

// openBodies opens the body store in dir, with files of fileSize bytes
// (bodystore.DefaultFileSize if 0), and empties it (see above).
func openBodies(dir string, fileSize int64) (*bodies, error) {
	s, err := bodystore.Open(dir, fileSize)
	if err != nil {
		return nil, err
	}
	if err := s.TruncateAfter(bodystore.Position{}); err != nil {
		s.Close()
		return nil, fmt.Errorf("empty the body store %s: %w", dir, err)
	}
	return &bodies{store: s}, nil
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
// The caller holds the fsm's write lock.
func (b *bodies) recount(eng *engine.Engine) {
	b.store.ResetLive()
	eng.BodyRefs(func(ref engine.BodyRef) { b.store.Hold(storeRef(ref)) })
}

// reclaim removes the files none of whose bodies is referenced, at most
// once a second and only while no snapshot view is open. The caller holds
// the fsm's write lock, so no read is under way.
func (b *bodies) reclaim(now time.Time) error {
	if now.Sub(b.lastReclaim) < time.Second || b.views.Load() > 0 {
		return nil
	}
	b.lastReclaim = now
	for _, f := range b.store.Stats() {
		if f.Live == 0 && !f.Active {
			if err := b.store.Remove(f.ID); err != nil {
				return err
			}
		}
	}
	return nil
}
