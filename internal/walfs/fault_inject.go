//go:build fifoq_faults

package walfs

import (
	"os"
	"strings"
	"syscall"
	"time"
)

// A binary built with -tags fifoq_faults fails its log segments' writes
// and syncs with EIO, as a dying disk does, from the moment
// FIFOQ_TEST_WAL_EIO_AFTER (a duration) after it starts; with
// FIFOQ_TEST_WAL_EIO_PATH, only those of segments whose path contains it
// (one shard's log, say). The cluster tests run members so
// (internal/clustertest).
func init() {
	d, err := time.ParseDuration(os.Getenv("FIFOQ_TEST_WAL_EIO_AFTER"))
	if err != nil {
		return
	}
	from := time.Now().Add(d)
	only := os.Getenv("FIFOQ_TEST_WAL_EIO_PATH")
	injectedFault = func(op, path string) error {
		if time.Now().Before(from) || !strings.Contains(path, only) {
			return nil
		}
		return &os.PathError{Op: op, Path: path, Err: syscall.EIO}
	}
}
