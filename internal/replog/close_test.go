package replog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// hungStore is a log store whose writes can be made to hang, as an fsync
// on a failing disk does: once armed, StoreLog and StoreLogs block until
// released, then write.
type hungStore struct {
	raft.LogStore
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when a write first blocks
	gate    chan struct{} // closed by release
	once    sync.Once
}

func newHungStore() *hungStore {
	return &hungStore{entered: make(chan struct{}), gate: make(chan struct{})}
}

func (h *hungStore) wrap(s raft.LogStore) raft.LogStore { h.LogStore = s; return h }

func (h *hungStore) arm() { h.mu.Lock(); h.armed = true; h.mu.Unlock() }

func (h *hungStore) release() { h.once.Do(func() { close(h.gate) }) }

func (h *hungStore) block() {
	h.mu.Lock()
	armed := h.armed
	if armed {
		select {
		case <-h.entered:
		default:
			close(h.entered)
		}
	}
	h.mu.Unlock()
	if armed {
		<-h.gate
	}
}

func (h *hungStore) StoreLog(l *raft.Log) error { h.block(); return h.LogStore.StoreLog(l) }

func (h *hungStore) StoreLogs(ls []*raft.Log) error { h.block(); return h.LogStore.StoreLogs(ls) }

// IsMonotonic passes on raft-wal's answer, so that Raft treats the wrapped
// store as it treats raft-wal.
func (h *hungStore) IsMonotonic() bool {
	m, ok := h.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// closeReturns runs Close and returns its error, failing if it hangs.
func closeReturns(t *testing.T, l *Raft) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatal("Close hung")
		return nil
	}
}

// waitClosed waits until the shutdown Close gave up on has finished in the
// background, so that the leak check at the package's end finds nothing.
func waitClosed(t *testing.T, l *Raft) {
	t.Helper()
	select {
	case <-l.closed:
	case <-time.After(hangGuard):
		t.Fatal("the log never finished stopping after the hung call returned")
	}
}

// TestCloseReturnsWhenDiskWriteHangs makes the disk write of a request's
// entry hang: Close gives up after its timeout with ErrCloseTimeout, the
// waiting request is answered ServiceUnavailable, a new one is refused, and
// once the write returns the log finishes stopping and the directory opens
// again with the request's command applied at most once.
func TestCloseReturnsWhenDiskWriteHangs(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	store := newHungStore()
	t.Cleanup(store.release)
	l, _ := openTest(t, dir, RaftConfig{CloseTimeout: 50 * time.Millisecond, wrapStore: store.wrap})
	createFIFO(t, l, c)
	store.arm()
	errc := applyAsync(context.Background(), l, sendCommand(c, "m0"))
	select {
	case <-store.entered:
	case <-time.After(hangGuard):
		t.Fatal("the command never reached the log store")
	}
	if err := closeReturns(t, l); !errors.Is(err, ErrCloseTimeout) {
		t.Fatalf("Close with a hung disk write returned %v; want ErrCloseTimeout", err)
	}
	wantAPIError(t, waitErr(t, errc), "ServiceUnavailable", "outcome was known")
	wantAPIError(t, waitErr(t, applyAsync(context.Background(), l, sendCommand(c, "m1"))), "ServiceUnavailable", "shutting down")
	if err := l.Close(); !errors.Is(err, ErrCloseTimeout) {
		t.Fatalf("second Close returned %v; want the first one's ErrCloseTimeout", err)
	}

	store.release()
	waitClosed(t, l)
	c.t += 1e12
	l, _ = openTest(t, dir, RaftConfig{})
	defer l.Close()
	if got := receiveBodies(t, l, c, 10); len(got) > 1 || (len(got) == 1 && got[0] != "m0") {
		t.Fatalf("after the hung write and a restart received %v; want [m0] or nothing", got)
	}
}

// TestCloseReturnsWhenStateMachineHangs blocks the state machine on a
// request's entry: Close gives up after its timeout, the request is
// answered ServiceUnavailable, and once the state machine returns the log
// finishes stopping and reopens with the command applied exactly once (its
// entry was committed before the state machine took it).
func TestCloseReturnsWhenStateMachineHangs(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{CloseTimeout: 50 * time.Millisecond})
	createFIFO(t, l, c)
	release := blockFSM(t, l)
	before := l.raft.LastIndex()
	errc := applyAsync(context.Background(), l, sendCommand(c, "m0"))
	waitLastIndex(t, l, before)
	if err := closeReturns(t, l); !errors.Is(err, ErrCloseTimeout) {
		t.Fatalf("Close with a hung state machine returned %v; want ErrCloseTimeout", err)
	}
	wantAPIError(t, waitErr(t, errc), "ServiceUnavailable", "outcome was known")

	release()
	waitClosed(t, l)
	c.t += 1e12
	l, _ = openTest(t, dir, RaftConfig{})
	defer l.Close()
	if got := receiveBodies(t, l, c, 10); len(got) != 1 || got[0] != "m0" {
		t.Fatalf("after the hung apply and a restart received %v; want [m0]", got)
	}
}

// TestCloseWithoutHangReturnsNil checks that a healthy Close finishes its
// whole work before returning, whatever the timeout.
func TestCloseWithoutHangReturnsNil(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, t.TempDir(), RaftConfig{CloseTimeout: time.Hour})
	createFIFO(t, l, c)
	send(t, l, c, 0)
	if err := closeReturns(t, l); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.closed:
	default:
		t.Fatal("Close returned before its work was done")
	}
}
