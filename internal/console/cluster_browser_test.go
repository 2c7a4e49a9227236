package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

// TestBrowserCluster drives the console's Cluster page in headless
// Chromium against a cluster of three members with shards, each a node
// in this process serving over real HTTP and talking to the others over
// TCP: the page shows the cluster id of the node asked, every member
// with the one leader, and every shard with its leader and replicas, as
// GET /cluster/status gives them.
func TestBrowserCluster(t *testing.T) {
	findChromium(t)
	urls := startCluster(t, 3)
	status := waitClusterSettled(t, urls[1])
	var asked server.NodeInfo
	getJSON(t, urls[1]+"/cluster/node", &asked)
	if asked.ClusterID == "" {
		t.Fatal("the node records no cluster id")
	}

	b := newBrowser(t, urls[1])
	b.open("cluster")
	b.waitFor("the three members", `document.querySelectorAll("#cluster-table tr[data-node]").length === 3`)
	b.waitText("#cluster-note", "cluster id: "+asked.ClusterID)
	b.waitText("#cluster-note", "asked node n2")
	// Leaders may move meanwhile (the balancer spreads the shards'), so
	// the page is compared with what the API says at the time.
	eventually(t, "the leader's row", func() (string, string) {
		var now server.ClusterStatus
		getJSON(t, urls[1]+"/cluster/status", &now)
		return b.eval(`[...document.querySelectorAll("#cluster-table tr.open")].map((r) => r.dataset.node).join(",")`), now.LeaderID
	})
	for _, id := range []string{"n1", "n2", "n3"} {
		row := fmt.Sprintf(`#cluster-table tr[data-node=%q]`, id)
		if got := b.text(row); !strings.Contains(got, "Leader") && !strings.Contains(got, "Follower") {
			t.Errorf("member %s's row shows no Raft state: %q", id, got)
		}
	}

	b.waitFor("the shards", fmt.Sprintf(`document.querySelectorAll("#shards-table tr[data-shard]").length === %d`, len(status.Shards)))
	if b.eval(`document.querySelector("#shards-panel").hidden`) != "false" {
		t.Fatal("the shards panel is hidden in a cluster with shards")
	}
	for _, sh := range status.Shards {
		row := fmt.Sprintf(`#shards-table tr[data-shard="%d"]`, sh.Shard)
		eventually(t, fmt.Sprintf("shard %d's leader", sh.Shard), func() (string, string) {
			var now server.ClusterStatus
			getJSON(t, urls[1]+"/cluster/status", &now)
			for _, n := range now.Shards {
				if n.Shard == sh.Shard {
					return b.text(row + " td:nth-child(2)"), n.LeaderID
				}
			}
			return b.text(row + " td:nth-child(2)"), ""
		})
		got := b.text(row + " td:nth-child(3)")
		for _, r := range sh.Replicas {
			if !strings.Contains(got, r.ID+" (") {
				t.Errorf("shard %d's replicas %q do not show %s", sh.Shard, got, r.ID)
			}
		}
	}
	b.shot("cluster")
}

// eventually waits until what the page shows equals what the API says,
// both read again every 300 ms: the page refreshes every 2 s.
func eventually(t *testing.T, what string, read func() (page, api string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, api := read()
		if page == api && api != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the page shows %q, the API says %q", what, page, api)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// startCluster starts n members of a cluster with a shard per member, as
// fifoq serve does by default, each a node in this process on its own
// HTTP and Raft ports, and returns their SQS endpoints' URLs. They stop
// when the test ends.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	var peers []replog.Peer
	httpAddrs := make([]string, n)
	for i := range n {
		peers = append(peers, replog.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: testenv.FreeAddr(t)})
		httpAddrs[i] = testenv.FreeAddr(t)
	}
	urls := make([]string, n)
	for i := range n {
		urls[i] = "http://" + httpAddrs[i]
		cfg := node.Config{DataDir: t.TempDir(), NodeID: peers[i].ID, Shards: node.ShardsAuto, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Cluster: &node.Cluster{AdvertiseURL: urls[i], Raft: replog.ClusterConfig{RaftAddr: peers[i].Addr, Peers: peers}}}
		nd, err := node.Open(cfg)
		if err != nil {
			t.Fatalf("open %s: %v", peers[i].ID, err)
		}
		ln, err := net.Listen("tcp", httpAddrs[i])
		if err != nil {
			nd.Close(context.Background())
			t.Fatalf("listen: %v", err)
		}
		served := make(chan error, 1)
		go func() { served <- nd.Server.Serve(ln) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := nd.Server.Shutdown(ctx); err != nil {
				t.Errorf("shut %s down: %v", peers[i].ID, err)
			}
			<-served
		})
	}
	return urls
}

// waitClusterSettled waits until the cluster, as the member at url sees
// it, has a leader, every member answers, and each shard has a leader
// among replicas that all answer; it returns that status.
func waitClusterSettled(t *testing.T, url string) server.ClusterStatus {
	t.Helper()
	var st server.ClusterStatus
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st = server.ClusterStatus{}
		getJSON(t, url+"/cluster/status", &st)
		if settled(st) {
			return st
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the cluster did not settle in 60 s: %+v", st)
	return st
}

func settled(st server.ClusterStatus) bool {
	if st.LeaderID == "" || len(st.Members) == 0 || len(st.Shards) == 0 {
		return false
	}
	for _, m := range st.Members {
		if m.Status == nil || m.Status.ClusterID == "" {
			return false
		}
	}
	for _, sh := range st.Shards {
		if sh.LeaderID == "" || len(sh.Replicas) == 0 {
			return false
		}
	}
	return true
}

// getJSON decodes the JSON answer of a GET, failing the test on anything
// but 200.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}
