package server

import (
	"context"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/shards"
)

// TestQueueOfStringReadsEveryKey: the names a shard's replica gives its
// queues in GET /cluster/shards read back to their keys, partitions
// included. A partition read as a queue named "NAME#1" would be moved by
// the balancer as a queue of that name, which no router asks for.
func TestQueueOfStringReadsEveryKey(t *testing.T) {
	for _, k := range []api.QueueKey{
		{Account: "000000000000", Name: "q"},
		{Account: "000000000000", Name: "ht.fifo", Part: 7},
		{Region: "eu-west-1", Account: "123456789012", Name: "q-1_x"},
		{Region: "eu-west-1", Account: "123456789012", Name: "ht.fifo", Part: 4095},
	} {
		if got := queueOfString(k.String()); got != k {
			t.Errorf("queueOfString(%q) = %+v; want %+v", k.String(), got, k)
		}
	}
}

// TestStepOfADeposedDriverIsNotTried: a move's step whose driver no longer
// leads the first group (shards.WithDriver) is refused before any try, by
// a member that holds no replica of the shard as by any: a deposed
// driver's install tried again for seconds landed once after the next
// leader had finished the move and moved the queue on, leaving a copy the
// map did not name in the target shard, which then refused the queue for
// good (the 1000-move soak, docs/benchmarks.md). On the code before, the
// step was tried (and, here, found no shard to go to).
func TestStepOfADeposedDriverIsNotTried(t *testing.T) {
	s := &Server{shards: &shards.Set{}}
	deposed := shards.WithDriver(context.Background(), func() bool { return false })
	err := moveSteps{s: s}.Step(deposed, 1, api.QueueKey{Account: "000000000000", Name: "q.fifo"}, &engine.InstallQueueRequest{Move: "late"})
	if err != errNoLongerDriving {
		t.Fatalf("a deposed driver's install: %v; want it refused untried", err)
	}
}
