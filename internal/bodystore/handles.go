package bodystore

import (
	"os"
	"sync"
)

// DefaultOpenFiles is how many files a store keeps open, beside the ones
// it must keep open (the file appends go to, files being read or synced).
// With the default file size that is 4 GiB of bodies read without an
// open; a read of a file closed meanwhile opens it again. A descriptor a
// file, as the store once kept, ran a server with a small file size out
// of descriptors once its backlog passed a few hundred files, and would so
// any server whose backlog is thousands of files big.
const DefaultOpenFiles = 64

// handles keeps the store's open files in the order of their last use, and
// closes the least recently used one that may be closed once more than max
// are open. Its mutex is taken after Store.mu, never before, and is held
// while a file is opened or closed, not while it is read.
type handles struct {
	mu         sync.Mutex
	max        int
	count      int   // files open: on the list
	head, tail *file // most and least recently used
}

// acquire opens f if it is closed, marks it used, and keeps it open until
// release. The caller holds Store.mu (for reading at least), so that f is
// not removed meanwhile.
func (h *handles) acquire(f *file, active *file) (*os.File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f.f == nil {
		if err := h.openLocked(f, active); err != nil {
			return nil, err
		}
	} else {
		h.unlink(f)
		h.pushFront(f)
	}
	f.refs++
	return f.f, nil
}

// release ends a use that acquire began.
func (h *handles) release(f *file) {
	h.mu.Lock()
	f.refs--
	h.mu.Unlock()
}

// open opens f, which is closed: for a file that must stay open (the file
// appends go to) or that the caller holds Store.mu exclusively for.
func (h *handles) open(f *file) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f.f != nil {
		return nil
	}
	return h.openLocked(f, f)
}

func (h *handles) openLocked(f, active *file) error {
	h.evictLocked(active)
	fd, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	h.addLocked(f, fd)
	return nil
}

// add makes fd, the file f just created, one of the open files: f is the
// file appends go to from now on.
func (h *handles) add(f *file, fd *os.File) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evictLocked(f)
	h.addLocked(f, fd)
}

func (h *handles) addLocked(f *file, fd *os.File) {
	f.f = fd
	h.pushFront(f)
	h.count++
}

// evictLocked closes the least recently used files that may be closed
// until fewer than max are open (or none of them may be).
func (h *handles) evictLocked(active *file) {
	for f := h.tail; f != nil && h.count >= h.max; {
		prev := f.prev
		if evictable(f, active) {
			h.closeLocked(f)
		}
		f = prev
	}
}

// evictable says whether f may be closed: no read or sync is using it,
// and appends do not go to it. A file may be closed before the sync of
// what was written to it: Linux (4.16 and later) reports a write-back
// error that no descriptor has seen to the first fsync of the file after
// it is opened again, and the body store is not the durable copy of a
// body (the log is), so a sync happens only before a snapshot refers to
// the records (SyncThrough).
func evictable(f, active *file) bool {
	return f.refs == 0 && f != active
}

// close closes f if it is open. The caller holds Store.mu exclusively.
func (h *handles) close(f *file) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closeLocked(f)
}

func (h *handles) closeLocked(f *file) error {
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	h.unlink(f)
	h.count--
	return err
}

func (h *handles) pushFront(f *file) {
	f.prev, f.next = nil, h.head
	if h.head != nil {
		h.head.prev = f
	}
	h.head = f
	if h.tail == nil {
		h.tail = f
	}
}

func (h *handles) unlink(f *file) {
	if f.prev != nil {
		f.prev.next = f.next
	} else if h.head == f {
		h.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else if h.tail == f {
		h.tail = f.prev
	}
	f.prev, f.next = nil, nil
}
