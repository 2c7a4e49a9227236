package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestListQueuesAtOnceThroughEveryMember creates queues through each
// member of a cluster of four with four shards, each shard on three of
// them, and at once lists each through every member: the one that holds
// no replica of the queue's shard too, which asks one of the shard's
// replicas. A replica that does not lead the shard learns that the
// creation committed only with its leader's next append, so the queue
// would be missing from its list for a second or two.
func TestListQueuesAtOnceThroughEveryMember(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 4, 4, 43)
	c.logTailsOnFailure(40)
	c.waitShards(5)
	createAndListEverywhere(t, c, "listed-%02d", 12)
}

// TestListQueuesAtOnceWhileShardsForm is TestListQueuesAtOnceThroughEveryMember
// from the cluster's first moments, as a newcomer's script runs it (the
// TLS cluster recipe of docs/security.md): three members with three
// shards, queues created through each member in turn before the shards
// have formed and while they form, each listed at once through every
// member. A queue created before the shards exist lives in the first
// group, whose followers learn that its creation committed only with the
// leader's next append.
func TestListQueuesAtOnceWhileShardsForm(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 3, 61)
	c.logTailsOnFailure(40)
	createAndListEverywhere(t, c, "early-%02d", 9)
}

// createAndListEverywhere creates n queues, named by format and a count,
// through each member of c in turn, and lists each through every member
// as soon as its creation is answered, wanting it there.
func createAndListEverywhere(t *testing.T, c *memCluster, format string, n int) {
	t.Helper()
	clients := c.memberClients()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf(format, i)
		c.retrying("CreateQueue "+name, func() error {
			_, err := clients[i%len(clients)].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			return err
		})
		for j, cl := range clients {
			var urls []string
			c.retrying("ListQueues", func() error {
				out, err := cl.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(name)})
				if err == nil {
					urls = out.QueueUrls
				}
				return err
			})
			if !slices.ContainsFunc(urls, func(u string) bool { return strings.HasSuffix(u, "/"+name) }) {
				t.Errorf("ListQueues through %s right after %s was created through %s: %v, want it", c.nodes[j].id, name, c.nodes[i%len(clients)].id, urls)
			}
		}
	}
}

// TestListQueuesRightAfterItsShardLeaderFailed creates a queue through
// the member that leads one of the shards (not the first group), which
// places it in that shard, crashes that member as soon as the creation is
// answered, and lists the queue through each other member at once. The
// creation is on a majority of the shard's replicas, so the shard's next
// leader holds it; a replica that has not yet learnt that it committed
// (it learns it with its leader's next append, which never came) does
// not, and must not be the one that answers while the shard elects.
func TestListQueuesRightAfterItsShardLeaderFailed(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 3, 3, 71)
	c.logTailsOnFailure(40)
	ctx := context.Background()
	for round := range 3 {
		c.waitShards(4)
		// The leaders spread over the members within seconds.
		var victim *memNode
		c.retrying("a shard led elsewhere than the first group", func() error {
			first := c.leaderOf(0)
			for id := uint32(1); id <= 3; id++ {
				if nd := c.leaderOf(id); nd != nil && first != nil && nd != first {
					victim = nd
					return nil
				}
			}
			return fmt.Errorf("every shard is led by the first group's leader")
		})
		name := fmt.Sprintf("orphan-%d", round)
		c.retrying("CreateQueue "+name, func() error {
			_, err := newClient(victim.httpAddr, 10*time.Second).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			return err
		})
		c.crash(victim)
		for _, nd := range c.running() {
			var urls []string
			c.retrying("ListQueues through "+nd.id, func() error {
				out, err := newClient(nd.httpAddr, 10*time.Second).ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(name)})
				if err == nil {
					urls = out.QueueUrls
				}
				return err
			})
			if !slices.ContainsFunc(urls, func(u string) bool { return strings.HasSuffix(u, "/"+name) }) {
				t.Errorf("round %d: ListQueues through %s right after %s, which created %s, failed: %v, want it", round, nd.id, victim.id, name, urls)
			}
		}
		c.start(victim)
	}
}
