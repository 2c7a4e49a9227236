//go:build !linux

package walfs

import "os"

// sparesSupported: elsewhere than on Linux segments are created as raft-wal
// creates them.
const sparesSupported = false

func freeBytes(string) (int64, error) { return 0, nil }

// datasync flushes f; without fdatasync, fsync.
func datasync(f *os.File) error { return f.Sync() }

// preallocate extends f to size bytes.
func preallocate(f *os.File, size int64) error { return f.Truncate(size) }
