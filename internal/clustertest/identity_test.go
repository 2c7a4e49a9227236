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

	"github.com/fifoq/fifoq/internal/server"
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

// TestRestoredCopyKeepsToItself restores a backup of a running cluster
// beside it, its node given the id of one of the original's (n1), as
// people do, and lets its log run ahead of the original's. Then an
// operator's mistake: `fifoq cluster add` on the restored node names a
// member of the original (n2, at its Raft address). The two clusters must
// not mix: the add is refused, as n2 answers a hello as a node of another
// cluster; n2 keeps its leader, its membership and its queue; the
// restored node goes on alone. (TestRestoredCopyIsAnotherCluster, in
// internal/replog, is the hellos between the two.)
func TestRestoredCopyKeepsToItself(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	q := c.createQueue("original", nil)
	for i := range 5 {
		if _, err := sendVia(c.nodes[0], q, strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Not in the first second of the original, before its leader has
	// recorded its id and its members' incarnations (docs/cluster.md,
	// "Members have identities": not covered).
	deadline := time.Now().Add(10 * time.Second)
	for !recordsIdentities(c) {
		if time.Now().After(deadline) {
			t.Fatalf("the original cluster recorded no id or not every incarnation in 10 s: %s", clusterStatus(c.nodes[1]))
		}
		time.Sleep(50 * time.Millisecond)
	}
	file := filepath.Join(t.TempDir(), "cluster.backup")
	runVia(t, c.nodes[0], "backup", file)
	dir := filepath.Join(t.TempDir(), "restored")
	runVia(t, c.nodes[0], "restore", "--data-dir", dir, "--node-id", "n1", file)
	defer func() {
		if t.Failed() {
			t.Logf("log of n2:\n%s", c.nodes[1].tail(60))
		}
	}()
	_, r1 := serveRestored(t, "n1", dir)

	// Queues made on the restored node take its first group's log past
	// the original's.
	ahead := func() bool {
		mine := nodeInfo(t, r1).AppliedIndex
		for _, nd := range c.nodes {
			if nodeInfo(t, nd).AppliedIndex+5 >= mine {
				return false
			}
		}
		return true
	}
	for i := 0; !ahead(); i++ {
		if i == 300 {
			t.Fatal("300 queues made on the restored node did not take its log past the original's")
		}
		if _, err := newClient(r1.httpAddr, 5*time.Second).CreateQueue(context.Background(),
			&sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("restored-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}

	n2 := c.nodes[1]
	before := nodeInfo(t, n2)
	add := exec.Command(binary, "cluster", "add", n2.id, n2.raftAddr)
	add.Env = append(os.Environ(), "FIFOQ_ENDPOINT=http://"+r1.httpAddr)
	out, err := add.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another cluster") {
		t.Errorf("fifoq cluster add %s %s on the restored node: %v\n%s\nwant it refused, naming another cluster", n2.id, n2.raftAddr, err, out)
	}
	t.Logf("fifoq cluster add %s %s on the restored node: %v: %s", n2.id, n2.raftAddr, err, out)
	time.Sleep(3 * time.Second)

	after := nodeInfo(t, n2)
	if after.LeaderAddr != before.LeaderAddr || after.ClusterID != before.ClusterID || after.ClusterID == "" {
		t.Errorf("n2 followed %s of cluster %s before and %s of cluster %s after", before.LeaderAddr, before.ClusterID, after.LeaderAddr, after.ClusterID)
	}
	if id := nodeInfo(t, r1).ClusterID; id == "" || id == before.ClusterID {
		t.Errorf("the restored node's cluster id is %q, the original's %q: want a new one", id, before.ClusterID)
	}
	if got, want := membersAt(t, n2), []string{"n1@" + c.nodes[0].raftAddr, "n2@" + n2.raftAddr, "n3@" + c.nodes[2].raftAddr}; !slices.Equal(got, want) {
		t.Errorf("n2's cluster has members %v, want %v", got, want)
	}
	if got, want := membersAt(t, r1), []string{"n1@" + r1.raftAddr}; !slices.Equal(got, want) {
		t.Errorf("the restored cluster has members %v, want %v", got, want)
	}
	for _, nd := range append(c.nodes, r1) {
		if !nd.running() {
			t.Errorf("%s stopped; its log ends:\n%s", nd.id, nd.tail(10))
		}
	}
	if _, err := sendVia(n2, q, "5"); err != nil {
		t.Fatalf("send through n2: %v", err)
	}
	if got := drainNumbered(t, n2, q); !slices.Equal(got, numbers(6)) {
		t.Fatalf("the original's queue gave %v through n2, want 0..5", got)
	}
}

// recordsIdentities reports whether every node of c records one cluster
// id, and its status three incarnations.
func recordsIdentities(c *cluster) bool {
	ids := map[string]bool{}
	for _, nd := range c.nodes {
		var info server.NodeInfo
		if err := getJSON("http://"+nd.httpAddr+"/cluster/node", &info); err != nil || info.ClusterID == "" {
			return false
		}
		ids[info.ClusterID] = true
		if strings.Count(clusterStatus(nd), `"incarnation"`) < len(c.nodes) {
			return false
		}
	}
	return len(ids) == 1
}

// membersAt returns the members of nd's cluster, as ID@RAFTADDR, sorted.
func membersAt(t *testing.T, nd *node) []string {
	t.Helper()
	var st server.ClusterStatus
	if err := getJSON("http://"+nd.httpAddr+"/cluster/status", &st); err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, m := range st.Members {
		members = append(members, m.ID+"@"+m.Addr)
	}
	slices.Sort(members)
	return members
}

// nodeInfo is a node's GET /cluster/node.
func nodeInfo(t *testing.T, nd *node) server.NodeInfo {
	t.Helper()
	var info server.NodeInfo
	if err := getJSON("http://"+nd.httpAddr+"/cluster/node", &info); err != nil {
		t.Fatalf("GET /cluster/node of %s: %v", nd.id, err)
	}
	return info
}
