package replog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/third_party/raftnet"
)

// Shards: a cluster member runs several Raft groups. Its first group (the
// one OpenRaft opens with a ClusterConfig) owns the node's Raft port, says
// the node's hello and records the members' identities and the cluster's
// entry format; each other group, a shard, is a Raft of its own (its own
// directory, log, snapshots and engine) whose transport is a stream layer
// of the first group's per-peer sessions (sessions.go), so that every
// group of a node reaches a peer over one connection that said one hello.
//
// A shard's leader brings its membership to the replicas its node's map
// wants (ShardConfig.Want, followHost), one change at a time, so that the
// replicas follow the map as nodes join and leave. A shard writes the
// entry format the first group records, and needs no record of its own.

// ShardConfig makes a Raft log one shard of a cluster member.
type ShardConfig struct {
	// ID is the shard's number among the node's groups: 1 or more (the
	// first group is 0). It names the shard's streams on the connections
	// between nodes, so every node must give a shard the same ID.
	ID uint32
	// Host is the node's first group, already open; it must outlive the
	// shard (close the shards first).
	Host *Raft
	// Replicas are the shard's first members: a node among them whose
	// shard has no state yet bootstraps the shard with them. Every node
	// must be given the same list (the cluster's map records it, once);
	// a node not among them waits for the shard's leader to add it.
	Replicas []Peer
	// Want, if not nil, returns the replicas the shard is to have now
	// (the map's choice, which changes as nodes join and leave): its
	// leader adds and removes replicas until it has them. Nil, the
	// shard is replicated on every member of the first group.
	Want func() []Peer
	// Log, if not nil, is the node's shared log: a replica whose dir has
	// no log of its own keeps its entries there (sharedlog.go).
	Log *SharedLog
}

// check refuses a shard config that cannot work, and sets what a shard
// takes from its host.
func (s *ShardConfig) check(cfg *RaftConfig) error {
	if s == nil {
		return nil
	}
	switch {
	case s.ID == 0:
		return errors.New("shard 0 is the node's first group, not a shard")
	case s.Host == nil || s.Host.cluster == nil:
		return errors.New("a shard needs its node's first group, a cluster member")
	case cfg.Cluster != nil:
		return errors.New("a shard takes its cluster settings from its node's first group")
	}
	hostCluster := s.Host.cluster.cfg
	cfg.Cluster = &hostCluster
	cfg.NodeID = s.Host.cfg.NodeID
	if cfg.Engine.Region == "" {
		cfg.Engine.Region = s.Host.cfg.Engine.Region
	}
	return nil
}

// bootConfiguration is the membership a shard with no state starts with,
// and whether this node bootstraps it at all.
func (s *ShardConfig) bootConfiguration(self string, addr raft.ServerAddress) (raft.Configuration, bool, error) {
	var conf raft.Configuration
	found := false
	for _, p := range s.Replicas {
		if p.ID == self {
			found = true
			p.Addr = string(addr)
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	return conf, found, nil
}

// shardStreamBuffer is the size of the buffers at each end of a shard's
// Raft streams. hashicorp/raft's NetworkTransport gives every stream a
// 256 KiB writer where it sends and a 256 KiB reader where it answers, so
// that a leader's two streams to each follower (heartbeats, and its
// replication pipeline) cost 2 MiB a shard, idle or not: three quarters of
// an idle replica's heap (docs/benchmarks.md, "What an idle shard costs").
// raftnet is that transport with the sizes a setting, and speaks its
// protocol byte for byte. A heartbeat is a few dozen bytes; a larger
// message goes through the buffer in pieces, each a copy into the yamux
// session's frame buffer: a loaded shard was measured as fast with 16 KiB
// as with 256 KiB, and an idle replica's heap went from 1.05 to 0.40 MiB
// (docs/benchmarks.md, "What an idle shard costs").
const shardStreamBuffer = 16 << 10

// openShardNetwork gives a shard its transport: a stream layer of its
// host's sessions, with buffers of shardStreamBuffer.
func (o *opening) openShardNetwork() error {
	host := o.cfg.Shard.Host
	o.incarnation = host.incarnation
	layer, err := host.cluster.mux.GroupLayer(o.cfg.Shard.ID)
	if err != nil {
		return err
	}
	match := &replicaMatch{}
	trans := raftnet.NewNetworkTransportWithConfig(&raftnet.NetworkTransportConfig{
		Stream:            layer,
		MaxPool:           3,
		MaxRPCsInFlight:   pipelineDepth,
		Timeout:           10 * time.Second,
		Logger:            o.hlog,
		SendBufferSize:    shardStreamBuffer,
		ReceiveBufferSize: shardStreamBuffer,
		OnAppendEntries:   match.observe,
	})
	o.beats = host.cluster.mux.sessions.beats.wrap(o.cfg.Shard.ID, trans, match.observe)
	o.addr, o.transport = raft.ServerAddress(host.cluster.cfg.RaftAddr), o.beats
	o.cluster = &clusterState{cfg: host.cluster.cfg, mux: host.cluster.mux, trans: trans, changed: make(chan struct{}),
		learn: make(chan struct{}, 1), clockOff: host.cluster.clockOff, peersOff: host.cluster.peersOff, match: match}
	o.undo.push(func() { trans.Close() })
	return nil
}

// Shard returns the log's shard number: 0 for a node's first group.
func (l *Raft) Shard() uint32 {
	if l.cfg.Shard == nil {
		return 0
	}
	return l.cfg.Shard.ID
}

// followHost keeps a shard in step with its node's first group: it writes
// the format the first group records, and, while it leads, brings its
// membership to the replicas wanted (ShardConfig.Want), one change at a
// time.
func (l *Raft) followHost() {
	defer l.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		l.refreshFormat()
		if l.Leading() {
			if err := l.matchWanted(); err != nil {
				l.logger.Warn("shard: could not bring the shard's replicas to those wanted", "err", err)
			}
		}
		select {
		case <-tick.C:
		case <-l.quit:
			return
		}
	}
}

// wanted returns the voters the shard is to have: ShardConfig.Want's, or
// without it the first group's members (as their suffrage there).
func (l *Raft) wanted() (map[raft.ServerID]raft.Server, error) {
	want := map[raft.ServerID]raft.Server{}
	if fn := l.cfg.Shard.Want; fn != nil {
		for _, p := range fn() {
			want[raft.ServerID(p.ID)] = raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr), Suffrage: raft.Voter}
		}
		return want, nil
	}
	hf := l.host.raft.GetConfiguration()
	if err := hf.Error(); err != nil {
		return nil, err
	}
	for _, s := range hf.Configuration().Servers {
		want[s.ID] = s
	}
	return want, nil
}

// matchWanted makes one change that brings the shard's membership nearer
// the replicas wanted. In order:
//
//  1. a replica not wanted on a node that is no longer a member of the
//     cluster, or that this leader's heartbeats do not reach, is removed
//     first: such a node is gone (or leaving while down: a member
//     removed by fifoq cluster remove is drained first), and a replica
//     added before it is removed would have to catch up before the
//     group could commit again (its quorum would count the dead
//     replica);
//  2. a wanted replica is added (or its address corrected), without a
//     vote, and made a voter once it has caught up (replicaMatch);
//  3. a replica no longer wanted is removed, after the one that replaces
//     it votes: a move between two live nodes keeps the group's quorum
//     whole. A leader that is itself no longer wanted hands its
//     leadership to a wanted replica first.
func (l *Raft) matchWanted() error {
	want, err := l.wanted()
	if err != nil {
		return err
	}
	if len(want) == 0 {
		return nil
	}
	hf := l.host.raft.GetConfiguration()
	if err := hf.Error(); err != nil {
		return err
	}
	members := map[raft.ServerID]bool{}
	for _, s := range hf.Configuration().Servers {
		members[s.ID] = true
	}
	own := l.raft.GetConfiguration()
	if err := own.Error(); err != nil {
		return err
	}
	have := map[raft.ServerID]raft.Server{}
	for _, s := range own.Configuration().Servers {
		have[s.ID] = s
	}
	self := raft.ServerID(l.cfg.NodeID)
	for id := range want {
		if h, ok := have[id]; !ok || h.Suffrage == raft.Voter || h.Address != want[id].Address {
			// Not a replica waiting to vote: what was learnt of one
			// by its id is of an earlier replica.
			l.cluster.match.forget(id)
		}
	}
	const timeout = 10 * time.Second
	for _, id := range sortedIDs(have) {
		if _, ok := want[id]; !ok && id != self && (!members[id] || l.cluster.isUnheard(id)) {
			return l.logChange("remove the replica of a departed or unreachable node", id, l.raft.RemoveServer(id, 0, timeout).Error())
		}
	}
	waiting := false
	for _, id := range sortedIDs(want) {
		w := want[id]
		h, ok := have[id]
		switch {
		case ok && h.Address == w.Address && h.Suffrage == w.Suffrage:
			continue
		case ok && h.Address == w.Address && w.Suffrage == raft.Voter:
			caught, at, target := l.cluster.match.caughtUp(id, l.raft.CurrentTerm(), l.raft.LastIndex())
			if !caught {
				l.logger.Debug("shard: a new replica is catching up before it votes", "node_id", id, "matched", at, "target", target)
				waiting = true
				continue
			}
			return l.logChange("make a caught-up replica a voter", id, l.raft.AddVoter(id, w.Address, 0, timeout).Error())
		case ok && h.Suffrage == raft.Voter:
			return l.logChange("correct a voter's address", id, l.raft.AddVoter(id, w.Address, 0, timeout).Error())
		default:
			// A replica joins without a vote, whatever it is wanted
			// as: a voter once it has caught up (replicaMatch).
			return l.logChange("add non-voter", id, l.raft.AddNonvoter(id, w.Address, 0, timeout).Error())
		}
	}
	if waiting {
		// A replica no longer wanted stays until the one that replaces
		// it votes: the group keeps as many voters meanwhile.
		return nil
	}
	for _, id := range sortedIDs(have) {
		if _, ok := want[id]; ok {
			continue
		}
		if id == self {
			for _, to := range sortedIDs(want) {
				if want[to].Suffrage == raft.Voter && !l.peerClockOff(string(to)) && !l.PeerUnheard(string(to)) {
					return l.logChange("hand the leadership over to "+string(to)+", to leave", id, l.HandLeadershipTo(string(to), timeout))
				}
			}
			return nil
		}
		return l.logChange("remove", id, l.raft.RemoveServer(id, 0, timeout).Error())
	}
	return nil
}

// sortedIDs returns m's keys in order, so that every leader makes the
// same change first.
func sortedIDs(m map[raft.ServerID]raft.Server) []raft.ServerID {
	out := make([]raft.ServerID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// logChange says what a membership change did.
func (l *Raft) logChange(what string, id raft.ServerID, err error) error {
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, id, err)
	}
	l.logger.Info("shard: followed the cluster's membership", "change", what, "node_id", id)
	return nil
}

// WritesShardMap reports whether this node writes the log entry format
// that carries the shard map's records (format 7): until every member of
// the cluster reads it, the map cannot be written.
func (l *Raft) WritesShardMap() bool { return byte(l.format.Load()) >= minVersionShards }

// WritesMoves reports whether this node writes the log entry format that
// carries the steps of a queue's move between shards (format 8): until
// every member reads it, no queue moves.
func (l *Raft) WritesMoves() bool { return byte(l.format.Load()) >= minVersionMoves }

// WritesOutbox reports whether this node writes the log entry format that
// carries the outbox's commands and fences spanning redrives (format 10):
// until every member reads it, a queue and its dead-letter queue are not
// parted.
func (l *Raft) WritesOutbox() bool { return byte(l.format.Load()) >= minVersionOutbox }

// WritesPartitions reports whether this node writes the log entry format
// that names partitions of split queues, and fences queues whose message
// move tasks ended (format 11).
func (l *Raft) WritesPartitions() bool { return byte(l.format.Load()) >= minVersionPartitions }

// WritesImageBytes reports whether this node writes the log entry format
// that carries a move's image as bytes (format 12): once it does, every
// member runs a fifoq that takes an install as the image's bytes over the
// node-to-node port too.
func (l *Raft) WritesImageBytes() bool { return byte(l.format.Load()) >= minVersionImageBytes }

// EnsurePartitions makes the cluster write the log entry format of
// partitions (format 11), as the first command that needs it does, or
// says why it cannot yet (a member reads only older formats): called on
// the first group's leader before a split writes its first record.
func (l *Raft) EnsurePartitions(ctx context.Context) error {
	return l.formatFor(ctx, &engine.Command{Request: &engine.SplitQueueRequest{}}, minVersionPartitions)
}

// WritesSharedLog reports whether the cluster writes the log entry format
// that says every member keeps its new shard replicas in its node's
// shared log (format 9): until then a node keeps each in a log of its
// own, which the fifoq before reads too, so that it can still be put back.
// It reads the record as applied, not the format this node last took up
// (refreshed each second): a replica the map names in an entry after the
// raise is opened knowing of it.
func (l *Raft) WritesSharedLog() bool {
	return min(l.recordedFormat(), maxEntryFormat) >= minVersionSharedLog
}

// IsMember reports whether this node is in the group's membership as last
// committed, as this replica knows it (a replica removed may never learn
// it was); true while it knows none. Not the membership Raft uses, which
// a leader changes as it appends a change that may never commit.
func (l *Raft) IsMember() bool {
	c := l.fsm.committedConf.Load()
	if c == nil {
		return true // not known yet: keep the replica
	}
	return slices.ContainsFunc(c.servers, func(s raft.Server) bool { return string(s.ID) == l.cfg.NodeID })
}

// InLatestMembership reports whether this node is in the membership Raft
// uses: the latest it appended or was sent, committed or not. A follower
// is sent its own removal but never told that it committed, the leader
// having stopped replicating to it.
func (l *Raft) InLatestMembership() bool {
	f := l.raft.GetConfiguration()
	if f.Error() != nil {
		return true
	}
	return slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return string(s.ID) == l.cfg.NodeID })
}
