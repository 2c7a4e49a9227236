package replog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// dirLock is an exclusive lock on a data directory, so that two servers
// never write the same log. It is an flock(2) on a LOCK file (LockFileEx
// on Windows): the kernel drops it when the process dies, so a crash never
// leaves a stale lock.
type dirLock struct{ f *os.File }

// errLockHeld is lockFile's answer when another process holds the lock.
var errLockHeld = errors.New("lock held")

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errLockHeld) {
			return nil, fmt.Errorf("data dir %s is in use by another fifoq (lock %s is held)", dir, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Record who holds the lock, for the operator who finds it.
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}
