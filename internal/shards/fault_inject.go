//go:build fifoq_faults

package shards

import (
	"os"
	"time"
)

// A binary built with -tags fifoq_faults balances the shards' queues every
// FIFOQ_TEST_QUEUE_BALANCE (a duration) where Config.QueueBalance says
// nothing, so that a test of real processes sees a move by load within
// seconds, not minutes.
func init() {
	if d, err := time.ParseDuration(os.Getenv("FIFOQ_TEST_QUEUE_BALANCE")); err == nil {
		testQueueBalance = d
	}
}
