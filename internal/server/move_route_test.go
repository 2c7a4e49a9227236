package server

import (
	"testing"

	"github.com/fifoq/fifoq/internal/api"
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
