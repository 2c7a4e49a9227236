package replog

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/raft-wal/types"
)

// zeroAheadChunk is how far ahead of the log's write position a segment
// file is filled with zeros: one such write every zeroAheadChunk bytes of
// log.
const zeroAheadChunk = 1 << 20

// zeroes is the source of every zero-filling write; it is only read.
var zeroes = make([]byte, zeroAheadChunk)

// zeroAheadFS is the file system of the log's segment files: the one
// raft-wal uses by default, except that a segment file it writes to is
// filled with zeros a little ahead of the write position.
//
// raft-wal preallocates each segment file with fallocate, which reserves
// blocks without writing them: the file system records them as unwritten,
// and the first write into such a block turns it into a written one, a
// metadata change that the next fsync must commit to the file system's
// journal. Every group commit wrote into fresh blocks, so every fsync
// carried a journal commit (on ext4, about 70 µs more CPU and 150 µs more
// wall time per fsync on the machine of docs/benchmarks.md, and a second
// device flush). Zeros written ahead, once per zeroAheadChunk, turn the
// blocks into written ones in bulk, so that a group commit's fsync is a
// plain data flush. The zeros are what the preallocated blocks read as
// anyway, and past the last commit frame raft-wal reads nothing, so the
// files' contents and their recovery are unchanged.
type zeroAheadFS struct {
	types.VFS
}

// Create implements types.VFS.
func (z zeroAheadFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := z.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &zeroAheadFile{WritableFile: f, size: int64(size)}, nil
}

// OpenWriter implements types.VFS: the tail segment reopened at start.
func (z zeroAheadFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := z.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		// Without its size, write nothing ahead: the file is used as is.
		return f, nil
	}
	return &zeroAheadFile{WritableFile: f, size: st.Size()}, nil
}

// zeroAheadFile is a segment file that, after each write that passes
// zeroedTo, writes zeros from the write's end to zeroAheadChunk past it
// (never beyond the file's preallocated size). raft-wal writes a segment
// from one goroutine at a time (its writer lock), so zeroedTo needs no lock.
type zeroAheadFile struct {
	types.WritableFile
	size     int64
	zeroedTo int64
}

// WriteAt implements io.WriterAt.
func (f *zeroAheadFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	if err != nil {
		return n, err
	}
	end := off + int64(n)
	if end <= f.zeroedTo || end >= f.size {
		return n, nil
	}
	to := min(end+zeroAheadChunk, f.size)
	// A failed zero write costs only speed: the blocks stay unwritten and
	// the next data write converts them as it always did.
	if _, zerr := f.WritableFile.WriteAt(zeroes[:to-end], end); zerr == nil {
		f.zeroedTo = to
	}
	return n, nil
}
