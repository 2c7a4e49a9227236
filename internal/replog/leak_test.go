package replog

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running
// when they end: a log that leaves its batching, snapshot or Raft
// goroutines behind on Close would pile them up across restarts.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
