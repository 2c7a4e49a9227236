package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/clock"
	"github.com/fifoq/fifoq/internal/testenv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// The cluster tests' keys: an admin key and another key of the servers'
// own account, one of another account.
var (
	adminKey = auth.Credential{AccessKeyID: "AKIDCLUSTERADMIN", SecretAccessKey: "admin-secret", Account: DefaultAccount, Admin: true}
	ownKey   = auth.Credential{AccessKeyID: "AKIDCLUSTEROWN", SecretAccessKey: "own-secret", Account: DefaultAccount}
	otherKey = auth.Credential{AccessKeyID: "AKIDCLUSTEROTHER", SecretAccessKey: "other-secret", Account: "111111111111"}
)

// clusterNode is one in-process fifoq node: a Raft log on TCP loopback and
// a server on its own HTTP port.
type clusterNode struct {
	id, raftAddr, dir string
	cfg               replog.ClusterConfig
	srv               *Server
	log               *replog.Raft
	url               string
	done              chan error
	// leaderCalls counts Config.OnLeader calls on this node.
	leaderCalls atomic.Int64
	// skew, if not 0, sets this node's clock that far from the others'.
	skew time.Duration
}

func (n *clusterNode) start(t *testing.T) {
	t.Helper()
	cfg := n.cfg
	l, err := replog.OpenRaft(replog.RaftConfig{Engine: engine.Config{Region: DefaultRegion}, Dir: n.dir, NodeID: n.id, MinFreeBytes: -1, Cluster: &cfg,
		Logger: quietLogger()})
	if err != nil {
		t.Fatalf("open %s: %v", n.id, err)
	}
	store, err := auth.NewStore([]auth.Credential{adminKey, ownKey, otherKey})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.url = "http://" + ln.Addr().String()
	var clk clock.Clock = clock.Real{}
	if n.skew != 0 {
		clk = clock.WithNow(func() time.Time { return time.Now().Add(n.skew) })
	}
	srv, err := New(Config{Log: l, Raft: l, Logger: quietLogger(), AdvertiseURL: n.url, Clock: clk,
		OnLeader: func(context.Context) { n.leaderCalls.Add(1) },
		Verifier: &auth.Verifier{Store: store, DefaultAccount: DefaultAccount, Region: DefaultRegion}})
	if err != nil {
		t.Fatal(err)
	}
	n.srv, n.log, n.done = srv, l, make(chan error, 1)
	go func() { n.done <- srv.Serve(ln) }()
}

func (n *clusterNode) stop() {
	if n.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.srv.Shutdown(ctx)
	<-n.done
	n.srv, n.log = nil, nil
}

// newTestCluster starts n nodes that bootstrap one cluster.
func newTestCluster(t *testing.T, n int, tlsFor func(i int) *tls.Config) []*clusterNode {
	t.Helper()
	var peers []replog.Peer
	for i := 0; i < n; i++ {
		peers = append(peers, replog.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: freeAddr(t)})
	}
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		nodes[i] = &clusterNode{id: peers[i].ID, raftAddr: peers[i].Addr, dir: t.TempDir(),
			cfg: replog.ClusterConfig{RaftAddr: peers[i].Addr, Peers: peers}}
		if tlsFor != nil {
			nodes[i].cfg.TLS = tlsFor(i)
		}
		nodes[i].start(t)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.stop()
		}
	})
	return nodes
}

// freeAddr is a loopback address no other test of this process was given.
func freeAddr(t *testing.T) string { return testenv.FreeAddr(t) }

// leaderOf waits until one live node leads, and returns it.
func leaderOf(t *testing.T, nodes []*clusterNode) *clusterNode {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range nodes {
			if nd.log != nil && nd.log.Leading() {
				return nd
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader")
	return nil
}

func followersOf(nodes []*clusterNode, leader *clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, nd := range nodes {
		if nd != leader && nd.srv != nil {
			out = append(out, nd)
		}
	}
	return out
}

// sdkClient is an SDK client of one node, with the SDK's standard retries
// (which retry 503s), signing with key.
func sdkClient(url string, key auth.Credential) *sqs.Client {
	cfg := aws.Config{
		Region:      DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, ""),
		HTTPClient:  &http.Client{Timeout: 60 * time.Second},
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 20
				o.MaxBackoff = 500 * time.Millisecond
				o.RateLimiter = noRateLimit{}
			})
		},
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
}

// noRateLimit lets every retry through: the standard retryer's token
// bucket would stop retrying after a burst of failures.
type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}
func (noRateLimit) AddTokens(uint) error { return nil }

func TestClusterServesThroughFollowers(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", withTLS), func(t *testing.T) {
			var tlsFor func(int) *tls.Config
			if withTLS {
				ca := newClusterCA(t)
				tlsFor = func(i int) *tls.Config { return replog.NewPeerTLSConfig(ca.issue(t), ca.pool) }
			}
			nodes := newTestCluster(t, 3, tlsFor)
			leader := leaderOf(t, nodes)
			fs := followersOf(nodes, leader)
			ctx := context.Background()
			c0, c1 := sdkClient(fs[0].url, ownKey), sdkClient(fs[1].url, ownKey)

			created, err := c0.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"),
				Attributes: map[string]string{"FifoQueue": "true"}})
			if err != nil {
				t.Fatalf("CreateQueue through a follower: %v", err)
			}
			// The URL leads back to the node the client asked.
			if !strings.HasPrefix(*created.QueueUrl, fs[0].url+"/") {
				t.Fatalf("queue URL %s, want one of %s", *created.QueueUrl, fs[0].url)
			}
			// Another follower sees it at once (reads are linearizable).
			got, err := c1.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs.fifo")})
			if err != nil {
				t.Fatalf("GetQueueUrl through the other follower: %v", err)
			}
			if !strings.HasPrefix(*got.QueueUrl, fs[1].url+"/") {
				t.Fatalf("queue URL %s, want one of %s", *got.QueueUrl, fs[1].url)
			}
			for i := 0; i < 6; i++ {
				c := []*sqs.Client{c0, c1}[i%2]
				if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String(fmt.Sprint(i)),
					MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(fmt.Sprint("d", i))}); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
				attrs, err := []*sqs.Client{c1, c0}[i%2].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: got.QueueUrl,
					AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
				if err != nil {
					t.Fatalf("attributes: %v", err)
				}
				if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != fmt.Sprint(i+1) {
					t.Fatalf("after send %d another node counts %s messages", i, n)
				}
			}
			// FIFO order through any node, long poll included.
			for i := 0; i < 6; i++ {
				c := []*sqs.Client{c1, c0}[i%2]
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, WaitTimeSeconds: 1})
				if err != nil || len(out.Messages) != 1 {
					t.Fatalf("receive %d: %v %v", i, out, err)
				}
				if *out.Messages[0].Body != fmt.Sprint(i) {
					t.Fatalf("receive %d got %s: FIFO order broken", i, *out.Messages[0].Body)
				}
				if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: got.QueueUrl, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
					t.Fatalf("delete %d: %v", i, err)
				}
			}
			// The leader checks the signature of a forwarded request: a
			// wrong secret is refused, not let through by the follower.
			bad := sdkClient(fs[0].url, auth.Credential{AccessKeyID: ownKey.AccessKeyID, SecretAccessKey: "wrong"})
			_, err = bad.ListQueues(ctx, &sqs.ListQueuesInput{})
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SignatureDoesNotMatch" {
				t.Fatalf("wrong signature through a follower: %v", err)
			}
			// And the queue owner's rules: another account is denied.
			other := sdkClient(fs[1].url, otherKey)
			_, err = other.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"),
				MessageDeduplicationId: aws.String("x")})
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDenied" {
				t.Fatalf("another account through a follower: %v", err)
			}
			// A request that claims to be forwarded on the public port is
			// not believed: its queue URLs are this node's.
			req, _ := http.NewRequest(http.MethodPost, leader.url+"/", strings.NewReader("Action=ListQueues"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set(hdrForwardedBase, "http://evil.example")
			if err := auth.SignRequest(req, []byte("Action=ListQueues"), ownKey, DefaultRegion, time.Now()); err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "evil.example") || !strings.Contains(string(body), leader.url) {
				t.Fatalf("a client's forwarded header was believed: %s", body)
			}
		})
	}
}

func TestClusterLeaderFailover(t *testing.T) {
	nodes := newTestCluster(t, 3, nil)
	leader := leaderOf(t, nodes)
	fs := followersOf(nodes, leader)
	ctx := context.Background()
	c := sdkClient(fs[0].url, ownKey)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("f.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("one"), MessageGroupId: aws.String("g"),
		MessageDeduplicationId: aws.String("dedup-1")})
	if err != nil {
		t.Fatal(err)
	}

	// Writers keep sending through both followers while the leader dies.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, f := range fs {
		wg.Add(1)
		go func(i int, url string) {
			defer wg.Done()
			cl := sdkClient(url, ownKey)
			for j := 0; j < 20; j++ {
				if _, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprintf("w%d-%d", i, j)),
					MessageGroupId: aws.String(fmt.Sprint("w", i)), MessageDeduplicationId: aws.String(fmt.Sprintf("w%d-%d", i, j))}); err != nil {
					errs <- fmt.Errorf("writer %d send %d: %w", i, j, err)
					return
				}
			}
		}(i, f.url)
	}
	time.Sleep(50 * time.Millisecond)
	leader.stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		// A node whose answer was lost in the change gets a 503 that the
		// SDK retries; an error here means the retries ran out.
		t.Fatal(err)
	}
	next := leaderOf(t, nodes)
	if next == leader {
		t.Fatal("the stopped node still leads")
	}
	// The leader's one-off work (the config file's queues) moved with the
	// leadership.
	for deadline := time.Now().Add(10 * time.Second); next.leaderCalls.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new leader did not run the leader's work")
		}
	}
	// A retried send with the same deduplication id is not duplicated
	// across the failover.
	again, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("one"), MessageGroupId: aws.String("g"),
		MessageDeduplicationId: aws.String("dedup-1")})
	if err != nil {
		t.Fatal(err)
	}
	if *again.MessageId != *first.MessageId {
		t.Fatalf("retried send after failover got a new message id %s, want %s", *again.MessageId, *first.MessageId)
	}
	// Every acknowledged message is there, each once, in order per group.
	seen := map[string]bool{}
	last := map[string]int{}
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
			AttributeNames: []types.QueueAttributeName{"MessageGroupId"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			if seen[*m.Body] {
				t.Fatalf("message %s delivered twice", *m.Body)
			}
			seen[*m.Body] = true
			var w, j int
			if _, err := fmt.Sscanf(*m.Body, "w%d-%d", &w, &j); err == nil {
				if prev, ok := last[fmt.Sprint(w)]; ok && j != prev+1 {
					t.Fatalf("group w%d: %d after %d", w, j, prev)
				}
				last[fmt.Sprint(w)] = j
			}
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != 41 {
		t.Fatalf("%d messages received, want 41", len(seen))
	}
	// The old leader comes back as a follower and catches up.
	leader.start(t)
	if _, err := sdkClient(leader.url, ownKey).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("f.fifo")}); err != nil {
		t.Fatalf("restarted node: %v", err)
	}
}

// signedRequest makes a cluster request signed with key.
func signedRequest(t *testing.T, method, url string, body []byte, key auth.Credential) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.SignRequest(req, body, key, DefaultRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

// sendRequest sends a copy of req with body, and returns the status and
// the answer.
func sendRequest(t *testing.T, req *http.Request, body []byte) (int, string) {
	t.Helper()
	c := req.Clone(context.Background())
	c.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(c)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminCall sends a cluster request, signed with key unless it is zero.
func adminCall(t *testing.T, method, url string, body []byte, key auth.Credential) (int, string) {
	t.Helper()
	return adminCallSignedAt(t, method, url, body, key, time.Now())
}

// adminCallSignedAt is adminCall with the request signed at the given
// time, so that a test can send the same request twice without its second
// signature being the first's (a replay).
func adminCallSignedAt(t *testing.T, method, url string, body []byte, key auth.Credential, at time.Time) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key.AccessKeyID != "" {
		if err := auth.SignRequest(req, body, key, DefaultRegion, at); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestClusterMembershipOverHTTP(t *testing.T) {
	nodes := newTestCluster(t, 3, nil)
	var leader, f *clusterNode
	var st ClusterStatus
	// A follower names the leader once the leader's first heartbeat has
	// reached it, a moment after the election (later on a busy machine).
	for deadline := time.Now().Add(10 * time.Second); ; {
		leader = leaderOf(t, nodes)
		f = followersOf(nodes, leader)[0]
		st = ClusterStatus{}
		if code, body := adminCall(t, http.MethodGet, f.url+"/cluster/status", nil, auth.Credential{}); code != 200 {
			t.Fatalf("status: %d %s", code, body)
		} else if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		if st.LeaderID == leader.id || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.LeaderID != leader.id || len(st.Members) != 3 {
		t.Fatalf("status %+v", st)
	}
	for _, m := range st.Members {
		if m.Status == nil {
			t.Fatalf("member %s did not answer: %s", m.ID, m.Error)
		}
	}
	var li LeaderInfo
	code, body := adminCall(t, http.MethodGet, f.url+"/cluster/leader", nil, auth.Credential{})
	if err := json.Unmarshal([]byte(body), &li); err != nil || code != 200 || li.LeaderID != leader.id || li.SQSEndpoint != leader.url {
		t.Fatalf("leader: %d %s", code, body)
	}

	// A fourth node starts without state, waiting to be added.
	n4 := &clusterNode{id: "n4", raftAddr: freeAddr(t), dir: t.TempDir()}
	n4.cfg = replog.ClusterConfig{RaftAddr: n4.raftAddr, Join: true}
	n4.start(t)
	defer n4.stop()
	add, _ := json.Marshal(map[string]string{"id": "n4", "raft_addr": n4.raftAddr})
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", add, auth.Credential{}); code != 403 && code != 400 {
		t.Fatalf("unsigned add: %d %s", code, body)
	}
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", add, otherKey); code != 403 {
		t.Fatalf("add by another account: %d %s", code, body)
	}
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", add, ownKey); code != 403 || !strings.Contains(body, "admin key") {
		t.Fatalf("add with a key of the own account that is not an admin key: %d %s; want 403", code, body)
	}
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", []byte(`{"id":"n 5","raft_addr":"127.0.0.1:1"}`), adminKey); code != 400 {
		t.Fatalf("add of an id with a space: %d %s; want 400", code, body)
	}
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", []byte(`{"id":"n5"}`), adminKey); code != 400 {
		t.Fatalf("add without an address: %d %s", code, body)
	}
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", add, adminKey); code != 200 {
		t.Fatalf("add through a follower: %d %s", code, body)
	}
	// Adding a member's id again is refused: it must be removed first.
	// (Signed for a later second: the same request signed in the same
	// second is the same signature, refused as a replay.)
	if code, body := adminCallSignedAt(t, http.MethodPost, f.url+"/cluster/members", add, adminKey, time.Now().Add(2*time.Second)); code != 409 || !strings.Contains(body, "fifoq cluster remove n4") {
		t.Fatalf("add of a member's id again: %d %s; want 409 naming fifoq cluster remove", code, body)
	}
	again, _ := json.Marshal(map[string]string{"id": "n2", "raft_addr": freeAddr(t)})
	if code, body := adminCall(t, http.MethodPost, f.url+"/cluster/members", again, adminKey); code != 409 {
		t.Fatalf("add of an existing member's id at another address: %d %s; want 409", code, body)
	}
	// The new node serves (by forwarding) what the cluster holds.
	ctx := context.Background()
	if _, err := sdkClient(f.url, ownKey).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sdkClient(n4.url, ownKey).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("m")}); err != nil {
		t.Fatalf("new member: %v", err)
	}
	if code, body := adminCall(t, http.MethodDelete, f.url+"/cluster/members/nobody", nil, adminKey); code != 404 {
		t.Fatalf("remove of an unknown id: %d %s", code, body)
	}
	if code, body := adminCall(t, http.MethodDelete, f.url+"/cluster/members/n4", nil, otherKey); code != 403 {
		t.Fatalf("remove by another account: %d %s", code, body)
	}
	// A removal is carried out once: the same signed request sent again
	// (captured on the wire, say) is refused.
	removal := signedRequest(t, http.MethodDelete, leader.url+"/cluster/members/n4", nil, adminKey)
	if code, body := sendRequest(t, removal, nil); code != 200 {
		t.Fatalf("remove: %d %s", code, body)
	}
	if code, body := sendRequest(t, removal, nil); code != 403 || !strings.Contains(body, "already received") {
		t.Fatalf("the same removal sent again: %d %s; want 403", code, body)
	}
	members, _ := leader.log.Members()
	if len(members) != 3 {
		t.Fatalf("members after remove: %v", members)
	}
}

// TestSingleNodeDataDirGrowsIntoCluster upgrades a single-node server's
// data dir: the same dir restarted with a raft address (under its node id,
// node-1) keeps its queues and messages and leads a cluster of one, and a
// second node started to join is added over HTTP and serves them.
func TestSingleNodeDataDirGrowsIntoCluster(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l, err := replog.OpenRaft(replog.RaftConfig{Engine: engine.Config{Region: DefaultRegion}, Dir: dir, MinFreeBytes: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	single, err := New(Config{Log: l, Raft: l, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := single.Do(ctx, DefaultAccount, &api.CreateQueueRequest{QueueName: "kept"}); err != nil {
		t.Fatal(err)
	}
	if _, err := single.Do(ctx, DefaultAccount, &api.SendMessageRequest{QueueUrl: "/" + DefaultAccount + "/kept", MessageBody: "from before"}); err != nil {
		t.Fatal(err)
	}
	if err := single.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	first := &clusterNode{id: "node-1", raftAddr: freeAddr(t), dir: dir}
	first.cfg = replog.ClusterConfig{RaftAddr: first.raftAddr}
	first.start(t)
	defer first.stop()
	leaderOf(t, []*clusterNode{first})
	second := &clusterNode{id: "node-2", raftAddr: freeAddr(t), dir: t.TempDir()}
	second.cfg = replog.ClusterConfig{RaftAddr: second.raftAddr, Join: true}
	second.start(t)
	defer second.stop()
	add, _ := json.Marshal(map[string]string{"id": "node-2", "raft_addr": second.raftAddr})
	if code, body := adminCall(t, http.MethodPost, first.url+"/cluster/members", add, adminKey); code != 200 {
		t.Fatalf("add node-2: %d %s", code, body)
	}
	c := sdkClient(second.url, ownKey)
	q, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("kept")})
	if err != nil {
		t.Fatalf("the upgraded dir's queue through the new member: %v", err)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
	if err != nil || len(out.Messages) != 1 || *out.Messages[0].Body != "from before" {
		t.Fatalf("the upgraded dir's message through the new member: %v %v", out, err)
	}
	members, _ := first.log.Members()
	if len(members) != 2 || members[0].Addr != first.raftAddr {
		t.Fatalf("members %v: want node-1 at %s and node-2", members, first.raftAddr)
	}
}
