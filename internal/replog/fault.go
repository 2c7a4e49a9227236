package replog

import (
	"fmt"
	"log/slog"
	"sync"
)

// A storage fault stops the node. When the disk fails a write, a sync, a
// truncation or a new segment of the log, a write of a snapshot, or a
// write of the body store, nobody can say what reached the disk: raft-wal
// publishes an entry before its fsync returns and rolls nothing back, so
// every later append fails too, and a snapshot or body half written may
// be half read. PostgreSQL learned that retrying an fsync can lose data
// silently ("fsyncgate"), and etcd treats such errors as fatal. So does
// fifoq: the node logs one line, stops Raft, refuses every request, is not
// ready, and its process exits non-zero (fifoq serve watches Halted); a
// restart recovers the data dir from what the disk holds, as after a
// crash. Until then the other members go on without it, and the cluster
// reports it gone instead of keeping a member that looks healthy but
// writes nothing.

// storageFault is the error of the write that stopped the node.
type storageFault struct {
	op  string // what was being written
	err error
}

func (f *storageFault) Error() string {
	return fmt.Sprintf("storage fault: %s: %v", f.op, f.err)
}

func (f *storageFault) Unwrap() error { return f.err }

// faultStop records a node's first storage fault and stops the node.
type faultStop struct {
	logger *slog.Logger
	dir    string
	done   chan struct{} // closed at the first fault

	mu    sync.Mutex
	fault *storageFault
	stop  func() // stops Raft; nil until the log is running
}

func newFaultStop(logger *slog.Logger, dir string) *faultStop {
	return &faultStop{logger: logger, dir: dir, done: make(chan struct{})}
}

// fail records err, from op, as a storage fault, and returns it for the
// caller to return. The first one is logged, closes done and stops Raft
// (from another goroutine: the caller may be one of Raft's own).
func (s *faultStop) fail(op string, err error) error {
	f := &storageFault{op: op, err: err}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault != nil {
		return f
	}
	s.fault = f
	s.logger.Error("storage fault: this node stops; fix the disk and restart it (the data dir is recovered from what reached the disk, as after a crash)",
		"op", op, "err", err, "dir", s.dir)
	close(s.done)
	if s.stop != nil {
		go s.stop()
	}
	return f
}

// setStop gives the function that stops Raft; if a fault came before, it
// runs at once.
func (s *faultStop) setStop(stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop = stop
	if s.fault != nil {
		go stop()
	}
}

// err returns the fault that stopped the node, or nil.
func (s *faultStop) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault == nil {
		return nil
	}
	return s.fault
}

// Halted returns a channel closed when a storage fault has stopped the
// node (see Fault). The node then answers no request: its process should
// exit.
func (l *Raft) Halted() <-chan struct{} { return l.faults.done }

// Fault returns the storage fault that stopped the node, or nil.
func (l *Raft) Fault() error { return l.faults.err() }
