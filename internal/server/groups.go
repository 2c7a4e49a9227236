package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// Shards is a cluster member's shards beside its first group (Config.Log):
// the Raft groups each holding some of the queues (internal/shards.Set is
// the one fifoq runs with). The server routes each request to the group
// of the queue it names and runs each group's leader work where that
// group is led.
type Shards interface {
	// Of returns the shard q lives in by this node's copy of the map, 0
	// (the first group) for a queue the map does not name.
	Of(q api.QueueKey) uint32
	// Place returns the shard the new queue q lives in, placing it first
	// (beside near, if not nil; else, among the emptiest shards, in one
	// the node origin is preferred to lead) if it has none. Only on the
	// first group's leader.
	Place(ctx context.Context, q api.QueueKey, near *api.QueueKey, origin string) (uint32, error)
	// Shard returns shard id's log, if this node holds a replica of it.
	Shard(id uint32) (*replog.Raft, bool)
	// Replicas returns the replicas the map wants shard id to have, at
	// their members' addresses: where a request for a shard this node
	// holds no replica of is sent.
	Replicas(id uint32) []replog.Peer
	// Named returns every shard the map names, ascending.
	Named() []uint32
	// PreferredLeaders returns, by shard, the node the map wants to lead
	// it (none for a shard it has no preference for).
	PreferredLeaders() map[uint32]string
	// IDs returns the shards this node holds a replica of, ascending.
	IDs() []uint32
	// Running reports whether the cluster's map names any shard: until
	// then the cluster is its first group alone, and requests are routed
	// as they are without shards.
	Running() bool
	// Move moves queue q to shard to and returns the shard it was in.
	// Only on the first group's leader (internal/shards/move.go).
	Move(ctx context.Context, q api.QueueKey, to uint32) (uint32, error)
	// MakeWhole gathers split queue q into one partition, for a request
	// that names it a dead-letter queue. Only on the first group's
	// leader (internal/shards/spread.go).
	MakeWhole(ctx context.Context, q api.QueueKey) error
	// Forget drops what the node cached of q's shard: a group answered
	// that q moved.
	Forget(q api.QueueKey)
	// Epoch returns the map's epoch under which the node's cached
	// records and layouts were read; it changes with every move, split
	// and merge.
	Epoch() string
	// AwaitChange waits until the map's epoch is other than epoch, and
	// reports whether it changed before deadline and before ctx ended.
	AwaitChange(ctx context.Context, epoch string, deadline time.Time) bool
	// PartOf returns the partition of queue q that holds the message
	// group of hash h (api.GroupHash), by this node's copy of the map: 0
	// for a queue never split (internal/shards/partitions.go).
	PartOf(q api.QueueKey, h uint32) uint32
	// IsSplit reports whether queue q is split into partitions, by this
	// node's copy of the map.
	IsSplit(q api.QueueKey) bool
	// Parts returns the partitions of queue q in the order of their
	// ranges, by this node's copy of the map: nil for a queue never
	// split.
	Parts(q api.QueueKey) []uint32
	// Unsplit forgets the partitions of queue q, deleted in every one,
	// so that a queue created again by its name starts whole. Only on
	// the first group's leader.
	Unsplit(ctx context.Context, q api.QueueKey) error
	// Splitting reports whether a partition of queue q splits or merges
	// now, by this node's copy of the map.
	Splitting(q api.QueueKey) bool
	// Drain marks member id leaving, so that the map moves its replicas
	// to the other members, and returns the shards the map still wants
	// a replica of on it. Only on the first group's leader
	// (internal/shards/leave.go).
	Drain(ctx context.Context, id string) ([]uint32, error)
	// Drained clears member id's leaving mark once it is removed.
	Drained(ctx context.Context, id string) error
	// Close closes every shard (before the first group).
	Close() error
}

// group is one Raft group the server applies commands through: the first
// (Config.Log) or a shard.
type group struct {
	id  uint32
	log replog.Log
	// raft is the group's view of its cluster; nil for a server alone.
	raft RaftLog
}

// leads reports whether this node may answer the group's requests and run
// its leader's work.
func (g *group) leads() bool { return g.raft == nil || !g.raft.Clustered() || g.raft.Leading() }

// groupKey marks a request's context with the group that serves it.
type groupKey struct{}

// withGroup returns ctx marked as served in g.
func withGroup(ctx context.Context, g *group) context.Context {
	return context.WithValue(ctx, groupKey{}, g)
}

// sharded reports whether requests are routed by the shard map.
func (s *Server) sharded() bool { return s.shards != nil && s.shards.Running() }

// groupIn returns the group ctx is served in: the first unless marked.
func (s *Server) groupIn(ctx context.Context) *group {
	if g, ok := ctx.Value(groupKey{}).(*group); ok {
		return g
	}
	return s.first
}

// groupSet holds the server's groups, built as they are first needed.
type groupSet struct {
	mu   sync.RWMutex
	byID map[uint32]*group
}

// groupByID returns group id if this node holds a replica of it.
func (s *Server) groupByID(id uint32) (*group, bool) {
	if id == 0 || s.shards == nil {
		return s.first, id == 0
	}
	l, ok := s.shards.Shard(id)
	if !ok {
		return nil, false
	}
	s.groups.mu.RLock()
	g, ok := s.groups.byID[id]
	s.groups.mu.RUnlock()
	if ok && g.log == replog.Log(l) {
		return g, true
	}
	// New, or opened anew after the map moved it away and back.
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	if g, ok := s.groups.byID[id]; ok && g.log == replog.Log(l) {
		return g, true
	}
	g = &group{id: id, log: l, raft: l}
	l.SetAvailableHook(s.notifier.signal)
	s.groups.byID[id] = g
	return g, true
}

// groupOf returns the group q lives in by this node's map (the first if
// this node does not run that shard yet).
func (s *Server) groupOf(q api.QueueKey) *group {
	if s.shards == nil {
		return s.first
	}
	if g, ok := s.groupByID(s.shards.Of(q)); ok {
		return g
	}
	return s.first
}

// logOf returns the log of q's group.
func (s *Server) logOf(q api.QueueKey) replog.Log { return s.groupOf(q).log }

// servedLog returns the log a request served in ctx reads its own queue q
// from: the group it is served in (withGroup), where its commands apply,
// so that a read answers as a write would. A queue moved, merged or split
// away from that group answers there with the retryable moving error (its
// engine keeps a marker), which sends the request round again; read by
// this node's map instead, which may have changed since the request was
// routed, it would answer from another group, the first group's
// QueueDoesNotExist for a partition merged away. A request served in no
// group reads q's group by this node's map.
func (s *Server) servedLog(ctx context.Context, q api.QueueKey) replog.Log {
	if g, ok := ctx.Value(groupKey{}).(*group); ok {
		return g.log
	}
	return s.groupOf(q).log
}

// queueLog returns the log a request served in ctx reads queue q's policy
// from, q being the request's own queue or another it names (a move
// task's source or destination): the group the request is served in
// (withGroup) if q is there, else q's group by this node's map. A request
// forwarded here was routed by its forwarder's map, which may name a
// queue just placed or moved before this node has applied that record;
// the group it was routed to holds the queue, where this node's map would
// look in another that does not (and pass over its policy).
func (s *Server) queueLog(ctx context.Context, q api.QueueKey) replog.Log {
	byMap := s.groupOf(q)
	if g, ok := ctx.Value(groupKey{}).(*group); ok && g != byMap {
		// Only where the two disagree is the queue looked for, so that a
		// request whose map agrees takes no extra read.
		var here bool
		g.log.Read(func(e *engine.Engine) { _, here = e.QueuePolicy(q) })
		if here {
			return g.log
		}
	}
	return byMap.log
}

// allGroups returns the first group and every shard this node runs.
func (s *Server) allGroups() []*group {
	out := []*group{s.first}
	if s.shards == nil {
		return out
	}
	for _, id := range s.shards.IDs() {
		if g, ok := s.groupByID(id); ok {
			out = append(out, g)
		}
	}
	return out
}

// queueOfRequest returns the queue a request acts on, for routing: the
// one its QueueUrl, its move task's source or its QueueName names. ok is
// false for the requests that name none (ListQueues).
func (s *Server) queueOfRequest(in api.Scope, req api.Request) (q api.QueueKey, ok bool) {
	if u, has := api.QueueURLOf(req); has {
		k, err := s.resolve(u, in)
		return k, err == nil
	}
	arnQueue := func(arn string) (api.QueueKey, bool) {
		k, ok := api.QueueOfARN(arn, s.cfg.Region)
		return s.placed(k), ok
	}
	switch r := req.(type) {
	case *api.CreateQueueRequest:
		return s.placed(api.QueueKey{Region: in.Region, Account: in.Account, Name: r.QueueName}), true
	case *api.GetQueueUrlRequest:
		account := in.Account
		if r.QueueOwnerAWSAccountId != "" {
			account = r.QueueOwnerAWSAccountId
		}
		return s.placed(api.QueueKey{Region: in.Region, Account: account, Name: r.QueueName}), true
	case *api.StartMessageMoveTaskRequest:
		return arnQueue(r.SourceArn)
	case *api.ListMessageMoveTasksRequest:
		return arnQueue(r.SourceArn)
	case *api.CancelMessageMoveTaskRequest:
		if arn, ok := engine.MoveTaskSource(r.TaskHandle); ok {
			return arnQueue(arn)
		}
	}
	return api.QueueKey{}, false
}

// deadLetterQueueOf returns the dead-letter queue a CreateQueue's redrive
// policy names, if any: the queue is placed beside it, since the engine
// moves a message to its dead-letter queue within one shard.
func (s *Server) deadLetterQueueOf(req *api.CreateQueueRequest) *api.QueueKey {
	raw, ok := req.Attributes[api.AttrRedrivePolicy]
	if !ok {
		return nil
	}
	var p struct {
		Target string `json:"deadLetterTargetArn"`
	}
	if json.Unmarshal([]byte(raw), &p) != nil {
		return nil
	}
	k, ok := api.QueueOfARN(p.Target, s.cfg.Region)
	if !ok {
		return nil
	}
	k = s.placed(k)
	return &k
}

// ShardStatus is one group in GET /cluster/shards: its members, leader
// and progress as this node sees them, and the queues it holds.
type ShardStatus struct {
	Shard uint32 `json:"shard"`
	// Held: this node holds a replica of the shard. The figures below
	// are its replica's; for a shard not held here, those of the replica
	// named Via, if one answered, else none.
	Held bool   `json:"held"`
	Via  string `json:"via,omitempty"`
	// Wanted are the nodes the map wants the shard's replicas on (every
	// member for shard 0), and PreferredLeader the one it wants to lead
	// it, where the leaders spread over the nodes.
	Wanted          []string `json:"wanted,omitempty"`
	PreferredLeader string   `json:"preferred_leader,omitempty"`
	LeaderID        string   `json:"leader_id"`
	State           string   `json:"state"` // this node's role in the group
	// Idle: the replica slowed its heartbeats, its shard idle
	// (internal/replog/pace.go).
	Idle         bool   `json:"idle,omitempty"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	// Members is the group's membership as last committed, as this
	// replica knows it (none while it knows none).
	Members []replog.Member `json:"members,omitempty"`
	// MembersIndex is the index of the log entry that committed Members.
	MembersIndex uint64 `json:"members_index,omitempty"`
	// Queues are the group's queues, "ACCOUNT/NAME" (or
	// "REGION/ACCOUNT/NAME" outside the node's region), sorted.
	Queues []string `json:"queues"`
	// Fenced names the queues fenced for a move (internal/shards/move.go),
	// with the move of each; absent when none is.
	Fenced map[string]string `json:"fenced,omitempty"`
	// Commands are the commands the replica applied on each queue since
	// it was started (engine.CommandsApplied), which the balancer reads
	// as the queues' loads; absent for a queue with none.
	Commands map[string]uint64 `json:"commands,omitempty"`
	// HighThroughput are the queues in high-throughput FIFO mode, which
	// the first group's leader spreads over partitions, with whether and
	// where each would split (engine.QueueLoad); absent when none is.
	HighThroughput map[string]SplitReading `json:"high_throughput,omitempty"`
}

// SplitReading is what a shard's replica says of one high-throughput
// queue's partition: engine.QueueLoad's Splittable, SplitAt and Sent.
type SplitReading struct {
	Splittable bool   `json:"splittable,omitempty"`
	SplitAt    uint32 `json:"split_at,omitempty"`
	Sent       bool   `json:"sent,omitempty"`
}

// ShardsStatus is GET /cluster/shards's answer: every group this node
// runs, the first (shard 0) first.
type ShardsStatus struct {
	Node   string        `json:"node"`
	Shards []ShardStatus `json:"shards"`
}

// serveClusterShards answers which queues each group holds and who leads
// it, from this node's replicas.
func (s *Server) serveClusterShards(w http.ResponseWriter, r *http.Request) {
	if s.status == nil {
		writeJSONError(w, http.StatusNotFound, "this server keeps its state in memory: it is no cluster member")
		return
	}
	out := ShardsStatus{Node: s.status.NodeID()}
	now := s.now().UnixNano()
	prefs := map[uint32]string{}
	if s.shards != nil {
		prefs = s.shards.PreferredLeaders()
	}
	for _, g := range s.allGroups() {
		st := ShardStatus{Shard: g.id, Held: true, Queues: []string{}, Wanted: s.wantedOf(g.id), PreferredLeader: prefs[g.id]}
		if g.raft != nil {
			ns := g.raft.Status()
			st.LeaderID, st.State, st.Term, st.CommitIndex, st.AppliedIndex = ns.LeaderID, ns.State, ns.Term, ns.CommitIndex, ns.AppliedIndex
			if p, ok := g.raft.(interface{ Idle() bool }); ok {
				st.Idle = p.Idle()
			}
			if g.raft.Clustered() {
				// As committed: a removal waits for it (holding), and a
				// change a leader appended may never commit.
				st.Members, st.MembersIndex, _ = g.raft.CommittedMembersAt()
			}
		}
		var stats []engine.QueueStats
		var fenced map[api.QueueKey]string
		var loads map[api.QueueKey]engine.QueueLoad
		g.log.Read(func(e *engine.Engine) {
			stats, fenced, loads = e.AppendQueueStats(nil, now), e.Fenced(), e.QueueLoads(now)
		})
		for q, l := range loads {
			if l.HighThroughput {
				if st.HighThroughput == nil {
					st.HighThroughput = map[string]SplitReading{}
				}
				st.HighThroughput[q.String()] = SplitReading{Splittable: l.Splittable, SplitAt: l.SplitAt, Sent: l.Sent}
			}
			if l.Applied == 0 {
				continue
			}
			if st.Commands == nil {
				st.Commands = map[string]uint64{}
			}
			st.Commands[q.String()] = l.Applied
		}
		for q, move := range fenced {
			if st.Fenced == nil {
				st.Fenced = map[string]string{}
			}
			st.Fenced[q.String()] = move
		}
		for _, q := range stats {
			st.Queues = append(st.Queues, q.Queue.String())
		}
		slices.Sort(st.Queues)
		out.Shards = append(out.Shards, st)
	}
	if s.shards != nil {
		// A shard held elsewhere is shown as one of its replicas sees it,
		// asked for its own groups only (?local), so that asking never
		// fans out further.
		local := r.URL.Query().Has("local")
		for _, id := range s.shards.Named() {
			if _, held := s.shards.Shard(id); !held {
				st := ShardStatus{Shard: id, Wanted: s.wantedOf(id), PreferredLeader: prefs[id]}
				if !local {
					s.fillFromReplica(r.Context(), &st)
				}
				out.Shards = append(out.Shards, st)
			}
		}
		slices.SortFunc(out.Shards, func(a, b ShardStatus) int { return int(a.Shard) - int(b.Shard) })
	}
	writeJSON(w, http.StatusOK, out)
}

// fillFromReplica fills st, a shard this node holds no replica of, with
// what the first of its replicas to answer says of it (its leader,
// progress, members and queues), and names that replica (Via).
func (s *Server) fillFromReplica(ctx context.Context, st *ShardStatus) {
	for _, p := range s.shards.Replicas(st.Shard) {
		theirs, err := s.askShards(ctx, p.Addr)
		if err != nil {
			continue
		}
		for _, sh := range theirs.Shards {
			if sh.Shard == st.Shard && sh.Held {
				st.Via, st.LeaderID, st.State, st.Term, st.Idle = p.ID, sh.LeaderID, sh.State, sh.Term, sh.Idle
				st.CommitIndex, st.AppliedIndex, st.Members, st.Queues, st.Fenced, st.Commands = sh.CommitIndex, sh.AppliedIndex, sh.Members, sh.Queues, sh.Fenced, sh.Commands
				st.MembersIndex = sh.MembersIndex
				return
			}
		}
	}
}

// askShards asks the member at raftAddr for the groups it holds
// (GET /cluster/shards?local).
func (s *Server) askShards(ctx context.Context, raftAddr string) (*ShardsStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := s.askPeer(ctx, http.MethodGet, raftAddr, "/cluster/shards?local", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st ShardsStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// wantedOf returns the nodes the map wants shard id's replicas on; for
// shard 0, every member.
func (s *Server) wantedOf(id uint32) []string {
	var out []string
	if id == 0 {
		if s.cluster != nil {
			members, _ := s.cluster.Members()
			for _, m := range members {
				out = append(out, m.ID)
			}
		}
		return out
	}
	if s.shards != nil {
		for _, p := range s.shards.Replicas(id) {
			out = append(out, p.ID)
		}
	}
	return out
}
