package replog

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"
)

// counterFSM counts the entries applied to it.
type counterFSM struct{ n atomic.Int64 }

func (f *counterFSM) Apply(*raft.Log) any                 { return f.n.Add(1) }
func (f *counterFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("no snapshots") }
func (f *counterFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("no snapshots") }

// sessionNode is one node of TestGroupsShareOneConnectionPerPeer: its
// port and one Raft instance per group.
type sessionNode struct {
	id    string
	mux   *peerMux
	rafts []*raft.Raft
	fsms  []*counterFSM
	// beats are the groups' transports when their heartbeats are
	// coalesced (sessionNodeOpts.coalesce).
	beats []*beatTransport
}

// sessionNodeOpts says how startSessionNodeWith builds a node.
type sessionNodeOpts struct {
	// coalesce: the groups' heartbeats go through the node's beatHub,
	// as a fifoq's shards' do (beats.go).
	coalesce bool
	// noHub: the node has no beatHub, as a fifoq from before it, and
	// closes the streams of coalesced heartbeats as a group it does not
	// know.
	noHub bool
	// gather, if not 0, is the hub's gather.
	gather time.Duration
}

// sessionMembers is the membership of session nodes node-1, node-2, ...
// at addrs.
func sessionMembers(addrs []string) func() []raft.Server {
	return func() []raft.Server {
		var s []raft.Server
		for i, a := range addrs {
			s = append(s, raft.Server{ID: raft.ServerID(fmt.Sprintf("node-%d", i+1)), Address: raft.ServerAddress(a)})
		}
		return s
	}
}

// startSessionNode opens a port on addr ("127.0.0.1:0" for any) and starts
// groups Raft groups on it, each over its own stream layer; servers is
// every group's membership.
func startSessionNode(t *testing.T, id, addr string, groups int, servers func() []raft.Server) *sessionNode {
	return startSessionNodeWith(t, id, addr, groups, servers, sessionNodeOpts{})
}

// startSessionNodeWith is startSessionNode built as opts say.
func startSessionNodeWith(t *testing.T, id, addr string, groups int, servers func() []raft.Server, opts sessionNodeOpts) *sessionNode {
	t.Helper()
	inc := fmt.Sprintf("%x", md5.Sum([]byte(id))) // 32 hex digits, as an incarnation is
	m, err := newPeerMux(tcpNetwork{}, addr, nil, id, inc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	hub := m.sessions.beats
	if opts.gather != 0 {
		hub.gather = opts.gather
	}
	if opts.noHub {
		m.sessions.mu.Lock()
		m.sessions.beats = nil
		m.sessions.mu.Unlock()
		hub.close()
	}
	n := &sessionNode{id: id, mux: m}
	for g := range groups {
		layer, err := m.GroupLayer(uint32(g))
		if err != nil {
			t.Fatal(err)
		}
		var trans raft.Transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: layer, MaxPool: 3, Timeout: 2 * time.Second,
			Logger: hclog.NewNullLogger()})
		if opts.coalesce {
			bt := hub.wrap(uint32(g), trans.(beatInner), nil)
			n.beats = append(n.beats, bt)
			trans = bt
		}
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(id)
		conf.Logger = hclog.NewNullLogger()
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
		fsm := &counterFSM{}
		logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if servers != nil {
			if err := raft.BootstrapCluster(conf, logs, logs, snaps, trans, raft.Configuration{Servers: servers()}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := raft.NewRaft(conf, fsm, logs, logs, snaps, trans)
		if err != nil {
			t.Fatal(err)
		}
		n.rafts, n.fsms = append(n.rafts, r), append(n.fsms, fsm)
	}
	return n
}

func (n *sessionNode) stop() {
	for _, r := range n.rafts {
		_ = r.Shutdown().Error()
	}
	n.mux.Close()
}

// applyOnLeaders applies one entry in every group through its leader,
// retrying until deadline.
func applyOnLeaders(t *testing.T, nodes []*sessionNode, groups int, deadline time.Time) {
	t.Helper()
	for g := range groups {
		for {
			var err error = fmt.Errorf("no leader")
			for _, n := range nodes {
				if n != nil && n.rafts[g].State() == raft.Leader {
					err = n.rafts[g].Apply([]byte("x"), time.Second).Error()
					break
				}
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("group %d: no entry applied: %v", g, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestGroupsShareOneConnectionPerPeer runs 16 Raft groups (hashicorp/raft,
// in-memory logs) on 3 nodes, each group over its own NetworkTransport on
// its node's stream layer: every group elects a leader and commits, over
// no more than one connection a pair of nodes, where a transport per
// group would open connections per group. A node that stops and comes back on the same address is dialed
// again, and every group of it catches up.
func TestGroupsShareOneConnectionPerPeer(t *testing.T) {
	const groups = 16
	nodes := make([]*sessionNode, 3)
	addrs := freeAddrs(t, len(nodes))
	servers := sessionMembers(addrs)
	for i := range nodes {
		nodes[i] = startSessionNode(t, fmt.Sprintf("node-%d", i+1), addrs[i], groups, servers)
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				n.stop()
			}
		}
	}()
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))

	// Each session counts at both of its ends; of two a pair dialed at
	// the same moment, the one closed may still be ending, so the count
	// is given a moment to settle.
	sessions := func() int {
		total := 0
		for _, n := range nodes {
			total += n.mux.sessions.connections()
		}
		return total / 2
	}
	for settle := time.Now().Add(5 * time.Second); sessions() > 3 && time.Now().Before(settle); {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d groups on 3 nodes: %d sessions between them", groups, sessions())
	if n := sessions(); n > 3 || n < 2 {
		// Every group's leader reached both of its followers: at least
		// two pairs are connected, each by one session.
		t.Fatalf("%d sessions between 3 nodes for %d groups, not 2 or 3", n, groups)
	}

	// node-3 stops; the other two still commit in every group.
	nodes[2].stop()
	nodes[2] = nil
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))
	// It comes back, empty, on the same address: the others' sessions
	// with the old one are dead, and they must dial it again.
	nodes[2] = startSessionNode(t, "node-3", addrs[2], groups, servers)
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for g := range groups {
		want := nodes[0].fsms[g].n.Load()
		for nodes[2].fsms[g].n.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("group %d: the restarted node applied %d of %d entries", g, nodes[2].fsms[g].n.Load(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestStreamOfUnknownGroupIsClosed: a stream for a group the node does not
// run is closed, and the session goes on carrying the groups it does.
func TestStreamOfUnknownGroupIsClosed(t *testing.T) {
	a := startSessionNode(t, "node-1", "127.0.0.1:0", 1, nil)
	defer a.stop()
	b := startSessionNode(t, "node-2", "127.0.0.1:0", 0, nil)
	defer b.stop()
	layer, err := b.mux.GroupLayer(7)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := layer.Dial(raft.ServerAddress(a.mux.advert.String()), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("a stream for group 7, which node-1 does not run, was read from")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a stream for group 7, which node-1 does not run, was left open: %v", err)
	}
	if _, err := b.mux.GroupLayer(7); err == nil {
		t.Fatal("a second stream layer for group 7 was given")
	}
	other, err := b.mux.GroupLayer(0)
	if err != nil {
		t.Fatal(err)
	}
	conn0, err := other.Dial(raft.ServerAddress(a.mux.advert.String()), 2*time.Second)
	if err != nil {
		t.Fatalf("a stream for group 0 on the same session: %v", err)
	}
	conn0.Close()
	if n := b.mux.sessions.connections(); n != 1 {
		t.Fatalf("node-2 holds %d sessions with node-1, want 1", n)
	}
}

// TestSessionHelloIsChecked: a connection for many groups says the same
// hello as any connection to the Raft port, and a node that is not the
// incarnation the membership records for its id is refused, and told so.
func TestSessionHelloIsChecked(t *testing.T) {
	a := startSessionNode(t, "node-1", "127.0.0.1:0", 1, nil)
	defer a.stop()
	b := startSessionNode(t, "node-2", "127.0.0.1:0", 0, nil)
	defer b.stop()
	var fenced atomic.Bool
	noFormat := func(byte) string { return "" }
	// node-1's membership records another incarnation of node-2.
	a.mux.checks.Store(&peerChecks{
		recorded:   func(id string) (string, bool) { return fmt.Sprintf("%032x", 1), id == "node-2" },
		expectedAt: func(string) string { return "" },
		memberAt:   func(string) string { return "" },
		learned:    func(string, string, byte) {},
		fence:      func(string) {},
		tooOld:     noFormat,
		outdated:   func(string) {},
		stateIndex: func() uint64 { return 0 },
	})
	b.mux.checks.Store(&peerChecks{
		recorded:   func(string) (string, bool) { return "", false },
		expectedAt: func(string) string { return "" },
		memberAt:   func(string) string { return "" },
		learned:    func(string, string, byte) {},
		fence:      func(string) { fenced.Store(true) },
		tooOld:     noFormat,
		outdated:   func(string) {},
		stateIndex: func() uint64 { return 0 },
	})
	layer, err := b.mux.GroupLayer(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := layer.Dial(raft.ServerAddress(a.mux.advert.String()), 2*time.Second); err == nil {
		t.Fatal("a stale incarnation of node-2 opened a stream to node-1")
	}
	if !fenced.Load() {
		t.Fatal("node-2 was refused but not told it is fenced")
	}
	if n := a.mux.sessions.connections(); n != 0 {
		t.Fatalf("node-1 holds %d sessions after refusing the hello", n)
	}
}

// TestSimultaneousDialsKeepOneSession: two nodes that dial each other at
// the same moment end with one session between them, the same on both
// sides (the one the lower id dialed), and streams go both ways on it.
func TestSimultaneousDialsKeepOneSession(t *testing.T) {
	for round := range 20 {
		a := startSessionNode(t, "node-1", "127.0.0.1:0", 0, nil)
		b := startSessionNode(t, "node-2", "127.0.0.1:0", 0, nil)
		la, err := a.mux.GroupLayer(0)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := b.mux.GroupLayer(0)
		if err != nil {
			t.Fatal(err)
		}
		// Take what arrives, as Raft's transport would.
		for _, l := range []raft.StreamLayer{la, lb} {
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
				}
			}()
		}
		start := make(chan struct{})
		done := make(chan struct{}, 2)
		for _, d := range []struct {
			l  raft.StreamLayer
			to *sessionNode
		}{{la, b}, {lb, a}} {
			go func() {
				<-start
				if c, err := d.l.Dial(raft.ServerAddress(d.to.mux.advert.String()), 2*time.Second); err == nil {
					c.Close()
				}
				done <- struct{}{}
			}()
		}
		close(start)
		<-done
		<-done
		// One session each, and the same one: its two ends.
		same := func() bool {
			sa := a.mux.sessions.registered(b.mux.advert.String())
			sb := b.mux.sessions.registered(a.mux.advert.String())
			return a.mux.sessions.connections() == 1 && b.mux.sessions.connections() == 1 &&
				sa != nil && sb != nil && sa.LocalAddr().String() == sb.RemoteAddr().String()
		}
		deadline := time.Now().Add(5 * time.Second)
		for !same() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: node-1 holds %d sessions, node-2 %d; want one each, the same", round, a.mux.sessions.connections(), b.mux.sessions.connections())
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, d := range []struct {
			l  raft.StreamLayer
			to *sessionNode
		}{{la, b}, {lb, a}} {
			c, err := d.l.Dial(raft.ServerAddress(d.to.mux.advert.String()), 2*time.Second)
			if err != nil {
				t.Fatalf("round %d: a stream after the dials settled: %v", round, err)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatalf("round %d: write on a stream: %v", round, err)
			}
			c.Close()
		}
		if !same() {
			t.Fatalf("round %d: streams both ways left %d and %d sessions", round, a.mux.sessions.connections(), b.mux.sessions.connections())
		}
		a.stop()
		b.stop()
	}
}

// TestRestartedPeersSessionReplacesTheOld: a session the peer dials after
// it restarted (another boot) replaces the one from before, which a node
// may not yet see dead (a peer that lost power sends no FIN); one the same
// process dials twice leaves the first in place, as that process keeps
// its first.
func TestRestartedPeersSessionReplacesTheOld(t *testing.T) {
	a := startSessionNode(t, "node-1", "127.0.0.1:0", 0, nil)
	defer a.stop()
	s := a.mux.sessions
	accept := func(boot string) *yamux.Session {
		t.Helper()
		server, client := net.Pipe()
		t.Cleanup(func() { client.Close() })
		sess, err := yamux.Server(server, s.conf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.adopt("10.0.0.2:7000", peerSession{sess: sess, dialer: "node-2", boot: boot}, false); err != nil {
			t.Fatal(err)
		}
		return sess
	}
	first := accept("boot-1")
	if s.registered("10.0.0.2:7000") != first {
		t.Fatal("the first session of node-2 was not taken")
	}
	again := accept("boot-1")
	if s.registered("10.0.0.2:7000") != first || !again.IsClosed() {
		t.Fatal("a second session of the same process of node-2 replaced its first")
	}
	restarted := accept("boot-2")
	if s.registered("10.0.0.2:7000") != restarted || !first.IsClosed() {
		t.Fatal("the session of node-2 after its restart did not replace the one from before")
	}
}

// TestMemberBehindDoesNotFence: a node removed and added anew (a new data
// dir, a new incarnation) meets a member that has not applied that yet and
// still records the old incarnation. The member's refusal stands both
// ways, but it must not stop the node when the node's own log records its
// new incarnation (the in-process nemesis met a rejoined member halted so).
// Nor when a join request added it as its present incarnation
// (Raft.Admitted) and its log records nothing of it yet, or its earlier
// incarnation: a joiner before it has caught up, whose state predates its
// admission (the in-process nemesis met one halted so). A node whose log
// records no such thing (wiped and not added anew), or that was added as
// another incarnation, is still stopped, both ways. And when the node's
// state is further along than the member's and records its incarnation,
// the member believes it, both ways (peerMux.settle).
func TestMemberBehindDoesNotFence(t *testing.T) {
	stale := fmt.Sprintf("%032x", 1)
	for _, tc := range []struct {
		name      string
		ownRecord func(self string) string // what the node's own log records for itself
		admitted  func(self string) string // what a join added it as ("" if none did)
		nodeAhead bool                     // the node's state is further along than the member's
		wantFence bool
	}{
		{"added anew, recorded", func(self string) string { return self }, func(string) string { return "" }, false, false},
		{"added anew by a join, not caught up", func(string) string { return "" }, func(self string) string { return self }, false, false},
		{"added anew by a join, its state from before", func(string) string { return fmt.Sprintf("%032x", 2) }, func(self string) string { return self }, false, false},
		{"wiped, not added anew", func(string) string { return "" }, func(string) string { return "" }, false, true},
		{"added as another incarnation", func(string) string { return "" }, func(string) string { return stale }, false, true},
		{"added anew, recorded, its state further along", func(self string) string { return self }, func(string) string { return "" }, true, false},
		{"wiped, its state further along", func(string) string { return "" }, func(string) string { return "" }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := startSessionNode(t, "node-1", "127.0.0.1:0", 0, nil)
			defer member.stop()
			node := startSessionNode(t, "node-2", "127.0.0.1:0", 0, nil)
			defer node.stop()
			if inc := tc.admitted(node.mux.selfInc); inc != "" {
				node.mux.admitted.Store(&inc)
			}
			var fenced atomic.Int32
			noFormat := func(byte) string { return "" }
			// The member is behind: it records the old incarnation of
			// node-2, and expects it when it dials node-2.
			member.mux.checks.Store(&peerChecks{
				recorded:   func(id string) (string, bool) { return stale, id == "node-2" || id == "node-1" },
				expectedAt: func(string) string { return stale },
				memberAt:   func(string) string { return "node-2" },
				learned:    func(string, string, byte) {},
				fence:      func(string) {},
				tooOld:     noFormat,
				outdated:   func(string) {},
				stateIndex: func() uint64 { return 5 },
			})
			nodeIndex := uint64(5)
			if tc.nodeAhead {
				nodeIndex = 9
			}
			node.mux.checks.Store(&peerChecks{
				recorded: func(id string) (string, bool) {
					if id == "node-2" {
						return tc.ownRecord(node.mux.selfInc), true
					}
					return "", id == "node-1"
				},
				expectedAt: func(string) string { return "" },
				memberAt:   func(string) string { return "" },
				learned:    func(string, string, byte) {},
				fence:      func(string) { fenced.Add(1) },
				tooOld:     noFormat,
				outdated:   func(string) {},
				stateIndex: func() uint64 { return nodeIndex },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			believed := tc.nodeAhead && tc.ownRecord(node.mux.selfInc) == node.mux.selfInc
			// node-2 dials the member: "fenced-you", unless the member
			// believes it.
			conn, err := node.mux.dial(ctx, member.mux.advert.String(), muxHTTP)
			if err == nil {
				conn.Close()
			}
			if (err == nil) != believed {
				t.Fatalf("node-2's dial to the member: %v; want it let in: %v", err, believed)
			}
			// The member dials node-2, expecting the old incarnation:
			// node-2 answers "fenced-me", unless it is believed.
			conn, err = member.mux.dial(ctx, node.mux.advert.String(), muxHTTP)
			if err == nil {
				conn.Close()
			}
			if (err == nil) != believed {
				t.Fatalf("the member's dial to node-2: %v; want it answered: %v", err, believed)
			}
			if got := fenced.Load(); (got > 0) != tc.wantFence {
				t.Fatalf("node-2 fenced itself %d times; want fenced %v", got, tc.wantFence)
			}
		})
	}
}

// TestSettleWeighsOnlyMembers: the question of whose state is further
// along (peerMux.settle) is put only to peers the membership knows. A
// node the acceptor's membership does not name, expecting another
// incarnation of it, is refused however far along the acceptor is; a
// dialer believes an answer further along than its own state only from
// the member its membership puts at that address; and a dialer that does
// not answer the question (a fifoq from before it) gets the verdict as
// before, a stale acceptor stopping itself.
func TestSettleWeighsOnlyMembers(t *testing.T) {
	other := fmt.Sprintf("%032x", 7)
	noFormat := func(byte) string { return "" }
	checks := func(self *sessionNode, members map[string]string, at string, index uint64, fenced *atomic.Int32) *peerChecks {
		return &peerChecks{
			recorded: func(id string) (string, bool) {
				inc, ok := members[id]
				return inc, ok
			},
			expectedAt: func(string) string { return other },
			memberAt:   func(string) string { return at },
			learned:    func(string, string, byte) {},
			fence:      func(string) { fenced.Add(1) },
			tooOld:     noFormat,
			outdated:   func(string) {},
			stateIndex: func() uint64 { return index },
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	t.Run("a stranger is not believed behind", func(t *testing.T) {
		acceptor := startSessionNode(t, "node-1", "127.0.0.1:0", 0, nil)
		defer acceptor.stop()
		stranger := startSessionNode(t, "node-9", "127.0.0.1:0", 0, nil)
		defer stranger.stop()
		var fenced atomic.Int32
		acceptor.mux.checks.Store(checks(acceptor, map[string]string{"node-1": acceptor.mux.selfInc}, "", 9, &fenced))
		stranger.mux.checks.Store(checks(stranger, map[string]string{"node-9": stranger.mux.selfInc}, "node-1", 1, &fenced))
		if conn, err := stranger.mux.dial(ctx, acceptor.mux.advert.String(), muxHTTP); err == nil {
			conn.Close()
			t.Fatal("a node the membership does not name got a connection by expecting another incarnation")
		}
		if fenced.Load() != 0 {
			t.Fatal("a stranger's word stopped a node")
		}
	})

	t.Run("only the member meant is believed", func(t *testing.T) {
		acceptor := startSessionNode(t, "node-1", "127.0.0.1:0", 0, nil)
		defer acceptor.stop()
		dialer := startSessionNode(t, "node-2", "127.0.0.1:0", 0, nil)
		defer dialer.stop()
		var fenced atomic.Int32
		members := map[string]string{"node-1": acceptor.mux.selfInc, "node-2": dialer.mux.selfInc}
		acceptor.mux.checks.Store(checks(acceptor, members, "node-2", 9, &fenced))
		// The dialer's membership puts node-3 at the address.
		dialer.mux.checks.Store(checks(dialer, map[string]string{"node-1": other, "node-2": dialer.mux.selfInc}, "node-3", 1, &fenced))
		if conn, err := dialer.mux.dial(ctx, acceptor.mux.advert.String(), muxHTTP); err == nil {
			conn.Close()
			t.Fatal("a dialer believed the node at an address its membership gives to another member")
		}
		// With node-1 at the address, it is believed.
		dialer.mux.checks.Store(checks(dialer, map[string]string{"node-1": other, "node-2": dialer.mux.selfInc}, "node-1", 1, &fenced))
		conn, err := dialer.mux.dial(ctx, acceptor.mux.advert.String(), muxHTTP)
		if err != nil {
			t.Fatalf("a dialer behind its member did not believe it: %v", err)
		}
		conn.Close()
		if fenced.Load() != 0 {
			t.Fatal("a node was stopped")
		}
	})

	t.Run("a dialer that does not answer gets the old verdict", func(t *testing.T) {
		acceptor := startSessionNode(t, "node-1", "127.0.0.1:0", 0, nil)
		defer acceptor.stop()
		var fenced atomic.Int32
		// The acceptor's state records another incarnation of it: it is
		// stale, and a member expecting its recorded one stops it.
		acceptor.mux.checks.Store(checks(acceptor, map[string]string{"node-1": other, "node-2": fmt.Sprintf("%032x", 2)}, "", 9, &fenced))
		conn, err := net.Dial("tcp", acceptor.mux.advert.String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, string(muxHTTPHello)+"node-2 "+fmt.Sprintf("%032x", 2)+" "+other+" 8\n"); err != nil {
			t.Fatal(err)
		}
		line, err := readLine(conn)
		if err != nil || !strings.HasPrefix(line, "applied? ") {
			t.Fatalf("the acceptor answered %q (%v); want its question", line, err)
		}
		conn.Close() // as a fifoq that does not know the question
		deadline := time.Now().Add(5 * time.Second)
		for fenced.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("a stale node told so by a member that did not answer its question did not stop")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
