package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/replog"
)

// peerClient is an HTTP client of a node's Raft port, as another node
// talks to it: each connection says 'H' (HTTP) first, over mutual TLS
// with conf when it is not nil.
func peerClient(conf *tls.Config) *http.Client {
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if conf != nil {
			tc := tls.Client(conn, conf)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			conn = tc
		}
		if _, err := conn.Write([]byte{'H'}); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// peerQuery sends a Query-protocol request to a node's Raft port with the
// given extra headers, signed with key unless it is zero, and returns the
// status and body.
func peerQuery(t *testing.T, hc *http.Client, raftAddr string, form url.Values, headers map[string]string, key auth.Credential) (int, string, error) {
	t.Helper()
	form.Set("Version", "2012-11-05")
	body := []byte(form.Encode())
	req, err := http.NewRequest(http.MethodPost, "http://"+raftAddr+"/", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if key.AccessKeyID != "" {
		if err := auth.SignRequest(req, body, key, DefaultRegion, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestPeerPortServesOnlyNodes: a node's Raft port serves what nodes need
// (Raft, the requests a member forwards, the cluster endpoints), not the
// SQS API to whoever connects; and the forwarded request's claim that the
// client came over TLS (aws:SecureTransport) is believed only from a
// member that proved itself with its certificate.
func TestPeerPortServesOnlyNodes(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", withTLS), func(t *testing.T) {
			var ca, stranger *clusterCA
			var tlsFor func(int) *tls.Config
			var member *tls.Config
			if withTLS {
				ca, stranger = newClusterCA(t), newClusterCA(t)
				tlsFor = func(i int) *tls.Config { return replog.NewPeerTLSConfig(ca.issue(t), ca.pool) }
				member = replog.NewPeerTLSConfig(ca.issue(t), ca.pool)
			}
			nodes := newTestCluster(t, 3, tlsFor)
			leader := leaderOf(t, nodes)
			ctx := context.Background()
			hc := peerClient(member)

			// An SQS request that no member forwarded, signed or not.
			for _, key := range []auth.Credential{{}, ownKey} {
				status, body, err := peerQuery(t, hc, leader.raftAddr, url.Values{"Action": {"CreateQueue"}, "QueueName": {"through-peer-port"}}, nil, key)
				if err != nil {
					t.Fatalf("request on the peer port: %v", err)
				}
				if status != http.StatusForbidden {
					t.Errorf("CreateQueue on the peer port, not forwarded (signed: %v): %d %s; want 403", key.AccessKeyID != "", status, body)
				}
			}
			if _, err := sdkClient(leader.url, ownKey).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("through-peer-port")}); err == nil {
				t.Fatal("the queue was created through the peer port")
			}

			if withTLS {
				// A certificate the cluster's CA did not sign is refused.
				intruder := peerClient(replog.NewPeerTLSConfig(stranger.issue(t), stranger.pool))
				if status, _, err := peerQuery(t, intruder, leader.raftAddr, url.Values{"Action": {"ListQueues"}},
					map[string]string{hdrForwardedBy: "n1"}, ownKey); err == nil {
					t.Fatalf("a certificate of another CA got an answer from the peer port: %d", status)
				}
			}

			// aws:SecureTransport: a queue that lets another account send
			// only over TLS, and a forwarded send that says it came so.
			created, err := sdkClient(leader.url, ownKey).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("tls-only")})
			if err != nil {
				t.Fatal(err)
			}
			arn := fmt.Sprintf("arn:aws:sqs:%s:%s:tls-only", DefaultRegion, DefaultAccount)
			policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"%s"},"Action":"sqs:SendMessage","Resource":"%s","Condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`,
				otherKey.Account, arn)
			if _, err := sdkClient(leader.url, ownKey).SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: created.QueueUrl,
				Attributes: map[string]string{"Policy": policy}}); err != nil {
				t.Fatal(err)
			}
			status, body, err := peerQuery(t, hc, leader.raftAddr,
				url.Values{"Action": {"SendMessage"}, "QueueUrl": {aws.ToString(created.QueueUrl)}, "MessageBody": {"x"}},
				map[string]string{hdrForwardedBy: "n2", hdrForwardedSecure: "true", hdrForwardedBase: leader.url}, otherKey)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case withTLS && status != http.StatusOK:
				t.Errorf("a member's forwarded send over TLS: %d %s; want 200", status, body)
			case !withTLS && (status != http.StatusForbidden || !strings.Contains(body, "AccessDenied")):
				t.Errorf("a forwarded send that claims TLS on a port without it: %d %s; want 403 AccessDenied", status, body)
			}
		})
	}
}

// TestHeadersOfOneConnectionStayBehind: a forward passes on neither the
// hop-by-hop headers nor those the Connection header names.
func TestHeadersOfOneConnectionStayBehind(t *testing.T) {
	h := http.Header{}
	h.Set("Connection", "keep-alive, X-Private-Hop")
	h.Set("X-Private-Hop", "1")
	h.Set("X-Amz-Date", "20261127T000000Z")
	for k, want := range map[string]bool{"Connection": false, "X-Private-Hop": false, "Keep-Alive": false, "X-Amz-Date": true} {
		if got := !hopHeader(k) && !connectionHeader(h, k); got != want {
			t.Errorf("header %s passed on: %v, want %v", k, got, want)
		}
	}
}

// TestSkewedClockNeverLeads runs three members, one with a clock 2 s ahead
// of the others': the others measure it (fifoq_cluster_clock_offset_seconds),
// it finds its clock off the majority's and says so in /readyz, and it
// never leads, however often the leader goes, so that queue time never
// jumps by its skew.
func TestSkewedClockNeverLeads(t *testing.T) {
	var nodes []*clusterNode
	{
		var peers []replog.Peer
		for i := 0; i < 3; i++ {
			peers = append(peers, replog.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: freeAddr(t)})
		}
		for i := range peers {
			nd := &clusterNode{id: peers[i].ID, raftAddr: peers[i].Addr, dir: t.TempDir(),
				cfg: replog.ClusterConfig{RaftAddr: peers[i].Addr, Peers: peers}}
			if i == 2 {
				nd.skew = 2 * time.Second
			}
			nd.start(t)
			nodes = append(nodes, nd)
		}
		t.Cleanup(func() {
			for _, nd := range nodes {
				nd.stop()
			}
		})
	}
	skewed := nodes[2]
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := skewed.log.Ready()
		if err != nil && strings.Contains(err.Error(), "clock") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the skewed member does not find its clock off (ready: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		off, ok := nodes[0].srv.clocks.clockOffsets()[skewed.id]
		if ok && off > 1500*time.Millisecond && off < 2500*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 measures the skewed member's clock %v ahead (measured: %v); want about 2 s", off, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// However the leadership moves, the skewed member never keeps it.
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		leader := leaderOf(t, nodes)
		if leader == skewed {
			t.Fatalf("round %d: the skewed member leads", round)
		}
		if _, err := sdkClient(leader.url, ownKey).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q%d", round))}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		leader.stop()
		// The sound member left needs the skewed one's vote, which Raft
		// withholds if the skewed one's log is the longer (it got an entry
		// the sound one has not): then no leader is possible until the
		// stopped one is back, and the skewed one must still not lead.
		next := leaderWithin(nodes, 10*time.Second)
		if next == nil {
			leader.start(t)
			next = leaderOf(t, nodes)
		} else {
			leader.start(t)
		}
		if next == skewed {
			t.Fatalf("round %d: the skewed member leads once %s stopped", round, leader.id)
		}
	}
}

// leaderWithin returns the live node that leads within d, or nil.
func leaderWithin(nodes []*clusterNode, d time.Duration) *clusterNode {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, nd := range nodes {
			if nd.log != nil && nd.log.Leading() {
				return nd
			}
		}
	}
	return nil
}

// TestNewMemberVotesOnceCaughtUp adds a member before it runs: it must not
// vote until it has caught up (a voter that cannot answer would count
// against every majority, and one down besides would stall every write);
// once it runs and has applied the log, the leader makes it a voter.
func TestNewMemberVotesOnceCaughtUp(t *testing.T) {
	nodes := newTestCluster(t, 3, nil)
	leader := leaderOf(t, nodes)
	ctx := context.Background()
	if _, err := sdkClient(leader.url, ownKey).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("before")}); err != nil {
		t.Fatal(err)
	}
	n4 := &clusterNode{id: "n4", raftAddr: freeAddr(t), dir: t.TempDir()}
	n4.cfg = replog.ClusterConfig{RaftAddr: n4.raftAddr, Join: true}
	add, _ := json.Marshal(map[string]string{"id": "n4", "raft_addr": n4.raftAddr})
	if code, body := adminCall(t, http.MethodPost, leader.url+"/cluster/members", add, adminKey); code != 200 {
		t.Fatalf("add n4: %d %s", code, body)
	}
	voter := func() (bool, bool) {
		members, _ := leader.log.Members()
		for _, m := range members {
			if m.ID == "n4" {
				return true, m.Voter
			}
		}
		return false, false
	}
	time.Sleep(3 * clockCheckEvery)
	if member, votes := voter(); !member || votes {
		t.Fatalf("n4, added but not running: member %v, voter %v; want a member without a vote", member, votes)
	}
	n4.start(t)
	defer n4.stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, votes := voter(); votes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("n4 caught up but was never made a voter")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := sdkClient(n4.url, ownKey).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("before")}); err != nil {
		t.Fatalf("the new voter: %v", err)
	}
}
