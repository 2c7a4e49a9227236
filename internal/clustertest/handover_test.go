package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/replog"
)

// TestSendsWaitOutLeadershipHandOvers sends to a FIFO queue through every
// member of a cluster of three with three shards, one attempt a request
// (no client retries), while the queue's shard hands its leadership from
// member to member, as the balancer does when it spreads leaders or a
// node stops. Raft refuses a write before it is appended while its
// leader hands its leadership over, and once it no longer leads; such a
// write was not carried out, so the member that took the request carries
// it to the next leader instead of answering the client a 503. Every send
// is answered, and the queue then holds every message sent.
func TestSendsWaitOutLeadershipHandOvers(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 3, 89)
	c.logTailsOnFailure(40)
	c.waitShards(4)
	sendThroughHandOvers(t, c, func() (*replog.Raft, *memNode) {
		shard := uint32(c.shardOf("handover.fifo"))
		lead := c.leaderOf(shard)
		if lead == nil {
			return nil, nil
		}
		l, _ := lead.node().Shards.Shard(shard)
		return l, lead
	})
}

// TestSendsWaitOutLeadershipHandOversInOneGroup is the test above on a
// cluster of one group (--shards 1), whose queues are all in the group
// the members forward every request to the leader of: a write refused
// because the leadership is being handed over, as when the leader is
// stopped, is carried on to the next leader by the member it reached,
// whether a client or another member sent it there.
func TestSendsWaitOutLeadershipHandOversInOneGroup(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 1, 90)
	c.logTailsOnFailure(40)
	sendThroughHandOvers(t, c, func() (*replog.Raft, *memNode) {
		for _, nd := range c.running() {
			if l := nd.node().Raft; l.Leading() {
				return l, nd
			}
		}
		return nil, nil
	})
}

// sendThroughHandOvers runs the handover test on c, whose queue's group's
// leader, and its log there, leading returns (nil while there is none).
func sendThroughHandOvers(t *testing.T, c *memCluster, leading func() (*replog.Raft, *memNode)) {
	ctx := context.Background()
	clients := c.memberClients()
	var url string
	c.retrying("CreateQueue", func() error {
		out, err := clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("handover.fifo"),
			Attributes: map[string]string{"FifoQueue": "true"}})
		if err == nil {
			url = *out.QueueUrl
		}
		return err
	})

	var sent atomic.Int64
	var mu sync.Mutex
	var failures []string
	stop := make(chan struct{})
	var senders sync.WaitGroup
	for i, cl := range clients {
		senders.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("m%d-%d", i+1, n)
				_, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(id),
					MessageGroupId: aws.String(strconv.Itoa(n % 8)), MessageDeduplicationId: aws.String(id)})
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("send %s through %s: %v", id, c.nodes[i].id, err))
					mu.Unlock()
					continue
				}
				sent.Add(1)
			}
		})
	}
	handOvers := 0
	for round := range 6 {
		time.Sleep(300 * time.Millisecond)
		l, lead := leading()
		if l == nil {
			continue
		}
		to := c.nodes[(slices.Index(c.nodes, lead)+1+round%2)%len(c.nodes)]
		err := l.HandLeadershipTo(to.id, 5*time.Second)
		t.Logf("the queue's group's leadership from %s to %s: %v", lead.id, to.id, err)
		if err == nil {
			handOvers++
		}
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	senders.Wait()
	if handOvers < 3 {
		t.Fatalf("only %d of 6 leadership handovers happened", handOvers)
	}
	for _, f := range failures {
		t.Errorf("%s", f)
	}
	var visible int
	c.retrying("the queue's count", func() error {
		out, err := clients[1].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
		if err != nil {
			return err
		}
		visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
		return nil
	})
	t.Logf("%d sends answered through %d handovers, %d failed; the queue holds %d", sent.Load(), handOvers, len(failures), visible)
	if len(failures) == 0 && int64(visible) != sent.Load() {
		t.Errorf("the queue holds %d messages, want the %d sent", visible, sent.Load())
	}
}
