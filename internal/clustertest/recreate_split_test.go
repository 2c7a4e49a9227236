package clustertest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/api"
	fifoqnode "github.com/fifoq/fifoq/internal/node"
)

// TestSplitQueueDeletedAndCreatedAgain: a high-throughput queue spread
// over three shards is deleted and created again under its name, first
// as a plain FIFO queue (one partition), then, deleted again, as a
// high-throughput one. Each time it takes messages of many groups
// through every member and gives them back in order, once each: nothing
// of the deleted queue's partitions is left to route a request to.
func TestSplitQueueDeletedAndCreatedAgain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three in-process members; skipped in -short mode")
	}
	c := startMemClusterWith(t, 3, 3, 46, 0, func(cfg *fifoqnode.Config) { cfg.RecreateDelay = -1 })
	c.logTailsOnFailure(40)
	c.waitShards(4)
	clients := c.memberClients()
	ctx := context.Background()
	q := api.QueueKey{Account: "000000000000", Name: "again.fifo"}

	roundTrip := func(url, round string, n int) {
		t.Helper()
		want := map[string][]string{}
		for i := range n {
			group := fmt.Sprintf("g%d", i%8)
			body := fmt.Sprintf("%s-%d", round, i)
			c.retrying("send "+body, func() error {
				_, err := clients[i%3].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
					MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(body)})
				return err
			})
			want[group] = append(want[group], body)
		}
		got := map[string][]string{}
		c.drainGroups(clients, url, got, n, 200)
		for g, bodies := range want {
			if !slices.Equal(got[g], bodies) {
				t.Fatalf("%s: group %s gave %v, want %v", round, g, got[g], bodies)
			}
		}
	}
	deleteQueue := func(url string) {
		t.Helper()
		c.retrying("DeleteQueue", func() error {
			_, err := clients[0].DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			return err
		})
	}

	url := c.createQueue(q.Name, highThroughputFIFO)
	roundTrip(url, "split", 24)
	c.waitLayout(q, 3)
	roundTrip(url, "split-spread", 24)
	deleteQueue(url)

	url = c.createQueue(q.Name, map[string]string{"FifoQueue": "true"})
	roundTrip(url, "plain", 24)
	c.waitLayout(q, 1)
	deleteQueue(url)

	url = c.createQueue(q.Name, highThroughputFIFO)
	roundTrip(url, "split-again", 24)
	c.waitLayout(q, 3)
	roundTrip(url, "split-again-spread", 24)
}
