package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/metrics"
	"github.com/fifoq/fifoq/internal/protocol"
	"github.com/fifoq/fifoq/internal/replog"
)

// clusterRuntime is what a clustered server runs beside the API: the
// node-to-node HTTP server and the watch that starts the leader's work
// where leadership goes.
type clusterRuntime struct {
	peerSrv *http.Server
	quit    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// initCluster sets the server up as a cluster member if its log is one.
func (s *Server) initCluster() {
	c := s.cfg.Raft
	if c == nil {
		return
	}
	s.status = c
	if !c.Clustered() {
		return
	}
	if err := s.metrics.WatchCluster(func() metrics.ClusterFigures {
		st := c.Status()
		return metrics.ClusterFigures{Role: st.State, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
			LastContact: st.LastContact, LeaderChanges: st.LeaderChanges, ClockOffsets: s.clocks.clockOffsets()}
	}); err != nil {
		s.logger.Warn("cluster metrics unavailable", "err", err)
	}
	if s.shards != nil {
		if err := s.metrics.WatchShards(s.shardFigures); err != nil {
			s.logger.Warn("shard metrics unavailable", "err", err)
		}
	}
	s.cluster = c
	s.fwd = newForwarder(c)
	s.clusterRT = &clusterRuntime{quit: make(chan struct{})}
	s.clusterRT.peerSrv = &http.Server{
		Handler:           s.peerHandler(),
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerConn{authenticated: replog.PeerAuthenticated(c)})
		},
		ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// peerHandler serves other nodes: the requests they forward and the
// cluster endpoints. An SQS request that no member forwarded is refused:
// the port is the nodes' own, not a second SQS endpoint.
func (s *Server) peerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(hdrForwardedBy) == "" {
			protocol.WriteError(w, protocol.Detect(r), api.ErrAccessDenied("This is the port by which the cluster's nodes reach each other; send SQS requests to a node's SQS endpoint."), newUUID())
			return
		}
		s.serveRouted(w, r)
	})
	// Reads of a queue's messages that another member forwards to a
	// replica of a partition's shard (read_parts.go).
	forwarded := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(hdrForwardedBy) == "" {
				writeJSONError(w, http.StatusForbidden, "This is the port by which the cluster's nodes reach each other; send requests to a node's SQS endpoint.")
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET "+ExportPath, forwarded(s.serveExport))
	mux.HandleFunc(devMessagesPath, forwarded(s.serveDevMessages))
	mux.HandleFunc(devMessagesPath+"/", forwarded(s.serveDevMessages))
	s.registerCluster(mux)
	return mux
}

// startCluster serves other nodes and follows leadership.
func (s *Server) startCluster() {
	rt := s.clusterRT
	if rt == nil {
		return
	}
	rt.once.Do(func() {
		rt.wg.Add(3)
		go func() {
			defer rt.wg.Done()
			// A failed peer port would leave the node unable to serve the
			// requests its peers forward: say so. It returns
			// http.ErrServerClosed when Shutdown closes it.
			if err := rt.peerSrv.Serve(s.cluster.PeerListener()); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logger.Error("the node-to-node port stopped serving", "err", err)
			}
		}()
		go func() {
			defer rt.wg.Done()
			s.watchClocks(rt.quit)
		}()
		go func() {
			defer rt.wg.Done()
			s.followLeadership()
		}()
	})
}

// stopCluster stops what startCluster started.
func (s *Server) stopCluster(ctx context.Context) {
	rt := s.clusterRT
	if rt == nil {
		return
	}
	select {
	case <-rt.quit:
	default:
		close(rt.quit)
	}
	_ = rt.peerSrv.Shutdown(ctx)
	rt.wg.Wait()
	s.fwd.close()
}

// followLeadership runs the leader's one-off work each time this node
// becomes leader: the move-task driver resumes the tasks the log holds,
// and Config.OnLeader (the config file's queues) runs. The periodic work
// (housekeeping, move-task ticks) checks leadership at every step.
func (s *Server) followLeadership() {
	leading := false
	for {
		changed := s.cluster.LeadershipChanged()
		now := s.cluster.Leading()
		if now && !leading {
			s.movers.kick()
			if s.cfg.OnLeader != nil {
				s.cfg.OnLeader(leaderContext(s.clusterRT.quit, s.cluster))
			}
		}
		leading = now
		select {
		case <-changed:
		case <-s.clusterRT.quit:
			return
		}
	}
}

// leaderContext is a context that ends when the server stops or this
// node stops leading.
func leaderContext(quit <-chan struct{}, c RaftLog) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for {
			changed := c.LeadershipChanged()
			if !c.Leading() {
				return
			}
			select {
			case <-changed:
			case <-quit:
				return
			}
		}
	}()
	return ctx
}

// readBarrier makes an API read linearizable in a cluster: it returns once
// this leader's state holds every write acknowledged before the read
// began. Reads that do not come over the API (the console's views, the
// config file's checks) read this node's state as it is.
func (s *Server) readBarrier(ctx context.Context) error {
	if s.cluster == nil || transportOf(ctx) == nil {
		return nil
	}
	return s.groupIn(ctx).raft.ReadBarrier(ctx)
}

// confirmNegative makes a negative answer read from this node's state,
// without the log (the queue does not exist, access is denied), as
// linearizable as a read: a leader deposed without knowing it yet would
// otherwise answer from a state the new leader has moved past (a queue
// created there since). It passes the read barrier and asks again; the
// second answer stands, or the barrier's retryable error. Any other error
// is returned as it is.
func (s *Server) confirmNegative(ctx context.Context, err error, again func() error) error {
	var e *api.Error
	if err == nil || s.cluster == nil || !errors.As(err, &e) || (e.Code != "QueueDoesNotExist" && e.Code != "AccessDenied") {
		return err
	}
	if berr := s.readBarrier(ctx); berr != nil {
		return berr
	}
	return again()
}

// ClusterMember is one member in GET /cluster/status.
type ClusterMember struct {
	replog.Member
	Leader bool `json:"leader"`
	// Status is the node's own view, asked of it; nil if it did not answer.
	Status *NodeInfo `json:"status,omitempty"`
	// Lag is how many committed entries the node has yet to apply,
	// against the highest commit index any member reported.
	Lag   uint64 `json:"lag"`
	Error string `json:"error,omitempty"`
}

// NodeInfo is a node's answer to GET /cluster/node: its log's view and
// the URL of its SQS endpoint.
type NodeInfo struct {
	replog.NodeStatus
	SQSEndpoint string `json:"sqs_endpoint,omitempty"`
	// Time is the node's wall clock when it answered, for the other
	// members' clock checks (clocks.go).
	Time time.Time `json:"time"`
	// Shards are the node's replicas of the cluster's shards, on a
	// member of a cluster with shards.
	Shards []ReplicaProgress `json:"shards,omitempty"`
}

// ReplicaProgress is a node's replica of one shard: its role and progress
// in the shard's group.
type ReplicaProgress struct {
	Shard        uint32 `json:"shard"`
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
}

// ClusterStatus is the answer of GET /cluster/status.
type ClusterStatus struct {
	Node     string          `json:"node_id"`
	LeaderID string          `json:"leader_id"`
	Members  []ClusterMember `json:"members"`
	// Shards are the cluster's shards beside its first group, each with
	// its replicas as the members that answered report them.
	Shards []ClusterShard `json:"shards,omitempty"`
}

// ClusterShard is one shard in GET /cluster/status: its leader and the
// replicas the members report.
type ClusterShard struct {
	Shard uint32 `json:"shard"`
	// LeaderID is the replica that reports itself leading, "" if none.
	LeaderID string         `json:"leader_id"`
	Replicas []ShardReplica `json:"replicas"`
}

// ShardReplica is one member's replica of a shard.
type ShardReplica struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Lag is how many of the shard's committed entries the replica has
	// yet to apply, against the highest commit index its replicas
	// reported.
	Lag uint64 `json:"lag"`
}

// LeaderInfo is the answer of GET /cluster/leader.
type LeaderInfo struct {
	LeaderID    string `json:"leader_id"`
	RaftAddr    string `json:"raft_addr"`
	SQSEndpoint string `json:"sqs_endpoint"`
}

// registerCluster adds the cluster endpoints to mux.
func (s *Server) registerCluster(mux *http.ServeMux) {
	mux.HandleFunc("GET /cluster/node", s.serveClusterNode)
	mux.HandleFunc("GET /cluster/status", s.serveClusterStatus)
	mux.HandleFunc("GET /cluster/leader", s.serveClusterLeader)
	mux.HandleFunc("POST /cluster/members", s.serveClusterAdd)
	mux.HandleFunc("DELETE /cluster/members/{id}", s.serveClusterRemove)
	mux.HandleFunc("POST /cluster/place", s.servePlace)
	mux.HandleFunc("POST /cluster/unsplit", s.serveUnsplit)
	mux.HandleFunc("GET /cluster/shards", s.serveClusterShards)
	mux.HandleFunc("POST /cluster/list", s.serveClusterList)
	mux.HandleFunc("GET "+clusterBackupPath, s.serveClusterBackup)
	mux.HandleFunc("POST "+clusterDoPath, s.serveClusterDo)
	mux.HandleFunc("POST "+moveStepPath, s.serveMoveStep)
	mux.HandleFunc("GET "+exportQueuePath, s.serveExportQueue)
	mux.HandleFunc("POST "+consoleReadPath, s.serveConsoleRead)
	mux.HandleFunc("POST "+installQueuePath, s.serveInstallQueue)
	mux.HandleFunc("POST /cluster/moves", s.serveClusterMove)
	mux.HandleFunc("POST /cluster/colocate", s.serveColocate)
}

// shardFigures are the figures of every group this node holds a replica
// of, for the per-shard metrics: none until the cluster has shards.
func (s *Server) shardFigures() []metrics.ShardFigures {
	if !s.sharded() {
		return nil
	}
	var out []metrics.ShardFigures
	for _, g := range s.allGroups() {
		st := g.raft.Status()
		f := metrics.ShardFigures{Shard: g.id, Role: st.State, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
			LeaderChanges: st.LeaderChanges}
		g.log.Read(func(e *engine.Engine) { f.Queues = e.QueueCount() })
		out = append(out, f)
	}
	return out
}

func (s *Server) nodeInfo() NodeInfo {
	info := NodeInfo{NodeStatus: s.status.Status(), SQSEndpoint: s.cfg.AdvertiseURL, Time: s.now()}
	if s.sharded() {
		for _, g := range s.allGroups()[1:] {
			st := g.raft.Status()
			info.Shards = append(info.Shards, ReplicaProgress{Shard: g.id, State: st.State, LeaderID: st.LeaderID, Term: st.Term,
				CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex})
		}
	}
	return info
}

// clusterShards gathers the shards' replicas that members report.
func clusterShards(members []ClusterMember) []ClusterShard {
	byID := map[uint32]*ClusterShard{}
	commit := map[uint32]uint64{}
	var ids []uint32
	for _, m := range members {
		if m.Status == nil {
			continue
		}
		for _, p := range m.Status.Shards {
			sh, ok := byID[p.Shard]
			if !ok {
				sh = &ClusterShard{Shard: p.Shard}
				byID[p.Shard] = sh
				ids = append(ids, p.Shard)
			}
			if p.State == "Leader" {
				sh.LeaderID = m.ID
			}
			commit[p.Shard] = max(commit[p.Shard], p.CommitIndex)
		}
	}
	slices.Sort(ids)
	out := make([]ClusterShard, 0, len(ids))
	for _, id := range ids {
		sh := byID[id]
		for _, m := range members {
			if m.Status == nil {
				continue
			}
			for _, p := range m.Status.Shards {
				if p.Shard == id {
					sh.Replicas = append(sh.Replicas, ShardReplica{ID: m.ID, State: p.State, Lag: commit[id] - min(commit[id], p.AppliedIndex)})
				}
			}
		}
		out = append(out, *sh)
	}
	return out
}

func (s *Server) serveClusterNode(w http.ResponseWriter, r *http.Request) {
	if s.status == nil {
		writeJSONError(w, http.StatusNotFound, "this server keeps its state in memory: it is no cluster member")
		return
	}
	writeJSON(w, http.StatusOK, s.nodeInfo())
}

// serveClusterLeader answers the leader's id and SQS endpoint: the leader
// answers for itself, a follower asks it.
func (s *Server) serveClusterLeader(w http.ResponseWriter, r *http.Request) {
	if s.status == nil {
		writeJSONError(w, http.StatusNotFound, "this server keeps its state in memory: it is no cluster member")
		return
	}
	if s.cluster == nil {
		info := s.nodeInfo()
		writeJSON(w, http.StatusOK, LeaderInfo{LeaderID: info.ID, SQSEndpoint: info.SQSEndpoint})
		return
	}
	local, addr, err := s.route(r)
	switch {
	case err != nil:
		writeJSONError(w, http.StatusServiceUnavailable, api.AsError(err).Message)
	case local:
		info := s.nodeInfo()
		writeJSON(w, http.StatusOK, LeaderInfo{LeaderID: info.ID, RaftAddr: info.RaftAddr, SQSEndpoint: info.SQSEndpoint})
	default:
		if err := s.forward(w, r, nil, addr); err != nil {
			writeJSONError(w, http.StatusServiceUnavailable, api.AsError(err).Message)
		}
	}
}

// serveClusterStatus asks every member for its view and puts them together.
func (s *Server) serveClusterStatus(w http.ResponseWriter, r *http.Request) {
	if s.status == nil {
		writeJSONError(w, http.StatusNotFound, "this server keeps its state in memory: it is no cluster member")
		return
	}
	self := s.nodeInfo()
	out := ClusterStatus{Node: self.ID, LeaderID: self.LeaderID}
	if s.cluster == nil {
		out.Members = []ClusterMember{{Member: replog.Member{ID: self.ID, Voter: true}, Leader: true, Status: &self}}
		writeJSON(w, http.StatusOK, out)
		return
	}
	members, err := s.cluster.Members()
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out.Members = make([]ClusterMember, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		out.Members[i] = ClusterMember{Member: m, Leader: m.ID == self.LeaderID}
		if m.ID == self.ID {
			info := self
			out.Members[i].Status = &info
			continue
		}
		wg.Add(1)
		go func(cm *ClusterMember) {
			defer wg.Done()
			info, err := s.askNode(r.Context(), cm.Addr)
			if err != nil {
				cm.Error = err.Error()
				return
			}
			cm.Status = info
		}(&out.Members[i])
	}
	wg.Wait()
	var commit uint64
	for _, m := range out.Members {
		if m.Status != nil && m.Status.CommitIndex > commit {
			commit = m.Status.CommitIndex
		}
	}
	for i, m := range out.Members {
		if m.Status != nil && commit > m.Status.AppliedIndex {
			out.Members[i].Lag = commit - m.Status.AppliedIndex
		}
	}
	out.Shards = clusterShards(out.Members)
	writeJSON(w, http.StatusOK, out)
}

// askNode asks another node for its view, over the node-to-node port.
func (s *Server) askNode(ctx context.Context, raftAddr string) (*NodeInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := s.askPeer(ctx, http.MethodGet, raftAddr, "/cluster/node", nil)
	var refused *peerRefusal
	switch {
	case errors.As(err, &refused):
		return nil, errors.New(refused.status)
	case err != nil:
		return nil, errors.New("no answer")
	}
	defer resp.Body.Close()
	var info NodeInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return nil, err
	}
	return &info, nil
}

// askPeer sends a request, as this member, to the member at raftAddr's
// node-to-node port, and returns the answer if it is 200 OK, for the
// caller to read and close. Another status is a *peerRefusal, with the
// start of what the member said.
func (s *Server) askPeer(ctx context.Context, method, raftAddr, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+raftAddr+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(hdrForwardedBy, s.cluster.NodeID())
	resp, err := s.fwd.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, &peerRefusal{status: resp.Status, msg: strings.TrimSpace(string(msg))}
	}
	return resp, nil
}

// peerRefusal is a member's answer other than 200 OK (askPeer).
type peerRefusal struct {
	status, msg string
}

func (e *peerRefusal) Error() string { return e.status + ": " + e.msg }

// memberRequest is the body of POST /cluster/members.
type memberRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	// Incarnation is the joining node's data dir's (a node started with
	// --join sends it; fifoq cluster add does not know it).
	Incarnation string `json:"incarnation,omitempty"`
	// Region is the joining node's --region (a node started with --join
	// sends it): a member of another region is refused, since the log's
	// commands leave the cluster's own region unsaid.
	Region string `json:"region,omitempty"`
}

// serveClusterAdd adds a voting member. An id that is a member already is
// refused with 409 Conflict (remove it first), unless a node asks again
// with the incarnation the cluster records for it.
func (s *Server) serveClusterAdd(w http.ResponseWriter, r *http.Request) {
	s.serveMembership(w, r, func(ctx context.Context, body []byte) error {
		var m memberRequest
		if err := json.Unmarshal(body, &m); err != nil || m.ID == "" || m.RaftAddr == "" {
			return errBadMember
		}
		if err := replog.CheckNodeID(m.ID); err != nil {
			return badRequest{err}
		}
		if err := replog.CheckRaftAddr(m.RaftAddr); err != nil {
			return badRequest{err}
		}
		if m.Region != "" && m.Region != s.cfg.Region {
			return badRequest{fmt.Errorf("node %s is started with --region %s, and this cluster's queues are of region %s: start it with --region %s and an empty data dir",
				m.ID, m.Region, s.cfg.Region, s.cfg.Region)}
		}
		return s.cluster.AddVoter(ctx, m.ID, m.RaftAddr, m.Incarnation)
	})
}

// serveClusterRemove removes a member.
func (s *Server) serveClusterRemove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.serveAdminChange(w, r, "change the cluster's membership", false, func(ctx context.Context, _ []byte) (any, error) {
		members, err := s.cluster.Members()
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(members, func(m replog.Member) bool { return m.ID == id }) {
			return nil, notFound{id}
		}
		if s.sharded() {
			// The member's replicas move to the others before it goes
			// (internal/shards/leave.go): a removal at once would leave
			// each of its shards a replica short until replaced.
			held, err := s.holding(ctx, id)
			if err != nil {
				return nil, err
			}
			if len(held) > 0 {
				return Draining{Node: id, Shards: held, Message: fmt.Sprintf("%s is leaving: its replicas move to the other members first; ask again to remove it once they have", id)}, nil
			}
		}
		if err := s.cluster.RemoveServer(ctx, id); err != nil {
			return nil, err
		}
		if s.sharded() {
			if err := s.shards.Drained(ctx, id); err != nil {
				// Harmless: a mark naming a member no more, or an older
				// incarnation of it, is not read.
				s.logger.Warn("could not clear a removed member's leaving mark", "node_id", id, "err", err)
			}
		}
		members, _ = s.cluster.Members()
		return map[string]any{"members": members}, nil
	})
}

// Draining answers a removal while the member's replicas move away (202
// Accepted): the removal is made when it is asked again once no shard
// holds a replica there. fifoq cluster remove asks until then.
type Draining struct {
	Node string `json:"draining"`
	// Shards are the shards that still hold a replica on the member, or
	// whose map still wants one there.
	Shards  []uint32 `json:"shards"`
	Message string   `json:"message"`
}

// holding marks member id leaving (Shards.Drain) and returns the shards
// that hold a replica on it still: those whose map wants one there, and
// those whose membership, as their leader sees it, names it. A shard
// whose leader is not among the replicas the map wants, or does not
// answer, counts as holding one: its membership is not known (a replica
// just added may not know it yet).
func (s *Server) holding(ctx context.Context, id string) ([]uint32, error) {
	held, err := s.shards.Drain(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, sh := range s.shards.Named() {
		if slices.Contains(held, sh) {
			continue
		}
		members, _, ok := s.shardMembersByLeader(ctx, sh)
		if !ok || slices.ContainsFunc(members, func(m replog.Member) bool { return m.ID == id }) {
			held = append(held, sh)
		}
	}
	slices.Sort(held)
	return held, nil
}

// shardMembersByLeader returns shard sh's membership as its leader last
// committed it, asking the replicas the map wants (this node's own, if it
// holds one, without asking), with the index of the entry that committed
// it; ok is false if none of them answers as leader. Not the membership
// the leader uses: it changes as the leader appends a removal, which may
// never commit, and a member removed on its word left shards with a voter
// gone. A replica that calls itself leader may be one deposed a moment
// ago, or one elected that has not yet applied what its predecessors
// committed: the index tells a caller whose own committed membership is
// newer to believe its own.
func (s *Server) shardMembersByLeader(ctx context.Context, sh uint32) (members []replog.Member, index uint64, ok bool) {
	if l, held := s.shards.Shard(sh); held && l.Leading() {
		return l.CommittedMembersAt()
	}
	for _, p := range s.shards.Replicas(sh) {
		if p.ID == s.status.NodeID() {
			continue
		}
		theirs, err := s.askShards(ctx, p.Addr)
		if err != nil {
			continue
		}
		for _, st := range theirs.Shards {
			if st.Shard == sh && st.Held && st.LeaderID == p.ID && len(st.Members) > 0 {
				return st.Members, st.MembersIndex, true
			}
		}
	}
	return nil, 0, false
}

// awaitOtherLeader waits, until ctx ends, for another member than this
// one to lead, and returns its Raft address ("" if none came).
func (s *Server) awaitOtherLeader(ctx context.Context) string {
	for {
		changed := s.cluster.LeadershipChanged()
		if id, addr := s.cluster.Leader(); id != "" && id != s.cluster.NodeID() && addr != "" {
			return addr
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ""
		}
	}
}

var errBadMember = badRequest{errors.New(`want a JSON body {"id": "NODE_ID", "raft_addr": "HOST:PORT"}`)}

// seenSignatures remembers the signatures of the membership requests this
// node carried out, for as long as a signature is valid, so that a request
// captured on the wire cannot be sent again to undo a later change (to
// remove a member added anew, say). It is this node's: a request replayed
// to another leader within the window is not caught.
type seenSignatures struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// first records signature, seen at now, and reports whether it is new. An
// empty signature (no credentials configured) is always new.
func (s *seenSignatures) first(signature string, now time.Time) bool {
	if signature == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sig, at := range s.seen {
		if now.Sub(at) > 2*auth.MaxClockSkew {
			delete(s.seen, sig)
		}
	}
	if _, dup := s.seen[signature]; dup {
		return false
	}
	if s.seen == nil {
		s.seen = map[string]time.Time{}
	}
	s.seen[signature] = now
	return true
}

type badRequest struct{ error }
type notFound struct{ id string }

func (e notFound) Error() string { return "no member has the id " + e.id }

// queueNotFound is a move's refusal of a queue that does not exist.
type queueNotFound struct{ url string }

func (e queueNotFound) Error() string { return "no queue " + e.url }

// serveMembership runs a membership change on the leader. The request must
// be signed (SigV4, as an SQS request) by an access key of the server's own
// account (--account); with no credentials configured it is accepted as
// every request is. A follower forwards the request unchanged to the
// leader, which checks the signature itself.
func (s *Server) serveMembership(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, body []byte) error) {
	s.serveAdminChange(w, r, "change the cluster's membership", false, func(ctx context.Context, body []byte) (any, error) {
		if err := change(ctx, body); err != nil {
			return nil, err
		}
		members, _ := s.cluster.Members()
		return map[string]any{"members": members}, nil
	})
}

// serveAdminChange runs a change of the cluster (what says which) on the
// first group's leader, as serveMembership does, and answers what change
// returns. A follower forwards the request to the leader; with
// leaderMayChange, it gives the forward up (503, retryable) once the
// first group names another leader, as it does an SQS request's: a
// leader cut off would otherwise hold the request until the client's
// timeout. A membership change is not given up (below).
func (s *Server) serveAdminChange(w http.ResponseWriter, r *http.Request, what string, leaderMayChange bool, change func(ctx context.Context, body []byte) (any, error)) {
	if s.cluster == nil {
		writeJSONError(w, http.StatusBadRequest, "this server is not a cluster member: start it with --node-id and --raft-addr first")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	local, addr, err := s.route(r)
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, api.AsError(err).Message)
		return
	}
	if !local {
		// A membership change is not given up on when the leadership
		// moves: a leader asked to remove itself hands the leadership over
		// and passes the request on to its successor, which answers.
		var watch RaftLog
		if leaderMayChange {
			watch = s.cluster
		}
		if err := s.forwardTo(w, r, body, 0, watch, addr); err != nil {
			writeJSONError(w, http.StatusServiceUnavailable, api.AsError(err).Message)
		}
		return
	}
	signature, ok := s.verifyAdmin(w, r, body, what)
	if !ok {
		return
	}
	if !s.membershipSigs.first(signature, time.Now()) {
		writeJSONError(w, http.StatusForbidden, "this request was already received: a request is carried out once (sign a new one)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	answer, err := change(ctx, body)
	if errors.Is(err, replog.ErrHandedOver) {
		// This node led and is to be removed: the new leader removes it.
		// (Even a request another member forwarded here goes on: this
		// node has just handed the leadership to the one it goes to.)
		if addr := s.awaitOtherLeader(ctx); addr != "" {
			if err = s.forward(w, r, body, addr); err == nil {
				return
			}
		}
	}
	var bad badRequest
	var nf notFound
	switch {
	case err == nil:
		status := http.StatusOK
		if _, ok := answer.(Draining); ok {
			status = http.StatusAccepted
		}
		writeJSON(w, status, answer)
	case errors.As(err, &bad):
		writeJSONError(w, http.StatusBadRequest, err.Error())
	case errors.As(err, &nf), errors.As(err, new(queueNotFound)):
		writeJSONError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, replog.ErrNotLeader):
		writeJSONError(w, http.StatusServiceUnavailable, err.Error()+"; retry")
	case errors.Is(err, replog.ErrAlreadyMember):
		writeJSONError(w, http.StatusConflict, err.Error())
	case errors.Is(err, replog.ErrOtherCluster):
		// Asking again cannot help: the node must be started anew.
		writeJSONError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSONError(w, http.StatusServiceUnavailable, "could not "+what+": "+err.Error())
	}
}

// verifyAdmin checks that r is signed by an admin key of the server's own
// account (the key of FIFOQ_ACCESS_KEY_ID, or a credentials file line
// ending in admin), and answers it with the refusal if not; the
// signature is returned for replay checks. what says what the key is
// needed for.
func (s *Server) verifyAdmin(w http.ResponseWriter, r *http.Request, body []byte, what string) (signature string, ok bool) {
	key, signature, err := s.verifier.VerifyKey(r, body)
	if err != nil {
		e := api.AsError(err)
		writeJSONError(w, e.Status, e.Code+": "+e.Message)
		return "", false
	}
	if !key.Admin || key.Account != s.cfg.Account {
		writeJSONError(w, http.StatusForbidden, "only an admin key of the server's own account ("+s.cfg.Account+") may "+what+": the key of FIFOQ_ACCESS_KEY_ID, or a credentials file line ending in the word admin")
		return "", false
	}
	return signature, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
