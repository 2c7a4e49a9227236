package walfs

import (
	"errors"
	"os"
	"syscall"
)

// sparesSupported: segments are prepared ahead with zeros. Only on Linux,
// whose file systems this is measured on and which has fdatasync.
const sparesSupported = true

// freeBytes is the space an unprivileged process may still use on dir's
// file system.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// datasync flushes f's data and the metadata needed to read it back.
func datasync(f *os.File) error {
	return onFD(f, "fdatasync", syscall.Fdatasync)
}

// preallocate reserves size bytes for f, as raft-wal does: fallocate, or,
// on a file system without it, a plain extension of the file.
func preallocate(f *os.File, size int64) error {
	err := onFD(f, "fallocate", func(fd int) error { return syscall.Fallocate(fd, 0, 0, size) })
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}

// onFD runs the system call call on f's descriptor, again while it is
// interrupted, and names op and the file in its error.
func onFD(f *os.File, op string, call func(fd int) error) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := sc.Control(func(fd uintptr) {
		for {
			if cerr = call(int(fd)); cerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if cerr != nil {
		return &os.PathError{Op: op, Path: f.Name(), Err: cerr}
	}
	return nil
}
