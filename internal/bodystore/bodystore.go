// Package bodystore keeps message bodies on disk, so that a queued
// message costs the engine a fixed-size reference instead of its bytes.
//
// A store is a directory of append-only files of records. A record is a
// body with a header that lets a reader check it: its length and a CRC-32C
// of its bytes. Appending returns a Ref (file, offset, length) that reads
// the body back through the operating system's page cache; a damaged
// record is reported as damaged, never returned as a body.
//
// The store is not the copy that makes a body durable: the command log is.
// Appends are not synced; Position names a point in the append order, and
// Sync, or SyncThrough from another goroutine, makes the records before it
// durable. A state that refers to bodies (a snapshot) records the Position
// it was taken at and is kept only once the store is synced through it; a
// restart cuts the store back to it (TruncateAfter) and appends again the
// bodies of the log entries it replays. So nothing after a synced Position
// is ever trusted, and nothing before it is ever lost.
//
// Space is reclaimed by file: the store counts, per file, the bytes of the
// records still referenced (Release takes a record's bytes off), and a
// caller moves the live records out of a mostly dead file (Rewrite) and
// removes it once nothing that could be restored refers to it (Remove).
//
// Appends are gathered in memory and written a few MiB at a time, and the
// last few MiB written stay in memory too: a consumer that keeps up with
// its producers is served without a system call, and a group commit of
// hundreds of small messages costs one write, not hundreds.
//
// A store keeps few files open however many it has (DefaultOpenFiles,
// handles.go).
//
// One goroutine appends (the state machine's); any number read.
package bodystore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Ref is where one body is: its file, the offset of its record, and its
// length. 12 bytes, whatever the body's size.
type Ref struct {
	File uint32
	Off  uint32
	Len  uint32
}

// Position is a point in the store's append order: everything appended
// before it is in a file below File, or in File below Off.
type Position struct {
	File uint32
	Off  uint32
}

// headerSize is a record's header: the body's length, then its CRC-32C,
// both big-endian.
const headerSize = 8

// DefaultFileSize is the size past which appends go to a new file.
const DefaultFileSize = 64 << 20

// bufSize is the size past which gathered appends are written to their
// file. The buffer written last is kept, so that the last bufSize to
// 2*bufSize bytes appended read from memory.
const bufSize = 4 << 20

// MaxBody is the largest body a record holds. SQS's largest message is
// 1 MiB; the margin leaves room for attributes kept beside the body.
const MaxBody = 4 << 20

// ErrCorrupt is wrapped by the errors of reads that found a record other
// than the one their Ref names: a checksum or a length that does not match.
var ErrCorrupt = errors.New("body store record is damaged")

// castagnoli is the CRC-32C table, as the command log's entries use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Store is a directory of body files.
type Store struct {
	dir      string
	fileSize int64

	mu     sync.RWMutex // guards files and active; held for reading by reads
	files  map[uint32]*file
	active *file
	// buf gathers the records appended to the active file and not yet
	// written, from its offset bufAt; recent is the buffer written last,
	// the bytes of file recentFile from recentAt (see bufSize). Both are
	// guarded by mu, which the appender holds only to change them.
	buf        []byte
	bufAt      int64
	recent     []byte
	recentFile uint32
	recentAt   int64
	// minNext is the lowest id the next new file may take: after
	// TruncateAfter(p), p.File, so that appends stay after p.
	minNext uint32
	closed  bool
	// appends counts Append's records, and appendsSeen is its value at
	// the last ReleaseIfIdle; only the appender uses them.
	appends, appendsSeen uint64

	// handles keeps the files open; a file closed to keep their number
	// down opens again on its next use (handles.go).
	handles handles
}

// file is one file of records.
type file struct {
	id   uint32
	path string
	// f is the file open, or nil while it is closed; refs, prev and next
	// are guarded by handles.mu (handles.go).
	f          *os.File
	refs       int
	prev, next *file
	size       int64 // bytes appended (the end of the last record)
	live       int64 // bytes of records still referenced (headers included)
	// dirty is set by an append and cleared by the sync that follows it;
	// synced is how many bytes a sync has made durable (see SyncThrough).
	dirty  bool
	synced int64
	// unnamed is set for a new file until a sync of the directory has
	// made its name durable.
	unnamed bool
}

// FileStats describes one file, for the choice of what to rewrite.
type FileStats struct {
	ID     uint32
	Size   int64 // bytes of records
	Live   int64 // bytes of records still referenced
	Active bool  // the file appends go to
}

// Open opens the store in dir, creating dir if needed. fileSize is the
// size past which appends go to a new file (DefaultFileSize if 0). The
// files are taken as they are: a restart cuts them back to the Position
// its state was taken at with TruncateAfter before appending.
func Open(dir string, fileSize int64) (*Store, error) {
	if fileSize <= 0 {
		fileSize = DefaultFileSize
	}
	if fileSize > 1<<32-1 {
		return nil, fmt.Errorf("body store: file size %d does not fit a Ref's offset", fileSize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("body store: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("body store: %w", err)
	}
	s := &Store{dir: dir, fileSize: fileSize, files: map[uint32]*file{}, handles: handles{max: DefaultOpenFiles}}
	for _, e := range entries {
		id, ok := parseName(e.Name())
		if !ok {
			continue
		}
		st, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("body store: %w", err)
		}
		f := &file{id: id, path: filepath.Join(dir, e.Name()), size: st.Size()}
		s.files[id] = f
		if s.active == nil || id > s.active.id {
			s.active = f
		}
	}
	if s.active != nil {
		if err := s.handles.open(s.active); err != nil {
			return nil, fmt.Errorf("body store: %w", err)
		}
	}
	return s, nil
}

// name is the file name of file id: its number in 16 hex digits, so that
// names sort in append order.
func name(id uint32) string { return fmt.Sprintf("%016x.body", id) }

// parseName returns the id of a file named by name.
func parseName(n string) (uint32, bool) {
	hex, ok := strings.CutSuffix(n, ".body")
	if !ok || len(hex) != 16 {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 32)
	return uint32(id), err == nil
}

// Append writes body as a new record and returns its Ref. It does not
// sync. Only one goroutine may append at a time.
func (s *Store) Append(body string) (Ref, error) {
	if len(body) > MaxBody {
		return Ref{}, fmt.Errorf("body store: a body of %d bytes is over the %d a record holds", len(body), MaxBody)
	}
	need := int64(headerSize + len(body))
	s.mu.RLock()
	a, closed := s.active, s.closed
	s.mu.RUnlock()
	if closed {
		return Ref{}, errClosed
	}
	if a == nil || (a.size > 0 && a.size+need > s.fileSize) {
		if err := s.Flush(); err != nil {
			return Ref{}, err
		}
		var err error
		if a, err = s.rotate(); err != nil {
			return Ref{}, err
		}
	}
	ref := Ref{File: a.id, Off: uint32(a.size), Len: uint32(len(body))}
	s.mu.Lock()
	if len(s.buf) == 0 {
		s.bufAt = a.size
	}
	n := len(s.buf)
	s.buf = growBuf(s.buf, int(need))[:n+int(need)]
	rec := s.buf[n:]
	copy(rec[headerSize:], body)
	binary.BigEndian.PutUint32(rec[0:4], uint32(len(body)))
	binary.BigEndian.PutUint32(rec[4:8], crc32.Checksum(rec[headerSize:], castagnoli))
	a.size += need
	a.live += need
	a.dirty = true
	s.appends++
	full := len(s.buf) >= bufSize
	s.mu.Unlock()
	if full {
		if err := s.Flush(); err != nil {
			return Ref{}, err
		}
	}
	return ref, nil
}

// Flush writes the records gathered in memory to their file (not synced).
// The appender calls it; Sync, rotation and a full buffer do too.
func (s *Store) Flush() error {
	s.mu.RLock()
	a, buf, at := s.active, s.buf, s.bufAt
	s.mu.RUnlock()
	if len(buf) == 0 {
		return nil
	}
	// Readers go on reading buf meanwhile: it does not change until the
	// swap below, which only the appender (this goroutine) makes.
	fd, err := s.handles.acquire(a, a)
	if err != nil {
		return fmt.Errorf("body store: write %s: %w", a.path, err)
	}
	_, err = fd.WriteAt(buf, at)
	s.handles.release(a)
	if err != nil {
		return fmt.Errorf("body store: write %s at offset %d: %w", a.path, at, err)
	}
	s.mu.Lock()
	s.recent, s.buf = buf, s.recent[:0]
	s.recentFile, s.recentAt = a.id, at
	s.mu.Unlock()
	return nil
}

// ReleaseIfIdle gives the gathering buffers back to the heap if nothing
// was appended since its last call: it writes what they gather to the
// file, and the next append starts small again. A store that was busy
// holds up to two buffers of bufSize; a node of many shards, most of them
// quiet most of the time, would otherwise keep that for each shard that
// was once busy. Reads of the records they held go to the file (and the
// page cache) instead. Only the appender may call it, at intervals long
// enough to tell a quiet store from a busy one (the log calls it every
// few seconds).
func (s *Store) ReleaseIfIdle() error {
	if s.appends != s.appendsSeen {
		s.appendsSeen = s.appends
		return nil
	}
	if s.BufferBytes() == 0 {
		return nil
	}
	if err := s.Flush(); err != nil {
		return err
	}
	s.mu.Lock()
	s.buf, s.recent, s.recentFile = nil, nil, 0
	s.mu.Unlock()
	return nil
}

// BufferBytes returns the bytes of memory the store's buffers hold.
func (s *Store) BufferBytes() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return cap(s.buf) + cap(s.recent)
}

var errClosed = errors.New("body store: closed")

// minBufCap is the capacity the gathering buffer starts at.
const minBufCap = 16 << 10

// growBuf returns buf with room for need more bytes. It doubles the
// capacity, where append would grow a large slice by a quarter at a time:
// the buffer reaches megabytes in a store's first seconds of load, and
// each step copies what it holds into a new one, so that a quarter at a
// time copied about four times the buffer's final size where doubling
// copies about once (docs/benchmarks.md, "A body store's buffers").
func growBuf(buf []byte, need int) []byte {
	n := len(buf)
	if n+need <= cap(buf) {
		return buf
	}
	// A buffer is written out once it holds bufSize bytes: room for one
	// more record past that is all it ever needs.
	grown := make([]byte, n, max(min(2*cap(buf), bufSize+minBufCap), n+need, minBufCap))
	copy(grown, buf)
	return grown
}

// rotate starts a new file for appends and returns it.
func (s *Store) rotate() (*file, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := max(s.minNext, 1)
	for fid := range s.files {
		id = max(id, fid+1)
	}
	path := filepath.Join(s.dir, name(id))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("body store: new file: %w", err)
	}
	nf := &file{id: id, path: path, dirty: true, unnamed: true}
	s.handles.add(nf, f)
	s.files[id] = nf
	s.active = nf
	return nf, nil
}

// Read returns the body ref names, appended to buf[:0]. A record whose
// length or checksum does not match is an error wrapping ErrCorrupt that
// names the file and offset: it is never returned as a body.
func (s *Store) Read(ref Ref, buf []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.files[ref.File]
	if !ok {
		return nil, fmt.Errorf("body store: no file %s for the record at offset %d", name(ref.File), ref.Off)
	}
	end := int64(ref.Off) + headerSize + int64(ref.Len)
	if end > f.size {
		return nil, fmt.Errorf("%w: %s: the record at offset %d (%d bytes) ends past the file's %d bytes", ErrCorrupt, f.path, ref.Off, ref.Len, f.size)
	}
	buf = slices.Grow(buf[:0], headerSize+int(ref.Len))[:headerSize+int(ref.Len)]
	if mem := s.inMemory(f, int64(ref.Off), end); mem != nil {
		copy(buf, mem)
	} else if err := s.readAt(f, buf, int64(ref.Off)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: the record at offset %d is cut short", ErrCorrupt, f.path, ref.Off)
		}
		return nil, fmt.Errorf("body store: read %s at offset %d: %w", f.path, ref.Off, err)
	}
	n, sum := binary.BigEndian.Uint32(buf[0:4]), binary.BigEndian.Uint32(buf[4:8])
	body := buf[headerSize:]
	if n != ref.Len {
		return nil, fmt.Errorf("%w: %s: the record at offset %d says %d bytes, the reference %d", ErrCorrupt, f.path, ref.Off, n, ref.Len)
	}
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: %s: the record at offset %d (%d bytes): checksum %08x stored, %08x computed", ErrCorrupt, f.path, ref.Off, n, sum, got)
	}
	copy(buf, body) // the body to the front, where the caller's buf began
	return buf[:len(body)], nil
}

// readAt reads len(buf) bytes of f at off, opening f if it is closed. The
// caller holds mu for reading.
func (s *Store) readAt(f *file, buf []byte, off int64) error {
	fd, err := s.handles.acquire(f, s.active)
	if err != nil {
		return err
	}
	defer s.handles.release(f)
	_, err = fd.ReadAt(buf, off)
	return err
}

// syncFile fsyncs f, opening it if it is closed. The caller does not hold
// mu; f is one no other goroutine removes (Sync and SyncThrough run on the
// appender's goroutine or beside it, and files are removed on it).
func (s *Store) syncFile(f *file) error {
	s.mu.RLock()
	active := s.active
	s.mu.RUnlock()
	fd, err := s.handles.acquire(f, active)
	if err != nil {
		return err
	}
	defer s.handles.release(f)
	return fd.Sync()
}

// inMemory returns the bytes [off, end) of f if they are gathered in buf
// or still in recent, else nil. The caller holds mu for reading.
func (s *Store) inMemory(f *file, off, end int64) []byte {
	switch {
	case f == s.active && len(s.buf) > 0 && off >= s.bufAt && end <= s.bufAt+int64(len(s.buf)):
		return s.buf[off-s.bufAt : end-s.bufAt]
	case f.id == s.recentFile && len(s.recent) > 0 && off >= s.recentAt && end <= s.recentAt+int64(len(s.recent)):
		return s.recent[off-s.recentAt : end-s.recentAt]
	}
	return nil
}

// Sync makes every record appended so far durable, and returns the
// Position after the last one. An error means the store's files can no
// longer be trusted to hold what was written (Linux reports a failed
// write-back once): the caller must stop, not retry.
func (s *Store) Sync() (Position, error) {
	if err := s.Flush(); err != nil {
		return Position{}, err
	}
	s.mu.Lock()
	var dirty []*file
	unnamed := false
	sizes := map[*file]int64{}
	for _, f := range s.files {
		if f.dirty {
			dirty = append(dirty, f)
			sizes[f] = f.size
			f.dirty = false
		}
		if f.unnamed {
			unnamed = true
			f.unnamed = false
		}
	}
	pos := s.positionLocked()
	s.mu.Unlock()
	for _, f := range dirty {
		if err := s.syncFile(f); err != nil {
			return Position{}, fmt.Errorf("body store: sync %s: %w", f.path, err)
		}
	}
	if unnamed {
		if err := syncDir(s.dir); err != nil {
			return Position{}, err
		}
	}
	s.mu.Lock()
	for f, n := range sizes {
		f.synced = max(f.synced, n)
	}
	s.mu.Unlock()
	return pos, nil
}

// SyncThrough makes every record appended before p durable. Unlike Sync,
// it may run while another goroutine appends, provided the appender has
// written those records to their files (Flush) before p was taken: a
// snapshot that refers to records syncs them this way, from its own
// goroutine. An error means, as for Sync, that the caller must stop.
func (s *Store) SyncThrough(p Position) error {
	type need struct {
		f    *file
		upTo int64
	}
	var todo []need
	unnamed := false
	s.mu.Lock()
	for id, f := range s.files {
		upTo := f.size
		switch {
		case id > p.File:
			continue
		case id == p.File:
			upTo = int64(p.Off)
		}
		if f == s.active && len(s.buf) > 0 && s.bufAt < upTo {
			s.mu.Unlock()
			return fmt.Errorf("body store: %s: the records before offset %d are not written yet", f.path, upTo)
		}
		if f.synced < upTo {
			todo = append(todo, need{f, upTo})
		}
		if f.unnamed {
			unnamed = true
		}
	}
	s.mu.Unlock()
	for _, n := range todo {
		if err := s.syncFile(n.f); err != nil {
			return fmt.Errorf("body store: sync %s: %w", n.f.path, err)
		}
	}
	if unnamed {
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	s.mu.Lock()
	for _, n := range todo {
		n.f.synced = max(n.f.synced, n.upTo)
	}
	s.mu.Unlock()
	return nil
}

// syncDir makes the names of new files in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("body store: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("body store: sync %s: %w", dir, err)
	}
	return nil
}

// Position returns the point after the last record appended.
func (s *Store) Position() Position {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.positionLocked()
}

func (s *Store) positionLocked() Position {
	if s.active == nil {
		return Position{}
	}
	return Position{File: s.active.id, Off: uint32(s.active.size)}
}

// TruncateAfter drops every record appended after p: the files after
// p.File are removed, and p.File is cut to p.Off. Records before p are
// left as they are. It is what a restart does before it replays the log
// entries that come after the state it restored.
func (s *Store) TruncateAfter(p Position) error {
	if err := s.Flush(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent, s.recentFile = s.recent[:0], 0
	for id, f := range s.files {
		switch {
		case id > p.File:
			s.handles.close(f)
			if err := os.Remove(f.path); err != nil {
				return fmt.Errorf("body store: %w", err)
			}
			delete(s.files, id)
		case id == p.File && f.size > int64(p.Off):
			if err := os.Truncate(f.path, int64(p.Off)); err != nil {
				return fmt.Errorf("body store: truncate %s: %w", f.path, err)
			}
			f.size = int64(p.Off)
			f.synced = min(f.synced, f.size)
			f.dirty = true
		}
	}
	// Appends go on at p: in p.File if it exists, else in a new file
	// numbered from p.File (the position was taken before its file was
	// made, or in an empty store).
	s.active = s.files[p.File]
	s.minNext = p.File
	if s.active != nil {
		if err := s.handles.open(s.active); err != nil {
			return fmt.Errorf("body store: %w", err)
		}
	}
	return nil
}

// Hold counts a record as referenced, for a state restored from a
// snapshot: a file's live bytes are what the state refers to in it.
// Append counts the records it writes itself. A reference to a file the
// store does not have, or past its end, is an error: the state cannot
// be served from this store.
func (s *Store) Hold(ref Ref) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[ref.File]
	if !ok {
		return fmt.Errorf("body store: no file %s for the record at offset %d", filepath.Join(s.dir, name(ref.File)), ref.Off)
	}
	if end := int64(ref.Off) + headerSize + int64(ref.Len); end > f.size {
		return fmt.Errorf("body store: %s: the record at offset %d (%d bytes) ends past the file's %d bytes", f.path, ref.Off, ref.Len, f.size)
	}
	f.live += headerSize + int64(ref.Len)
	return nil
}

// Release counts a record as no longer referenced (its message was
// deleted, expired or purged). Its bytes stay until its file is removed.
func (s *Store) Release(ref Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[ref.File]; ok {
		f.live -= headerSize + int64(ref.Len)
	}
}

// ResetLive sets every file's live bytes to 0, before a restored state
// counts its references with Hold.
func (s *Store) ResetLive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		f.live = 0
	}
}

// Stats describes every file, in append order.
func (s *Store) Stats() []FileStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]FileStats, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, FileStats{ID: f.id, Size: f.size, Live: f.live, Active: f == s.active})
	}
	slices.SortFunc(out, func(a, b FileStats) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Rewrite copies ref's record to the end of the store and returns the
// new Ref: how the live records of a mostly dead file are moved out. The
// old record stays counted as live until the caller releases it (once
// nothing refers to it).
func (s *Store) Rewrite(ref Ref, buf []byte) (Ref, []byte, error) {
	body, err := s.Read(ref, buf)
	if err != nil {
		return Ref{}, buf, err
	}
	nr, err := s.Append(string(body))
	return nr, body, err
}

// Remove deletes file id, which must not be the active file. The caller
// removes a file only when no state that could be restored (the running
// one, the newest snapshot) refers to it.
func (s *Store) Remove(id uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return nil
	}
	if f == s.active {
		return fmt.Errorf("body store: %s is the file appends go to", f.path)
	}
	s.handles.close(f)
	delete(s.files, id)
	if s.recentFile == id {
		s.recent, s.recentFile = s.recent[:0], 0
	}
	if err := os.Remove(f.path); err != nil {
		return fmt.Errorf("body store: %w", err)
	}
	return nil
}

// Close writes what is gathered and closes the files. It does not sync.
func (s *Store) Close() error {
	first := s.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, f := range s.files {
		if err := s.handles.close(f); err != nil && first == nil {
			first = err
		}
	}
	s.files = map[uint32]*file{}
	s.active = nil
	return first
}
