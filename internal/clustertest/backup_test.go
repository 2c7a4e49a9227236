package clustertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestBackupThroughFollower takes a backup of a 3-node cluster through a
// follower with `fifoq backup`, restores it with `fifoq restore` into a
// new data dir, and serves that as a node of its own: it holds every
// message the cluster acknowledged, in order.
func TestBackupThroughFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	q := c.createQueue("backup.fifo", map[string]string{"FifoQueue": "true"})
	leader := c.leader()
	via := c.nodes[(indexOf(c, leader)+1)%3]
	for i := range 50 {
		if _, err := newClient(via.httpAddr, 5*time.Second).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q),
			MessageBody: aws.String(strconv.Itoa(i)), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// The follower has applied what the leader acknowledged by the time
	// its own read answers (a read passes the read barrier).
	file := filepath.Join(t.TempDir(), "cluster.backup")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "FIFOQ_ENDPOINT=http://"+via.httpAddr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fifoq %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	waitApplied(t, via, leader)
	t.Logf("%s", run("backup", file))
	dir := filepath.Join(t.TempDir(), "restored")
	run("restore", "--data-dir", dir, file)

	nd := &node{id: "node-1", httpAddr: freeAddr(t), dataDir: dir, logPath: filepath.Join(t.TempDir(), "restored.log"), bin: binary}
	solo := &cluster{t: t, nodes: []*node{nd}}
	logs, err := os.Create(nd.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--listen", nd.httpAddr, "--data-dir", dir)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logs.Close(); close(done) }()
	nd.cmd, nd.done = cmd, done
	t.Cleanup(solo.stopAll)
	waitReady(t, nd)
	got := drainNumbered(t, nd, "http://"+nd.httpAddr+"/000000000000/backup.fifo")
	if len(got) != 50 {
		t.Fatalf("the restored node holds %d messages, want 50: %v", len(got), got)
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("received %v from the restored node: want 0..49 in order", got)
		}
	}
}

// waitApplied waits until follower has applied the leader's last entry.
func waitApplied(t *testing.T, follower, leader *node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if a, l := appliedIndex(follower), appliedIndex(leader); a > 0 && a >= l {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not catch up with %s within 10 s", follower.id, leader.id)
}
