package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/historycheck"
	"github.com/fifoq/fifoq/internal/memnet"
	fifoqnode "github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	flagMemMoves = flag.Int("cluster.mem-moves", 25, "queue moves TestMovesOverFaultyNetwork makes (1000 for the issue's soak)")
	flagMemLogs  = flag.String("cluster.mem-logs", "", "directory to keep TestMovesOverFaultyNetwork's member logs in (default: the test's temporary one)")
)

// TestMovesOverFaultyNetwork runs five members in this process, with four
// shards, over an in-memory network (internal/memnet) whose every write
// takes up to 2 ms, and moves the failover workload's FIFO queue from
// shard to shard under load, -cluster.mem-moves times. Each move meets
// one fault, drawn at random:
//
//   - none;
//   - the first group's leader (which drives the move) or the queue's
//     shard's leader crashes at a random moment of the move: its network
//     goes first, connections reset, then it stops, and it starts again
//     from its data dir a moment later;
//   - a member other than the first group's leader is cut off from every
//     other while the move is made, and for up to a second after: it
//     misses the move, and once healed serves clients from a stale map
//     until it catches up;
//   - connections between members are reset, one at a time, while the
//     move is made;
//   - about once in thirteen moves, a member is removed (its shards'
//     replicas move to the others) and joins again with an empty data
//     dir, a new incarnation that replicas then move back to.
//
// A member that halts (a wedged Raft, wedge.go in internal/replog) is
// restarted, as its supervisor would. The history checker then finds
// nothing acknowledged lost, no delete undone, order kept in every group,
// no group held twice and every group linearizable. With
// -cluster.mem-logs the members' logs are kept, and a goroutine dump is
// written beside them when a move does not finish.
func TestMovesOverFaultyNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("five members in one process under load; skipped in -short mode")
	}
	testenv.Long(t, "five in-process members over a faulty network, a queue moved under load many times, about two minutes")
	t.Parallel()
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -cluster.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	c := newMemCluster(t, 5, 4, seed)
	c.net.SetLatency(0, 2*time.Millisecond)
	c.logTailsOnFailure(30)
	c.waitShards(5)

	queueURL := c.createQueue("moved.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": strconv.Itoa(int(visibility / time.Second))})
	w := &workload{queueURL: queueURL, hist: &historycheck.History{}, sendGap: 50 * time.Millisecond}
	for _, nd := range c.nodes {
		w.ids = append(w.ids, nd.id)
		w.clients = append(w.clients, newClient(nd.httpAddr, clientTimeout))
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	startWorkload(ctx, &wg, w, seed)
	// Beside it, a queue whose messages are dead-lettered all the time,
	// to a dead-letter queue that the rounds below move about too.
	rw := newRedriveWorkload(t, c)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rw.run(ctx, seed+3000)
	}()
	redriveMoves := 0

	var took []time.Duration
	faults := map[string]int{}
	for round := range *flagMemMoves {
		from := c.shardOf("moved.fifo")
		to := 1 + rng.Intn(3)
		if to >= from {
			to++
		}
		// A member is replaced about once in thirteen moves: each takes
		// seconds, its replicas moving away and back.
		fault := []string{"none", "crash", "isolate", "resets"}[rng.Intn(4)]
		if rng.Intn(13) == 0 {
			fault = "replace"
		}
		faults[fault]++
		t.Logf("round %d: move the queue from shard %d to shard %d; fault: %s", round, from, to, fault)
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- c.move(queueURL, to) }()
		switch fault {
		case "crash":
			victim := c.leaderOf(0)
			if rng.Intn(2) == 0 {
				victim = c.leaderOf(uint32(from))
			}
			time.Sleep(time.Duration(rng.Intn(100)) * time.Millisecond)
			if victim != nil {
				c.crash(victim)
				time.Sleep(time.Duration(100+rng.Intn(400)) * time.Millisecond)
				c.start(victim)
			}
		case "isolate":
			lead := c.leaderOf(0)
			others := slices.DeleteFunc(slices.Clone(c.nodes), func(nd *memNode) bool { return nd == lead })
			cut := others[rng.Intn(len(others))]
			c.net.Isolate(cut.raftAddr, c.raftAddrs())
			t.Logf("cut %s off", cut.id)
			err := <-done
			time.Sleep(time.Duration(rng.Intn(1000)) * time.Millisecond)
			c.net.Heal()
			done <- err
		case "replace":
			c.replace(c.nodes[rng.Intn(len(c.nodes))])
		case "resets":
			for i := 0; i < 5; i++ {
				time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
				c.net.ResetOne()
			}
		}
		if err := <-done; err != nil {
			// A crash may have lost the request, or the move is still
			// driven by the new leader: ask again until it answers.
			t.Logf("round %d: the move answered %v; asking again", round, err)
			c.retrying("move", func() error { return c.move(queueURL, to) })
		}
		c.waitQueueIn("moved.fifo", to)
		if fault == "none" || fault == "resets" {
			took = append(took, time.Since(start))
		}
		if rng.Intn(2) == 0 {
			// One of the redrive's two queues moves: they are apart
			// about two rounds in three.
			name, url := "redrive-src.fifo", rw.srcURL
			if rng.Intn(2) == 0 {
				name, url = "redrive-dead.fifo", rw.dlqURL
			}
			at := c.shardOf(name)
			dest := 1 + (at+rng.Intn(3))%4
			t.Logf("round %d: move %s from shard %d to shard %d", round, name, at, dest)
			c.retrying("move "+name, func() error { return c.move(url, dest) })
			c.waitQueueIn(name, dest)
			redriveMoves++
		}
	}
	if len(took) > 0 {
		slices.Sort(took)
		t.Logf("%d moves (faults: %v); those without a crash or a cut member took median %v, longest %v",
			*flagMemMoves, faults, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	stop()
	wg.Wait()
	time.Sleep(visibility + clientTimeout)
	drainedAt := w.drain(t, rand.New(rand.NewSource(seed+2000)))
	r := &run{seed: seed, checkTimeout: 10 * time.Second}
	checkFailoverHistory(t, r, w, drainedAt)
	t.Logf("the redrive's queues moved %d times", redriveMoves)
	r.problems = append(r.problems, rw.check(t)...)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", seed, strings.Join(r.problems, "\n  "))
	}
}

// memCluster is a cluster of in-process members over a memnet network.
type memCluster struct {
	t      *testing.T
	net    *memnet.Network
	nodes  []*memNode
	peers  []replog.Peer
	shards int
	logs   string // the members' logs' directory
	// spread is the members' fifoqnode.Config.PartitionSpread.
	spread time.Duration
	// configure, if set, changes each member's config before it opens.
	configure func(*fifoqnode.Config)
}

// memNode is one in-process member: its SQS endpoint listens on loopback
// TCP, its traffic with the other members goes through the network.
type memNode struct {
	id, raftAddr, httpAddr, dir string
	logPath                     string
	// join: the member starts with an empty data dir and joins the
	// running cluster, rather than bootstrap it with the others.
	join bool
	// life serializes starting and stopping the member: the test's
	// faults and its supervisor both do.
	life    sync.Mutex
	mu      sync.Mutex // guards n, served and stopped
	n       *fifoqnode.Node
	served  chan error
	stopped chan struct{} // closed when the test stops n
}

// newMemCluster starts n members with the given shards.
func newMemCluster(t *testing.T, n, shards int, seed int64) *memCluster {
	return startMemCluster(t, n, shards, seed, 0)
}

// newHandSplitCluster is newMemCluster for a test that splits and moves
// a queue's partitions by hand: the first group's leader spreads no
// high-throughput queue itself.
func newHandSplitCluster(t *testing.T, n, shards int, seed int64) *memCluster {
	return startMemCluster(t, n, shards, seed, -1)
}

// startMemCluster starts n members with the given shards, spreading
// high-throughput queues as spread says (fifoqnode.Config.PartitionSpread).
func startMemCluster(t *testing.T, n, shards int, seed int64, spread time.Duration) *memCluster {
	return startMemClusterWith(t, n, shards, seed, spread, nil)
}

// startMemClusterWith is startMemCluster with each member's config
// changed by configure (if not nil) before it opens.
func startMemClusterWith(t *testing.T, n, shards int, seed int64, spread time.Duration, configure func(*fifoqnode.Config)) *memCluster {
	logs := *flagMemLogs
	if logs == "" {
		logs = t.TempDir()
	}
	c := &memCluster{t: t, net: memnet.New(seed), shards: shards, logs: logs, spread: spread, configure: configure}
	for i := range n {
		nd := &memNode{id: fmt.Sprintf("m%d", i+1), raftAddr: fmt.Sprintf("10.77.0.%d:9325", i+1), httpAddr: freeAddr(t),
			dir: t.TempDir(), logPath: filepath.Join(logs, fmt.Sprintf("m%d.log", i+1))}
		c.nodes = append(c.nodes, nd)
		c.peers = append(c.peers, replog.Peer{ID: nd.id, Addr: nd.raftAddr})
	}
	var wg sync.WaitGroup
	for _, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.start(nd)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stop(nd, 10*time.Second)
		}
	})
	return c
}

// logTailsOnFailure has the test, if it fails, log the last lines of
// every member's log.
func (c *memCluster) logTailsOnFailure(lines int) {
	c.t.Cleanup(func() {
		if c.t.Failed() {
			for _, nd := range c.nodes {
				c.t.Logf("log tail of %s:\n%s", nd.id, nd.tail(lines))
			}
		}
	})
}

// start opens nd from its data dir and serves it, unless it runs.
func (c *memCluster) start(nd *memNode) {
	c.t.Helper()
	if err := c.startErr(nd); err != nil {
		c.t.Fatal(err)
	}
}

func (c *memCluster) startErr(nd *memNode) error {
	nd.life.Lock()
	defer nd.life.Unlock()
	if nd.running() {
		return nil
	}
	f, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", nd.id)
	rc := replog.ClusterConfig{RaftAddr: nd.raftAddr, Peers: c.peers, Network: c.net.Node(nd.raftAddr)}
	if nd.join {
		rc.Peers, rc.Join = nil, true
	}
	cfg := fifoqnode.Config{DataDir: nd.dir, NodeID: nd.id, Logger: logger, Shards: c.shards, PartitionSpread: c.spread,
		Cluster: &fifoqnode.Cluster{AdvertiseURL: "http://" + nd.httpAddr, Raft: rc}}
	if c.configure != nil {
		c.configure(&cfg)
	}
	n, err := fifoqnode.Open(cfg)
	if err != nil {
		return fmt.Errorf("open %s: %w", nd.id, err)
	}
	var ln net.Listener
	for try := 0; ; try++ {
		// The port was this member's before it crashed: take it again.
		if ln, err = net.Listen("tcp", nd.httpAddr); err == nil || try == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		n.Close(context.Background())
		return fmt.Errorf("listen %s for %s: %w", nd.httpAddr, nd.id, err)
	}
	served, stopped := make(chan error, 1), make(chan struct{})
	go func() { served <- n.Server.Serve(ln) }()
	nd.mu.Lock()
	nd.n, nd.served, nd.stopped = n, served, stopped
	nd.mu.Unlock()
	go c.supervise(nd, n, stopped)
	return nil
}

// supervise restarts nd when its node n halts (a storage fault, a fence,
// a wedged Raft), as fifoq serve's supervisor (systemd, Kubernetes) does
// when the process exits non-zero.
func (c *memCluster) supervise(nd *memNode, n *fifoqnode.Node, stopped <-chan struct{}) {
	select {
	case <-n.Halted():
	case <-stopped:
		return
	}
	nd.mu.Lock()
	current := nd.n == n
	nd.mu.Unlock()
	if !current {
		return // stopped by the test meanwhile
	}
	c.t.Logf("%s halted (%v); restarting it, as its supervisor would", nd.id, n.Fault())
	c.net.Down(nd.raftAddr)
	c.stop(nd, 0)
	c.net.Up(nd.raftAddr)
	if err := c.startErr(nd); err != nil {
		c.t.Errorf("restart %s: %v", nd.id, err)
	}
}

func (nd *memNode) running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.n != nil
}

// stop closes nd, if it runs, waiting up to wait for the requests in
// flight.
func (c *memCluster) stop(nd *memNode, wait time.Duration) {
	nd.life.Lock()
	defer nd.life.Unlock()
	nd.mu.Lock()
	n, served, stopped := nd.n, nd.served, nd.stopped
	nd.n = nil
	nd.mu.Unlock()
	if n == nil {
		return
	}
	close(stopped)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := n.Close(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		c.t.Logf("close %s: %v", nd.id, err)
	}
	<-served
}

// crash stops nd as the others see a crash: its connections reset and it
// is off the network before it stops, so that nothing of its shutdown
// reaches them.
func (c *memCluster) crash(nd *memNode) {
	c.t.Logf("crash %s", nd.id)
	c.net.Down(nd.raftAddr)
	// A crash waits for no request: a client's request in flight ends
	// without an answer.
	c.stop(nd, 0)
	c.net.Up(nd.raftAddr)
}

// replace removes nd from the cluster, as fifoq cluster remove does (its
// shards' replicas move to the other members first), and has it join
// again with an empty data dir, as a replaced machine does, and so a new
// incarnation: replicas then move to it as the shards rebalance.
func (c *memCluster) replace(nd *memNode) {
	c.t.Helper()
	c.t.Logf("remove %s", nd.id)
	// A removal waits until each of the member's shards has committed
	// its replica's removal, which waits for the shard to have a leader:
	// one wedged by hashicorp/raft #696 is stopped after 30 s or more and
	// restarted, and several may be at once.
	c.retryingFor("remove "+nd.id, 3*time.Minute, func() error { return c.removeMember(nd) })
	c.stop(nd, 0)
	// As an operator does before a second removal, wait until the shards
	// have moved its replicas to the other members: two members removed
	// from a shard of three at once would leave it no quorum.
	c.waitNoReplicaOn(nd.id)
	c.rejoin(nd)
}

// removeMember asks a running member other than nd to remove nd from the
// cluster, as fifoq cluster remove does.
func (c *memCluster) removeMember(nd *memNode) error {
	for _, via := range c.running() {
		if via == nd {
			continue
		}
		status, answer, err := memAdmin(http.MethodDelete, via, "/cluster/members/"+nd.id, nil)
		if err == nil && (status == http.StatusOK || status == http.StatusNotFound) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%s: %d: %s", via.id, status, answer)
		}
		return err
	}
	return errors.New("no member runs")
}

// rejoin starts nd, removed and stopped, with an empty data dir, and
// has it join the cluster again, as fifoq serve --join does.
func (c *memCluster) rejoin(nd *memNode) {
	c.t.Helper()
	nd.dir, nd.join = c.t.TempDir(), true
	c.start(nd)
	nd.mu.Lock()
	inc := nd.n.Raft.Incarnation()
	nd.mu.Unlock()
	body, _ := json.Marshal(map[string]string{"id": nd.id, "raft_addr": nd.raftAddr, "incarnation": inc, "region": "us-east-1"})
	c.t.Logf("%s joins again, incarnation %s", nd.id, inc)
	c.retrying("join "+nd.id, func() error {
		err := errors.New("no member runs")
		for _, via := range c.running() {
			if via == nd || c.net.Cut(via.raftAddr, nd.raftAddr) {
				continue
			}
			status, answer, e := memAdmin(http.MethodPost, via, "/cluster/members", body)
			if e == nil && status == http.StatusOK {
				// What fifoq serve --join does once it is added.
				nd.mu.Lock()
				defer nd.mu.Unlock()
				return nd.n.Raft.Admitted()
			}
			if err = e; err == nil {
				err = fmt.Errorf("%s: %d: %s", via.id, status, answer)
			}
		}
		return err
	})
}

// waitNoReplicaOn waits up to 60 s until no shard counts the member id
// among its replicas, as the running members see them.
func (c *memCluster) waitNoReplicaOn(id string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		holding := map[uint32]bool{}
		answered := 0
		for _, nd := range c.running() {
			st := nd.shards()
			if st == nil {
				continue
			}
			answered++
			for _, sh := range st.Shards {
				for _, m := range sh.Members {
					if sh.Held && m.ID == id {
						holding[sh.Shard] = true
					}
				}
			}
		}
		if answered > 0 && len(holding) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.dumpGoroutines()
			c.t.Fatalf("shards %v still count %s among their replicas 60 s after its removal", holding, id)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// memAdmin sends an admin request to nd, unsigned (the cluster has no
// credentials).
func memAdmin(method string, nd *memNode, path string, body []byte) (int, string, error) {
	req, err := http.NewRequest(method, "http://"+nd.httpAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(answer)), nil
}

func (c *memCluster) raftAddrs() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.raftAddr)
	}
	return out
}

// running are the members that run.
func (c *memCluster) running() []*memNode {
	var out []*memNode
	for _, nd := range c.nodes {
		nd.mu.Lock()
		if nd.n != nil {
			out = append(out, nd)
		}
		nd.mu.Unlock()
	}
	return out
}

// shards is nd's /cluster/shards, or nil.
func (nd *memNode) shards() *server.ShardsStatus { return shardsAt(nd.httpAddr) }

// tail is the last lines of nd's log.
func (nd *memNode) tail(lines int) string {
	b, _ := os.ReadFile(nd.logPath)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// waitShards waits up to 90 s until every member knows n groups, each
// led.
func (c *memCluster) waitShards(n int) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok := true
		for _, nd := range c.running() {
			st := nd.shards()
			if st == nil || len(st.Shards) != n {
				ok = false
				break
			}
			for _, sh := range st.Shards {
				ok = ok && sh.LeaderID != ""
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the members did not come to know %d led groups within 90 s", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaderOf is the member that leads group id, as the first member to
// answer sees it, or nil.
func (c *memCluster) leaderOf(id uint32) *memNode {
	for _, nd := range c.running() {
		st := nd.shards()
		if st == nil {
			continue
		}
		for _, sh := range st.Shards {
			if sh.Shard == id && sh.LeaderID != "" {
				for _, x := range c.nodes {
					if x.id == sh.LeaderID {
						return x
					}
				}
			}
		}
	}
	return nil
}

// shardOf is the shard that holds the queue name, as the first member to
// answer sees it.
func (c *memCluster) shardOf(name string) int {
	c.t.Helper()
	for range 100 {
		for _, nd := range c.running() {
			for shard := range queueHolders(name, nd.shards()) {
				return shard
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no member shows where %s is", name)
	return 0
}

// dumpGoroutines writes every goroutine's stack, the members' all, beside
// their logs: where a stuck member waits.
func (c *memCluster) dumpGoroutines() {
	path := filepath.Join(c.logs, "goroutines.txt")
	f, err := os.Create(path)
	if err != nil {
		c.t.Logf("goroutine dump: %v", err)
		return
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 1)
	c.t.Logf("goroutines dumped to %s", path)
}

// moveWindow is how long the test waits for a move to finish: the test's
// patience, not a bound of the product. A move whose shard's leader must
// first hand its leadership over, to a member cut off a moment before,
// waits out the transfer guard's 30 s (replog's wedge.go) before the next
// try; a local CI run met one past a minute.
const moveWindow = 3 * time.Minute

// waitQueueIn waits up to moveWindow until every running member that
// answers shows the queue name in shard to alone.
func (c *memCluster) waitQueueIn(name string, to int) {
	c.t.Helper()
	deadline := time.Now().Add(moveWindow)
	for {
		var answers []*server.ShardsStatus
		for _, nd := range c.running() {
			answers = append(answers, nd.shards())
		}
		holders := queueHolders(name, answers...)
		if len(holders) == 1 && holders[to] {
			return
		}
		if time.Now().After(deadline) {
			c.dumpGoroutines()
			c.t.Fatalf("%s is in shards %v %v after its move to shard %d", name, holders, moveWindow, to)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// move asks a running member to move the queue to shard to, as fifoq
// cluster move does.
func (c *memCluster) move(queueURL string, to int) error {
	run := c.running()
	if len(run) == 0 {
		return errors.New("no member runs")
	}
	body, _ := json.Marshal(map[string]any{"queue_url": queueURL, "shard": to})
	status, answer, err := memAdmin(http.MethodPost, run[0], "/cluster/moves", body)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("%s: %d: %s", run[0].id, status, answer)
	}
	return err
}

// retrying calls fn until it succeeds, for up to 60 s.
func (c *memCluster) retrying(what string, fn func() error) {
	c.t.Helper()
	c.retryingFor(what, time.Minute, fn)
}

// retryingFor calls fn until it succeeds, for up to d.
func (c *memCluster) retryingFor(what string, d time.Duration, fn func() error) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.dumpGoroutines()
			c.t.Fatalf("%s: still failing after %v: %v", what, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// memberClients returns an SDK client for each member, in c.nodes'
// order: one attempt per request (newClient), 30 s each.
func (c *memCluster) memberClients() []*sqs.Client {
	clients := make([]*sqs.Client, len(c.nodes))
	for i, nd := range c.nodes {
		clients[i] = newClient(nd.httpAddr, 30*time.Second)
	}
	return clients
}

// highThroughputFIFO is a high-throughput FIFO queue's attributes at
// creation, which the first group's leader spreads over the shards.
var highThroughputFIFO = map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}

// createQueue creates a queue through the first running member, retried
// while the cluster settles, and returns its URL.
func (c *memCluster) createQueue(name string, attrs map[string]string) string {
	c.t.Helper()
	var url string
	c.retrying("CreateQueue "+name, func() error {
		out, err := newClient(c.running()[0].httpAddr, 10*time.Second).CreateQueue(context.Background(),
			&sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return err
		}
		url = *out.QueueUrl
		return nil
	})
	return url
}
