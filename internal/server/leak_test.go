package server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running
// when they end: a server that leaks one per request, long poll or move
// task would grow without bound over days.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
