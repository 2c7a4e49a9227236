//go:build unix

package testenv

import (
	"errors"
	"os"
	"syscall"
)

// lockExclusive takes an exclusive flock(2) on f without waiting, and says
// whether it got it; the kernel drops it when the process exits.
func lockExclusive(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
