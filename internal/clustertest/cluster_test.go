package clustertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/bench"
	"github.com/fifoq/fifoq/internal/testbin"
	"github.com/fifoq/fifoq/internal/testenv"
)

// binaries are the fifoq binaries built for the test: the normal one, and
// (built on first use) one with the fifoq_faults tag, whose nodes can be
// told to misbehave.
var (
	binDir     string
	binary     string
	faultyOnce sync.Once
	faultyBin  string
	faultyErr  error
)

func TestMain(m *testing.M) {
	parseFlags()
	dir, err := os.MkdirTemp("", "fifoq-clustertest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	binary = filepath.Join(dir, "fifoq")
	if err := testbin.Build(binary); err != nil {
		fmt.Fprintln(os.Stderr, "build fifoq:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// faultyBinary returns the binary built with the fifoq_faults tag.
func faultyBinary(t *testing.T) string {
	testbin.Track(t, "fifoq_faults")
	faultyOnce.Do(func() {
		faultyBin = filepath.Join(binDir, "fifoq-faults")
		faultyErr = testbin.Build(faultyBin, "fifoq_faults")
	})
	if faultyErr != nil {
		t.Fatalf("build fifoq with faults: %v", faultyErr)
	}
	return faultyBin
}

// node is one member of the test cluster: its addresses and data directory
// stay the same across restarts.
type node struct {
	id       string
	httpAddr string
	raftAddr string
	dataDir  string
	logPath  string
	bin      string
	env      []string
	// wrap, if not empty, runs the binary through it (a network
	// namespace's `ip netns exec NS`); args are added to its flags.
	wrap []string
	args []string
	// later, if set, keeps newClusterWith from starting the node: its
	// test starts it (cluster.start) when it needs to.
	later bool
	// join, if set, is the SQS endpoint of a member the node asks to add
	// it (--join), in place of --peers.
	join string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	frozen bool
}

// cluster is a set of fifoq processes forming one Raft group (or one
// with shards).
type cluster struct {
	t     *testing.T
	nodes []*node
	// leaderOfTest, if set, finds the node whose leadership a test's
	// disruptions strike (target): a shard's leader, say; nil, the
	// cluster's leader. seenLeader, if set, is the id of that leader as
	// one node sees it ("" if it knows none); nil, the cluster's.
	leaderOfTest func() *node
	seenLeader   func(nd *node) string
}

// leaderSeenBy returns the id of the leader of what the test strikes, as
// nd sees it.
func (c *cluster) leaderSeenBy(nd *node) string {
	if c.seenLeader != nil {
		return c.seenLeader(nd)
	}
	return nd.leaderOf()
}

// target returns the node a test's disruptions strike: the leader of
// what it tests.
func (c *cluster) target() *node {
	if c.leaderOfTest != nil {
		return c.leaderOfTest()
	}
	return c.leader()
}

// newCluster starts n nodes, each with its own data directory; env[i], if
// given, is added to node i's environment, and bins[i] replaces its binary.
func newCluster(t *testing.T, n int, bins []string, env [][]string) *cluster {
	t.Helper()
	return newClusterWith(t, n, func(i int, nd *node) {
		if i < len(bins) && bins[i] != "" {
			nd.bin = bins[i]
		}
		if i < len(env) {
			nd.env = env[i]
		}
	})
}

// newClusterWith starts n nodes, each with its own data directory, after
// tweak (if not nil) has changed node i as its test needs.
func newClusterWith(t *testing.T, n int, tweak func(i int, nd *node)) *cluster {
	t.Helper()
	testbin.Track(t)
	c := &cluster{t: t}
	var peers []string
	for i := 0; i < n; i++ {
		nd := &node{
			id:       fmt.Sprintf("n%d", i+1),
			httpAddr: freeAddr(t),
			raftAddr: freeAddr(t),
			dataDir:  t.TempDir(),
			bin:      binary,
		}
		nd.logPath = filepath.Join(t.TempDir(), nd.id+".log")
		if tweak != nil {
			tweak(i, nd)
		}
		peers = append(peers, nd.id+"="+nd.raftAddr)
		c.nodes = append(c.nodes, nd)
	}
	for _, nd := range c.nodes {
		if !nd.later {
			c.start(nd, strings.Join(peers, ","))
		}
	}
	t.Cleanup(c.stopAll)
	return c
}

// peers is the --peers value of the cluster.
func (c *cluster) peers() string {
	var p []string
	for _, nd := range c.nodes {
		p = append(p, nd.id+"="+nd.raftAddr)
	}
	return strings.Join(p, ",")
}

// start runs a node's process (again).
func (c *cluster) start(nd *node, peers string) {
	c.t.Helper()
	if peers == "" {
		peers = c.peers()
	}
	logs, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	argv := append(append([]string(nil), nd.wrap...), nd.bin, "serve",
		"--listen", nd.httpAddr, "--data-dir", nd.dataDir,
		"--node-id", nd.id, "--raft-addr", nd.raftAddr)
	if nd.join != "" {
		argv = append(argv, "--join", nd.join)
	} else {
		argv = append(argv, "--peers", peers)
	}
	argv = append(argv, nd.args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(serverEnv(), nd.env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", nd.id, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logs.Close()
		close(done)
	}()
	nd.mu.Lock()
	nd.cmd, nd.done, nd.frozen = cmd, done, false
	nd.mu.Unlock()
}

// serverEnv is the environment a test's fifoq runs in: this process's,
// without the FIFOQ_ settings of whoever runs the tests.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FIFOQ_") {
			env = append(env, kv)
		}
	}
	return env
}

// restart starts a killed node again and waits until it answers HTTP.
func (c *cluster) restart(nd *node) {
	c.t.Helper()
	c.start(nd, "")
	deadline := time.Now().Add(30 * time.Second)
	for !nd.answers() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s did not answer within 30 s of its restart", nd.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends a node with SIGKILL and waits for it to be gone.
func (c *cluster) kill(nd *node) {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// freeze stops a node with SIGSTOP; thaw resumes it with SIGCONT.
func (c *cluster) freeze(nd *node) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	_ = nd.cmd.Process.Signal(syscall.SIGSTOP)
	nd.frozen = true
}

func (c *cluster) thaw(nd *node) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	_ = nd.cmd.Process.Signal(syscall.SIGCONT)
	nd.frozen = false
}

func (c *cluster) stopAll() {
	for _, nd := range c.nodes {
		nd.mu.Lock()
		cmd, done, frozen := nd.cmd, nd.done, nd.frozen
		nd.mu.Unlock()
		if cmd == nil {
			continue
		}
		if frozen {
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// running reports whether the node's process was started and has not
// ended.
func (nd *node) running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.done:
		return false
	default:
		return true
	}
}

// answers reports whether the node answers HTTP at all.
func (nd *node) answers() bool {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + nd.httpAddr + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// leaderOf asks a node which node leads, by GET /cluster/leader; "" if it
// does not know.
func (nd *node) leaderOf() string {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + nd.httpAddr + "/cluster/leader")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return ""
	}
	for _, k := range []string{"id", "node_id", "leader_id", "leader"} {
		if s, ok := v[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// leader returns the node that the running nodes agree leads, waiting up
// to 30 s for one.
func (c *cluster) leader() *node {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		votes := map[string]int{}
		for _, nd := range c.nodes {
			if id := nd.leaderOf(); id != "" {
				votes[id]++
			}
		}
		for _, nd := range c.nodes {
			if votes[nd.id] > len(c.nodes)/2 {
				return nd
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader agreed on within 30 s")
	return nil
}

// other returns the first of the cluster's nodes that is not nd.
func (c *cluster) other(nd *node) *node {
	for _, o := range c.nodes {
		if o != nd {
			return o
		}
	}
	c.t.Fatalf("the cluster has no node but %s", nd.id)
	return nil
}

// tail is the end of a node's log, for reports.
func (nd *node) tail(lines int) string {
	f, err := os.Open(nd.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
		if len(out) > lines {
			out = out[1:]
		}
	}
	return strings.Join(out, "\n")
}

// freeAddr is a loopback address no other test of this process was given.
func freeAddr(t *testing.T) string { return testenv.FreeAddr(t) }

// newClient is an SQS client of one node that makes one attempt per call:
// the test decides what to retry, so it knows which outcomes are unknown.
func newClient(addr string, timeout time.Duration) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String("http://" + addr),
		RetryMaxAttempts: 1,
		// A single attempt must not lose its answer to the SDK closing
		// the request body under net/http (see bench.OwnRequestBodies).
		HTTPClient: bench.OwnRequestBodies(&http.Client{Timeout: timeout}),
	})
}

// createQueue creates a queue through any node, retrying while the
// cluster elects its first leader, and returns its URL.
func (c *cluster) createQueue(name string, attrs map[string]string) string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			out, err := newClient(nd.httpAddr, 3*time.Second).CreateQueue(context.Background(),
				&sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
			if err == nil {
				return aws.ToString(out.QueueUrl)
			}
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("create queue %s: %v", name, last)
	return ""
}

// drainNumbered receives and deletes through nd every message of the
// queue, whose bodies start with a decimal number, until three receives
// in a row find nothing, and returns the numbers in the order received.
func drainNumbered(t *testing.T, nd *node, queueURL string) []int {
	t.Helper()
	ctx := context.Background()
	client := newClient(nd.httpAddr, 10*time.Second)
	var got []int
	// A queue may move between shards meanwhile: its retryable 503s are
	// retried, as an SDK's retries would (a receive answered so took
	// nothing, and a receipt handle outlives the move).
	retry := func(what string, call func() error) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := call()
			if err == nil {
				return
			}
			if !isServiceUnavailable(err) || time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for empty := 0; empty < 3; {
		var out *sqs.ReceiveMessageOutput
		retry("receive", func() (err error) {
			out, err = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			return err
		})
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range out.Messages {
			n, err := strconv.Atoi(strings.SplitN(aws.ToString(m.Body), " ", 2)[0])
			if err != nil {
				t.Fatalf("a message not of the test's: %.40q", aws.ToString(m.Body))
			}
			got = append(got, n)
			retry("delete", func() error {
				_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle})
				return err
			})
		}
	}
	return got
}
