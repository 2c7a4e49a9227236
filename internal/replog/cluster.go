package replog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A member of a cluster: its configuration, its transport and the
// membership it starts with. What a member does once it runs is in
// leadership.go and membership.go; a cluster of one has none of it.

// Peer is one voting member of a cluster: its node id and the address of
// its Raft port.
type Peer struct {
	ID   string `json:"id"`
	Addr string `json:"raft_addr"`
}

// ParsePeers reads a peer list written "ID=HOST:PORT,ID=HOST:PORT".
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addr, ok := strings.Cut(item, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want ID=HOST:PORT", item)
		}
		if err := CheckRaftAddr(addr); err != nil {
			return nil, fmt.Errorf("peer %s: %w", id, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer %s is listed twice", id)
		}
		seen[id] = true
		out = append(out, Peer{ID: id, Addr: addr})
	}
	return out, nil
}

// CheckNodeID checks a node id: not empty, at most 64 bytes, without '=',
// ',', '/', '#' or white space (it appears in --peers lists, URLs and
// metadata keys).
func CheckNodeID(id string) error {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "=,/# \t\r\n") {
		return fmt.Errorf("node id %q: give a non-empty id of at most 64 bytes without '=', ',', '/', '#' or spaces", id)
	}
	return nil
}

// CheckRaftAddr checks a HOST:PORT other nodes can dial.
func CheckRaftAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.ParseUint(port, 10, 16); err != nil || host == "" || perr != nil || n == 0 {
		return fmt.Errorf("raft address %q: want HOST:PORT with a port", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("raft address %q: give the address other nodes reach this one by, not an unspecified one", addr)
	}
	return nil
}

// ClusterConfig makes a Raft log one member of a cluster whose nodes talk
// over TCP. Without it (RaftConfig.Cluster nil) the log is a cluster of one
// with no network at all.
type ClusterConfig struct {
	// RaftAddr is the HOST:PORT this node listens on for other nodes, and
	// by which they reach it.
	RaftAddr string
	// Peers, if not empty, is the whole initial membership, this node
	// included; a node whose data dir has no state yet bootstraps the
	// cluster with it (every node of a new cluster is given the same list).
	// Empty: a new node bootstraps a cluster of itself alone, unless Join.
	Peers []Peer
	// Join: a node with no state waits to be added by a running member
	// (its server asks one), and never bootstraps.
	Join bool
	// TLS, if not nil, is the mutual TLS of every node-to-node connection
	// (see PeerTLS).
	TLS *tls.Config
	// HeartbeatTimeout and ElectionTimeout are Raft's; they bound how soon
	// a leader's death is noticed (defaults 300ms each).
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
	// MaxClockOffset is the bound on the members' clock offsets, by which
	// queue time may move ahead of its course when the leadership changes
	// (clamp.go); 0 means 500ms.
	MaxClockOffset time.Duration
	// Network, if not nil, carries this node's traffic with the other
	// nodes in place of TCP: a test's network of nodes in one process,
	// which can drop, delay and partition (internal/memnet).
	Network Network
}

// Network is how a node listens for the other nodes and reaches them.
// Every byte between nodes goes through it: Raft's traffic, the shards'
// sessions and the HTTP that nodes forward to each other.
type Network interface {
	// Listen listens at addr, the node's RaftAddr.
	Listen(addr string) (net.Listener, error)
	// Dial opens a connection to the node listening at addr.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// tcpNetwork is the Network of a node in production.
type tcpNetwork struct{}

func (tcpNetwork) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (tcpNetwork) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// network is the Network the node's traffic goes through.
func (c *ClusterConfig) network() Network {
	if c.Network != nil {
		return c.Network
	}
	return tcpNetwork{}
}

// streamTransport is what a group's log does with its Raft transport
// beside handing it to Raft: hashicorp/raft's NetworkTransport for the
// first group, raftnet's for a shard (shard.go).
type streamTransport interface {
	CloseStreams()
	Close() error
}

// clusterState is what a clustered log keeps beside Raft.
type clusterState struct {
	cfg   ClusterConfig
	mux   *peerMux
	trans streamTransport
	obs   *raft.Observer
	wake  chan raft.Observation

	// readyTerm is the term in which this node leads and has applied
	// everything committed before it (a barrier of that term is done);
	// 0 while it does not lead.
	readyTerm atomic.Uint64
	// leaderChanges counts the leaders this node has seen come.
	leaderChanges atomic.Uint64
	lastLeader    string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change of leadership

	// learnedIncs are the members' incarnations met in hellos, which the
	// leader records (recordIncarnations, woken through learn).
	learnMu     sync.Mutex
	learnedIncs map[string]string
	learn       chan struct{}
	// learnedFormats are the newest entry formats the members said they
	// read in their hellos (format.go).
	learnedFormats map[string]byte
	// selfRecordedAt is the state's index when this node first found its
	// incarnation recorded there, 0 before (forgetAdmitted). Only
	// recordIncarnations touches it.
	selfRecordedAt uint64

	// clockOff, when it holds a reason, says why this node's wall clock
	// disagrees with the cluster's: such a node refuses to lead
	// (SetClockOff). The node's shards share their first group's.
	clockOff *atomic.Pointer[string]
	// peersOff holds the members whose clocks this node measured off its
	// own (SetPeersClockOff): they refuse to lead, so no leadership is
	// handed to them. Shared with the node's shards, as clockOff.
	peersOff *atomic.Pointer[map[string]bool]
	// unheard holds the members this node, as leader, fails to
	// heartbeat: Raft says when a member's heartbeats start failing and
	// when they resume. Cleared when this node stops leading.
	unheardMu sync.Mutex
	unheard   map[raft.ServerID]bool
	// timeBase is what the leader's command times are held to (clamp.go).
	timeBase atomic.Pointer[timeBase]
	// clampWarned: the leader said it held command times back, since the
	// last check of its clock.
	clampWarned atomic.Bool
	// match is how far each follower's log matches this leader's, for a
	// shard (nil for a node's first group, whose new members' catch-up
	// the server checks: internal/server's promote).
	match *replicaMatch
}

// tune sets Raft's timing for a network of nodes.
func (c *ClusterConfig) tune(rc *raft.Config) {
	hb, el := c.HeartbeatTimeout, c.ElectionTimeout
	if hb == 0 {
		hb = 300 * time.Millisecond
	}
	if el == 0 {
		el = 300 * time.Millisecond
	}
	rc.HeartbeatTimeout = hb
	rc.ElectionTimeout = el
	// A leader that has not heard from a majority for this long steps
	// down, failing its pending writes with a retryable error.
	rc.LeaderLeaseTimeout = hb
}

// pipelineDepth is the transports' MaxRPCsInFlight: how many
// AppendEntries a leader has in flight to a follower, and, less two, the
// size of the two channels of each replication pipeline. At
// hashicorp/raft's default of 2 both are unbuffered, and a follower's
// refusal (Success=false) can deadlock the pipeline: Raft's decoding side
// returns, its sending side makes one more send, which waits on the
// transport's decoder while the decoder waits on the side that returned.
// The follower then gets no entry again, its heartbeats go on so that it
// never calls an election, and the leader's Raft cannot shut down
// (TestCloseWhileCutOff met it as a close that timed out). With buffered
// channels the sending side would have to miss the decoding side's end
// at sixty sends in a row, each a coin's toss.
const pipelineDepth = 64

// openTransport returns the node's transport: in memory for a cluster of
// one, TCP (through the node's Raft port) for a member of a cluster.
func openTransport(cfg *RaftConfig, hlog hclog.Logger, incarnation string) (raft.ServerAddress, raft.Transport, *clusterState, error) {
	if cfg.Cluster == nil {
		addr, t := raft.NewInmemTransport(raft.ServerAddress(cfg.NodeID))
		return addr, t, nil, nil
	}
	c := cfg.Cluster
	if err := CheckRaftAddr(c.RaftAddr); err != nil {
		return "", nil, nil, err
	}
	mux, err := newPeerMux(c.network(), c.RaftAddr, c.TLS, cfg.NodeID, incarnation, cfg.Logger)
	if err != nil {
		return "", nil, nil, err
	}
	loadAdmitted(cfg.Dir, mux)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          mux,
		MaxPool:         3,
		MaxRPCsInFlight: pipelineDepth,
		Timeout:         10 * time.Second,
		Logger:          hlog,
	})
	cs := &clusterState{cfg: *c, mux: mux, trans: trans, changed: make(chan struct{}), learn: make(chan struct{}, 1), clockOff: new(atomic.Pointer[string]),
		peersOff: new(atomic.Pointer[map[string]bool])}
	return raft.ServerAddress(c.RaftAddr), trans, cs, nil
}

// bootConfiguration is the membership a node with no state starts with, and
// whether it bootstraps at all.
func bootConfiguration(cfg *RaftConfig, self raft.ServerAddress) (raft.Configuration, bool, error) {
	me := raft.Server{ID: raft.ServerID(cfg.NodeID), Address: self}
	c := cfg.Cluster
	if c == nil || len(c.Peers) == 0 {
		if c != nil && c.Join {
			return raft.Configuration{}, false, nil
		}
		return raft.Configuration{Servers: []raft.Server{me}}, true, nil
	}
	if c.Join {
		return raft.Configuration{}, false, errors.New("a node joins a running cluster or bootstraps a new one with its peers, not both")
	}
	var conf raft.Configuration
	found := false
	for _, p := range c.Peers {
		if p.ID == cfg.NodeID {
			found = true
			if p.Addr != string(self) {
				return conf, false, fmt.Errorf("peer %s=%s is this node, whose raft address is %s", p.ID, p.Addr, self)
			}
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	if !found {
		return conf, false, fmt.Errorf("the peers do not list this node (%s)", cfg.NodeID)
	}
	return conf, true, nil
}

// checkMembership refuses to start a node whose data dir belongs to a
// cluster of one under another node id: Raft would wait forever for a
// vote it cannot have.
func (l *Raft) checkMembership(existing bool) error {
	if !existing {
		return nil
	}
	f := l.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read the cluster membership in %s: %w", l.cfg.Dir, err)
	}
	servers := f.Configuration().Servers
	for _, s := range servers {
		if string(s.ID) == l.cfg.NodeID {
			return nil
		}
	}
	if len(servers) == 1 {
		return fmt.Errorf("the data dir %s belongs to node %q, not %q: start it with --node-id %s", l.cfg.Dir, servers[0].ID, l.cfg.NodeID, servers[0].ID)
	}
	if len(servers) > 1 {
		l.logger.Warn("this node is not a member of the cluster its data dir knows; it waits to be added", "node_id", l.cfg.NodeID)
	}
	return nil
}

// startCluster starts watching leadership.
func (l *Raft) startCluster() {
	c := l.cluster
	c.wake = make(chan raft.Observation, 1)
	c.obs = raft.NewObserver(c.wake, false, func(o *raft.Observation) bool {
		switch d := o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		case raft.FailedHeartbeatObservation:
			c.setUnheard(d.PeerID, true)
		case raft.ResumedHeartbeatObservation:
			c.setUnheard(d.PeerID, false)
		}
		return false
	})
	l.raft.RegisterObserver(c.obs)
	l.startPace()
	l.wg.Add(1)
	go l.watchLeadership()
}

// setUnheard notes that this leader's heartbeats to member id fail, or
// succeed again.
func (c *clusterState) setUnheard(id raft.ServerID, failing bool) {
	c.unheardMu.Lock()
	defer c.unheardMu.Unlock()
	if failing {
		if c.unheard == nil {
			c.unheard = map[raft.ServerID]bool{}
		}
		c.unheard[id] = true
	} else {
		delete(c.unheard, id)
	}
}

// isUnheard reports whether this leader's heartbeats to member id fail.
func (c *clusterState) isUnheard(id raft.ServerID) bool {
	c.unheardMu.Lock()
	defer c.unheardMu.Unlock()
	return c.unheard[id]
}

// forgetUnheard clears what this node knew as leader of its heartbeats.
func (c *clusterState) forgetUnheard() {
	c.unheardMu.Lock()
	c.unheard = nil
	c.unheardMu.Unlock()
}

// stopCluster releases what the cluster holds once Raft has shut down: the
// observer and the pooled connections to other nodes.
func (l *Raft) stopCluster() {
	if l.cluster == nil {
		return
	}
	if l.cluster.obs != nil {
		l.raft.DeregisterObserver(l.cluster.obs)
	}
	l.cluster.trans.CloseStreams()
	// Raft closes its transport only when its shutdown is waited on
	// through the future of its first Shutdown; a node removed from the
	// cluster shut itself down, and nobody waited.
	l.cluster.trans.Close()
	if l.host == nil {
		// A shard's connections are its first group's, closed with it.
		l.cluster.mux.Close()
	}
}

// Clustered reports whether the log is a member of a networked cluster
// (as opposed to a cluster of one without a network).
func (l *Raft) Clustered() bool { return l.cluster != nil }

// PeersAuthenticated reports whether the members talk over mutual TLS, so
// that each proves itself to the others by its certificate.
func (l *Raft) PeersAuthenticated() bool { return l.cluster != nil && l.cluster.cfg.TLS != nil }
