package replog

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/testenv"
)

// freeAddrs returns n loopback addresses, none given out before in this
// process.
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = testenv.FreeAddr(t)
	}
	return out
}

type testNode struct {
	id  string
	dir string
	cfg RaftConfig // what it was opened with, to reopen it
	log *Raft
	eng *engine.Engine
}

func startCluster(t *testing.T, n int, tlsFor func(i int) *tls.Config) []*testNode {
	t.Helper()
	return startClusterWith(t, n, tlsFor, nil)
}

// startClusterWith is startCluster with tweak, if not nil, changing each
// node's configuration before it is opened.
func startClusterWith(t testing.TB, n int, tlsFor func(i int) *tls.Config, tweak func(*RaftConfig)) []*testNode {
	t.Helper()
	addrs := freeAddrs(t, n)
	var peers []Peer
	for i, a := range addrs {
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i+1), Addr: a})
	}
	nodes := make([]*testNode, n)
	for i := range nodes {
		nd := &testNode{id: peers[i].ID, dir: t.TempDir()}
		var tc *tls.Config
		if tlsFor != nil {
			tc = tlsFor(i)
		}
		nd.cfg = RaftConfig{NodeID: nd.id, MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: addrs[i], Peers: peers, TLS: tc}}
		if tweak != nil {
			tweak(&nd.cfg)
		}
		nd.log, nd.eng = openTest(t, nd.dir, nd.cfg)
		nodes[i] = nd
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd.log != nil {
				nd.log.Close()
			}
		}
	})
	return nodes
}

// waitLeader waits until one node leads and is ready, and returns it.
func waitLeader(t testing.TB, nodes []*testNode) *testNode {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range nodes {
			if nd.log != nil && nd.log.Leading() {
				return nd
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader elected")
	return nil
}

// waitApplied waits until nd's engine holds the log up to index. Callers
// pass the leader's last index, not its applied index: the leader answers a
// command from inside its state machine, before Raft counts the entry as
// applied, so right after a write the applied index can still be short of it.
func waitApplied(t *testing.T, nd *testNode, index uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !nd.log.applied(index) {
		if time.Now().After(deadline) {
			t.Fatalf("%s applied %d (Raft's count; the engine holds commands to %d), want %d", nd.id, nd.log.raft.AppliedIndex(), nd.log.fsm.applied.Load(), index)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func queueDepth(nd *testNode) (n int) {
	nd.log.Read(func(e *engine.Engine) {
		if s, ok := e.QueueSummary(testQueue, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC).UnixNano()); ok {
			n = int(s.Visible)
		}
	})
	return n
}

func TestClusterReplicatesAndFailsOver(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	for i := 0; i < 5; i++ {
		send(t, leader.log, c, i)
	}
	for _, nd := range nodes {
		waitApplied(t, nd, leader.log.raft.LastIndex())
		if got := queueDepth(nd); got != 5 {
			t.Fatalf("%s holds %d messages, want 5", nd.id, got)
		}
	}
	// A follower refuses writes with a retryable error, appending nothing.
	for _, nd := range nodes {
		if nd == leader {
			continue
		}
		_, err := nd.log.Apply(context.Background(), &engine.Command{Time: c.next(), Caller: testQueue.Account, Queue: testQueue,
			Request: &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: "x", MessageGroupId: "g"}, MessageIDs: []string{"x"}})
		var apiErr *api.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 503 {
			t.Fatalf("write on follower %s: %v, want a 503", nd.id, err)
		}
		if err := nd.log.Ready(); err != nil {
			t.Fatalf("follower %s not ready: %v", nd.id, err)
		}
	}
	// The leader dies: another is elected and has everything.
	leader.log.Close()
	leader.log = nil
	next := waitLeader(t, nodes)
	if next == leader {
		t.Fatal("dead leader still leads")
	}
	send(t, next.log, c, 5)
	if got := queueDepth(next); got != 6 {
		t.Fatalf("new leader holds %d messages, want 6", got)
	}
	if err := next.log.ReadBarrier(context.Background()); err != nil {
		t.Fatalf("read barrier on the new leader: %v", err)
	}
}

// TestLeaderSilentOnceTheLeaderFails: a follower of a live leader does not
// call it silent, nor does a leader itself; once the leader's Raft stops
// without handing its leadership over, its followers do within a few
// heartbeat timeouts, and no longer once the next leader is elected and
// heard from.
func TestLeaderSilentOnceTheLeaderFails(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	var followers []*testNode
	for _, nd := range nodes {
		if nd != leader {
			followers = append(followers, nd)
		}
	}
	for _, nd := range followers {
		waitApplied(t, nd, leader.log.raft.LastIndex())
	}
	for _, nd := range nodes {
		if nd.log.LeaderSilent() {
			t.Fatalf("%s calls a live leader silent", nd.id)
		}
	}
	// Raft stops as in a crash: Close would hand the leadership over first.
	if err := leader.log.raft.Shutdown().Error(); err != nil {
		t.Fatalf("stop the leader's Raft: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, nd := range followers {
		for !nd.log.LeaderSilent() {
			if time.Now().After(deadline) {
				t.Fatalf("%s does not call its stopped leader silent", nd.id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	next := waitLeader(t, nodes)
	send(t, next.log, c, 0) // the follower hears from the new leader
	deadline = time.Now().Add(10 * time.Second)
	for _, nd := range followers {
		for nd.log.LeaderSilent() {
			if time.Now().After(deadline) {
				t.Fatalf("%s calls its new leader (%s) silent", nd.id, next.id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestReadBarrierWaitsForTheEngine holds the leader's engine while a write
// commits. Raft then counts the entry applied, as it does once it has
// handed the entry to the goroutine that applies entries; the engine does
// not hold it yet, and the read barrier, which waits for every entry
// committed when it began, waits until it does.
func TestReadBarrierWaitsForTheEngine(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	before := leader.log.raft.LastIndex()
	release := blockFSM(t, leader.log)
	sent := applyAsync(context.Background(), leader.log, sendCommand(c, "held"))
	deadline := time.Now().Add(20 * time.Second)
	for r := leader.log.raft; r.LastIndex() <= before || r.AppliedIndex() < r.LastIndex(); {
		if time.Now().After(deadline) {
			t.Fatalf("Raft counts %d applied of %d", r.AppliedIndex(), r.LastIndex())
		}
		time.Sleep(time.Millisecond)
	}
	if leader.log.applied(leader.log.raft.LastIndex()) {
		t.Fatal("the engine is held, yet the entry counts as applied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var apiErr *api.Error
	if err := leader.log.ReadBarrier(ctx); !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("read barrier with the entry not in the engine: %v, want a 503", err)
	}
	release()
	if err := <-sent; err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := leader.log.ReadBarrier(context.Background()); err != nil {
		t.Fatalf("read barrier once the engine holds the entry: %v", err)
	}
	if got := queueDepth(leader); got != 1 {
		t.Fatalf("leader holds %d messages, want 1", got)
	}
}

func TestClusterMembershipAddRemove(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	send(t, leader.log, c, 0)

	// A fourth node joins: it starts without state, waits, is added.
	addr := freeAddrs(t, 1)[0]
	joiner := &testNode{id: "n4", dir: t.TempDir()}
	joiner.log, joiner.eng = openTest(t, joiner.dir, RaftConfig{NodeID: "n4", MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: addr, Join: true}})
	nodes = append(nodes, joiner)
	defer joiner.log.Close()
	if err := leader.log.AddVoter(context.Background(), "n4", addr, ""); err != nil {
		t.Fatalf("add n4: %v", err)
	}
	waitApplied(t, joiner, leader.log.raft.LastIndex())
	if got := queueDepth(joiner); got != 1 {
		t.Fatalf("joined node holds %d messages, want 1", got)
	}
	members, _ := leader.log.Members()
	if len(members) != 4 {
		t.Fatalf("members %v, want 4", members)
	}
	// A follower cannot change the membership.
	for _, nd := range nodes {
		if nd != leader {
			if err := nd.log.RemoveServer(context.Background(), "n4"); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("remove on follower: %v, want ErrNotLeader", err)
			}
			break
		}
	}
	if err := leader.log.RemoveServer(context.Background(), "n4"); err != nil {
		t.Fatalf("remove n4: %v", err)
	}
	members, _ = leader.log.Members()
	if len(members) != 3 {
		t.Fatalf("members %v after remove, want 3", members)
	}
}

// TestSingleNodeDirBecomesFirstMember opens a data dir made by a cluster
// of one, then reopens it as a networked member with the same node id:
// it keeps its data, records its raft address and takes a second member.
func TestSingleNodeDirBecomesFirstMember(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{MinFreeBytes: -1})
	createFIFO(t, l, c)
	send(t, l, c, 0)
	l.Close()

	// Another id is refused, with the one to use.
	addrs := freeAddrs(t, 2)
	if _, err := OpenRaft(RaftConfig{Dir: dir, NodeID: "other", MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: addrs[0]}}); err == nil {
		t.Fatal("a single-node dir opened under another node id")
	}
	first := &testNode{id: "node-1", dir: dir}
	first.log, first.eng = openTest(t, dir, RaftConfig{NodeID: "node-1", MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: addrs[0]}})
	defer first.log.Close()
	waitLeader(t, []*testNode{first})
	if got := queueDepth(first); got != 1 {
		t.Fatalf("upgraded node holds %d messages, want 1", got)
	}
	members, _ := first.log.Members()
	if len(members) != 1 || members[0].Addr != addrs[0] {
		t.Fatalf("members %v, want node-1 at %s", members, addrs[0])
	}
	second := &testNode{id: "node-2", dir: t.TempDir()}
	second.log, second.eng = openTest(t, second.dir, RaftConfig{NodeID: "node-2", MinFreeBytes: -1, Cluster: &ClusterConfig{RaftAddr: addrs[1], Join: true}})
	defer second.log.Close()
	if err := first.log.AddVoter(context.Background(), "node-2", addrs[1], ""); err != nil {
		t.Fatalf("add node-2: %v", err)
	}
	send(t, first.log, c, 1)
	waitApplied(t, second, first.log.raft.LastIndex())
	if got := queueDepth(second); got != 2 {
		t.Fatalf("second node holds %d messages, want 2", got)
	}
}

// testCA makes a CA and certificates it signs.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, name string) tls.Certificate {
	t.Helper()
	return ca.issueFor(t, name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// issueFor issues a certificate valid for the given extended key usages
// only.
func (ca *testCA) issueFor(t *testing.T, name string, usages ...x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: usages,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestClusterMutualTLS(t *testing.T) {
	ca := newTestCA(t, "cluster CA")
	rogue := newTestCA(t, "rogue CA")
	nodes := startCluster(t, 3, func(i int) *tls.Config {
		return NewPeerTLSConfig(ca.issue(t, fmt.Sprintf("n%d", i+1)), ca.pool)
	})
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	send(t, leader.log, c, 0)
	for _, nd := range nodes {
		waitApplied(t, nd, leader.log.raft.LastIndex())
	}
	leaderAddr := leader.log.cluster.cfg.RaftAddr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// A peer whose certificate another CA signed is refused: its hello
	// is answered with the server's TLS alert, where a member's gets the
	// server's hello back (the dial's own control, below).
	if conn, err := dialer(NewPeerTLSConfig(rogue.issue(t, "intruder"), ca.pool)).dial(ctx, leaderAddr, muxHTTP); err == nil {
		conn.Close()
		t.Fatal("a peer with a certificate of another CA was let in")
	}
	if conn, err := dialer(NewPeerTLSConfig(ca.issue(t, "n9"), ca.pool)).dial(ctx, leaderAddr, muxHTTP); err != nil {
		t.Fatalf("a peer with a certificate of the cluster's CA was refused: %v", err)
	} else {
		conn.Close()
	}
	// A plain TCP peer gets nothing either: its request is no TLS record,
	// and the node closes the connection, where one that took it would
	// wait on.
	if conn, err := dialer(nil).dial(ctx, leaderAddr, muxHTTP); err == nil {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(conn, "GET /cluster/node HTTP/1.1\r\nHost: n1\r\n\r\n")
		var ne net.Error
		if _, err := conn.Read(make([]byte, 1)); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("a plain-TCP peer was taken in: read %v", err)
		}
		conn.Close()
	}
	// A node that trusts another CA refuses the cluster's nodes.
	wrongTrust := NewPeerTLSConfig(ca.issue(t, "n9"), rogue.pool)
	m := dialer(wrongTrust)
	if conn, err := m.dial(ctx, leaderAddr, muxHTTP); err == nil {
		conn.Close()
		t.Fatal("a node dialled a peer whose certificate its CA did not sign")
	}
	// A member with the right certificate gets through.
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if conn, err := leader.log.DialPeer(ctx, nodes[(indexOf(nodes, leader)+1)%3].log.cluster.cfg.RaftAddr); err != nil {
		t.Fatalf("member dial: %v", err)
	} else {
		conn.Close()
	}
}

func indexOf(nodes []*testNode, nd *testNode) int {
	for i, x := range nodes {
		if x == nd {
			return i
		}
	}
	return -1
}

func TestParsePeers(t *testing.T) {
	ps, err := ParsePeers("a=127.0.0.1:1,b=host:2")
	if err != nil || len(ps) != 2 || ps[1] != (Peer{ID: "b", Addr: "host:2"}) {
		t.Fatalf("ParsePeers: %v %v", ps, err)
	}
	for _, bad := range []string{"a", "a=", "=h:1", "a=h", "a=h:1,a=h:2", "a=0.0.0.0:1"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("ParsePeers(%q) accepted", bad)
		}
	}
}

func TestPeerTLSLoadsPEMFiles(t *testing.T) {
	ca := newTestCA(t, "cluster CA")
	cert := ca.issue(t, "n1")
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	files := PeerTLS{
		CertFile: write("node.pem", "CERTIFICATE", cert.Certificate[0]),
		KeyFile:  write("node-key.pem", "EC PRIVATE KEY", keyDER),
		CAFile:   write("ca.pem", "CERTIFICATE", ca.cert.Raw),
	}
	conf, err := files.TLSConfig()
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	if len(conf.Certificates) != 1 || conf.VerifyConnection == nil || conf.ClientAuth != tls.RequireAnyClientCert {
		t.Fatalf("config does not present a certificate and check the peer's: %+v", conf)
	}
	bad := files
	bad.CAFile = files.KeyFile
	if _, err := bad.TLSConfig(); err == nil {
		t.Error("a CA file without a certificate was accepted")
	}
	bad = files
	bad.KeyFile = filepath.Join(dir, "missing.pem")
	if _, err := bad.TLSConfig(); err == nil {
		t.Error("a missing key file was accepted")
	}
}

// TestPeerTLSNeedsCertificatesForBothUses: a member is both a TLS server
// and a TLS client of its peers, so its certificate must be good for both
// uses. The cluster's CA may also sign certificates for clients only
// (fifoq cert client), or for servers only: neither makes its holder a
// member, on either side of a connection. A certificate with no extended
// key usage is good for any use, as x509 has it.
func TestPeerTLSNeedsCertificatesForBothUses(t *testing.T) {
	ca := newTestCA(t, "cluster CA")
	rogue := newTestCA(t, "rogue CA")
	node := func(cert tls.Certificate) *tls.Config { return NewPeerTLSConfig(cert, ca.pool) }
	member := node(ca.issue(t, "n1"))
	for _, c := range []struct {
		name string
		peer tls.Certificate
		ok   bool
	}{
		{"a member's certificate", ca.issue(t, "n2"), true},
		{"a certificate without extended key usages", ca.issueFor(t, "n3"), true},
		{"a client's certificate", ca.issueFor(t, "app", x509.ExtKeyUsageClientAuth), false},
		{"a server's certificate", ca.issueFor(t, "web", x509.ExtKeyUsageServerAuth), false},
		{"a certificate of another CA", rogue.issue(t, "intruder"), false},
	} {
		// The peer dials the member, and the member dials the peer.
		for _, dir := range []struct {
			what           string
			server, client *tls.Config
		}{{"dialling", member, node(c.peer)}, {"dialled", node(c.peer), member}} {
			serverErr, clientErr := handshake(t, dir.server, dir.client)
			if accepted := serverErr == nil && clientErr == nil; accepted != c.ok {
				t.Errorf("%s %s a member: accepted %v (server: %v; client: %v), want %v", c.name, dir.what, accepted, serverErr, clientErr, c.ok)
			}
		}
	}
}

// handshake runs a TLS handshake between server and client over a
// loopback connection and returns each side's error.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		sc := tls.Server(conn, server)
		err = sc.Handshake()
		if err == nil {
			// TLS 1.3 finishes the client's side before the server has
			// checked its certificate: a byte tells the client it did.
			_, err = sc.Write([]byte{1})
		}
		done <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	cc := tls.Client(conn, client)
	clientErr = cc.Handshake()
	if clientErr == nil {
		_, clientErr = cc.Read(make([]byte, 1))
	}
	conn.Close()
	return <-done, clientErr
}

// TestClusterMinorityRefusesWrites leaves a leader alone: its write is
// never acknowledged, but answered with a retryable error once it steps
// down, and it stops leading.
func TestClusterMinorityRefusesWrites(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	for _, nd := range nodes {
		if nd != leader {
			nd.log.Close()
			nd.log = nil
		}
	}
	_, err := leader.log.Apply(context.Background(), &engine.Command{Time: c.next(), Caller: testQueue.Account, Queue: testQueue,
		Request: &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "x"}, MessageIDs: []string{"x"}})
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("write on a leader without a majority: %v, want a 503", err)
	}
	if leader.log.Leading() {
		t.Fatal("a node without a majority still leads")
	}
	if err := leader.log.ReadBarrier(context.Background()); err == nil {
		t.Fatal("a node without a majority passed the read barrier")
	}
}

// TestBackupAfterMembershipChange removes a member of an idle cluster, so
// that the log's last entry is a membership change: the leader and the
// follower left can still take a backup. Raft refused any snapshot until
// a command followed ("wait until the configuration entry at N has been
// applied") while the state did not count the change applied, which left
// an idle shard given a new replica without a backup.
func TestBackupAfterMembershipChange(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	c := newClock()
	createFIFO(t, leader.log, c)
	send(t, leader.log, c, 0)
	var gone *testNode
	for _, nd := range nodes {
		if nd != leader {
			gone = nd
			break
		}
	}
	if err := leader.log.RemoveServer(context.Background(), gone.id); err != nil {
		t.Fatalf("remove %s: %v", gone.id, err)
	}
	for _, nd := range nodes {
		if nd == gone {
			continue
		}
		waitApplied(t, nd, leader.log.raft.LastIndex())
		if _, err := nd.log.Backup(io.Discard, "test"); err != nil {
			t.Fatalf("backup of %s after a membership change: %v", nd.id, err)
		}
	}
}

// dialer is a peerMux that only dials, with tlsConf (nil: plain TCP), as
// a node that is not a member would.
func dialer(tlsConf *tls.Config) *peerMux {
	return &peerMux{network: tcpNetwork{}, tls: tlsConf, closing: make(chan struct{}), conns: newConnSet()}
}
