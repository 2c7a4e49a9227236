package replog

import (
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestEntryCarriesCooldowns checks that a command's cool-downs survive the
// log, and that an entry without them (written before they existed) reads
// as zero, the engine's "SQS default".
func TestEntryCarriesCooldowns(t *testing.T) {
	q := api.QueueKey{Account: "000000000000", Name: "q"}
	cmds := []*engine.Command{
		{Time: 1, Caller: q.Account, Queue: q, Request: &api.DeleteQueueRequest{QueueUrl: q.Path()}, RecreateDelay: -1},
		{Time: 2, Caller: q.Account, Queue: q, Request: &api.PurgeQueueRequest{QueueUrl: q.Path()}, PurgeDelay: 5 * time.Second},
		{Time: 3, Caller: q.Account, Queue: q, Request: &api.PurgeQueueRequest{QueueUrl: q.Path()}},
	}
	b, err := encodeEntry(cmds)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].RecreateDelay != -1 || got[1].PurgeDelay != 5*time.Second || got[2].PurgeDelay != 0 || got[2].RecreateDelay != 0 {
		t.Errorf("decoded cool-downs: %v %v, %v %v, %v %v", got[0].RecreateDelay, got[0].PurgeDelay,
			got[1].RecreateDelay, got[1].PurgeDelay, got[2].RecreateDelay, got[2].PurgeDelay)
	}
}
