package clustertest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestSplitQueueRightAfterAPartitionLeaderFailed crashes the member that
// leads the shard of one partition of a split high-throughput queue and,
// at once, sends a batch over both partitions and reads the queue's
// attributes through another member, with no client retries. That member
// carries each partition's part to the partition's leader itself, and the
// leader it knows refuses the connection: nothing was sent, so it waits
// for the shard's next leader, as a forwarded request does, rather than
// answering 503 for a request that a client's retry would need.
func TestSplitQueueRightAfterAPartitionLeaderFailed(t *testing.T) {
	t.Parallel()
	c := newHandSplitCluster(t, 3, 3, 79)
	c.logTailsOnFailure(40)
	ctx := context.Background()
	url, _, _, to := c.splitHTQueue("ht.fifo", nil)
	var victim *memNode
	c.retrying("the leader of partition 1's shard", func() error {
		if victim = c.leaderOf(to); victim == nil {
			return fmt.Errorf("no leader of shard %d", to)
		}
		return nil
	})
	var via *memNode
	for _, nd := range c.nodes {
		if nd != victim {
			via = nd
			break
		}
	}
	cl := newClient(via.httpAddr, 20*time.Second)
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		g := "g" + strconv.Itoa(i)
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(g), MessageBody: aws.String(g),
			MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(g)})
	}
	c.crash(victim)
	out, err := cl.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		t.Fatalf("a batch over both partitions through %s right after %s, which led partition 1's shard, crashed: %v", via.id, victim.id, err)
	}
	if len(out.Failed) != 0 || len(out.Successful) != len(entries) {
		t.Fatalf("the batch through %s right after %s crashed: %d sent, failed %+v", via.id, victim.id, len(out.Successful), out.Failed)
	}
	attrs, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatalf("the attributes through %s: %v", via.id, err)
	}
	if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != strconv.Itoa(len(entries)) {
		t.Errorf("the queue holds %s messages after a batch of %d was acknowledged", n, len(entries))
	}
}
