package server

import (
	"context"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// mapWithoutQueues is a shard map that names no queue: what a member's
// map says of a partition merged away, or of a queue whose record it has
// yet to read. Only what serving a request asks of it is implemented.
type mapWithoutQueues struct{ Shards }

func (mapWithoutQueues) Of(api.QueueKey) uint32 { return 0 }
func (mapWithoutQueues) Forget(api.QueueKey)    {}

// TestMovedQueueAnswersMovingWhereItIsServed serves requests on a queue in
// a group it was moved out of (its engine keeps the moved marker), while
// the member's map no longer names the queue: what a member does when it
// routed a receive by its map a moment before a merge or a move changed
// it. Every request, the reads among them, is answered from the group it
// is served in: the retryable moving error, never NonExistentQueue from
// the first group, which never held the queue (a 400 that no SQS client
// retries).
func TestMovedQueueAnswersMovingWhereItIsServed(t *testing.T) {
	first := replog.NewMemory(engine.Config{Region: DefaultRegion})
	shard := replog.NewMemory(engine.Config{Region: DefaultRegion})
	s, err := New(Config{Logger: quietLogger(), Log: first, Shards: mapWithoutQueues{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := api.QueueKey{Region: DefaultRegion, Account: DefaultAccount, Name: "moved.fifo"}
	apply := func(req api.Request) {
		t.Helper()
		cmd := &engine.Command{Time: time.Now().UnixNano(), Caller: DefaultAccount, Region: DefaultRegion, Queue: key, Request: req}
		if _, ok := req.(*api.CreateQueueRequest); ok {
			cmd.Queue = api.QueueKey{}
		}
		if _, err := shard.Apply(ctx, cmd); err != nil {
			t.Fatalf("%s: %v", req.Action(), err)
		}
	}
	apply(&api.CreateQueueRequest{QueueName: key.Name, Attributes: map[string]string{"FifoQueue": "true"}})
	apply(&engine.FenceQueueRequest{Move: "m1"})
	apply(&engine.DropQueueRequest{Move: "m1"})

	served := withGroup(ctx, &group{id: 7, log: shard})
	url := "http://localhost/" + DefaultAccount + "/" + key.Name
	in := api.Scope{Account: DefaultAccount, Region: DefaultRegion}
	for _, req := range []api.Request{
		&api.ReceiveMessageRequest{QueueUrl: url},
		&api.GetQueueAttributesRequest{QueueUrl: url, AttributeNames: []string{"All"}},
		&api.SendMessageRequest{QueueUrl: url, MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "d"},
	} {
		_, err := s.do(served, in, req)
		if !engine.IsQueueMoving(err) {
			t.Errorf("%s on a queue moved out of the group serving it: got %v, want the retryable moving error", req.Action(), err)
		}
	}
}
