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

// TestListQueuesWhileShardsHaveNoMajority crashes the two members of a
// five-member cluster (five shards, each on three members) that together
// hold two replicas of the most shards, so that those shards cannot elect
// a leader, and lists the queues through each member left. A ListQueues
// waits up to listLeaderWait for each such shard's leader before it reads
// a replica; it answers, and lists every queue of the shards that still
// have a majority. (The leaderless shards' queues are listed as their
// surviving replica knows them: it may not have learnt that a creation
// committed, as SQS's ListQueues is eventually consistent too.)
func TestListQueuesWhileShardsHaveNoMajority(t *testing.T) {
	t.Parallel()
	c := newMemCluster(t, 5, 5, 83)
	c.logTailsOnFailure(40)
	c.waitShards(6)
	ctx := context.Background()
	clients := c.memberClients()
	var names []string
	for i := range 15 {
		name := fmt.Sprintf("q-%02d", i)
		c.retrying("CreateQueue "+name, func() error {
			_, err := clients[i%len(clients)].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			return err
		})
		names = append(names, name)
	}
	shardOfQueue := map[string]uint32{}
	for _, name := range names {
		shardOfQueue[name] = uint32(c.shardOf(name))
	}
	st := c.nodes[0].shards()
	wanted := map[uint32][]string{}
	for _, sh := range st.Shards {
		wanted[sh.Shard] = sh.Wanted
	}
	// The pair of members holding two replicas of the most shards.
	var pair [2]*memNode
	var lost []uint32
	for a := range c.nodes {
		for b := a + 1; b < len(c.nodes); b++ {
			var both []uint32
			for id, w := range wanted {
				if id != 0 && slices.Contains(w, c.nodes[a].id) && slices.Contains(w, c.nodes[b].id) {
					both = append(both, id)
				}
			}
			if len(both) > len(lost) {
				pair, lost = [2]*memNode{c.nodes[a], c.nodes[b]}, both
			}
		}
	}
	if len(lost) < 2 {
		t.Fatalf("no two members hold two replicas of two shards: %v", wanted)
	}
	slices.Sort(lost)
	t.Logf("crashing %s and %s: shards %v lose their majority; the queues' shards: %v", pair[0].id, pair[1].id, lost, shardOfQueue)
	c.crash(pair[0])
	c.crash(pair[1])
	// Until the leaders of those shards that were left running step down
	// (they do when they have heard from no majority for a lease), they
	// answer; the test wants the shards leaderless.
	c.retrying("the shards without a majority leaderless", func() error {
		for _, nd := range c.running() {
			for _, sh := range nd.shards().Shards {
				if slices.Contains(lost, sh.Shard) && sh.Held && sh.LeaderID != "" {
					return fmt.Errorf("%s still sees %s lead shard %d", nd.id, sh.LeaderID, sh.Shard)
				}
			}
		}
		return nil
	})
	for _, nd := range c.running() {
		start := time.Now()
		out, err := newClient(nd.httpAddr, 30*time.Second).ListQueues(ctx, &sqs.ListQueuesInput{})
		took := time.Since(start)
		if err != nil {
			t.Errorf("ListQueues through %s, with shards %v leaderless: %v", nd.id, lost, err)
			continue
		}
		var listed []string
		for _, u := range out.QueueUrls {
			listed = append(listed, u[strings.LastIndexByte(u, '/')+1:])
		}
		t.Logf("ListQueues through %s answered in %v: %v", nd.id, took.Round(time.Millisecond), listed)
		for _, name := range names {
			if !slices.Contains(lost, shardOfQueue[name]) && !slices.Contains(listed, name) {
				t.Errorf("ListQueues through %s, with shards %v leaderless, left out %s of shard %d, which has a majority: %v", nd.id, lost, name, shardOfQueue[name], listed)
			}
		}
	}
}
