package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
)

// TestServeRefusesBadClusterFlags checks that flag combinations that
// cannot make a sound cluster member stop fifoq serve before it starts.
func TestServeRefusesBadClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peers", "a=127.0.0.1:1"}, "need --raft-addr"},
		{[]string{"--join", "http://127.0.0.1:1"}, "need --raft-addr"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--in-memory"}, "--in-memory"},
		{[]string{"--raft-addr", "0.0.0.0:7000"}, "unspecified"},
		{[]string{"--raft-addr", "127.0.0.1"}, "HOST:PORT"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--peers", "a=127.0.0.1:1", "--join", "http://x"}, "give one"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--peers", "a=127.0.0.1:1,a=127.0.0.1:2"}, "twice"},
		{[]string{"--raft-addr", "127.0.0.1:7000", "--raft-tls-cert", "c.pem"}, "go together"},
		{[]string{"--node-id", "a=b"}, "--node-id"},
		{[]string{"--raft-insecure"}, "need --raft-addr"},
		// A count of shards asks for a cluster; auto, the default, is
		// none on a server alone (TestShardsAutoAlone).
		{[]string{"--shards", "3"}, "need --raft-addr"},
		// Beyond loopback, node-to-node traffic needs mutual TLS, or
		// --raft-insecure to say that it may go without.
		{[]string{"--raft-addr", "192.0.2.10:7000"}, "--raft-insecure"},
		{[]string{"--raft-addr", "192.0.2.10:7000"}, "--raft-tls-cert"},
		{[]string{"--raft-addr", "node-1.example:7000"}, "--raft-insecure"},
		// Without credentials, the peer port would serve forwarded requests
		// unsigned to the network: that takes --insecure too.
		{[]string{"--raft-addr", "192.0.2.10:7000", "--raft-insecure"}, "--insecure"},
	} {
		var stderr bytes.Buffer
		code := run(append([]string{"serve", "--data-dir", t.TempDir()}, tc.args...), &bytes.Buffer{}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestShardsAutoAlone: --shards auto, the default, given to a server
// alone is no error (it runs no shard), as --shards 1 is not; a count
// above 1 is, for it asks for a cluster.
func TestShardsAutoAlone(t *testing.T) {
	for _, tc := range []struct {
		shards string
		ok     bool
	}{{"", true}, {"auto", true}, {"1", true}, {"2", false}} {
		var c clusterOptions
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c.define(fs)
		var args []string
		if tc.shards != "" {
			args = []string{"--shards", tc.shards}
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := c.check(false); (err == nil) != tc.ok {
			t.Errorf("--shards %q on a server alone: check says %v; want ok=%v", tc.shards, err, tc.ok)
		}
	}
}

// TestServeRaftInsecure: with --raft-insecure (and credentials), a node
// beyond loopback without TLS gets past the checks, says loudly what it
// gives up, and goes on to listen (where this test's address, which no
// interface has, fails).
func TestServeRaftInsecure(t *testing.T) {
	t.Setenv("FIFOQ_ACCESS_KEY_ID", "AKIDRAFTINSECURE")
	t.Setenv("FIFOQ_SECRET_ACCESS_KEY", "secret")
	var stderr bytes.Buffer
	code := run([]string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--raft-addr", "192.0.2.10:7000", "--raft-insecure"}, &bytes.Buffer{}, &stderr)
	out := stderr.String()
	if code != 1 || !strings.Contains(out, "--raft-insecure") || !strings.Contains(out, "rewrite") || !strings.Contains(out, "192.0.2.10:7000") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 (the address cannot be bound) after a warning of what --raft-insecure gives up", code, out)
	}
}

func TestClusterCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"cluster"}, {"cluster", "nope"}, {"cluster", "add", "n4"}, {"cluster", "remove"}} {
		if code := run(args, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestServeRefusesUnreadableRaftTLS: certificate files that cannot be
// read stop fifoq serve with a message naming the problem (exit 1), as
// the flags' check cannot see files.
func TestServeRefusesUnreadableRaftTLS(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := run([]string{"serve", "--data-dir", dir, "--listen", "127.0.0.1:0", "--raft-addr", "127.0.0.1:1",
		"--raft-tls-cert", dir + "/no-cert.pem", "--raft-tls-key", dir + "/no-key.pem", "--raft-tls-ca", dir + "/no-ca.pem"},
		&bytes.Buffer{}, &stderr)
	if out := stderr.String(); code != 1 || !strings.Contains(out, "cannot set up the cluster") || !strings.Contains(out, "no-cert.pem") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 naming the certificate file", code, out)
	}
}

// TestStatusTableShowsIncarnations: fifoq cluster status's table has a
// column of the members' recorded incarnations (their first 12 hex
// digits), "-" for a member whose incarnation is not yet recorded, the
// unreachable included; its first line names the cluster's id as the
// node asked records it.
func TestStatusTableShowsIncarnations(t *testing.T) {
	st := server.ClusterStatus{Node: "n1", LeaderID: "n1", Members: []server.ClusterMember{
		{Member: replog.Member{ID: "n1", Addr: "127.0.0.1:9425", Incarnation: "0123456789abcdef0123456789abcdef", Voter: true}, Leader: true,
			Status: &server.NodeInfo{NodeStatus: replog.NodeStatus{State: "Leader", ClusterID: "00112233445566778899aabbccddeeff"}}},
		{Member: replog.Member{ID: "n2", Addr: "127.0.0.1:9426", Voter: true}, Status: &server.NodeInfo{NodeStatus: replog.NodeStatus{State: "Follower"}}},
		{Member: replog.Member{ID: "n3", Addr: "127.0.0.1:9427", Incarnation: "fedcba9876543210fedcba9876543210", Voter: true}, Error: "connection refused"},
	}}
	var out bytes.Buffer
	printStatus(&out, st)
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "cluster id: 00112233445566778899aabbccddeeff") {
		t.Errorf("the first line does not show the asked node's cluster id: %q", lines[0])
	}
	if !strings.Contains(lines[1], "INCARNATION") {
		t.Fatalf("the header has no INCARNATION column:\n%s", out.String())
	}
	for i, want := range []string{"0123456789ab", " - ", "fedcba987654"} {
		if row := lines[2+i]; !strings.Contains(row, want) || strings.Contains(row, "0123456789abc") {
			t.Errorf("row of n%d %q does not show its incarnation as %q", i+1, row, want)
		}
	}
}

// TestPrintShardsMarksIdle: fifoq cluster shards marks a replica that has
// slowed its heartbeats, its shard idle, and only such a one, whether it
// is the node's own or another's it shows.
func TestPrintShardsMarksIdle(t *testing.T) {
	var out bytes.Buffer
	printShards(&out, server.ShardsStatus{Node: "n1", Shards: []server.ShardStatus{
		{Shard: 0, Held: true, LeaderID: "n1", State: "Leader", Queues: []string{}},
		{Shard: 1, Held: true, LeaderID: "n2", State: "Follower", Idle: true, Queues: []string{"000000000000/q"}},
		{Shard: 2, Via: "n3", LeaderID: "n3", State: "Leader", Idle: true, Queues: []string{}},
	}})
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 5 || strings.Contains(lines[2], "idle") || !strings.Contains(lines[3], "Follower (idle)") || !strings.Contains(lines[4], "(on n3) Leader (idle)") {
		t.Fatalf("fifoq cluster shards printed:\n%s\nwant shards 1 and 2 (as n3 sees it), and only they, marked (idle)", out.String())
	}
}
