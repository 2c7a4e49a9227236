package clustertest

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestFullDiskStopsMember gives one member of three a data dir on a 100 MB
// tmpfs, with the free-space guard off (--min-free-disk-mb 0), and sends
// messages of 256 KiB until that disk is full. The member's next write
// fails (a new log segment, a body, a snapshot): it must log one line
// saying so and exit non-zero, rather than stay up, answering /readyz and
// writing nothing. The other two go on, and every send acknowledged
// before, during and after is received afterwards, in order, once.
func TestFullDiskStopsMember(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "fills a member's tmpfs; internal/crashtest's TestDiskFull is the first tier's full disk")
	mnt := mountTmpfs(t, "100m")

	c := newClusterWith(t, 3, func(i int, nd *node) {
		if i == 2 {
			nd.dataDir = mnt
			nd.env = []string{"FIFOQ_MIN_FREE_DISK_MB=0"}
		}
	})
	full := c.nodes[2]
	q := c.createQueue("full.fifo", map[string]string{"FifoQueue": "true"})
	ctx := context.Background()

	// Send through whichever of the two others answers, one message at a
	// time, each with its own deduplication id: a send retried after an
	// unknown outcome is kept once.
	body := strings.Repeat("x", 256<<10)
	var acked []int
	unknown := map[int]bool{}
	send := func(i int) error {
		var last error
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for _, nd := range c.nodes[:2] {
				_, err := newClient(nd.httpAddr, 10*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q),
					MessageBody: aws.String(strconv.Itoa(i) + " " + body), MessageGroupId: aws.String("g"),
					MessageDeduplicationId: aws.String(strconv.Itoa(i))})
				if err == nil {
					acked = append(acked, i)
					delete(unknown, i)
					return nil
				}
				unknown[i] = true
				last = err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return last
	}
	exited := false
	next := 0
	for ; next < 1200 && !exited; next++ {
		if err := send(next); err != nil {
			t.Fatalf("send %d while a member's disk filled: %v", next, err)
		}
		select {
		case <-full.done:
			exited = true
		default:
		}
	}
	if !exited {
		select {
		case <-full.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the member whose disk is full is still running after %d messages of 256 KiB (%d MB) on its 100 MB disk; its log ends:\n%s",
				next, next/4, full.tail(20))
		}
	}
	if code := full.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the member whose disk filled exited 0; want non-zero")
	}
	logs, _ := os.ReadFile(full.logPath)
	if n := strings.Count(string(logs), "storage fault: this node stops"); n != 1 {
		t.Errorf("the member's log says %d times that a storage fault stops it; want once. Its log ends:\n%s", n, full.tail(20))
	}
	t.Logf("the member stopped after %d sends; its last lines:\n%s", next, full.tail(3))

	// The two others go on.
	for i := next; i < next+5; i++ {
		if err := send(i); err != nil {
			t.Fatalf("send %d after the member stopped: %v", i, err)
		}
	}
	next += 5

	// Every acknowledged send is there, once, in order; none that was not
	// sent; an unknown outcome may or may not be.
	got := drainNumbered(t, c.nodes[0], q)
	seen := map[int]bool{}
	for k, n := range got {
		if seen[n] || n >= next || (k > 0 && n <= got[k-1]) {
			t.Fatalf("received %v: out of order, twice, or never sent (at %d)", got, k)
		}
		seen[n] = true
	}
	for _, n := range acked {
		if !seen[n] {
			t.Fatalf("message %d was acknowledged and is lost (received %d messages)", n, len(got))
		}
	}
	t.Logf("%d acknowledged, %d with an unknown outcome, %d received", len(acked), len(unknown), len(got))
}

// TestShardStorageFaultStopsNode runs three nodes with three shards and
// restarts one whose shards' log writes fail with EIO 2 s after it starts
// (its first group's log stays sound). A storage fault in any of a node's
// groups stops the node, as one in its first group does: the disk under
// the others is as suspect, and a node serving with some groups stopped
// hides the fault from its supervisor. It must exit non-zero naming the
// storage fault; restarted on a sound disk it catches up, and every send
// acknowledged meanwhile is received from it, in order, once.
func TestShardStorageFaultStopsNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a member whose shards' disk fails, restarted and drained")
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", "3"} })
	waitShards(t, c, 4)
	urls := createNumberedQueues(t, c, 3)
	placed := waitPlaced(t, c, "q0.fifo", "q1.fifo", "q2.fifo")
	victim := c.nodes[2]
	c.sigterm(victim)
	victim.bin = faultyBinary(t)
	victim.env = []string{"FIFOQ_TEST_WAL_EIO_AFTER=2s", "FIFOQ_TEST_WAL_EIO_PATH=" + string(os.PathSeparator) + "shards" + string(os.PathSeparator)}
	c.restart(victim)

	// Sends through the two sound nodes to the queues of every shard,
	// each of which the victim holds a replica of, until it stops.
	ctx := context.Background()
	sent := make([]int, len(urls))
	deadline := time.Now().Add(30 * time.Second)
	for stopped := false; !stopped; {
		select {
		case <-victim.done:
			stopped = true
			continue
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still runs 30 s after its shards' disk began to fail (shards %v); its log ends:\n%s", victim.id, placed, victim.tail(10))
		}
		for qi, url := range urls {
			nd := c.nodes[(qi+sent[qi])%2]
			retrying(t, "send", func() error {
				_, err := newClient(nd.httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
					MessageBody: aws.String(strconv.Itoa(sent[qi])), MessageGroupId: aws.String("g")})
				return err
			})
			sent[qi]++
		}
		time.Sleep(20 * time.Millisecond) // a few hundred messages to drain, not thousands
	}
	if code := victim.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("%s exited 0 when its shards' disk failed; want non-zero", victim.id)
	}
	if log := victim.tail(20); !strings.Contains(log, "storage fault") {
		t.Errorf("%s's log does not name the storage fault; it ends:\n%s", victim.id, log)
	}

	t.Logf("%s stopped after %v sends", victim.id, sent)
	victim.env = nil
	c.restart(victim)
	waitReady(t, victim)
	waitShards(t, c, 4)
	for qi, url := range urls {
		if got := drainNumberedRetrying(t, victim, url, sent[qi]); !slices.Equal(got, numbers(sent[qi])) {
			t.Fatalf("q%d.fifo gave %v through the restarted node, want 0..%d in order", qi, got, sent[qi]-1)
		}
	}
}
