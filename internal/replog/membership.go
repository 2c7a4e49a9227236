package replog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
)

// Membership and what other nodes see of this one: the members, adding,
// promoting and removing them (only the leader can), this node's status,
// and the HTTP connections between nodes through the Raft port.

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
	return l.membersOf(f.Configuration().Servers), nil
}

// CommittedMembers returns the group's membership as last committed, as
// this replica knows it, and whether it knows one (a replica that has not
// yet applied a membership entry or restored a snapshot does not).
// Members answers the membership Raft uses, which a leader changes as it
// appends a change: what a removal waits for is this one.
func (l *Raft) CommittedMembers() ([]Member, bool) {
	members, _, ok := l.CommittedMembersAt()
	return members, ok
}

// CommittedMembersAt is CommittedMembers, with the index of the log entry
// (or snapshot) that committed the membership: of two answers, the one of
// the higher index is the newer.
func (l *Raft) CommittedMembersAt() ([]Member, uint64, bool) {
	c := l.fsm.committedConf.Load()
	if c == nil {
		return nil, 0, false
	}
	return l.membersOf(c.servers), c.index, true
}

// membersOf returns the members of a configuration, sorted by id, with
// the incarnations the state records.
func (l *Raft) membersOf(servers []raft.Server) []Member {
	out := make([]Member, 0, len(servers))
	l.Read(func(e *engine.Engine) {
		for _, s := range servers {
			out = append(out, Member{ID: string(s.ID), Addr: string(s.Address), Incarnation: e.Meta(memberKey(string(s.ID))), Voter: s.Suffrage == raft.Voter})
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
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
	if err := l.refuseOtherCluster(ctx, id, addr); err != nil {
		return err
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

// ErrHandedOver is RemoveServer's answer when asked to remove the leader
// itself: it handed its leadership to another member, which is to be
// asked instead.
var ErrHandedOver = errors.New("this node led the cluster and handed its leadership over to be removed: the new leader removes it")

// RemoveServer removes a member. Only the leader can. Asked to remove
// itself, the leader hands its leadership to another member first and
// returns ErrHandedOver, for the request to go to the new leader: a
// leader that removed itself would stop its log at once (Raft shuts a
// removed node down), before it could forget the member's incarnation,
// and answer a removal it had made with an error.
func (l *Raft) RemoveServer(ctx context.Context, id string) error {
	if id == l.cfg.NodeID && l.cluster != nil && l.raft.State() == raft.Leader {
		if err := l.transferLeadership(timeoutOf(ctx)); err != nil {
			return fmt.Errorf("hand the leadership over before this node's removal: %w", err)
		}
		return ErrHandedOver
	}
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
	// ClusterID is the id this node's state records for its cluster
	// (cluster_id.go), "" if none yet.
	ClusterID string `json:"cluster_id,omitempty"`
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
		st.ClusterID = l.clusterID()
		if l.raft.State() != raft.Leader {
			st.LastContact = l.raft.LastContact()
		}
	}
	return st
}
