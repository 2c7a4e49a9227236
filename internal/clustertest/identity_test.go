package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
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

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestWipedMemberRestartedIsFenced kills a member with SIGKILL, deletes its
// data dir (a volume lost or replaced) and starts it again with its usual
// command line, --peers included, as a supervisor or a compose file would.
// It must not come back as itself, a voter with no memory of its votes:
// it exits non-zero saying to remove it and add it anew, and the other two
// go on.
func TestWipedMemberRestartedIsFenced(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	wipedMemberIsFenced(t, 1)
}

// TestWipedMemberRestartedIsFencedWithShards is the same on members that
// run three shards (--shards 3), its queue in one of them: the wiped
// member, a replica of every shard, is refused by all of them at once
// (one hello for every group), and each group goes on with the other two.
func TestWipedMemberRestartedIsFencedWithShards(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "the fenced-member test again, with shards")
	t.Parallel()
	wipedMemberIsFenced(t, 3)
}

// wipedMemberIsFenced runs TestWipedMemberRestartedIsFenced on members
// started with --shards shards.
func wipedMemberIsFenced(t *testing.T, shards int) {
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", strconv.Itoa(shards)} })
	if shards > 1 {
		waitShards(t, c, shards+1)
	}
	q := c.createQueue("fenced", nil)
	if shards > 1 {
		if id := waitPlaced(t, c, "fenced")["fenced"]; id == 0 {
			t.Fatal("the queue is in the first group: the test wants it in a shard")
		}
	}
	leader := c.leader()
	wiped := c.other(leader)
	// The leader records each member's incarnation once it meets it.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && strings.Count(clusterStatus(leader), `"incarnation"`) < 3 {
		time.Sleep(50 * time.Millisecond)
	}
	c.kill(wiped)
	if err := os.RemoveAll(wiped.dataDir); err != nil {
		t.Fatal(err)
	}
	c.start(wiped, "")
	select {
	case <-wiped.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the wiped member, restarted with its usual flags, still runs after 30 s (ready: %v); its log ends:\n%s", ready(wiped), wiped.tail(10))
	}
	if code := wiped.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the fenced member exited 0; want non-zero")
	}
	if log := wiped.tail(20); !strings.Contains(log, "fifoq cluster remove "+wiped.id) {
		t.Errorf("the fenced member's log does not say to remove it; it ends:\n%s", log)
	}
	// The other two go on.
	for _, nd := range c.nodes {
		if nd == wiped {
			continue
		}
		if _, err := sendVia(nd, q, "after"); err != nil {
			t.Fatalf("send through %s after the fence: %v", nd.id, err)
		}
	}
}

// clusterStatus is a node's GET /cluster/status, or "".
func clusterStatus(nd *node) string {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + nd.httpAddr + "/cluster/status")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// ready reports whether a node's /readyz answers 200.
func ready(nd *node) bool {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + nd.httpAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// sendVia sends one message through a node, retrying for 30 s while the
// cluster elects a leader.
func sendVia(nd *node, queueURL, body string) (string, error) {
	var last error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := newClient(nd.httpAddr, 5*time.Second).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)})
		if err == nil {
			return aws.ToString(out.MessageId), nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return "", last
}

// TestMemberThatLostItsShardLogStops kills a member of a sharded cluster,
// deletes its shared log alone (DATA/shards/log: a volume of its own lost,
// or removed by hand) and starts it again with its usual flags. Its
// replicas must not come back as themselves, with no memory of the entries
// they acknowledged or the votes they cast: it exits non-zero saying to
// remove it and add it anew. Doing so brings it back with every message
// of a queue in a shard, and the other two go on meanwhile.
func TestMemberThatLostItsShardLogStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a member that lost its shards' log, stopped, removed and joined again")
	t.Parallel()
	c := newClusterWith(t, 3, func(_ int, nd *node) { nd.args = []string{"--shards", "3"} })
	waitShards(t, c, 4)
	q := c.createQueue("lostlog", nil)
	if id := waitPlaced(t, c, "lostlog")["lostlog"]; id == 0 {
		t.Fatal("the queue is in the first group: the test wants it in a shard")
	}
	const sends = 20
	for i := range sends {
		if _, err := sendVia(c.nodes[i%3], q, strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitShardsApplied(t, c)
	leader := c.leader()
	lost := c.other(leader)
	c.kill(lost)
	if err := os.RemoveAll(filepath.Join(lost.dataDir, "shards", "log")); err != nil {
		t.Fatal(err)
	}
	c.start(lost, "")
	select {
	case <-lost.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the member that lost its shards' log still runs 60 s after its start; its log ends:\n%s", lost.tail(10))
	}
	if code := lost.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the member that lost its shards' log exited 0; want non-zero")
	}
	if log := lost.tail(20); !strings.Contains(log, "shared log") || !strings.Contains(log, "fifoq cluster remove "+lost.id) {
		t.Errorf("the member's log does not say its shared log was lost and to remove it; it ends:\n%s", log)
	}
	other := c.other(lost)
	if _, err := sendVia(other, q, strconv.Itoa(sends)); err != nil {
		t.Fatalf("send through %s while %s is stopped: %v", other.id, lost.id, err)
	}

	// What the message says: remove it, empty its data dir, join it.
	retrying(t, "fifoq cluster remove", func() error {
		out, err := exec.Command(binary, "cluster", "remove", lost.id, "--endpoint", "http://"+other.httpAddr).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if err := os.RemoveAll(lost.dataDir); err != nil {
		t.Fatal(err)
	}
	lost.join = "http://" + other.httpAddr
	c.start(lost, "")
	waitHolds(t, lost, true)
	got := drainNumbered(t, lost, q)
	slices.Sort(got)
	want := make([]int, sends+1)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(got, want) {
		t.Fatalf("drained through the member joined again: %v; want 0..%d once each", got, sends)
	}
}
