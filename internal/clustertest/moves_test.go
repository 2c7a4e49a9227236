package clustertest

import (
	"flag"
	"fmt"
	"math/rand"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

var flagMoves = flag.Int("cluster.moves", 12, "queue moves TestQueueMovesUnderLoad makes")

// TestQueueMovesUnderLoad moves the FIFO queue under the failover
// workload from shard to shard while producers and consumers run on every
// node: a move at a time with fifoq cluster move, and every third one
// with a leader killed in the middle, the first group's (which drives the
// move, and whose successor finishes it) or the queue's shard's. The
// history checker then finds nothing acknowledged lost, no delete undone,
// order kept in every group.
func TestQueueMovesUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a dozen moves of a queue under load, some with a leader killed, about a minute")
	t.Parallel()
	r := &run{
		sendGap: 50 * time.Millisecond,
		shards:  3,
		movable: true,
		nemesis: func(t *testing.T, c *cluster, rng *rand.Rand, pause func()) {
			url := "http://" + c.nodes[0].httpAddr + "/000000000000/failover.fifo"
			var took []time.Duration // of the moves without a kill, end to end
			defer func() {
				if len(took) > 0 {
					slices.Sort(took)
					t.Logf("moves without a kill took, end to end: median %v, longest %v (%d moves)",
						took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(took))
				}
			}()
			for round := range *flagMoves {
				pause()
				from := placedShards(c)["failover.fifo"]
				to := from%3 + 1
				if round%3 != 2 {
					t.Logf("nemesis: move the queue from shard %d to shard %d", from, to)
					start := time.Now()
					retrying(t, "fifoq cluster move", func() error { return moveQueue(c, url, to) })
					took = append(took, time.Since(start))
				} else {
					victim := c.leader()
					what := "the first group's leader"
					if round%2 == 1 {
						victim, what = c.shardLeader("failover.fifo"), "the queue's shard's leader"
					}
					t.Logf("nemesis: move the queue from shard %d to shard %d, and kill %s, %s, during the move", from, to, victim.id, what)
					done := make(chan error, 1)
					go func() { done <- moveQueue(c, url, to) }()
					time.Sleep(time.Duration(rng.Intn(150)) * time.Millisecond)
					c.kill(victim)
					err := <-done
					time.Sleep(time.Duration(200+rng.Intn(500)) * time.Millisecond)
					c.restart(victim)
					t.Logf("nemesis: the move through the killed leader answered %v", err)
					if err != nil {
						// It may never have reached the node: ask again. A
						// move the new leader finished answers at once, one
						// it still drives is refused until it is done.
						retrying(t, "fifoq cluster move", func() error { return moveQueue(c, url, to) })
					}
				}
				// The move finishes, through a new leader if its driver died.
				waitQueueIn(t, c, "failover.fifo", to)
			}
		},
	}
	runFailover(t, r)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
}

// moveQueue runs fifoq cluster move through the first running node.
func moveQueue(c *cluster, url string, to int) error {
	for _, nd := range c.nodes {
		if !nd.running() {
			continue
		}
		out, err := exec.Command(binary, "cluster", "move", url, strconv.Itoa(to), "--endpoint", "http://"+nd.httpAddr).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	return fmt.Errorf("no node runs")
}

// waitQueueIn waits up to 60 s until only shard to holds the queue name.
func waitQueueIn(t *testing.T, c *cluster, name string, to int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var answers []*server.ShardsStatus
		for _, nd := range c.nodes {
			answers = append(answers, shardsOf(nd))
		}
		holders := queueHolders(name, answers...)
		if len(holders) == 1 && holders[to] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is in shards %v 60 s after its move to shard %d", name, holders, to)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
