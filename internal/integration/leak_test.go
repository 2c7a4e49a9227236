package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the suite if any goroutine is left running when it ends:
// every server a test starts is shut down by its cleanup, and a server
// (or its log) that leaves goroutines behind after Shutdown would leak
// them in production at every restart of an embedded server.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
