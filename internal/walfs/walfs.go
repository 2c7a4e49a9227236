// Package walfs is the file system the durable log keeps its segment files
// on. It makes each group commit's sync as cheap as the disk allows: the
// data, with no file-system metadata beside it.
//
// raft-wal, left to itself, preallocates each 64 MiB segment with
// fallocate. The blocks it reserves are "unwritten": the first write into
// each of them changes the file's extent map, so every commit's fsync must
// also write that metadata (a second synchronous write on ext4 without a
// journal, a journal commit on ext4 with one) and wait for it. walfs
// instead hands raft-wal segments whose every byte has already been
// written with zeros and flushed, and syncs them with fdatasync: a commit
// then rewrites blocks that already exist and changes nothing the file
// system must record but the data itself. For a commit of 20 KB on the
// development machine's disk this halves both the sync's time and its
// CPU, and on ext4 with a journal cuts its time to a third
// (docs/benchmarks.md, "Segments written ahead with zeros").
//
// raft-wal takes it through its own option:
// raftwal.WithSegmentFiler(segment.NewFiler(dir, fs)).
//
// Writing a segment's zeros costs one pass of sequential writes, so walfs
// does it in the background, one spare segment ahead, and only once the
// segment being written is half full: a log that writes little (a test, an
// idle queue) never pays for a spare. When no spare is ready (the first
// segment of a new log, or a log written faster than its spares), a
// segment is created as raft-wal creates it, and once raft-wal's writes
// pass a sixteenth of it walfs zeroes the rest in place, ahead of them
// (see zeroAhead). What a segment reads as past its last write does not
// change either way (zeros), so raft-wal's recovery of a torn tail is the
// same.
package walfs

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	rwfs "github.com/fifoq/fifoq/internal/third_party/raftwal/fs"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/types"
)

// SpareName is the file a spare segment is prepared in. raft-wal takes
// only names ending in ".wal" for segments, so it never lists it.
const SpareName = "spare-segment.zeroed"

// zeroChunk is how much of a spare is written between two fdatasyncs:
// small enough that a commit's fsync queued behind one on the disk waits
// a few milliseconds at most. After each chunk the preparation rests as
// long as the chunk took, so that it never holds more than half of the
// disk's time: a 64 MiB spare takes a few tenths of a second of it.
const zeroChunk = 1 << 20

// aheadWrite is the size of each write of zeros into a live segment (see
// zeroAhead): raft-wal's writes to the segment wait while one is copied
// into the page cache, for a few tens of microseconds.
const aheadWrite = 256 << 10

// aheadStart: a segment created without a spare is zeroed in place once
// raft-wal's writes reach this fraction of it (4 MiB of a 64 MiB segment),
// so that a log that writes little never pays for it.
const aheadStart = 16

// FS implements raft-wal's types.VFS. Reads, listings and deletions go to
// raft-wal's own implementation; Create and the files it returns are
// walfs's. Close it after the WAL that uses it.
type FS struct {
	base      *rwfs.FS
	dir       string // the WAL's directory, where spares are prepared
	sparePath string // dir/SpareName
	keepFree  int64
	onCreate  func(fromSpare bool)

	mu        sync.Mutex
	spare     *os.File // a zeroed, flushed spare at sparePath, ready to be renamed; nil if none
	spareSize int64
	preparing bool
	zeroing   *ahead // the segment being zeroed in place, if any
	closed    bool
	wg        sync.WaitGroup
	stop      chan struct{}

	// counts, read through Stats.
	sparesUsed    atomic.Uint64
	sparesFailed  atomic.Uint64
	sparesSkipped atomic.Uint64
	fallbackFiles atomic.Uint64
	zeroedAhead   atomic.Uint64
	aheadFailed   atomic.Uint64
}

var _ types.VFS = (*FS)(nil)

// New returns an FS for the segments in dir. A spare is prepared only
// while the file system keeps, besides it, room for one more segment and
// keepFree bytes: the spare takes its space half a segment before the log
// needs it, and must never be what pushes the disk under the log's own
// free-space guard.
//
// New removes a spare that a previous process left in dir (it may have
// been cut short by a crash: only a spare prepared by this FS is used).
//
// onCreate, if not nil, is told of every segment Create makes: from a
// spare or not. It is called on raft-wal's writing goroutine and must
// return quickly.
func New(dir string, keepFree int64, onCreate func(fromSpare bool)) (*FS, error) {
	sparePath := filepath.Join(dir, SpareName)
	if err := os.Remove(sparePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if onCreate == nil {
		onCreate = func(bool) {}
	}
	return &FS{base: rwfs.New(), dir: dir, sparePath: sparePath, keepFree: keepFree, onCreate: onCreate, stop: make(chan struct{})}, nil
}

// ListDir implements types.VFS.
func (fs *FS) ListDir(dir string) ([]string, error) { return fs.base.ListDir(dir) }

// Delete implements types.VFS.
func (fs *FS) Delete(dir, name string) error { return fs.base.Delete(dir, name) }

// OpenReader implements types.VFS.
func (fs *FS) OpenReader(dir, name string) (types.ReadableFile, error) {
	return fs.base.OpenReader(dir, name)
}

// OpenWriter implements types.VFS: raft-wal reopens the segment it was
// writing when the process stopped. Its directory entry was made durable
// by the first sync after it was created, if there was one; a segment
// never synced holds no acknowledged entry.
func (fs *FS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &segmentFile{File: f, fs: fs, dir: dir, size: st.Size(), dirSynced: true}, nil
}

// Create implements types.VFS: it renames a ready spare of the requested
// size to name, or, when there is none, creates name and preallocates it
// as raft-wal does (and zeroes it in place later, see zeroAhead). Either
// way the directory entry is made durable by the file's first Sync, before
// any entry in it is acknowledged.
func (fs *FS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	// raft-wal creates a segment once it has sealed the one before: that
	// one's zeros would serve no write any more.
	fs.stopZeroing()
	path := filepath.Join(dir, name)
	if f := fs.takeSpare(dir, int64(size)); f != nil {
		// O_EXCL's promise: never replace an existing file.
		if _, err := os.Lstat(path); err == nil {
			f.Close()
			os.Remove(fs.sparePath)
			return nil, &os.PathError{Op: "create", Path: path, Err: os.ErrExist}
		}
		if err := os.Rename(fs.sparePath, path); err == nil {
			// Reopened under its new name, so that errors name the
			// segment, not the spare it was.
			if named, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
				f.Close()
				f = named
			}
			fs.sparesUsed.Add(1)
			fs.onCreate(true)
			return &segmentFile{File: f, fs: fs, dir: dir, size: int64(size)}, nil
		}
		// The spare could not be renamed: drop it and create the file
		// the ordinary way.
		f.Close()
		os.Remove(fs.sparePath)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		if err := preallocate(f, int64(size)); err != nil {
			f.Close()
			os.Remove(path)
			return nil, err
		}
	}
	fs.fallbackFiles.Add(1)
	fs.onCreate(false)
	sf := &segmentFile{File: f, fs: fs, dir: dir, size: int64(size)}
	if sparesSupported && size > 0 {
		sf.ahead = &ahead{stop: make(chan struct{})}
	}
	return sf, nil
}

// takeSpare returns the ready spare if dir is the FS's and the spare is of
// size bytes, and forgets it; a spare that does not fit is dropped.
func (fs *FS) takeSpare(dir string, size int64) *os.File {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.spare
	if f == nil {
		return nil
	}
	fs.spare = nil
	if dir != fs.dir || fs.spareSize != size {
		f.Close()
		os.Remove(fs.sparePath)
		return nil
	}
	return f
}

// halfFull starts preparing a spare of size bytes unless one is ready or
// being prepared, or the FS is closed.
func (fs *FS) halfFull(size int64) {
	if size <= 0 {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !sparesSupported || fs.closed || fs.preparing || fs.spare != nil {
		return
	}
	if free, err := freeBytes(fs.dir); err != nil || free < 2*size+fs.keepFree {
		fs.sparesSkipped.Add(1)
		return
	}
	fs.preparing = true
	fs.wg.Add(1)
	go fs.prepare(size)
}

// prepare writes a spare of size bytes with zeros, flushing it a chunk at
// a time, and offers it to the next Create. A failure (a full disk, say)
// leaves no spare: the next segment is created the ordinary way.
func (fs *FS) prepare(size int64) {
	defer fs.wg.Done()
	f, err := fs.writeSpare(size)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.preparing = false
	if err != nil {
		if !errors.Is(err, errStopped) {
			fs.sparesFailed.Add(1)
		}
		return
	}
	if fs.closed {
		f.Close()
		os.Remove(fs.sparePath)
		return
	}
	fs.spare, fs.spareSize = f, size
}

var errStopped = errors.New("walfs: closed")

func (fs *FS) writeSpare(size int64) (f *os.File, err error) {
	path := fs.sparePath
	os.Remove(path)
	f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}()
	zeros := make([]byte, min(size, zeroChunk))
	var off int64
	if err = fs.paced(nil, func() (bool, error) {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return false, err
		}
		if err := datasync(f); err != nil {
			return false, err
		}
		off += n
		return off < size, nil
	}); err != nil {
		return nil, err
	}
	// The size and the extents are on disk with the last fdatasync; one
	// fsync records the rest of the inode, once.
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return f, nil
}

// ahead is the state of a segment zeroed in place, ahead of raft-wal's
// writes (see zeroAhead).
type ahead struct {
	// mu is held by WriteAt while it records a write, and by the zeroing
	// for each write of zeros, which goes only past written: raft-wal's
	// data and the zeros never overlap, whatever order their writes reach
	// the file in.
	mu      sync.Mutex
	written int64 // the end of raft-wal's furthest write
	started bool
	stop    chan struct{}
	once    sync.Once
}

// end stops the zeroing, if it runs.
func (a *ahead) end() { a.once.Do(func() { close(a.stop) }) }

// stopZeroing stops the zeroing of the segment being zeroed, if any.
func (fs *FS) stopZeroing() {
	fs.mu.Lock()
	z := fs.zeroing
	fs.zeroing = nil
	fs.mu.Unlock()
	if z != nil {
		z.end()
	}
}

// startZeroing starts zeroing f in place unless the FS is closed.
func (fs *FS) startZeroing(f *segmentFile) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return
	}
	if fs.zeroing != nil {
		fs.zeroing.end()
	}
	fs.zeroing = f.ahead
	fs.wg.Add(1)
	go fs.zeroAhead(f)
}

// zeroAhead writes zeros over the part of a preallocated segment that
// raft-wal has not written yet, ahead of its writes, flushing them a
// chunk at a time and resting after each chunk as long as it took, as a
// spare is prepared. The blocks it converts from preallocated to written
// are the ones the later commits then rewrite: their syncs flush data
// only, as in a segment made from a spare. It stops at the segment's end,
// when the segment is closed or the next one created, and on any error,
// leaving the rest preallocated as before.
//
// It writes and flushes through its own open file: Linux reports a failed
// write-back once to each open file, and a flush of its own must not take
// that report from raft-wal's next sync.
func (fs *FS) zeroAhead(f *segmentFile) {
	defer fs.wg.Done()
	z := f.ahead
	w, err := os.OpenFile(f.Name(), os.O_WRONLY, 0)
	if err != nil {
		fs.aheadFailed.Add(1)
		return
	}
	defer w.Close()
	zeros := make([]byte, aheadWrite)
	var off int64
	err = fs.paced(z.stop, func() (bool, error) {
		var wrote int64
		for wrote < zeroChunk {
			z.mu.Lock()
			off = max(off, (z.written+aheadWrite-1)/aheadWrite*aheadWrite)
			if off >= f.size {
				z.mu.Unlock()
				break
			}
			n := min(aheadWrite, f.size-off)
			_, err := w.WriteAt(zeros[:n], off)
			z.mu.Unlock()
			if err != nil {
				return false, err
			}
			off += n
			wrote += n
		}
		if err := datasync(w); err != nil {
			return false, err
		}
		fs.zeroedAhead.Add(uint64(wrote))
		return off < f.size, nil
	})
	if err != nil && !errors.Is(err, errStopped) {
		fs.aheadFailed.Add(1)
	}
}

// paced calls step again and again, resting after each call as long as it
// took, so that writing zeros never holds more than half of the disk's
// time. It returns when step reports no more work or fails, or with
// errStopped once the FS is closed or stop (if not nil) is.
func (fs *FS) paced(stop <-chan struct{}, step func() (more bool, err error)) error {
	rest := time.NewTimer(0)
	defer rest.Stop()
	for {
		select {
		case <-fs.stop:
			return errStopped
		case <-stop:
			return errStopped
		case <-rest.C:
		}
		start := time.Now()
		if more, err := step(); err != nil || !more {
			return err
		}
		rest.Reset(time.Since(start))
	}
}

// Close stops a spare being prepared, removes a ready one and waits for
// walfs's goroutine to end. Files already created stay open: raft-wal
// closes them.
func (fs *FS) Close() error {
	fs.mu.Lock()
	if fs.closed {
		fs.mu.Unlock()
		return nil
	}
	fs.closed = true
	close(fs.stop)
	spare := fs.spare
	fs.spare = nil
	fs.mu.Unlock()
	fs.wg.Wait()
	if spare != nil {
		spare.Close()
		if err := os.Remove(fs.sparePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Stats counts what Create did: segments made from a spare, segments
// created the ordinary way, spares whose preparation failed, and spares
// not prepared for want of free space; and the bytes of segments zeroed
// in place, and the zeroings that failed.
type Stats struct {
	SparesUsed, FallbackFiles, SparesFailed, SparesSkipped uint64
	ZeroedAhead, AheadFailed                               uint64
}

// Stats returns the counts since New.
func (fs *FS) Stats() Stats {
	return Stats{
		SparesUsed:    fs.sparesUsed.Load(),
		FallbackFiles: fs.fallbackFiles.Load(),
		SparesFailed:  fs.sparesFailed.Load(),
		SparesSkipped: fs.sparesSkipped.Load(),
		ZeroedAhead:   fs.zeroedAhead.Load(),
		AheadFailed:   fs.aheadFailed.Load(),
	}
}

// injectedFault, when set, may fail a segment's write or sync as a failing
// disk would: only a fifoq_faults build sets it (fault_inject.go).
var injectedFault func(op, path string) error

// segmentFile is a segment open for writing. Its Sync is an fdatasync:
// it makes durable the data and whatever metadata reading it back needs
// (the extents, and the size if a write went past the end), and skips
// only the timestamps. Its first Sync also syncs the directory, so that
// the new file's name survives a crash.
type segmentFile struct {
	*os.File
	fs         *FS
	dir        string
	size       int64
	dirSynced  bool // only Sync touches it, and raft-wal syncs from one goroutine
	spareAsked atomic.Bool
	ahead      *ahead // set on a preallocated segment this FS created: it is zeroed in place
}

// WriteAt implements io.WriterAt. It asks for a spare once the writes
// reach the second half of the segment, and records how far they reach in
// a segment zeroed in place, starting its zeroing once they pass a
// sixteenth of it.
func (f *segmentFile) WriteAt(p []byte, off int64) (int, error) {
	if injectedFault != nil {
		if err := injectedFault("write", f.Name()); err != nil {
			return 0, err
		}
	}
	end := off + int64(len(p))
	if z := f.ahead; z != nil {
		z.mu.Lock()
		z.written = max(z.written, end)
		start := !z.started && z.written >= f.size/aheadStart
		z.started = z.started || start
		z.mu.Unlock()
		if start {
			f.fs.startZeroing(f)
		}
	}
	if f.size > 0 && end > f.size/2 && !f.spareAsked.Swap(true) {
		f.fs.halfFull(f.size)
	}
	return f.File.WriteAt(p, off)
}

// Close implements io.Closer, and stops the segment's zeroing.
func (f *segmentFile) Close() error {
	if f.ahead != nil {
		f.ahead.end()
	}
	return f.File.Close()
}

// Sync implements types.WritableFile.
func (f *segmentFile) Sync() error {
	if injectedFault != nil {
		if err := injectedFault("fdatasync", f.Name()); err != nil {
			return err
		}
	}
	if err := datasync(f.File); err != nil {
		return err
	}
	if !f.dirSynced {
		if err := syncDir(f.dir); err != nil {
			return err
		}
		f.dirSynced = true
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
