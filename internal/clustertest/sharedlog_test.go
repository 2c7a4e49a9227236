package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/testenv"
)

// replicaLogs lists, for each shard replica dir of nd's data dir, whether
// its entries are in the node's shared log (it names a group of it) or in
// a log of its own (wal/), and whether the node has a shared log at all.
func replicaLogs(t *testing.T, nd *node) (shared, own []string, hasShared bool) {
	t.Helper()
	dir := filepath.Join(nd.dataDir, "shards")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "log" {
			hasShared = true
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "log-group")); err == nil {
			shared = append(shared, e.Name())
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "wal")); err == nil {
			own = append(own, e.Name())
		}
	}
	return shared, own, hasShared
}

// TestSharedLogWaitsForTheFormat runs three members with three shards, one
// of them a stand-in for the fifoq before the shared log (it reads log
// entry formats up to 8): every replica keeps a log of its own, which that
// fifoq opens too, so it could still be put back. Once it is upgraded and
// the cluster writes format 9, a node that joins keeps the replicas it is
// given in its shared log, the replicas from before keep theirs while
// their members run, a member restarted moves them into its shared log,
// and every message sent before and after is received in order.
func TestSharedLogWaitsForTheFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a cluster upgraded to the shared log, and a node that joins it")
	t.Parallel()
	bin := faultyBinary(t)
	c := newClusterWith(t, 3, func(i int, nd *node) {
		nd.bin, nd.args = bin, []string{"--shards", "3"}
		if i == 2 {
			nd.env = []string{"FIFOQ_TEST_MAX_ENTRY_FORMAT=8"}
		}
	})
	waitShards(t, c, 4)
	expectFormats(t, c, 8, 10*time.Second)
	q := c.createQueue("shared.fifo", map[string]string{"FifoQueue": "true"})
	ctx := context.Background()
	sent := 0
	sendSome := func(nd *node, n int) {
		for range n {
			retrying(t, "send", func() error {
				_, err := newClient(nd.httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q),
					MessageBody: aws.String(strconv.Itoa(sent)), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(sent))})
				return err
			})
			sent++
		}
	}
	sendSome(c.nodes[0], 20)
	for _, nd := range c.nodes {
		shared, own, hasShared := replicaLogs(t, nd)
		if hasShared || len(shared) > 0 || len(own) != 3 {
			t.Fatalf("%s, while a member reads format 8 only: replicas in the shared log %v, with logs of their own %v, shared log made: %v; want 3 of their own and no shared log",
				nd.id, shared, own, hasShared)
		}
	}

	upgraded := c.nodes[2]
	c.sigterm(upgraded)
	upgraded.env = nil
	c.restart(upgraded)
	waitReady(t, upgraded)
	expectFormats(t, c, newestFormat, 15*time.Second) // 9 or newer: the shared log
	sendSome(c.nodes[1], 20)

	joiner := &node{id: "n4", httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: t.TempDir(), bin: binary,
		args: []string{"--shards", "3"}, join: "http://" + c.nodes[0].httpAddr}
	joiner.logPath = filepath.Join(t.TempDir(), joiner.id+".log")
	grown := &cluster{t: t, nodes: append(slices.Clone(c.nodes), joiner)}
	grown.start(joiner, "")
	t.Cleanup(func() {
		if joiner.running() {
			grown.kill(joiner)
		}
	})
	waitHolds(t, joiner, true)
	shared, own, hasShared := replicaLogs(t, joiner)
	if !hasShared || len(shared) == 0 || len(own) != 0 {
		t.Fatalf("the node that joined a cluster writing format 9: replicas in the shared log %v, with logs of their own %v, shared log made: %v; want every replica in the shared log",
			shared, own, hasShared)
	}
	// The members that ran throughout keep their replicas' own logs. The
	// upgraded one is not asked: its restart is what lets the cluster
	// raise its format, and whether it opens its replicas before or after
	// the raise is a race, either side of which is right (after it, they
	// move into its shared log, as for the restart below).
	for _, nd := range c.nodes[:2] {
		if _, own, _ := replicaLogs(t, nd); len(own) != 3 {
			t.Fatalf("%s's replicas from before the upgrade with logs of their own: %v; want all 3 kept while it runs", nd.id, own)
		}
	}
	// A member restarted once the cluster writes format 9 moves the logs
	// of the replicas it opens into its shared log.
	moved := c.nodes[0]
	c.sigterm(moved)
	c.restart(moved)
	waitReady(t, moved)
	waitHolds(t, moved, true)
	sendSome(moved, 20)
	shared, own, _ = replicaLogs(t, moved)
	for _, sh := range shardsOrNone(moved) {
		if !sh.Held || sh.Shard == 0 {
			continue
		}
		name := strconv.Itoa(int(sh.Shard))
		if slices.Contains(own, name) || !slices.Contains(shared, name) {
			t.Fatalf("%s restarted on a cluster writing format 9 holds shard %s's replica with a log of its own (replicas with their own %v, in the shared log %v); want it moved into the shared log",
				moved.id, name, own, shared)
		}
	}
	sendSome(joiner, 20)
	got := drainNumbered(t, joiner, "http://"+joiner.httpAddr+"/000000000000/shared.fifo")
	for i, n := range got {
		if n != i {
			t.Fatalf("received %v through %s: want 0..%d in order", got, joiner.id, sent-1)
		}
	}
	if len(got) != sent {
		t.Fatalf("received %d of %d messages through %s: %v", len(got), sent, joiner.id, got)
	}
}
