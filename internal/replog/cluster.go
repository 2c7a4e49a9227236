package replog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

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
}

// clusterState is what a clustered log keeps beside Raft.
type clusterState struct {
	cfg   ClusterConfig
	mux   *peerMux
	trans *raft.NetworkTransport
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

	// clockOff, when not nil, says why this node's wall clock disagrees
	// with the cluster's: such a node refuses to lead (SetClockOff).
	clockOff atomic.Pointer[string]
	// timeBase is what the leader's command times are held to (clamp.go).
	timeBase atomic.Pointer[timeBase]
	// clampWarned: the leader said it held command times back, since the
	// last check of its clock.
	clampWarned atomic.Bool
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
	mux, err := newPeerMux(c.RaftAddr, c.TLS, cfg.NodeID, incarnation)
	if err != nil {
		return "", nil, nil, err
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  mux,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hlog,
	})
	cs := &clusterState{cfg: *c, mux: mux, trans: trans, changed: make(chan struct{}), learn: make(chan struct{}, 1)}
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
		switch o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		}
		return false
	})
	l.raft.RegisterObserver(c.obs)
	l.wg.Add(1)
	go l.watchLeadership()
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
	l.cluster.mux.Close()
}

// watchLeadership follows this node's role: when it becomes leader it
// applies a barrier, so that everything committed before its term is
// applied before it answers reads or runs the leader's work, and corrects
// its own address in the membership if it changed (a single-node data dir
// that becomes a cluster's first member).
func (l *Raft) watchLeadership() {
	defer l.wg.Done()
	c := l.cluster
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-c.wake:
		case <-tick.C:
		case <-l.quit:
			return
		}
		_, id := l.raft.LeaderWithID()
		if string(id) != c.lastLeader {
			c.lastLeader = string(id)
			if id != "" {
				c.leaderChanges.Add(1)
			}
			c.notify()
		}
		if l.raft.State() != raft.Leader {
			if c.readyTerm.Swap(0) != 0 {
				c.notify()
			}
			continue
		}
		if why := c.clockOff.Load(); why != nil {
			// Queue time is the leader's clock: a leader whose clock is
			// off the others' would move every queue by the difference.
			if c.readyTerm.Swap(0) != 0 {
				c.notify()
			}
			l.logger.Error("this node leads but its clock is off the cluster's: handing the leadership over", "why", *why)
			if err := l.raft.LeadershipTransfer().Error(); err != nil {
				l.logger.Warn("could not hand the leadership over", "err", err)
			}
			continue
		}
		term := l.raft.CurrentTerm()
		if c.readyTerm.Load() == term {
			continue
		}
		if err := l.raft.Barrier(5 * time.Second).Error(); err != nil {
			continue // lost the leadership, or slow: look again
		}
		l.fixOwnAddress()
		if l.raft.State() == raft.Leader && l.raft.CurrentTerm() == term {
			c.readyTerm.Store(term)
			c.notify()
		}
	}
}

// fixOwnAddress updates this node's Raft address in the membership when
// it differs from the one it listens on.
func (l *Raft) fixOwnAddress() {
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	self := raft.ServerAddress(l.cluster.cfg.RaftAddr)
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == l.cfg.NodeID && s.Address != self && s.Suffrage == raft.Voter {
			if err := l.raft.AddVoter(s.ID, self, 0, 5*time.Second).Error(); err != nil {
				l.logger.Warn("could not record this node's raft address in the membership", "addr", self, "err", err)
			} else {
				l.logger.Info("recorded this node's raft address in the membership", "node_id", l.cfg.NodeID, "old", s.Address, "new", self)
			}
		}
	}
}

func (c *clusterState) notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Clustered reports whether the log is a member of a networked cluster
// (as opposed to a cluster of one without a network).
func (l *Raft) Clustered() bool { return l.cluster != nil }

// Leading reports whether this node leads and has applied everything
// committed before its term: it may answer reads from its own state and
// run the leader's periodic work.
func (l *Raft) Leading() bool {
	if l.faults.err() != nil {
		return false
	}
	if l.cluster != nil && l.cluster.clockOff.Load() != nil {
		return false
	}
	if _, err := l.fsm.failure(); err != nil {
		return false
	}
	if l.cluster == nil {
		return l.raft.State() == raft.Leader
	}
	t := l.cluster.readyTerm.Load()
	return t != 0 && l.raft.State() == raft.Leader && l.raft.CurrentTerm() == t
}

// LeadershipChanged returns a channel closed at the next change of this
// node's role or of the leader it knows. A cluster of one never changes.
func (l *Raft) LeadershipChanged() <-chan struct{} {
	if l.cluster == nil {
		return nil
	}
	l.cluster.mu.Lock()
	defer l.cluster.mu.Unlock()
	return l.cluster.changed
}

// Leader returns the id and Raft address of the leader this node knows,
// or empty strings when it knows none.
func (l *Raft) Leader() (id, addr string) {
	a, i := l.raft.LeaderWithID()
	return string(i), string(a)
}

// NodeID is this node's id.
func (l *Raft) NodeID() string { return l.cfg.NodeID }

// ReadBarrier returns once this node may answer a read from its state with
// everything acknowledged anywhere before the call visible in it (a
// linearizable read): it leads, is confirmed leader by a majority after
// the call began, and has applied every entry committed when it began.
// A cluster of one is always current.
func (l *Raft) ReadBarrier(ctx context.Context) error {
	if l.cluster == nil {
		return nil
	}
	if !l.Leading() {
		return api.ErrServiceUnavailable("This node does not lead the cluster now; retry.")
	}
	index := l.raft.CommitIndex()
	if err := l.raft.VerifyLeader().Error(); err != nil {
		return api.ErrServiceUnavailable("This node could not confirm its leadership (%v); retry.", err)
	}
	for !l.applied(index) {
		select {
		case <-ctx.Done():
			return api.ErrServiceUnavailable("The request ended before this node caught up: %v", ctx.Err())
		case <-l.stopped:
			return api.ErrServiceUnavailable("The command log stopped.")
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// PeerListener returns the listener of HTTP connections other nodes open
// to this one through its Raft port (forwarded requests, status queries),
// or nil for a cluster of one.
func (l *Raft) PeerListener() net.Listener {
	if l.cluster == nil {
		return nil
	}
	return l.cluster.mux.httpLn
}

// DialPeer opens an HTTP connection to another node through its Raft port,
// over the cluster's mutual TLS when it is configured.
func (l *Raft) DialPeer(ctx context.Context, raftAddr string) (net.Conn, error) {
	if l.cluster == nil {
		return nil, errors.New("not a member of a cluster")
	}
	return l.cluster.mux.dial(ctx, raftAddr, muxHTTP)
}

// Member is one server of the cluster's membership.
type Member struct {
	ID   string `json:"id"`
	Addr string `json:"raft_addr"`
	// Incarnation is the member's data dir's, once the cluster has
	// recorded it (identity.go).
	Incarnation string `json:"incarnation,omitempty"`
	Voter       bool   `json:"voter"`
}

// Members returns the latest membership this node knows.
func (l *Raft) Members() ([]Member, error) {
	f := l.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []Member
	l.Read(func(e *engine.Engine) {
		for _, s := range f.Configuration().Servers {
			out = append(out, Member{ID: string(s.ID), Addr: string(s.Address), Incarnation: e.Meta(memberKey(string(s.ID))), Voter: s.Suffrage == raft.Voter})
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ErrNotLeader is returned by membership changes asked of a node that does
// not lead.
var ErrNotLeader = errors.New("this node does not lead the cluster")

// ErrAlreadyMember is returned by AddVoter for a node id that is a member
// of the cluster under another incarnation, or under none recorded.
var ErrAlreadyMember = errors.New("already a member")

// AddVoter adds a member, which votes once it has caught up (it joins as a
// non-voter; see Promote); incarnation, if not empty, is its data dir's
// (a node that joins says it). Only the leader can; it returns once
// the new membership is committed. An id that is already a member is
// refused (ErrAlreadyMember) unless with the incarnation recorded for it,
// which changes nothing: a member whose data dir was replaced must be
// removed before it is added anew (identity.go).
func (l *Raft) AddVoter(ctx context.Context, id, addr, incarnation string) error {
	if err := CheckRaftAddr(addr); err != nil {
		return err
	}
	if incarnation != "" && !validIncarnation(incarnation) {
		return fmt.Errorf("incarnation %q: want 32 hex digits", incarnation)
	}
	if l.cluster == nil {
		return l.membershipChange(ctx, nil)
	}
	if rec, member := l.recordedIncarnation(id); member {
		if incarnation != "" && rec == incarnation {
			return nil
		}
		return fmt.Errorf("%w: node %s is a member already; to add it anew (its data dir replaced), remove it first with `fifoq cluster remove %s`", ErrAlreadyMember, id, id)
	}
	// It joins without a vote, and the leader makes it a voter once it
	// has caught up (Promote).
	if err := l.membershipChange(ctx, l.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))); err != nil {
		return err
	}
	if incarnation != "" {
		l.learned(id, incarnation, 0)
	}
	return nil
}

// Promote makes the non-voting member id a voter. Only the leader can.
func (l *Raft) Promote(ctx context.Context, id string) error {
	f := l.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			if s.Suffrage == raft.Voter {
				return nil
			}
			return l.membershipChange(ctx, l.raft.AddVoter(s.ID, s.Address, 0, timeoutOf(ctx)))
		}
	}
	return fmt.Errorf("node %s is not a member", id)
}

// RemoveServer removes a member. Only the leader can; a leader may remove
// itself, and then steps down.
func (l *Raft) RemoveServer(ctx context.Context, id string) error {
	if err := l.membershipChange(ctx, l.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx))); err != nil {
		return err
	}
	// Forget its incarnation, so that it can be added anew. (If this
	// fails, the record stays, and adding the id anew is refused until a
	// later removal succeeds.)
	l.cluster.learnMu.Lock()
	delete(l.cluster.learnedIncs, id)
	delete(l.cluster.learnedFormats, id)
	l.cluster.learnMu.Unlock()
	if rec, _ := l.recordedIncarnation(id); rec != "" {
		return l.setMeta(ctx, memberKey(id), "")
	}
	return nil
}

func (l *Raft) membershipChange(ctx context.Context, f raft.IndexFuture) error {
	if l.cluster == nil || f == nil {
		return errors.New("this server is a cluster of one without a raft address: restart it with --node-id and --raft-addr first")
	}
	err := f.Error()
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return err
}

func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
	}
	return 10 * time.Second
}

// NodeStatus is one node's view of its log.
type NodeStatus struct {
	ID           string    `json:"id"`
	RaftAddr     string    `json:"raft_addr"`
	State        string    `json:"state"`
	Term         uint64    `json:"term"`
	LastIndex    uint64    `json:"last_index"`
	CommitIndex  uint64    `json:"commit_index"`
	AppliedIndex uint64    `json:"applied_index"`
	LeaderID     string    `json:"leader_id"`
	LeaderAddr   string    `json:"leader_raft_addr"`
	LastContact  time.Time `json:"last_contact,omitempty"`
	// LeaderChanges counts the leaders this node has seen elected.
	LeaderChanges uint64 `json:"leader_changes"`
	// EntryFormat is the log entry format this node writes, the
	// cluster's; ReadsFormat the newest it reads (format.go). In a
	// rolling upgrade the cluster writes the newer format once every
	// member reads it.
	EntryFormat int `json:"entry_format"`
	ReadsFormat int `json:"reads_format"`
}

// Status returns this node's view of the log.
func (l *Raft) Status() NodeStatus {
	la, li := l.raft.LeaderWithID()
	st := NodeStatus{
		ID: l.cfg.NodeID, State: l.raft.State().String(), Term: l.raft.CurrentTerm(),
		LastIndex: l.raft.LastIndex(), CommitIndex: l.raft.CommitIndex(), AppliedIndex: l.raft.AppliedIndex(),
		LeaderID: string(li), LeaderAddr: string(la),
		EntryFormat: int(l.format.Load()), ReadsFormat: int(maxEntryFormat),
	}
	if l.cluster != nil {
		st.RaftAddr = l.cluster.cfg.RaftAddr
		st.LeaderChanges = l.cluster.leaderChanges.Load()
		if l.raft.State() != raft.Leader {
			st.LastContact = l.raft.LastContact()
		}
	}
	return st
}

// followerReady says whether a follower can serve (by forwarding to the
// leader): it knows a leader and heard from it recently.
func (l *Raft) followerReady() error {
	if l.cluster == nil {
		return fmt.Errorf("this node is not the leader (it is %s)", l.raft.State())
	}
	if _, id := l.raft.LeaderWithID(); id == "" {
		return errors.New("no leader is known")
	}
	limit := 3 * l.raft.ReloadableConfig().HeartbeatTimeout
	if last := l.raft.LastContact(); last.IsZero() || time.Since(last) > limit {
		return errors.New("the leader has not been heard from recently")
	}
	return nil
}

// transferLeadership hands this leader's leadership to another member and
// waits for it, up to timeout, or until the log closes.
func (l *Raft) transferLeadership(timeout time.Duration) error {
	f := l.raft.LeadershipTransfer()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("not done within %v", timeout)
	case <-l.quit:
		return ErrClosed
	}
}

// leaveTimeout bounds how long a leader whose state machine stopped tries
// to hand its leadership over before it stops anyway.
const leaveTimeout = 5 * time.Second

// leaveOnFatal takes a member whose state machine stopped at an entry it
// cannot apply (fsm.fatal) out of the cluster's elections: a leader hands
// its leadership to another member first, then Raft stops on this node.
// Left running, the node would vote, could be elected, and would then
// refuse every write and answer reads from its state frozen at that entry
// (what an older fifoq meets in a rolling upgrade, since decoding is
// strict). The process stays up, not ready, saying why; the node takes
// part again once restarted with a fifoq that can apply the entry.
func (l *Raft) leaveOnFatal() {
	defer l.wg.Done()
	select {
	case <-l.fsm.fatalCh:
	case <-l.quit:
		return
	}
	index, err := l.fsm.failure()
	if l.raft.State() == raft.Leader {
		if terr := l.transferLeadership(leaveTimeout); terr != nil {
			l.logger.Warn("leadership not handed over; leaving the elections anyway", "err", terr)
		}
	}
	l.logger.Error("this node's state machine stopped: it leaves the cluster's elections until it is restarted with a fifoq that can apply the entry",
		"index", index, "err", err)
	l.markStopped()
	_ = l.shutdownRaft().Error()
}

// SetClockOff says whether this node's wall clock is off the cluster's by
// more than the cluster allows (why, or "" when it is not): while it is,
// the node refuses to lead, handing the leadership over if it has it, and
// is not ready. The server measures the clocks (its clock watch); the log
// enforces what follows. A cluster of one has no one to compare with.
func (l *Raft) SetClockOff(why string) {
	if l.cluster == nil {
		return
	}
	if why == "" {
		l.cluster.clockOff.Store(nil)
	} else {
		l.cluster.clockOff.Store(&why)
	}
	select {
	case l.cluster.wake <- raft.Observation{}:
	default:
	}
}
