package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/server"
)

// TestBackupThroughFollower takes a backup of a 3-node cluster through a
// follower with `fifoq backup`, once its shards have formed, restores it
// with `fifoq restore` into a new data dir, and serves that as a cluster
// of one: it holds every message the cluster acknowledged before the
// backup began, in order.
func TestBackupThroughFollower(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	waitShards(t, c, 4)
	q := c.createQueue("backup.fifo", map[string]string{"FifoQueue": "true"})
	leader := c.leader()
	via := c.nodes[(indexOf(c, leader)+1)%3]
	for i := range 50 {
		if _, err := newClient(via.httpAddr, 5*time.Second).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q),
			MessageBody: aws.String(strconv.Itoa(i)), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// At once: the backup through a follower holds every message
	// acknowledged before it began, though the follower's replicas, the
	// first group's and the queue's shard's, may not have applied the
	// last of them yet (the server's catchUp).
	file := filepath.Join(t.TempDir(), "cluster.backup")
	t.Logf("%s", runVia(t, via, "backup", file))
	dir := filepath.Join(t.TempDir(), "restored")
	runVia(t, via, "restore", "--data-dir", dir, file)

	nd := &node{id: "node-1", httpAddr: freeAddr(t), dataDir: dir, logPath: filepath.Join(t.TempDir(), "restored.log"), bin: binary}
	solo := &cluster{t: t, nodes: []*node{nd}}
	logs, err := os.Create(nd.logPath)
	if err != nil {
		t.Fatal(err)
	}
	// A backup taken once the cluster's shards formed holds them, and is
	// served as a cluster member (of one), as fifoq restore says; one
	// taken before holds the first group alone, served so as well.
	cmd := exec.Command(binary, "serve", "--listen", nd.httpAddr, "--data-dir", dir, "--node-id", "node-1", "--raft-addr", freeAddr(t), "--log-requests")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logs.Close(); close(done) }()
	nd.cmd, nd.done = cmd, done
	t.Cleanup(solo.stopAll)
	defer func() {
		if t.Failed() {
			t.Logf("log of the restored node:\n%s", nd.tail(200))
		}
	}()
	waitReady(t, nd)
	got := drainNumbered(t, nd, "http://"+nd.httpAddr+"/000000000000/backup.fifo")
	if len(got) != 50 {
		if st := shardsAt(nd.httpAddr); st != nil {
			for _, sh := range st.Shards {
				t.Logf("restored shard %d: queues %v, fenced %v", sh.Shard, sh.Queues, sh.Fenced)
			}
		}
		t.Fatalf("the restored node holds %d messages, want 50: %v", len(got), got)
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("received %v from the restored node: want 0..49 in order", got)
		}
	}
}

// serveRestored serves the restored data dir dir as the first member, id,
// of a cluster of its own, and waits until it is ready; the test's
// failure shows its log.
func serveRestored(t *testing.T, id, dir string) (*cluster, *node) {
	t.Helper()
	nd := &node{id: id, httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: dir, bin: binary}
	nd.logPath = filepath.Join(t.TempDir(), "restored-"+id+".log")
	restored := &cluster{t: t, nodes: []*node{nd}}
	t.Cleanup(restored.stopAll)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of the restored node:\n%s", nd.tail(100))
		}
	})
	restored.start(nd, "")
	waitReady(t, nd)
	return restored, nd
}

// runVia runs the fifoq command args against the node via
// (FIFOQ_ENDPOINT) and returns what it said; it fails the test if the
// command fails.
func runVia(t *testing.T, via *node, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "FIFOQ_ENDPOINT=http://"+via.httpAddr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fifoq %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestBackupAndExportOfShards runs a 4-node cluster with four shards.
// Through a node that holds no replica of one of them, it exports a queue
// of that shard and lists its messages at the developer endpoint (a
// replica answers), takes a backup, restores it into one data dir, and
// checks what a restored cluster must be: served alone it is refused (its
// queues are in shards), served as a cluster member it holds every queue
// of every shard with every message in order, and a node that joins it is
// given the shards' replicas.
func TestBackupAndExportOfShards(t *testing.T) {
	t.Parallel()
	c := newClusterWith(t, 4, func(_ int, nd *node) { nd.args = []string{"--shards", "4"} })
	waitShards(t, c, 5)
	ctx := context.Background()
	const queues, perQueue = 8, 30
	urls := createNumberedQueues(t, c, queues)
	for qi, url := range urls {
		for i := range perQueue {
			nd := c.nodes[(qi+i)%len(c.nodes)]
			retrying(t, "send", func() error {
				_, err := newClient(nd.httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
					MessageBody: aws.String(strconv.Itoa(i)), MessageGroupId: aws.String("g")})
				return err
			})
		}
	}
	placed := waitPlaced(t, c, "q0.fifo", "q1.fifo", "q2.fifo", "q3.fifo", "q4.fifo", "q5.fifo", "q6.fifo", "q7.fifo")
	used := map[int]bool{}
	for _, s := range placed {
		used[s] = true
	}
	if len(used) < 4 {
		t.Fatalf("the queues are in shards %v: the test needs them spread over all four", used)
	}
	// Through a node that must fetch a shard from another's replica.
	var via *node
	for _, nd := range c.nodes {
		if st := shardsOf(nd); st != nil && slices.ContainsFunc(st.Shards, func(s server.ShardStatus) bool { return !s.Held }) {
			via = nd
		}
	}
	if via == nil {
		t.Fatal("every node holds every shard: the test needs one that does not")
	}
	waitShardsApplied(t, c)

	// An export and the developer endpoint's listing of a queue in a
	// shard the node holds no replica of are answered by a replica.
	var elsewhere string
	for _, sh := range shardsOf(via).Shards {
		for name, id := range placed {
			if !sh.Held && uint32(id) == sh.Shard {
				elsewhere = name
			}
		}
	}
	// fifoq cluster shards through it lists that queue, as one of its
	// shard's replicas sees it.
	if out := runVia(t, via, "cluster", "shards"); !strings.Contains(out, "000000000000/"+elsewhere) {
		t.Fatalf("fifoq cluster shards through %s does not list %s, in a shard it holds no replica of:\n%s", via.id, elsewhere, out)
	} else {
		t.Logf("fifoq cluster shards through %s:\n%s", via.id, out)
	}
	exported := filepath.Join(t.TempDir(), "export.jsonl")
	runVia(t, via, "export", elsewhere, exported)
	lines, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(string(lines)), "\n") + 1; n != perQueue {
		t.Fatalf("fifoq export of %s through %s, which holds no replica of its shard, wrote %d lines, want %d", elsewhere, via.id, n, perQueue)
	}
	resp, err := http.Get("http://" + via.httpAddr + "/_aws/sqs/messages?QueueUrl=" + url.QueryEscape("http://"+via.httpAddr+"/000000000000/"+elsewhere))
	if err != nil {
		t.Fatal(err)
	}
	listing, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(listing), "<MessageId>") != perQueue {
		t.Fatalf("the developer listing of %s through %s: %s, %d messages\n%.300s", elsewhere, via.id, resp.Status, strings.Count(string(listing), "<MessageId>"), listing)
	}
	file := filepath.Join(t.TempDir(), "shards.backup")
	out := runVia(t, via, "backup", file)
	if want := fmt.Sprintf("%d messages in 5 groups", queues*perQueue); !strings.Contains(out, want) {
		t.Fatalf("fifoq backup says %q, want %q", out, want)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	out = runVia(t, via, "restore", "--data-dir", dir, "--node-id", "r1", file)
	if !strings.Contains(out, "serve it as a cluster member") {
		t.Fatalf("fifoq restore of a backup with shards says %q: it must say how to serve it", out)
	}

	// Alone, the data dir is refused: its queues are in its shards.
	alone := exec.Command(binary, "serve", "--listen", freeAddr(t), "--data-dir", dir, "--node-id", "r1")
	alone.Env = serverEnv()
	if out, err := alone.CombinedOutput(); err == nil || !strings.Contains(string(out), "serve it as a cluster member") {
		t.Fatalf("a restored data dir with shards served alone: %v\n%s", err, out)
	}

	restored, r1 := serveRestored(t, "r1", dir)
	waitShards(t, restored, 5)
	if got := listQueuesVia(t, r1, "q"); len(got) != queues {
		t.Fatalf("the restored node lists %d queues, want %d: %v", len(got), queues, got)
	}
	for qi := range queues {
		url := fmt.Sprintf("http://%s/000000000000/q%d.fifo", r1.httpAddr, qi)
		if got := drainNumberedRetrying(t, r1, url, perQueue); !slices.Equal(got, numbers(perQueue)) {
			t.Fatalf("q%d.fifo (shard %d) gave %v from the restored node, want 0..%d in order", qi, placed[fmt.Sprintf("q%d.fifo", qi)], got, perQueue-1)
		}
	}

	// A node that joins the restored one gets a replica of every shard
	// (two nodes: each shard on both).
	r2 := &node{id: "r2", httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: t.TempDir(), bin: binary, join: "http://" + r1.httpAddr}
	r2.logPath = filepath.Join(t.TempDir(), "r2.log")
	restored.nodes = append(restored.nodes, r2)
	restored.start(r2, "")
	waitShards(t, restored, 5)
}

// waitShardsApplied waits until every replica of every group the
// running nodes hold has applied what the most advanced of them knows
// committed: a backup taken through any of them then holds every write
// acknowledged before.
func waitShardsApplied(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		commit, applied := map[uint32]uint64{}, map[uint32]uint64{}
		ok := true
		for _, nd := range c.nodes {
			st := shardsOf(nd)
			if st == nil {
				ok = false
				break
			}
			for _, sh := range st.Shards {
				if !sh.Held {
					continue
				}
				commit[sh.Shard] = max(commit[sh.Shard], sh.CommitIndex)
				if a, seen := applied[sh.Shard]; !seen || sh.AppliedIndex < a {
					applied[sh.Shard] = sh.AppliedIndex
				}
			}
		}
		for id := range commit {
			if applied[id] < commit[id] {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the replicas did not apply what their groups committed within 20 s")
}

// TestBackupWhileShardsForm takes backups through one node, one after
// another, from the moment a cluster of three answers until its shards
// are formed, and again while a fourth node joins (with --shards auto,
// the default, a shard is added and replicas move to the new node): every
// backup succeeds. A group formed a moment ago has applied nothing, and a
// replica just added has applied nothing yet either; before, a backup
// that met either failed, and one that met it after its first part was
// out was cut short ("backup damaged").
func TestBackupWhileShardsForm(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, nil, nil)
	via := c.nodes[1]
	for deadline := time.Now().Add(30 * time.Second); !via.answers(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer", via.id)
		}
	}
	backups := func(d time.Duration) int {
		n := 0
		for end := time.Now().Add(d); time.Now().Before(end); n++ {
			cmd := exec.Command(binary, "backup", filepath.Join(t.TempDir(), "b.backup"))
			cmd.Env = append(os.Environ(), "FIFOQ_ENDPOINT=http://"+via.httpAddr)
			if out, err := cmd.CombinedOutput(); err != nil {
				logs, _ := os.ReadFile(via.logPath)
				var said []string
				for _, line := range strings.Split(string(logs), "\n") {
					if strings.Contains(line, "backup") {
						said = append(said, line)
					}
				}
				t.Fatalf("backup %d through %s: %v\n%s\nwhat %s logged of backups:\n%s", n+1, via.id, err, out, via.id, strings.Join(said, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		return n
	}
	n := backups(8 * time.Second)
	t.Logf("%d backups as three nodes formed their shards", n)
	waitShards(t, c, 4)
	joiner := &node{id: "n4", httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: t.TempDir(), bin: binary,
		join: "http://" + c.nodes[0].httpAddr}
	joiner.logPath = filepath.Join(t.TempDir(), "n4.log")
	c.nodes = append(c.nodes, joiner)
	c.start(joiner, "")
	n = backups(15 * time.Second)
	t.Logf("%d backups as a fourth node joined", n)
}

// TestBackupKeepsWhatLeavesAGroup takes a backup of a cluster with two
// shards and, while the backup has read the first shard's part and not
// yet the second's, dead-letters messages from a queue in the second
// shard to its dead-letter queue in the first, and moves a queue from the
// second shard to the first. Each leaves the second shard only after the
// first took it, so without a hold (engine/hold.go) both would be in
// neither part: the restored cluster would lack the moved queue and the
// dead-lettered messages. The backup is paused by reading it slowly: the
// first shard's part is made larger than what the sockets buffer.
func TestBackupKeepsWhatLeavesAGroup(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	bin := faultyBinary(t)
	c := newClusterWith(t, 3, func(_ int, nd *node) {
		nd.bin, nd.args = bin, []string{"--shards", "2"}
		nd.env = []string{"FIFOQ_TEST_QUEUE_BALANCE=1h"} // no move but the test's
	})
	waitShards(t, c, 3)
	ctx := context.Background()
	via := c.nodes[0]
	client := newClient(via.httpAddr, 10*time.Second)
	fifo := map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
	dead := c.createQueue("dead.fifo", fifo)
	arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dead), AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	src := c.createQueue("src.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "0",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, arn.Attributes["QueueArn"])})
	moving := c.createQueue("moving.fifo", fifo)
	pad := c.createQueue("pad", nil)
	// The first shard's part is backed up first (shards in order, the
	// first group last): the destinations go there.
	for _, p := range []struct {
		name, url string
		shard     int
	}{{"dead.fifo", dead, 1}, {"pad", pad, 1}, {"src.fifo", src, 2}, {"moving.fifo", moving, 2}} {
		if waitPlaced(t, c, p.name)[p.name] != p.shard {
			runVia(t, via, "cluster", "move", p.url, strconv.Itoa(p.shard))
		}
	}
	send := func(url string, body string) {
		t.Helper()
		in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
		if strings.HasSuffix(url, ".fifo") {
			in.MessageGroupId = aws.String("g")
		}
		retrying(t, "send", func() error { _, err := client.SendMessage(ctx, in); return err })
	}
	const padMessages, numbered = 40, 5
	big := strings.Repeat("p", 1000_000)
	for i := range padMessages {
		send(pad, strconv.Itoa(i)+" "+big)
	}
	for i := range numbered {
		send(src, strconv.Itoa(i))
		send(moving, strconv.Itoa(i))
	}
	waitShardsApplied(t, c)

	resp, err := http.Get("http://" + via.httpAddr + server.BackupPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("backup: %s: %s", resp.Status, body)
	}
	file := filepath.Join(t.TempDir(), "held.backup")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Well into the first shard's part: its state is read, the second
	// shard's not yet.
	if _, err := io.CopyN(f, resp.Body, 2<<20); err != nil {
		t.Fatal(err)
	}

	// Dead-letter src.fifo's messages: received once (maxReceiveCount 1)
	// and visible at once (its VisibilityTimeout is 0), the next receive
	// sends them to dead.fifo.
	for range 2 {
		retrying(t, "receive", func() error {
			_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10})
			return err
		})
	}
	waitCount(t, client, dead, numbered, 20*time.Second) // taken by dead.fifo, whatever the source does
	// And move moving.fifo to the first shard: a backup may hold the move
	// back (refused, the queue served where it is); without a hold it
	// goes through.
	out, err := exec.Command(binary, "cluster", "move", moving, "1", "--endpoint", "http://"+via.httpAddr).CombinedOutput()
	t.Logf("fifoq cluster move during the backup: %v: %s", err, strings.TrimSpace(string(out)))
	time.Sleep(2 * time.Second) // time for a relay to settle, as it would without a hold

	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Fatalf("reading the rest of the backup: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Once the backup ended, departures go on: the move goes through.
	retrying(t, "move after the backup", func() error {
		out, err := exec.Command(binary, "cluster", "move", moving, "1", "--endpoint", "http://"+via.httpAddr).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	dir := filepath.Join(t.TempDir(), "restored")
	runVia(t, via, "restore", "--data-dir", dir, "--node-id", "r1", file)
	restored, r1 := serveRestored(t, "r1", dir)
	waitShards(t, restored, 3)
	rc := newClient(r1.httpAddr, 10*time.Second)
	at := func(url string) string {
		return "http://" + r1.httpAddr + url[strings.Index(url[len("http://"):], "/")+len("http://"):]
	}
	if _, err := rc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("moving.fifo")}); err != nil {
		t.Fatalf("the restored cluster lacks moving.fifo, moved during the backup: %v", err)
	}
	if got := drainNumberedRetrying(t, r1, at(moving), numbered); !slices.Equal(got, numbers(numbered)) {
		t.Fatalf("moving.fifo, moved during the backup, gave %v from the restored node, want 0..%d in order", got, numbered-1)
	}
	waitCount(t, rc, at(dead), numbered, 30*time.Second)
	if got := drainNumberedRetrying(t, r1, at(dead), numbered); !slices.Equal(got, numbers(numbered)) {
		t.Fatalf("dead.fifo gave %v from the restored node, want the %d messages dead-lettered during the backup, once each, in order", got, numbered)
	}
	// The parts carry the backup's hold, which fifoq restore lifts: the
	// restored cluster moves a queue at once, not two minutes later.
	var to string
	for _, sh := range shardsOf(r1).Shards {
		if sh.Shard != 0 && !slices.Contains(sh.Queues, "000000000000/moving.fifo") {
			to = strconv.FormatUint(uint64(sh.Shard), 10)
		}
	}
	retrying(t, "move in the restored cluster", func() error {
		out, err := exec.Command(binary, "cluster", "move", at(moving), to, "--endpoint", "http://"+r1.httpAddr).CombinedOutput()
		if err != nil && strings.Contains(string(out), "backup") {
			t.Fatalf("the restored cluster refuses a move for the backup's hold: %v: %s", err, out)
		}
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// waitCount waits until queue url's ApproximateNumberOfMessages is want.
func waitCount(t *testing.T, client *sqs.Client, url string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := "no answer"
	for time.Now().Before(deadline) {
		out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
		if err == nil {
			last = out.Attributes["ApproximateNumberOfMessages"]
			if last == strconv.Itoa(want) {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s holds %s messages after %v, want %d", url, last, within, want)
}
