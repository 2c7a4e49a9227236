package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMembershipNeedsAdminKey runs fifoq cluster remove and add, as an
// operator would, against three members whose credentials file holds an
// admin key and another key of the same account: only the admin key
// changes the membership, or moves a queue (fifoq cluster move).
func TestMembershipNeedsAdminKey(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("AKIDADMIN admin-secret 000000000000 admin\nAKIDAPP app-secret 000000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClusterWith(t, 3, func(i int, nd *node) {
		nd.env = []string{"FIFOQ_CREDENTIALS=" + creds}
	})
	leader := c.leader()
	other := c.other(leader)
	cluster := func(key, secret string, args ...string) (int, string) {
		cmd := exec.Command(binary, append([]string{"cluster"}, append(args, "--endpoint", "http://"+leader.httpAddr)...)...)
		cmd.Env = append(os.Environ(), "FIFOQ_ACCESS_KEY_ID="+key, "FIFOQ_SECRET_ACCESS_KEY="+secret)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run fifoq cluster: %v", err)
		}
		return code, out.String()
	}
	if code, out := cluster("AKIDAPP", "app-secret", "remove", other.id); code == 0 || !strings.Contains(out, "admin key") {
		t.Fatalf("fifoq cluster remove with a key that is not an admin key: exit %d\n%s", code, out)
	}
	// Without --json, a line for people: what was done, and the members.
	// (Before it, on stderr, the shards still to move away from it.)
	if code, out := cluster("AKIDADMIN", "admin-secret", "remove", other.id); code != 0 ||
		!strings.HasPrefix(lastLine(out), "removed "+other.id+"; members: ") || !strings.Contains(lastLine(out), leader.id) || strings.Contains(out, "{") {
		t.Fatalf("fifoq cluster remove with the admin key: exit %d\n%s\nwant \"removed %s; members: ...\"", code, out, other.id)
	} else {
		t.Logf("fifoq cluster remove: %s", out)
	}
	if code, out := cluster("AKIDAPP", "app-secret", "add", other.id, other.raftAddr); code == 0 || !strings.Contains(out, "admin key") {
		t.Fatalf("fifoq cluster add with a key that is not an admin key: exit %d\n%s", code, out)
	}
	// With --json, the server's answer as it is.
	if code, out := cluster("AKIDADMIN", "admin-secret", "add", other.id, other.raftAddr, "--json"); code != 0 || !json.Valid([]byte(out)) ||
		!strings.Contains(out, `"members"`) {
		t.Fatalf("fifoq cluster add --json with the admin key: exit %d\n%s", code, out)
	}
	// The same request signed in the same second would be refused as a
	// replay of the last: sign it in the next.
	time.Sleep(1100 * time.Millisecond)
	if code, out := cluster("AKIDADMIN", "admin-secret", "add", other.id, other.raftAddr); code == 0 || !strings.Contains(out, "fifoq cluster remove "+other.id) {
		t.Fatalf("fifoq cluster add of a member's id: exit %d\n%s", code, out)
	}
	// A queue's move needs the admin key too; with it, the request gets
	// past the check and is refused only because the queue does not exist.
	url := "http://" + leader.httpAddr + "/000000000000/q"
	if code, out := cluster("AKIDAPP", "app-secret", "move", url, "1"); code == 0 || !strings.Contains(out, "admin key") {
		t.Fatalf("fifoq cluster move with a key that is not an admin key: exit %d\n%s", code, out)
	}
	// The shards form a few seconds after the cluster, later on a busy
	// machine: until then a move is refused for that. Where they had not
	// formed before the member was removed and added again, the first
	// group's leader waits for that member's incarnation, which it does
	// not learn, for 30 s (shards' incarnationWait) before it makes them
	// without: so up to 90 s, as waitShards waits (30 s failed once in
	// CI's first tier). A retry is signed in the next second, as a replay
	// of the last would be refused.
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for {
		code, out := cluster("AKIDADMIN", "admin-secret", "move", url, "1")
		if strings.Contains(out, "no shards to move a queue between") && time.Now().Before(deadline) {
			time.Sleep(1100 * time.Millisecond)
			continue
		}
		if code == 0 || !strings.Contains(out, "404") || !strings.Contains(out, "no queue") {
			for _, nd := range c.nodes {
				t.Logf("log tail of %s:\n%s", nd.id, nd.tail(25))
			}
			t.Fatalf("fifoq cluster move of a queue that does not exist, with the admin key, after %v: exit %d\n%s", time.Since(start).Round(time.Second), code, out)
		}
		t.Logf("the move was refused for want of shards for %v", time.Since(start).Round(time.Second))
		break
	}
}

// TestRemoveTheLeader removes the cluster's leader through fifoq cluster
// remove, as an operator retiring that machine would: the command
// succeeds and names the members left, the others elect a leader among
// them and take writes, and the removed node's incarnation record is gone
// (so that it can be added again later with a new data dir).
func TestRemoveTheLeader(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	q := c.createQueue("before", nil)
	leader := c.leader()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(clusterStatus(leader), `"incarnation"`) {
		if time.Now().After(deadline) {
			t.Fatal("the cluster recorded no incarnation within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd := exec.Command(binary, "cluster", "remove", leader.id, "--endpoint", "http://"+leader.httpAddr)
	var progress bytes.Buffer
	cmd.Stderr = &progress
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "removed "+leader.id+"; members: ") {
		out = append(out, progress.Bytes()...)
		t.Fatalf("fifoq cluster remove of the leader %s: %v\n%s", leader.id, err, out)
	}
	if left := strings.TrimPrefix(strings.TrimSpace(string(out)), "removed "+leader.id+"; members: "); strings.Contains(left, leader.id) {
		t.Fatalf("the members left still name %s: %s", leader.id, out)
	}
	var rest []*node
	for _, nd := range c.nodes {
		if nd != leader {
			rest = append(rest, nd)
		}
	}
	c.kill(leader)
	if _, err := sendVia(rest[0], q, "after"); err != nil {
		t.Fatalf("send through %s after the leader's removal: %v", rest[0].id, err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		st := clusterStatus(rest[0])
		if !strings.Contains(st, `"id":"`+leader.id+`"`) && !strings.Contains(st, `"id": "`+leader.id+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster still knows %s 30 s after its removal: %s", leader.id, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRoutedRequestNeedsMutualTLSWithCredentials runs three members with
// three shards and credentials, and no TLS between them (on loopback). A
// request routed to another member for the node itself (POST /cluster/do:
// the config file's, the console's) names the account it acts as, with
// no signature, a move's install (POST /cluster/install-queue) puts a
// queue with every message in a shard, and a shard's backup for another
// member's fifoq backup (GET /cluster/backup) holds every message of the
// shard: on a port without TLS, where whoever reaches it could ask, all
// must be refused,
// or the port would let anyone act as any account or read every message,
// where a forwarded API request still has its signature checked. Such a
// cluster still declares its config file's queues, in the first group, as
// it did before requests were routed.
func TestRoutedRequestNeedsMutualTLSWithCredentials(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("AKIDADMIN admin-secret 000000000000 admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fifoq.yaml")
	if err := os.WriteFile(file, []byte("queues:\n  - name: declared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClusterWith(t, 3, func(i int, nd *node) {
		nd.env = []string{"FIFOQ_CREDENTIALS=" + creds}
		nd.args = []string{"--shards", "3", "--config", file}
	})
	waitShards(t, c, 4)
	if placed := waitPlaced(t, c, "declared"); placed["declared"] != 0 {
		t.Fatalf("the config file's queue is in shard %d, which its leader could not reach without TLS", placed["declared"])
	}
	doBody := `{"shard":1,"account":"000000000000","action":"CreateQueue","request":{"QueueName":"through-cluster-do"}}`
	for _, nd := range c.nodes {
		for _, ask := range []struct{ method, path, body string }{
			{http.MethodPost, "/cluster/do", doBody},
			{http.MethodPost, "/cluster/do?shard=1&account=000000000000&action=CreateQueue", `{"QueueName":"through-cluster-do"}`},
			{http.MethodPost, "/cluster/install-queue?shard=1&queue=000000000000/taken&move=m", "an image"},
			{http.MethodGet, "/cluster/backup?shard=1", ""},
		} {
			req, _ := http.NewRequest(ask.method, "http://"+nd.raftAddr+ask.path, strings.NewReader(ask.body))
			req.Header.Set("X-Fifoq-Forwarded-By", "n1")
			resp, err := peerHTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%s %s on %s's port without TLS, credentials configured: %s %.200s; want 403", ask.method, ask.path, nd.id, resp.Status, answer)
			}
		}
	}
}

// peerHTTPClient is an HTTP client of a node's Raft port, as another node
// without TLS talks to it: each connection says 'H' (HTTP) first.
func peerHTTPClient() *http.Client {
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if _, err := conn.Write([]byte{'H'}); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial}}
}

// lastLine returns the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
