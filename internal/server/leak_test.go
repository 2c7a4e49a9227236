package server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running
// when they end: a server that leaks one per request, long poll or move
// task would grow without bound over days.
//
// The reader of a Raft future that the command log gave up on as it
// stopped is left on purpose (replog's TestMain says why).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/fifoq/fifoq/internal/replog.awaitUntil.func1"))
}
