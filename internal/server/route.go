package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Routing on a node with shards (Config.Shards). A request is verified and
// decoded where it arrives, then routed by the queue it names to the
// leader of that queue's group: served here when this node leads it, else
// forwarded there, as a request is forwarded to the one leader of a
// cluster without shards. A queue's group comes from this node's copy of
// the shard map, which may lag the first group's leader by a moment:
//
//   - A queue the copy does not name is routed to the first group's
//     leader, whose map is current; if that leader finds the queue in a
//     shard, it answers 421 naming the shard (hdrGroup), and the node
//     routes the request there (misdirected).
//   - A forwarded request says the group it was routed to (hdrGroup): the
//     receiver takes it when its own copy does not name the queue, since
//     a queue's record, once written, never changes.
//   - CreateQueue places the queue first, on the first group's leader
//     (asked over the node-to-node port when it is another node:
//     /cluster/place), so that a name is in one shard only.
//   - A shard this node holds no replica of is reached through the
//     replicas the map wants it on: its leader, once a 421 from one of
//     them has named it (noteLeader), else one replica after another.

// hdrGroup names, on a forwarded request, the group the forwarder routed
// it to; on a 421 answer, the group the request belongs to. hdrLeader, on
// a 421 answer, names the node that leads that group as far as the
// answering node knows ("" if it does not, or holds no replica of it).
const (
	hdrGroup  = "X-Fifoq-Group"
	hdrLeader = "X-Fifoq-Leader"
)

// misdirectedError is a node's answer to a request forwarded to it that
// it does not serve: the queue lives in another group than the forwarder
// thought, or this node does not lead the group (leader is who does, if
// it knows).
type misdirectedError struct {
	group  uint32
	leader string
}

func (e *misdirectedError) Error() string {
	if e.leader != "" {
		return fmt.Sprintf("the queue lives in shard %d, led by node %s", e.group, e.leader)
	}
	return fmt.Sprintf("the queue lives in shard %d", e.group)
}

// maxRoutes bounds how many times a node routes one request anew after a
// 421: a map that lags, then a leadership that moved, then a replica that
// is down take three.
const maxRoutes = 4

// routeShard returns the shard that serves req, on a node with shards,
// and the partition of its queue it is served on (partition_route.go),
// placing the queue first if req creates one. A forwarded request is
// routed as its forwarder said (hintGroup, hintPart) when this node's map
// does not name the queue, or its partition.
func (s *Server) routeShard(ctx context.Context, r *http.Request, in api.Scope, req api.Request) (uint32, uint32, error) {
	q, named := s.queueOfRequest(in, req)
	if !named {
		return 0, 0, nil
	}
	if cq, ok := req.(*api.CreateQueueRequest); ok && !fromPeer(r) {
		if err := api.Validate(req); err != nil {
			return 0, 0, err // answered where it arrived, without placing
		}
		id, err := s.placeQueue(ctx, q, s.deadLetterQueueOf(cq))
		return id, 0, err
	}
	if with, joins := s.partnerOf(req); joins && !fromPeer(r) {
		first, second := q, with
		_, task := req.(*api.StartMessageMoveTaskRequest)
		if task {
			// The task's destination goes beside the dead-letter
			// queue, rather than the dead-letter queue away from the
			// queues it serves.
			first, second = with, q
		}
		// A dead-letter queue named by a redrive policy is one
		// partition; a task's destination may stay split. (A standard
		// queue's is refused anyway: a split queue is FIFO.)
		whole := !task && strings.HasSuffix(q.Name, ".fifo")
		if err := s.colocate(ctx, first, second, whole); err != nil {
			return 0, 0, err
		}
	}
	q.Part = s.partitionOf(q, req)
	if q.Part == 0 && fromPeer(r) {
		q.Part = hintPart(r)
	}
	id := s.shards.Of(q)
	if id == 0 && fromPeer(r) {
		id = hintGroup(r)
	}
	return id, q.Part, nil
}

// misrouted returns the answer to give for err, the answer of the group
// ctx serves in to req: the retryable moving error in place of a
// QueueDoesNotExist that says only that the request was routed by
// another map than this node's copy now: the route of a
// forwarder whose copy lags, or a shard from one member's copy paired
// with a partition from another's (a 421 names the shard of the partition
// its sender would have chosen). By this node's copy the partition lives
// in another group, or, for a partition other than 0, no longer exists
// (merged away, or its queue deleted since). Nothing was carried out; the
// request is answered as one that met its queue moving, and routed
// again. A queue whose record is this group's, or that no record names
// and group 0 answered for, does not exist.
func (s *Server) misrouted(ctx context.Context, in api.Scope, req api.Request, err error) error {
	var ae *api.Error
	if err == nil || s.shards == nil || !errors.As(err, &ae) || ae.Code != "QueueDoesNotExist" {
		return err
	}
	q, named := s.queueOfRequest(in, req)
	if !named {
		return err
	}
	q.Part = partOf(ctx)
	if at := s.shards.Of(q); at != s.groupIn(ctx).id || q.Part != 0 && at == 0 {
		return engine.ErrQueueMoving()
	}
	return err
}

// hintGroup returns the group a forwarded request was routed to.
func hintGroup(r *http.Request) uint32 {
	n, err := strconv.ParseUint(r.Header.Get(hdrGroup), 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// serveInGroup serves a decoded request on a node with shards: here, if
// this node leads the request's group (it returns the context to serve
// it in, handled false), else by forwarding it to that group's leader
// (handled true: the answer is written). A request another node
// forwarded is served here or answered 421 (servePeerRouted).
func (s *Server) serveInGroup(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, in api.Scope, req api.Request) (context.Context, bool, error) {
	if !fromPeer(r) {
		r.Header.Del(hdrPart) // a member's word, never a client's
	}
	id, part, err := s.routeShard(ctx, r, in, req)
	if err != nil {
		return ctx, false, err
	}
	ctx = withPart(ctx, part)
	if fromPeer(r) {
		return s.servePeerRouted(ctx, r, id)
	}
	if part != 0 {
		r.Header.Set(hdrPart, strconv.FormatUint(uint64(part), 10)) // forwarded with it
	}
	for route := 0; route < maxRoutes; route++ {
		if route > 0 {
			// A leadership moving, or a replica that is down: give the
			// cluster a moment before asking again.
			select {
			case <-time.After(time.Duration(route) * 50 * time.Millisecond):
			case <-ctx.Done():
				return ctx, false, api.ErrServiceUnavailable("The request ended while its queue's shard was being found.")
			}
		}
		if g, local := s.groupByID(id); local {
			here, addr, err := s.routeIn(r, g.raft)
			if err != nil {
				return ctx, false, err
			}
			if here {
				return withGroup(ctx, g), false, nil
			}
			err = s.forwardLoop(w, r, body, g, addr)
			if errors.Is(err, errServeHere) {
				return withGroup(ctx, g), false, nil
			}
			var mis *misdirectedError
			if !errors.As(err, &mis) {
				return ctx, true, err
			}
			id = mis.group
			s.noteLeader(mis)
			continue
		}
		err := s.forwardToReplica(w, r, body, id, route)
		var mis *misdirectedError
		if !errors.As(err, &mis) {
			return ctx, true, err
		}
		id = mis.group
		s.noteLeader(mis)
	}
	return ctx, true, api.ErrServiceUnavailable("The leader of the queue's shard could not be found; retry.")
}

// servePeerRouted decides for a request another node forwarded for
// shard id: served here if this node leads it, else answered 421 with
// what this node knows, for the forwarder to route again.
func (s *Server) servePeerRouted(ctx context.Context, r *http.Request, id uint32) (context.Context, bool, error) {
	g, local := s.groupByID(id)
	if local && g.leads() {
		return withGroup(ctx, g), false, nil
	}
	leader := ""
	if local && g.raft != nil {
		leader, _ = g.raft.Leader()
	}
	if id != 0 && hintGroup(r) == 0 && s.first.leads() {
		// The forwarder's map did not name the queue; this node's,
		// shard 0's leader's, does.
		return ctx, false, &misdirectedError{group: id, leader: leader}
	}
	if local && leader == s.cluster.NodeID() {
		leader = "" // elected, not yet ready: the forwarder asks again
	}
	return ctx, false, &misdirectedError{group: id, leader: leader}
}

// noteLeader remembers the leader a 421 named for its group, for the
// groups this node holds no replica of.
func (s *Server) noteLeader(mis *misdirectedError) {
	if mis.leader != "" {
		s.leaders.Store(mis.group, mis.leader)
	} else {
		s.leaders.Delete(mis.group)
	}
}

// forwardToReplica forwards a request for shard id, of which this node
// holds no replica, to the shard's leader if this node has learnt it
// (noteLeader) and it is still among the replicas the map wants, else to
// one of those replicas, the next one at each route: a replica that does
// not lead answers 421 naming its leader. A replica that cannot be
// reached counts as one that named none.
//
// This node follows no election of the shard, so while the forward waits
// it asks the shard's other replicas who leads (watchRemoteLeader): a
// leader that froze or was cut off is replaced by its group within
// seconds, and the forward to it is then given up (a retryable error, as
// on a node that holds a replica: the request may or may not have been
// carried out) and the new leader remembered for the retry.
func (s *Server) forwardToReplica(w http.ResponseWriter, r *http.Request, body []byte, id uint32, route int) error {
	replicas := s.shards.Replicas(id)
	if len(replicas) == 0 {
		return api.ErrServiceUnavailable("Shard %d has no replica in this node's map yet; retry.", id)
	}
	target := replicas[route%len(replicas)]
	if v, ok := s.leaders.Load(id); ok {
		for _, p := range replicas {
			if p.ID == v.(string) {
				target = p
			}
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Most forwards are answered long before the first look: they pay
	// for a timer, not for a goroutine and a ticker.
	watch := time.AfterFunc(remoteLeaderCheck, func() { s.watchRemoteLeader(ctx, cancel, id, target.ID) })
	defer watch.Stop()
	err := s.sendForward(ctx, w, r, body, id, target.Addr)
	var mis *misdirectedError
	switch {
	case errors.Is(err, errNotSent):
		s.leaders.CompareAndDelete(id, target.ID)
		return &misdirectedError{group: id}
	case err != nil && !errors.As(err, &mis) && !errors.Is(err, errMovedOn):
		// Unanswered: ask the replicas afresh next time, unless the watch
		// has learnt the new leader.
		s.leaders.CompareAndDelete(id, target.ID)
	}
	return err
}

// remoteLeaderCheck is how often a forward to a shard this node holds no
// replica of asks the shard's other replicas who leads.
const remoteLeaderCheck = 500 * time.Millisecond

// watchRemoteLeader looks at once, then every remoteLeaderCheck, and
// cancels a forward to target, sent for shard id, once another replica of
// the shard names another leader, which it remembers (noteLeader) for the
// request's retry. A replica whose view lags (it names a leader at a term
// below one at which another replica named target) is not believed.
func (s *Server) watchRemoteLeader(ctx context.Context, cancel context.CancelFunc, id uint32, target string) {
	tick := time.NewTicker(remoteLeaderCheck)
	defer tick.Stop()
	var targetTerm uint64 // the highest term at which a replica named target
	for first := true; ; first = false {
		if !first {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		v, ok := s.remoteViews.get(ctx, s, id, target)
		switch {
		case !ok:
		case v.leader == target:
			targetTerm = max(targetTerm, v.term)
		case v.leader != "" && v.term > targetTerm:
			s.leaders.Store(id, v.leader)
			cancel()
			return
		}
	}
}

// askLeader sends a request for group id to member, which this node takes
// for its leader, at raftAddr, as askPeer does, and hands the answer to
// read; given up on once the group is found led by another (whileLeads).
func (s *Server) askLeader(ctx context.Context, id uint32, held bool, g *group, member, raftAddr, method, path string, body []byte, read func(*http.Response) error) error {
	ctx, stop := s.whileLeads(ctx, id, held, g, member, nil)
	defer stop()
	resp, err := s.askPeer(ctx, method, raftAddr, path, bytes.NewReader(body))
	if err != nil {
		if errors.Is(context.Cause(ctx), errLeaderChanged) {
			return fmt.Errorf("shard %d is now led by another member than %s: %w", id, member, err)
		}
		return err
	}
	defer resp.Body.Close()
	return read(resp)
}

// whileLeads returns ctx, ended (with the cause errLeaderChanged) once
// group id is found led by another member than member, and the function
// that stops watching. A leader cut off or frozen answers nothing until
// a request's deadline, while its group elects another within seconds:
// this node's replica of the group (g, if held: watchForwardTarget, as
// for a forwarded SQS request), or if it holds none one of the group's
// other replicas (watchRemoteLeader), names the new one, and a request
// to the old is given up, for the caller to send it again there. Once
// answering (if not nil) is set, a change of leader no longer ends ctx:
// the member answers, as the leader it was when asked.
func (s *Server) whileLeads(ctx context.Context, id uint32, held bool, g *group, member string, answering *atomic.Bool) (context.Context, func()) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	changed := func() {
		if answering == nil || !answering.Load() {
			cancelCause(errLeaderChanged)
		}
	}
	if held && g.raft != nil {
		go watchForwardTarget(ctx, changed, g.raft, member)
		return ctx, func() { cancelCause(nil) }
	}
	watch := time.AfterFunc(remoteLeaderCheck, func() { s.watchRemoteLeader(ctx, changed, id, member) })
	return ctx, func() { watch.Stop(); cancelCause(nil) }
}

// errLeaderChanged is why askLeader gave a request up.
var errLeaderChanged = errors.New("the group's leader changed")

// remoteViews caches, by shard and by the leader a forward waits on, what
// one of the shard's other replicas last said of its leadership, for
// remoteLeaderCheck: every long poll forwarded to a shard held elsewhere
// waits on its leader, and one question a round serves them all.
type remoteViews struct {
	mu    sync.Mutex
	views map[remoteKey]*remoteView
}

type remoteKey struct {
	shard  uint32
	target string
}

// remoteView is one answer: who leads, at which term.
type remoteView struct {
	mu     sync.Mutex // held while the replicas are asked
	at     time.Time
	ok     bool
	leader string
	term   uint64
}

// get returns what a replica of shard id other than target last said of
// its leader, asking one if the last answer is older than
// remoteLeaderCheck; ok is false if none answered.
func (rv *remoteViews) get(ctx context.Context, s *Server, id uint32, target string) (remoteView, bool) {
	key := remoteKey{id, target}
	rv.mu.Lock()
	if rv.views == nil {
		rv.views = map[remoteKey]*remoteView{}
	}
	v, ok := rv.views[key]
	if !ok {
		v = &remoteView{}
		rv.views[key] = v
	}
	// Entries of leaders no forward waits on any more go when stale.
	for k, o := range rv.views {
		if o != v && o.mu.TryLock() {
			if time.Since(o.at) > time.Minute {
				delete(rv.views, k)
			}
			o.mu.Unlock()
		}
	}
	rv.mu.Unlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	if time.Since(v.at) >= remoteLeaderCheck {
		v.ok = false
		for _, p := range s.shards.Replicas(id) {
			if p.ID == target {
				continue
			}
			if v.leader, v.term, v.ok = s.askShardLeader(ctx, p.Addr, id); v.ok {
				break // one replica's answer a round
			}
		}
		v.at = time.Now()
	}
	return remoteView{ok: v.ok, leader: v.leader, term: v.term}, v.ok
}

// askShardLeader asks the member at raftAddr which node leads shard id as
// it sees it ("" if it knows none), and at which term; ok is false if it
// did not answer or holds no replica of the shard.
func (s *Server) askShardLeader(ctx context.Context, raftAddr string, id uint32) (leader string, term uint64, ok bool) {
	info, err := s.askNode(ctx, raftAddr)
	if err != nil {
		return "", 0, false
	}
	for _, p := range info.Shards {
		if p.Shard == id {
			return p.LeaderID, p.Term, true
		}
	}
	return "", 0, false
}

// placeQueue returns the shard of the new queue q, placing it on the
// first group's leader: here, or asked over the node-to-node port.
func (s *Server) placeQueue(ctx context.Context, q api.QueueKey, near *api.QueueKey) (uint32, error) {
	if id := s.shards.Of(q); id != 0 {
		return id, nil
	}
	deadline := time.Now().Add(leaderWait)
	for {
		if s.first.leads() {
			return s.shards.Place(ctx, q, near, s.cluster.NodeID())
		}
		_, addr := s.cluster.Leader()
		if addr != "" {
			id, err := s.askPlace(ctx, addr, placeRequest{Queue: q, Near: near, Origin: s.cluster.NodeID()})
			if err == nil {
				return id, nil
			}
			if time.Now().After(deadline) {
				return 0, api.ErrServiceUnavailable("The cluster's leader could not place the queue (%v); retry.", err)
			}
		} else if time.Now().After(deadline) {
			return 0, api.ErrServiceUnavailable("The cluster has no leader now to place the queue; retry.")
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return 0, api.ErrServiceUnavailable("The request ended before the queue was placed.")
		}
	}
}

// placeRequest is the body of POST /cluster/place, and placeAnswer its
// answer.
type placeRequest struct {
	Queue api.QueueKey  `json:"queue"`
	Near  *api.QueueKey `json:"near,omitempty"`
	// Origin is the asking node's id: the queue's creation arrived there,
	// and its client is likely to send the queue's requests there too.
	Origin string `json:"origin,omitempty"`
}

type placeAnswer struct {
	Shard uint32 `json:"shard"`
}

// askPlace asks the first group's leader at raftAddr to place a queue.
func (s *Server) askPlace(ctx context.Context, raftAddr string, p placeRequest) (uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, _ := json.Marshal(p)
	resp, err := s.askPeer(ctx, http.MethodPost, raftAddr, "/cluster/place", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var a placeAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&a); err != nil {
		return 0, err
	}
	return a.Shard, nil
}

// servePlace places a queue for another member (askPlace). It answers
// only on the node-to-node port, and only where the first group is led.
func (s *Server) servePlace(w http.ResponseWriter, r *http.Request) {
	if !fromPeer(r) || s.shards == nil {
		writeJSONError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	var p placeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&p); err != nil || p.Queue.Name == "" || p.Queue.Account == "" {
		writeJSONError(w, http.StatusBadRequest, "want {\"queue\": {...}}")
		return
	}
	if !s.first.leads() {
		writeJSONError(w, http.StatusServiceUnavailable, "this node does not lead the cluster's first group")
		return
	}
	id, err := s.shards.Place(r.Context(), p.Queue, p.Near, p.Origin)
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, placeAnswer{Shard: id})
}

// listQueuesOfAllGroups answers ListQueues from every shard's engine, as
// one list: each shard's page after the token, merged by name and cut to
// the page size. The shards are read at once, each by its leader where it
// answers (listOfShard; POST /cluster/list where that is another node),
// once the replica read has applied what it knows committed
// (replog.Raft.CaughtUp), so that a queue whose creation was answered is
// listed.
func (s *Server) listQueuesOfAllGroups(ctx context.Context, cmd *engine.Command, r *api.ListQueuesRequest) (api.Response, error) {
	var urls []string
	more := false
	add := func(res *api.ListQueuesResult) {
		urls = append(urls, res.QueueUrls...)
		more = more || res.NextToken != ""
	}
	// The shards are asked at once: a list waits for the slowest shard,
	// not for the sum of them (each up to listLeaderWait where a shard
	// has no leader).
	ids := s.shards.Named()
	pages := make([]*api.ListQueuesResult, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			pages[i], errs[i] = s.listOfShard(ctx, id, cmd, listRequest{Shard: id, Time: cmd.Time, Caller: cmd.Caller, Region: cmd.Region, Request: *r})
		})
	}
	res, err := s.listLocal(ctx, s.first, cmd)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	add(res)
	for i := range ids {
		if errs[i] != nil {
			return nil, errs[i]
		}
		add(pages[i])
	}
	// A queue moving between shards is in both for a moment.
	slices.Sort(urls)
	urls = slices.Compact(urls)
	limit := api.MaxListQueuesResults
	if r.MaxResults != nil {
		limit = min(max(*r.MaxResults, 1), api.MaxListQueuesResults)
	}
	if len(urls) > limit {
		urls, more = urls[:limit], true
	}
	out := &api.ListQueuesResult{QueueUrls: urls}
	if more && r.MaxResults != nil && len(urls) > 0 {
		last := urls[len(urls)-1]
		out.NextToken = engine.ListToken(last[strings.LastIndexByte(last, '/')+1:])
	}
	return out, nil
}

// listOfShard answers shard id's page of a ListQueues at the shard's
// leader (readAtLeader, which says why): this node's replica where it
// leads the shard, else the leader's, asked with POST /cluster/list; for
// a shard this node holds no replica of, the leader it last learnt of,
// else one of its replicas, which passes the list on to its leader if it
// follows (listAtLeader). Where no leader answers within listLeaderWait,
// the list is this node's replica's or, without one, any replica's that
// answers.
func (s *Server) listOfShard(ctx context.Context, id uint32, cmd *engine.Command, lr listRequest) (*api.ListQueuesResult, error) {
	b, _ := json.Marshal(lr)
	var res *api.ListQueuesResult
	done, asked := s.readAtLeader(ctx, id, listLeaderWait, func(ctx context.Context, addr string) (err error) {
		res, err = s.askListOf(ctx, addr, b)
		return err
	})
	if done {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, api.ErrServiceUnavailable("The request ended while shard %d's leader was asked for its queues; retry.", id)
	}
	if g, held := s.groupByID(id); held {
		return s.listLocal(ctx, g, cmd)
	}
	return s.askList(ctx, id, b, asked)
}

// listLeaderWait bounds how long a ListQueues waits for a shard's leader
// before it reads a replica instead: a leader that has just failed is
// replaced within a second or two, and the list should not wait longer.
const listLeaderWait = 3 * time.Second

// listLocal answers a ListQueues command from group g's replica here,
// once it has applied what it knows committed.
func (s *Server) listLocal(ctx context.Context, g *group, cmd *engine.Command) (*api.ListQueuesResult, error) {
	if err := s.caughtUp(ctx, g); err != nil {
		return nil, err
	}
	var resp api.Response
	var err error
	g.log.Read(func(e *engine.Engine) { resp, err = e.Read(cmd) })
	if err != nil {
		return nil, err
	}
	return resp.(*api.ListQueuesResult), nil
}

// caughtUp waits until this node's replica of shard g has applied what it
// knows committed (replog.Raft.CaughtUp); the first group's reads do not
// wait.
func (s *Server) caughtUp(ctx context.Context, g *group) error {
	if g == s.first {
		return nil
	}
	if l, ok := s.shards.Shard(g.id); ok {
		return l.CaughtUp(ctx)
	}
	return nil
}

// listRequest is the body of POST /cluster/list: a ListQueues of one
// shard, as the node that was asked received it.
type listRequest struct {
	Shard   uint32                `json:"shard"`
	Time    int64                 `json:"time"`
	Caller  string                `json:"caller"`
	Region  string                `json:"region,omitempty"`
	Request api.ListQueuesRequest `json:"request"`
	// Relayed marks a list that a follower of the shard passed on to its
	// leader (serveClusterList): answered from the replica asked, never
	// passed on again.
	Relayed bool `json:"relayed,omitempty"`
}

// askList asks the replicas of shard id but the one at raftAddr asked,
// which did not answer, in turn, for the shard's page of a ListQueues.
func (s *Server) askList(ctx context.Context, id uint32, b []byte, asked string) (*api.ListQueuesResult, error) {
	var last error = errors.New("no replica")
	for _, p := range s.shards.Replicas(id) {
		if p.Addr == asked {
			continue
		}
		res, err := s.askListOf(ctx, p.Addr, b)
		if err == nil {
			return res, nil
		}
		last = err
	}
	return nil, api.ErrServiceUnavailable("No replica of shard %d answered for its queues (%v); retry.", id, last)
}

func (s *Server) askListOf(ctx context.Context, raftAddr string, body []byte) (*api.ListQueuesResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := s.askPeer(ctx, http.MethodPost, raftAddr, "/cluster/list", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res api.ListQueuesResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&res); err != nil {
		return nil, err
	}
	return &res, nil
}

// serveClusterList answers another member's ListQueues of one shard this
// node holds a replica of (askList). Only on the node-to-node port: the
// member that asked has verified the caller.
func (s *Server) serveClusterList(w http.ResponseWriter, r *http.Request) {
	if !fromPeer(r) || s.shards == nil {
		writeJSONError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	var lr listRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&lr); err != nil || lr.Caller == "" {
		writeJSONError(w, http.StatusBadRequest, "want a listRequest")
		return
	}
	g, ok := s.groupByID(lr.Shard)
	if !ok {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("this node holds no replica of shard %d", lr.Shard))
		return
	}
	if res, ok := s.listAtLeader(r.Context(), g, lr); ok {
		writeJSON(w, http.StatusOK, res)
		return
	}
	res, err := s.listLocal(r.Context(), g, &engine.Command{Time: lr.Time, Caller: lr.Caller, Region: lr.Region, Request: &lr.Request})
	if err != nil {
		e := api.AsError(err)
		writeJSONError(w, e.Status, e.Code+": "+e.Message)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// listAtLeader passes a member's list of shard g, which this node follows,
// on to the shard's leader, once (readAtLeader, for up to half of
// listLeaderWait, which the member that asked waits for this one): the
// member that asked holds no replica of the shard and took this node for
// its leader (listOfShard), and this follower's replica may not yet have
// applied a queue's creation that its leader answered. ok is false if
// this node leads, or no leader answered in that time: the list is then
// this replica's.
func (s *Server) listAtLeader(ctx context.Context, g *group, lr listRequest) (*api.ListQueuesResult, bool) {
	if lr.Relayed || g.raft == nil {
		return nil, false
	}
	lr.Relayed = true
	b, _ := json.Marshal(lr)
	var res *api.ListQueuesResult
	done, _ := s.readAtLeader(ctx, g.id, listLeaderWait/2, func(ctx context.Context, addr string) (err error) {
		res, err = s.askListOf(ctx, addr, b)
		return err
	})
	return res, done
}
