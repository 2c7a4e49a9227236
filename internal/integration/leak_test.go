package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the suite if any goroutine is left running when it ends:
// every server a test starts is shut down by its cleanup, and a server
// (or its log) that leaves goroutines behind after Shutdown would leak
// them in production at every restart of an embedded server.
//
// The reader of a Raft future that the command log gave up on as it
// stopped is left on purpose (replog's TestMain says why).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/fifoq/fifoq/internal/replog.awaitUntil.func1"))
}
