package replog

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running
// when they end: a log that leaves its batching, snapshot or Raft
// goroutines behind on Close would pile them up across restarts.
//
// One kind is left on purpose: the reader of a Raft future that a wait
// gave up on when the log stopped (awaitUntil). Raft does not answer a
// future still queued for its leader loop when it shuts down (a barrier
// a new leader asked for just before its log closed, say), so its reader
// stays blocked; there is at most one per entry or barrier in flight at
// that moment, as await says.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/fifoq/fifoq/internal/replog.awaitUntil.func1"))
}
