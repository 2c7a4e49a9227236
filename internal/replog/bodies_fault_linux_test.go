package replog

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// TestFailedBufferReleaseStopsNode: the housekeeping look that gives a
// quiet body store's buffers back writes what they gather first, and a
// disk that fails that write is a storage fault like any failed body
// write: the node stops at once, rather than at its next apply, which on a
// quiet node may be long in coming. The fault is real: the descriptor the
// store writes its file through is replaced by one open read-only, so the
// write fails with EBADF as the kernel returns it.
func TestFailedBufferReleaseStopsNode(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{tidyEvery: time.Hour})
	defer l.Close()
	apply(t, l, c, api.QueueKey{Account: bodyQueue.Account}, &api.CreateQueueRequest{QueueName: bodyQueue.Name})
	for i := range 3 {
		sendBody(t, l, c, i, 100_000)
	}
	l.tidyBodies(true) // appended to since the last look: kept, and nothing written
	if l.fsm.bodies.store.BufferBytes() == 0 {
		t.Fatal("the store holds no buffers to give back")
	}

	readOnly, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer readOnly.Close()
	replaced := 0
	bodiesDir := filepath.Join(dir, "bodies")
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, bodiesDir+string(filepath.Separator)) {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Dup3(int(readOnly.Fd()), fd, syscall.O_CLOEXEC); err != nil {
			t.Fatalf("replace descriptor %d (%s): %v", fd, target, err)
		}
		replaced++
	}
	if replaced == 0 {
		t.Fatalf("no descriptor open on a file under %s", bodiesDir)
	}

	l.tidyBodies(true) // quiet since the last look: written, and the write fails
	select {
	case <-l.Halted():
	case <-time.After(hangGuard):
		t.Fatal("the node did not stop when the write of its body store's buffers failed")
	}
	if err := l.Fault(); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("the node's fault is %v; want the EBADF of the body store's write", err)
	}
	if err := l.Ready(); err == nil || !strings.Contains(err.Error(), "storage fault") {
		t.Fatalf("a stopped node says it is ready: %v", err)
	}
}
