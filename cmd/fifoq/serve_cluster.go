package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/config"
	"github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/shards"
)

// clusterOptions are the flags that make fifoq serve a cluster member.
type clusterOptions struct {
	nodeID       string
	raftAddr     string
	peers        string
	join         string
	advertiseURL string
	tlsCert      string
	tlsKey       string
	tlsCA        string
	insecure     bool
	// maxClockOffset is how far this node's clock may be off the
	// cluster's before it refuses to lead.
	maxClockOffset time.Duration
	// shards is how many Raft groups hold the cluster's new queues,
	// beside its first group (node.Config.Shards): a count, or
	// node.ShardsAuto.
	shards shardCount
	// partitionSplitRate is the commands a second above which a
	// partition of a high-throughput FIFO queue splits (0: never).
	partitionSplitRate int
}

// shardCount is --shards's value: 1 to maxShards, or "auto"
// (node.ShardsAuto).
type shardCount int

// String implements flag.Value.
func (c *shardCount) String() string {
	if *c == node.ShardsAuto {
		return "auto"
	}
	return strconv.Itoa(int(*c))
}

// Set implements flag.Value.
func (c *shardCount) Set(s string) error {
	if s == "auto" {
		*c = node.ShardsAuto
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxShards {
		return fmt.Errorf("give 1 to %d, or auto", maxShards)
	}
	*c = shardCount(n)
	return nil
}

// defaultNodeID is the node id of a server started without --node-id: the
// id every single-node data dir was created under.
const defaultNodeID = "node-1"

func (c *clusterOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&c.nodeID, "node-id", defaultNodeID, "this node's id in its cluster (a single-node data dir was created as node-1)")
	fs.StringVar(&c.raftAddr, "raft-addr", "", "HOST:PORT this node listens on for the other nodes of its cluster, and by which they reach it; without it the server is a cluster of one")
	fs.StringVar(&c.peers, "peers", "", "the initial members of a new cluster, this node included: ID=HOST:PORT,ID=HOST:PORT,... (their raft addresses); used only when the data dir has no state")
	fs.StringVar(&c.join, "join", "", "URL of a running member's SQS endpoint to ask to add this node (a node with no state then waits to be added instead of bootstrapping)")
	fs.StringVar(&c.advertiseURL, "advertise-url", "", "URL of this node's SQS endpoint as clients reach it, answered by /cluster/leader (default: the scheme and listen address)")
	fs.StringVar(&c.tlsCert, "raft-tls-cert", "", "certificate (PEM) this node presents to the other nodes; with --raft-tls-key and --raft-tls-ca, all node-to-node traffic is mutual TLS")
	fs.StringVar(&c.tlsKey, "raft-tls-key", "", "private key (PEM) for --raft-tls-cert")
	fs.StringVar(&c.tlsCA, "raft-tls-ca", "", "CA certificate (PEM): a node refuses peers whose certificate this CA did not sign")
	fs.DurationVar(&c.maxClockOffset, "max-clock-offset", server.DefaultMaxClockOffset, "how far a member's wall clock may be off the majority's before it refuses to lead (queue time is the leader's clock); keep clocks synchronised with NTP")
	c.shards = node.ShardsAuto
	fs.Var(&c.shards, "shards", "how many Raft groups (shards) hold a cluster's new queues, each on three nodes and led where the map spreads them, beside the first group (which keeps the shard map and the queues made before); each new queue goes to the shard holding the fewest queues, the least busy of those; auto: one per voting member, added as members join (none for a server alone); 1 keeps every queue in the first group; shards are added, never removed")
	fs.IntVar(&c.partitionSplitRate, "partition-split-rate", shards.DefaultSplitRate, "commands a second above which a partition of a high-throughput FIFO queue (FifoThroughputLimit perMessageGroupId), busy so for two rounds of balancing in a row, splits in two and one half moves to another shard, and the partitions so made merge back once the queue has stayed below a quarter of it for ten minutes; 0: never (such a queue is still spread one partition per shard from its first message)")
	fs.BoolVar(&c.insecure, "raft-insecure", false, "allow --raft-addr beyond loopback without --raft-tls-*: anyone who can reach the port can send Raft messages that rewrite every node's state")
}

// maxShards bounds --shards: a node holds three replicas in every node's
// count of them, and each costs an idle Raft group's goroutines, heap and
// heartbeats (docs/cluster.md).
const maxShards = 64

// clustered reports whether the flags make this server a networked member.
func (c *clusterOptions) clustered() bool { return c.raftAddr != "" }

// check validates the cluster flags together.
func (c *clusterOptions) check(inMemory bool) error {
	if err := replog.CheckNodeID(c.nodeID); err != nil {
		return fmt.Errorf("--node-id: %w", err)
	}
	if !c.clustered() {
		// auto, the default, means no shard for a server alone; a count
		// asks for a cluster.
		if c.peers != "" || c.join != "" || c.tlsCert != "" || c.tlsKey != "" || c.tlsCA != "" || c.insecure || c.shards > 1 {
			return errors.New("--peers, --join, --raft-tls-*, --raft-insecure and --shards need --raft-addr")
		}
		return nil
	}
	if inMemory {
		return errors.New("--in-memory cannot be a cluster member: a cluster needs the durable log")
	}
	if err := replog.CheckRaftAddr(c.raftAddr); err != nil {
		return fmt.Errorf("--raft-addr: %w", err)
	}
	if c.peers != "" && c.join != "" {
		return errors.New("--peers bootstraps a new cluster and --join joins a running one: give one")
	}
	if _, err := replog.ParsePeers(c.peers); err != nil {
		return fmt.Errorf("--peers: %w", err)
	}
	n := 0
	for _, f := range []string{c.tlsCert, c.tlsKey, c.tlsCA} {
		if f != "" {
			n++
		}
	}
	if n != 0 && n != 3 {
		return errors.New("--raft-tls-cert, --raft-tls-key and --raft-tls-ca go together")
	}
	if c.partitionSplitRate < 0 {
		return fmt.Errorf("--partition-split-rate %d: give 0 (never) or a positive rate", c.partitionSplitRate)
	}
	if c.maxClockOffset <= 0 {
		return fmt.Errorf("--max-clock-offset %v: give a positive duration", c.maxClockOffset)
	}
	if c.exposed() && !c.insecure {
		return fmt.Errorf(`refusing --raft-addr %s beyond loopback without TLS: anyone who can reach that port could
send Raft messages that rewrite every node's state, and requests that pass for a member's. Either
  - give every node a certificate signed by the cluster's CA: --raft-tls-cert, --raft-tls-key and --raft-tls-ca;
  - use a loopback address, for nodes on one machine;
  - or accept an unauthenticated node-to-node port (a private network you trust): --raft-insecure`, c.raftAddr)
	}
	return nil
}

// exposed reports whether the node-to-node port is reachable beyond this
// machine without mutual TLS: anyone who reaches it is taken for a member.
func (c *clusterOptions) exposed() bool {
	return c.clustered() && c.tlsCert == "" && !isLoopback(c.raftAddr)
}

// raftCluster turns the flags into the log's cluster configuration (nil
// for a cluster of one).
func (c *clusterOptions) raftCluster() (*replog.ClusterConfig, error) {
	if !c.clustered() {
		return nil, nil
	}
	peers, err := replog.ParsePeers(c.peers)
	if err != nil {
		return nil, err
	}
	cc := &replog.ClusterConfig{RaftAddr: c.raftAddr, Peers: peers, Join: c.join != "", MaxClockOffset: c.maxClockOffset}
	if c.tlsCert != "" {
		cc.TLS, err = replog.PeerTLS{CertFile: c.tlsCert, KeyFile: c.tlsKey, CAFile: c.tlsCA}.TLSConfig()
		if err != nil {
			return nil, err
		}
	}
	return cc, nil
}

// advertise returns the URL clients reach this node's SQS endpoint by.
func (c *clusterOptions) advertise(ln net.Listener, https bool) string {
	if c.advertiseURL != "" {
		return strings.TrimSuffix(c.advertiseURL, "/")
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	addr := ln.Addr().String()
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if name, err := os.Hostname(); err == nil {
				addr = net.JoinHostPort(name, port)
			}
		}
	}
	return scheme + "://" + addr
}

// joinCluster asks the member at url to add this node, until it is added
// or ctx ends, and then calls joined. The request is signed with cred (if
// not zero), as fifoq cluster add signs it. It returns the member's
// refusal when asking again cannot help (400: this node is not fit to
// join, its region another than the cluster's, say): the node should then
// stop.
func joinCluster(ctx context.Context, url string, c clusterOptions, incarnation string, cred auth.Credential, region string, logger *slog.Logger, joined func()) error {
	body, _ := json.Marshal(map[string]string{"id": c.nodeID, "raft_addr": c.raftAddr, "incarnation": incarnation, "region": region})
	client, err := joinClient(c.tlsCA)
	if err != nil {
		logger.Error("cannot join the cluster", "via", url, "err", err)
		return nil
	}
	delay := 500 * time.Millisecond
	for {
		status, answer, err := adminRequest(ctx, client, http.MethodPost, strings.TrimSuffix(url, "/")+"/cluster/members", body, cred, region)
		if err == nil && status == http.StatusOK {
			logger.Info("joined the cluster", "via", url, "node_id", c.nodeID, "raft_addr", c.raftAddr)
			joined()
			return nil
		}
		if err == nil && status == http.StatusConflict {
			// The id is a member under another data dir: asking again
			// will not change that (see the answer for the way out).
			logger.Error("cannot join the cluster: this node id is a member already", "via", url, "node_id", c.nodeID, "answer", strings.TrimSpace(string(answer)))
			return nil
		}
		if err == nil && status == http.StatusBadRequest {
			return fmt.Errorf("the member at %s refused to add this node: %s", url, joinAnswer(answer))
		}
		if err == nil {
			err = fmt.Errorf("%d: %s", status, strings.TrimSpace(string(answer)))
		}
		logger.Warn("cannot join the cluster yet; retrying", "via", url, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// joinAnswer is the message of a member's JSON error answer, or the answer
// itself.
func joinAnswer(answer []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(answer, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(answer))
}

// joinClient is the HTTP client --join asks a member with. A member's SQS
// endpoint over https often has a certificate of the cluster's own CA
// (fifoq cert node makes one certificate for both ports), which the
// system does not trust: the client trusts the system's roots, the
// cluster's CA (--raft-tls-ca) and the file AWS_CA_BUNDLE names, as the
// AWS tools do.
func joinClient(clusterCA string) (*http.Client, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	added := false
	for _, f := range []struct{ from, path string }{{"--raft-tls-ca", clusterCA}, {caBundleEnv, os.Getenv(caBundleEnv)}} {
		if f.path == "" {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.from, err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", f.from, f.path)
		}
		added = true
	}
	if !added {
		return http.DefaultClient, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: t}, nil
}

// adminRequest sends a cluster request with client, signed with SigV4 as
// an SQS request is when cred has a key.
func adminRequest(ctx context.Context, client *http.Client, method, url string, body []byte, cred auth.Credential, region string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cred.AccessKeyID != "" {
		if err := auth.SignRequest(req, body, cred, region, time.Now()); err != nil {
			return 0, nil, err
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, answer, err
}

// clusterCredential picks the key a node signs its join request with: an
// admin key of the server's own account (none: the request goes unsigned,
// which only a cluster without credentials accepts).
func clusterCredential(opts serveOptions, cfgFile *config.File) auth.Credential {
	creds, _ := gatherCredentials(opts, cfgFile)
	for _, c := range creds {
		if c.Account == opts.account && c.Admin {
			return c
		}
	}
	return auth.Credential{}
}
