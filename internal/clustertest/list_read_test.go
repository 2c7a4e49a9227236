package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

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
	c := newMemCluster(t, 4, 4, 43)
	c.logTailsOnFailure(40)
	c.waitShards(5)
	clients := c.memberClients()
	ctx := context.Background()
	for i := range 12 {
		name := fmt.Sprintf("listed-%02d", i)
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
