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

// hdrGroup names, on a forwarded request, the group the forwarder routed
// it to; on a 421 answer, the group the request belongs to.
const hdrGroup = "X-Fifoq-Group"

// misdirectedError is the first group's leader's answer for a queue that
// lives in another group.
type misdirectedError struct{ group uint32 }

func (e *misdirectedError) Error() string {
	return fmt.Sprintf("the queue lives in shard %d", e.group)
}

// routeGroup returns the group that serves req, on a node with shards.
// Forwarded requests are routed as their forwarder said (hintGroup).
func (s *Server) routeGroup(ctx context.Context, r *http.Request, in api.Scope, req api.Request) (*group, error) {
	q, named := s.queueOfRequest(in, req)
	if !named {
		return s.first, nil
	}
	var id uint32
	if cq, ok := req.(*api.CreateQueueRequest); ok && !fromPeer(r) {
		if err := api.Validate(req); err != nil {
			return nil, err // answered where it arrived, without placing
		}
		placed, err := s.placeQueue(ctx, q, s.deadLetterQueueOf(cq))
		if err != nil {
			return nil, err
		}
		id = placed
	} else {
		id = s.shards.Of(q)
		if id == 0 && fromPeer(r) {
			id = hintGroup(r)
		}
	}
	g, ok := s.groupByID(id)
	if !ok {
		return nil, api.ErrServiceUnavailable("Shard %d is not open on this node yet; retry.", id)
	}
	return g, nil
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
// (handled true: the answer is written).
func (s *Server) serveInGroup(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, in api.Scope, req api.Request) (context.Context, bool, error) {
	g, err := s.routeGroup(ctx, r, in, req)
	if err != nil {
		return ctx, false, err
	}
	for hop := 0; ; hop++ {
		if fromPeer(r) {
			if g.leads() {
				return withGroup(ctx, g), false, nil
			}
			if g.id != 0 && hintGroup(r) == 0 && s.first.leads() {
				// The forwarder's map did not name the queue; this
				// node's, shard 0's leader's, does.
				return ctx, false, &misdirectedError{group: g.id}
			}
			return ctx, false, api.ErrServiceUnavailable("The leadership of the queue's shard moved while the request was forwarded; retry.")
		}
		local, addr, err := s.routeIn(r, g.raft)
		if err != nil {
			return ctx, false, err
		}
		if local {
			return withGroup(ctx, g), false, nil
		}
		err = s.forwardLoop(w, r, body, g, addr)
		if errors.Is(err, errServeHere) {
			return withGroup(ctx, g), false, nil
		}
		var mis *misdirectedError
		if !errors.As(err, &mis) || hop > 0 {
			if mis != nil {
				err = api.ErrServiceUnavailable("The request was routed by a stale shard map; retry.")
			}
			return ctx, true, err
		}
		next, ok := s.groupByID(mis.group)
		if !ok {
			return ctx, true, api.ErrServiceUnavailable("Shard %d is not open on this node yet; retry.", mis.group)
		}
		g = next
	}
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
			return s.shards.Place(ctx, q, near)
		}
		_, addr := s.cluster.Leader()
		if addr != "" {
			id, err := s.askPlace(ctx, addr, placeRequest{Queue: q, Near: near})
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
}

type placeAnswer struct {
	Shard uint32 `json:"shard"`
}

// askPlace asks the first group's leader at raftAddr to place a queue.
func (s *Server) askPlace(ctx context.Context, raftAddr string, p placeRequest) (uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, _ := json.Marshal(p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+raftAddr+"/cluster/place", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set(hdrForwardedBy, s.cluster.NodeID())
	resp, err := s.fwd.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
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
	id, err := s.shards.Place(r.Context(), p.Queue, p.Near)
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, placeAnswer{Shard: id})
}

// listQueuesOfAllGroups answers ListQueues from every group's engine, as
// one list: each group's page after the token, merged by name and cut to
// the page size. A shard this node does not lead is read once it has
// applied what it knows committed (replog.Raft.CaughtUp), as SQS's own
// ListQueues is eventually consistent.
func (s *Server) listQueuesOfAllGroups(ctx context.Context, cmd *engine.Command, r *api.ListQueuesRequest) (api.Response, error) {
	var urls []string
	more := false
	for _, g := range s.allGroups() {
		if g != s.first {
			if l, ok := s.shards.Shard(g.id); ok {
				if err := l.CaughtUp(ctx); err != nil {
					return nil, err
				}
			}
		}
		var resp api.Response
		var err error
		g.log.Read(func(e *engine.Engine) { resp, err = e.Read(cmd) })
		if err != nil {
			return nil, err
		}
		res := resp.(*api.ListQueuesResult)
		urls = append(urls, res.QueueUrls...)
		more = more || res.NextToken != ""
	}
	slices.Sort(urls)
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
