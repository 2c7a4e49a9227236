package clustertest

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/testenv"
)

var flagSplitRounds = flag.Int("cluster.split-rounds", 6, "gatherings and spreads of the queue TestSplitQueueUnderLoad makes")

// TestSplitQueueUnderLoad runs the failover workload on a high-throughput
// FIFO queue (DeduplicationScope messageGroup, FifoThroughputLimit
// perMessageGroupId) of three nodes with three shards, whose producers
// send batches of several groups, retried with their deduplication ids
// when an answer is lost. The queue's first message spreads it over the
// shards, one partition each (three partitions, two splits and two
// moves). Then, round after round, the test switches it to perQueue
// throughput, which gathers it back into one partition (two moves and two
// merges), and to perMessageGroupId again, which spreads it again, with
// every third round's leader killed in the middle: the first group's,
// which drives the splits, moves and merges, or that of the shard holding
// partition 0. The history checker then finds nothing acknowledged lost,
// nothing delivered twice, no delete undone, order kept in every group,
// no message of a group delivered while another was in flight, and the
// deduplication of the retried sends holding across the splits and
// merges.
func TestSplitQueueUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a queue spread and gathered again under load, some rounds with a leader killed, about two minutes")
	t.Parallel()
	var nodes []*node // the cluster's, for their logs
	r := &run{
		sendGap:    50 * time.Millisecond,
		shards:     3,
		movable:    true,
		queueAttrs: map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
		nemesis: func(t *testing.T, c *cluster, rng *rand.Rand, pause func()) {
			nodes = c.nodes
			// The workload's first send spreads the queue.
			waitPartitions(t, c, "failover.fifo", 3)
			t.Logf("nemesis: the queue spread over three shards")
			for round := range *flagSplitRounds {
				pause()
				limit, want := "perQueue", 1
				if round%2 == 1 {
					limit, want = "perMessageGroupId", 3
				}
				kill := round%3 == 2
				var victim *node
				var what string
				if kill {
					victim, what = c.leader(), "the first group's leader"
					if round%2 == 1 {
						victim, what = c.shardLeader("failover.fifo"), "the leader of partition 0's shard"
					}
				}
				t.Logf("nemesis: %s: FifoThroughputLimit %s, to %d partition(s)", time.Now().Format("15:04:05.000"), limit, want)
				setThroughputLimit(t, c, limit)
				if kill {
					time.Sleep(time.Duration(rng.Intn(1500)) * time.Millisecond)
					t.Logf("nemesis: %s: kill %s, %s, while the queue changes", time.Now().Format("15:04:05.000"), victim.id, what)
					c.kill(victim)
					time.Sleep(time.Duration(200+rng.Intn(500)) * time.Millisecond)
					c.restart(victim)
				}
				waitPartitions(t, c, "failover.fifo", want)
				t.Logf("nemesis: the queue is in %d partition(s)", want)
			}
		},
	}
	runFailover(t, r)
	// The problems come before the nodes' logs: a CI log that keeps only
	// the head and tail of a failure keeps them.
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
	if t.Failed() {
		for _, nd := range nodes {
			t.Logf("what %s's shards did:\n%s", nd.id, nd.grep("shards:", 60))
		}
	}
}

// setThroughputLimit sets the queue under test's FifoThroughputLimit
// through the first running node that takes it.
func setThroughputLimit(t *testing.T, c *cluster, limit string) {
	t.Helper()
	retrying(t, "SetQueueAttributes FifoThroughputLimit "+limit, func() error {
		var err error = fmt.Errorf("no node runs")
		for _, nd := range c.nodes {
			if !nd.running() {
				continue
			}
			_, err = newClient(nd.httpAddr, 10*time.Second).SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
				QueueUrl:   aws.String("http://" + nd.httpAddr + "/000000000000/failover.fifo"),
				Attributes: map[string]string{"FifoThroughputLimit": limit}})
			if err == nil {
				return nil
			}
		}
		return err
	})
}

// waitPartitions waits up to 90 s until every running node's
// /cluster/shards shows the queue name in want partitions, each in a shard
// of its own, the same on every node.
func waitPartitions(t *testing.T, c *cluster, name string, want int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		var views []map[uint32]int // partition -> shard, of each node
		for _, nd := range c.nodes {
			if !nd.running() {
				continue
			}
			st := shardsOf(nd)
			if st == nil {
				views = nil
				break
			}
			parts := map[uint32]int{}
			for _, sh := range st.Shards {
				for _, q := range sh.Queues {
					base, p, _ := strings.Cut(strings.TrimPrefix(q, "000000000000/"), "#")
					if base != name {
						continue
					}
					n, _ := strconv.Atoi(p)
					parts[uint32(n)] = int(sh.Shard)
				}
			}
			views = append(views, parts)
		}
		same := len(views) > 0
		for _, v := range views {
			same = same && maps.Equal(v, views[0])
		}
		if same {
			shards := slices.Collect(maps.Values(views[0]))
			slices.Sort(shards)
			if len(views[0]) == want && len(slices.Compact(shards)) == want {
				return
			}
		}
		last = fmt.Sprint(views)
		if time.Now().After(deadline) {
			for _, nd := range c.nodes {
				t.Logf("what %s's shards did:\n%s", nd.id, nd.grep("shards:", 40))
			}
			t.Fatalf("%s is not in %d partitions, each in a shard of its own, 90 s on: the nodes see (partition: shard) %s", name, want, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// grep returns the last n lines of nd's log that hold substr.
func (nd *node) grep(substr string, n int) string {
	var out []string
	for _, l := range strings.Split(nd.tail(1<<30), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}
