package clustertest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/testbin"
)

// The log's commands leave the region unsaid when it is the node's own, so
// a member started with another --region would apply the leader's commands
// to queues of its own region, and fail every snapshot the leader sends.
// These tests start one and check that it stops (or is refused) saying
// which region to start it with, while the others go on in theirs.

// TestPeerOfAnotherRegionStops starts two members of us-east-1, waits for
// one of them to lead, and starts the third, named in the same --peers,
// with --region eu-west-1.
func TestPeerOfAnotherRegionStops(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newClusterWith(t, 3, func(i int, nd *node) {
		if i == 2 {
			nd.args = []string{"--region", "eu-west-1"}
			nd.later = true
		}
	})
	q := c.createQueue("regional", nil)
	if _, err := sendVia(c.nodes[0], q, "before"); err != nil {
		t.Fatal(err)
	}
	odd := c.nodes[2]
	c.start(odd, "")
	select {
	case <-odd.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the member of another region still runs after 30 s (ready: %v); its log ends:\n%s", ready(odd), odd.tail(10))
	}
	if code := odd.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the member of another region exited 0; want non-zero")
	}
	if log := odd.tail(20); !strings.Contains(log, "--region us-east-1") {
		t.Errorf("the member of another region does not say which region to start it with; its log ends:\n%s", log)
	}
	for _, nd := range c.nodes[:2] {
		if _, err := sendVia(nd, q, "after"); err != nil {
			t.Fatalf("send through %s after the odd member stopped: %v", nd.id, err)
		}
		if arn := arnVia(t, nd, q); !strings.HasPrefix(arn, "arn:aws:sqs:us-east-1:") {
			t.Errorf("through %s the queue's ARN is %s", nd.id, arn)
		}
	}
}

// TestJoinerOfAnotherRegionIsRefused starts a node of eu-west-1 with
// --join to a member of us-east-1 that holds a queue: the member refuses
// it before adding it, and the joiner exits saying which region to use.
func TestJoinerOfAnotherRegionIsRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 1, nil, nil)
	q := c.createQueue("regional", nil)
	if _, err := sendVia(c.nodes[0], q, "before"); err != nil {
		t.Fatal(err)
	}
	testbin.Track(t)
	logPath := filepath.Join(t.TempDir(), "n2.log")
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.Command(binary, "serve", "--listen", freeAddr(t), "--data-dir", t.TempDir(), "--node-id", "n2",
		"--raft-addr", freeAddr(t), "--join", "http://"+c.nodes[0].httpAddr, "--region", "eu-west-1")
	cmd.Env = serverEnv()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	select {
	case err := <-done:
		done <- err
		if cmd.ProcessState.ExitCode() == 0 {
			t.Errorf("the refused joiner exited 0; want non-zero")
		}
	case <-time.After(30 * time.Second):
		out, _ := os.ReadFile(logPath)
		t.Fatalf("the joiner of another region still runs after 30 s; its log:\n%s", out)
	}
	if out, _ := os.ReadFile(logPath); !strings.Contains(string(out), "--region us-east-1") {
		t.Errorf("the refused joiner does not say which region to start it with; its log:\n%s", out)
	}
	var st struct {
		Members []struct {
			ID string `json:"id"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(clusterStatus(c.nodes[0])), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 1 {
		t.Errorf("the cluster has %d members after the refusal, want 1: %+v", len(st.Members), st.Members)
	}
}

// arnVia is the QueueArn of the queue at q, asked through node nd.
func arnVia(t *testing.T, nd *node, q string) string {
	t.Helper()
	out, err := newClient(nd.httpAddr, 5*time.Second).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("GetQueueAttributes through %s: %v", nd.id, err)
	}
	return out.Attributes["QueueArn"]
}
