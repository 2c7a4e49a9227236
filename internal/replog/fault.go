package replog

import (
	"errors"
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

// faultStop records what stopped a node, a storage fault or a fence (see
// identity.go), and stops the node.
type faultStop struct {
	logger *slog.Logger
	dir    string
	done   chan struct{} // closed at the first fault

	mu    sync.Mutex
	fault error  // *storageFault, *fencedError or *wedgedError
	stop  func() // stops Raft; nil until the log is running
}

func newFaultStop(logger *slog.Logger, dir string) *faultStop {
	return &faultStop{logger: logger, dir: dir, done: make(chan struct{})}
}

// fail records err, from op, as a storage fault, and returns it for the
// caller to return.
func (s *faultStop) fail(op string, err error) error {
	f := &storageFault{op: op, err: err}
	s.halt(f)
	return f
}

// halt stops the node for reason. The first reason is logged, closes done
// and stops Raft (from another goroutine: the caller may be one of Raft's
// own).
func (s *faultStop) halt(reason error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault != nil {
		return
	}
	s.fault = reason
	var sf *storageFault
	if errors.As(reason, &sf) {
		s.logger.Error("storage fault: this node stops; fix the disk and restart it (the data dir is recovered from what reached the disk, as after a crash)",
			"op", sf.op, "err", sf.err, "dir", s.dir)
	} else {
		s.logger.Error("this node stops: "+reason.Error(), "dir", s.dir)
	}
	close(s.done)
	if s.stop != nil {
		go s.stop()
	}
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

// err returns what stopped the node, or nil.
func (s *faultStop) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault
}

// summary says in a few words what stopped the node, for /readyz and
// refused requests; the details are in the server's log.
func (s *faultStop) summary() string {
	var fe *fencedError
	if errors.As(s.err(), &fe) {
		return "this node is fenced: the cluster knows its id with another data dir (see the server log)"
	}
	var we *wedgedError
	if errors.As(s.err(), &we) {
		return "a Raft group of this node is wedged: restart it (see the server log)"
	}
	return "a storage fault stopped this node (see the server log)"
}

// Halted returns a channel closed when a storage fault, a fence or a
// wedged Raft (wedge.go) has stopped the node (see Fault). The node then
// answers no request: its process should exit.
func (l *Raft) Halted() <-chan struct{} { return l.faults.done }

// Fault returns what stopped the node (a storage fault, a fence or a
// wedged Raft), or nil.
func (l *Raft) Fault() error { return l.faults.err() }
