package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// Do's routing on a node with shards. A request that Do carries out for
// the node itself (the config file's queues, the web console) names no
// signature to forward, so it goes to the leader of its queue's group as
// the typed request, over the node-to-node port (POST /cluster/do), and
// comes back as the typed answer, the account it acts as named beside it.
// The member that sends it has authenticated its caller; the receiver
// believes the account only from a member that proved itself by its
// certificate (mutual TLS), or where no credentials are configured and
// every request is taken anyway: on a port without TLS, whoever reaches
// it could otherwise act as any account, where a forwarded API request
// still has its signature checked.

// clusterDoPath is where a member carries out a request another member's
// Do routed to it (serveClusterDo).
const clusterDoPath = "/cluster/do"

// doRouted is a request of POST /cluster/do: a typed request of
// account's, for the group shard, in the AWS JSON form of its action. Its
// envelope form is this, as JSON; its query form (do_wire.go) names the
// rest in the URL's query and sends Request as the body.
type doRouted struct {
	Shard uint32 `json:"shard"`
	// Part is the partition of a split queue it is for (0: the queue's
	// first, or a queue never split).
	Part uint32 `json:"part,omitempty"`
	// Peek makes a ReceiveMessage a peek: it takes nothing, and answers
	// Receivable once its partition may have a message to take
	// (partition_receive.go).
	Peek    bool            `json:"peek,omitempty"`
	Account string          `json:"account"`
	Action  api.Action      `json:"action"`
	Request json.RawMessage `json:"request"`
}

// doAnswer is POST /cluster/do's answer: the result in the AWS JSON form
// of its action, or the error; or, when the member does not lead the
// group, the group and the leader it knows (Misdirected).
type doAnswer struct {
	Result      json.RawMessage `json:"result,omitempty"`
	Error       *api.Error      `json:"error,omitempty"`
	Misdirected bool            `json:"misdirected,omitempty"`
	// Receivable answers a peek whose partition may have a message.
	Receivable bool   `json:"receivable,omitempty"`
	Group      uint32 `json:"group,omitempty"`
	Leader     string `json:"leader,omitempty"`
}

// doSharded carries out Do's request on a node with shards: in the group
// of the queue it names (a new queue placed first), here if this node
// leads that group, else at its leader.
//
// Where the other members would refuse a routed request (credentials
// configured, no mutual TLS: trustedPeer), it is carried out here, in the
// group this node holds (a new queue in the first group, unplaced), and
// refused with a retryable error for a group held elsewhere: placing a
// queue in a shard this node could not reach would leave it uncreatable.
func (s *Server) doSharded(ctx context.Context, in api.Scope, q api.QueueKey, req api.Request) (api.Response, error) {
	return s.doOnPart(ctx, in, q, s.partitionOf(q, req), req)
}

// routesTyped reports whether the members carry out each other's typed
// requests (serveClusterDo takes them): what doSharded needs to reach a
// group held elsewhere.
func (s *Server) routesTyped() bool {
	return s.cluster.PeersAuthenticated() || s.verifier == nil || s.verifier.Store.Empty()
}

// doOnPart is doSharded on partition part of queue q, whatever the request
// names: how a request that names no one message group of a split queue
// is asked of each partition (partition_route.go).
func (s *Server) doOnPart(ctx context.Context, in api.Scope, q api.QueueKey, part uint32, req api.Request) (api.Response, error) {
	if !s.routesTyped() {
		g, held := s.groupByID(s.shards.Of(q))
		if !held {
			return nil, api.ErrServiceUnavailable("The queue's shard has no replica on this node, and the members have no mutual TLS to carry the request to one (--raft-tls-*); ask a node that holds one (fifoq cluster shards).")
		}
		return s.do(withGroup(ctx, g), in, req)
	}
	q.Part = part
	id := s.shards.Of(q)
	if cq, ok := req.(*api.CreateQueueRequest); ok {
		if err := api.Validate(req); err != nil {
			return nil, err
		}
		var err error
		if id, err = s.placeQueue(ctx, q, s.deadLetterQueueOf(cq)); err != nil {
			return nil, err
		}
	}
	// No client retries for Do's callers: wait out an election (a shard
	// just made, or whose leader died) as a follower waits for a leader.
	deadline := time.Now().Add(leaderWait)
	for route := 0; route == 0 || time.Now().Before(deadline); route++ {
		if route > 0 {
			select {
			case <-time.After(min(time.Duration(route)*50*time.Millisecond, 500*time.Millisecond)):
			case <-ctx.Done():
				return nil, api.ErrServiceUnavailable("The request ended while its queue's shard was being found.")
			}
		}
		g, held := s.groupByID(id)
		if held && g.leads() {
			gctx := withPart(withGroup(ctx, g), q.Part)
			resp, err := s.do(gctx, in, req)
			if replog.IsNotLeading(err) {
				continue // refused unappended: to the next leader
			}
			return resp, s.misrouted(gctx, in, req, err)
		}
		member, addr := s.leaderOf(id, held, g, route)
		if addr == "" {
			continue // an election: ask again
		}
		resp, err := s.doAt(ctx, held, g, member, addr, id, q.Part, in.Account, req)
		var mis *misdirectedError
		if !errors.As(err, &mis) {
			return resp, err
		}
		id = mis.group
		s.noteLeader(mis)
	}
	return nil, api.ErrServiceUnavailable("The leader of the queue's shard could not be found; retry.")
}

// doAt sends a request of account's for group id, on partition part of
// its queue, to the group's leader member, at raftAddr, and returns its
// answer; a *misdirectedError if that member does not lead the group. g
// is this node's replica of the group, if held.
func (s *Server) doAt(ctx context.Context, held bool, g *group, member, raftAddr string, id, part uint32, account string, req api.Request) (api.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, api.ErrInternalFailure("Could not encode the request: %v", err)
	}
	d := doRouted{Shard: id, Part: part, Peek: peeking(ctx), Account: account, Action: req.Action(), Request: body}
	var a doAnswer
	var undecoded error
	read := func(resp *http.Response) error {
		undecoded = readDoAnswer(resp, &a)
		return nil
	}
	envelope := faultEnvelopesOnly || s.sendsEnvelopes(member)
	if !envelope {
		err = s.askLeader(ctx, id, held, g, member, raftAddr, http.MethodPost, doQuery(d), body, read)
		if legacyDoRefusal(err) {
			// A fifoq from before the query form, which did nothing.
			if _, known := s.legacyDo.Swap(member, time.Now()); !known {
				s.logger.Info("a member reads only the envelope form of routed requests (an older fifoq): sending it envelopes", "member", member)
			}
			envelope = true
		}
	}
	if envelope {
		routed, _ := json.Marshal(d)
		err = s.askLeader(ctx, id, held, g, member, raftAddr, http.MethodPost, clusterDoPath, routed, read)
	}
	var refused *peerRefusal
	switch {
	case errors.As(err, &refused):
		return nil, api.ErrServiceUnavailable("The member asked to carry the request out refused it: %v", refused)
	case dialFailed(err):
		// The leader this node knew is down and nothing reached it: the
		// caller waits for the next one, as a forwarded request does.
		s.leaders.CompareAndDelete(id, member)
		return nil, &misdirectedError{group: id}
	case err != nil:
		return nil, api.ErrServiceUnavailable("The leader of the queue's shard could not be reached (%v); the request may or may not have been carried out: retry.", err)
	case undecoded != nil:
		return nil, api.ErrServiceUnavailable("The answer of the queue's shard's leader could not be read (%v); the request may or may not have been carried out: retry.", undecoded)
	}
	switch {
	case a.Misdirected:
		return nil, &misdirectedError{group: a.Group, leader: a.Leader}
	case a.Receivable:
		return receivable{}, nil
	case a.Error != nil && replog.IsNotLeading(a.Error):
		// The member stopped leading the group, or was handing its
		// leadership over, and did nothing: the caller waits for the next
		// leader, as for a member that answers it does not lead.
		return nil, &misdirectedError{group: id}
	case a.Error != nil:
		return nil, a.Error
	}
	result := api.NewResult(req.Action())
	if _, empty := result.(api.Empty); empty {
		return result, nil
	}
	if err := json.Unmarshal(a.Result, result); err != nil {
		return nil, api.ErrInternalFailure("Could not decode the answer of the queue's shard's leader: %v", err)
	}
	return result, nil
}

// trustedPeer reports whether r, which came in on the node-to-node port,
// may be believed without a signature of its own: it came from a member
// that proved itself by its certificate, or no credentials are configured
// and every request is taken anyway.
func (s *Server) trustedPeer(r *http.Request) bool {
	return fromAuthenticatedPeer(r) || s.verifier == nil || s.verifier.Store.Empty()
}

// leaderHere returns group id if this node leads it; else it answers the
// request as misdirected (doAnswer), with the leader this node knows.
func (s *Server) leaderHere(w http.ResponseWriter, id uint32) (*group, bool) {
	g, held := s.groupByID(id)
	if held && g.leads() {
		return g, true
	}
	a := doAnswer{Misdirected: true, Group: id}
	if held {
		a.Leader, _ = g.raft.Leader()
		if a.Leader == s.cluster.NodeID() {
			a.Leader = "" // elected, not yet ready
		}
	}
	writeJSON(w, http.StatusOK, a)
	return nil, false
}

// trustedPeerEndpoint admits a request to an endpoint of the node-to-node
// port that carries out or reads what only a member may (trustedPeer),
// and answers it otherwise: 404 off that port or without shards, 403
// from a caller not trusted, with refusal saying what needs mutual TLS.
func (s *Server) trustedPeerEndpoint(w http.ResponseWriter, r *http.Request, refusal string) bool {
	if !fromPeer(r) || s.shards == nil {
		writeJSONError(w, http.StatusNotFound, "no such endpoint")
		return false
	}
	if !s.trustedPeer(r) {
		writeJSONError(w, http.StatusForbidden, refusal+" needs mutual TLS between the members (--raft-tls-*) where credentials are configured")
		return false
	}
	return true
}

// serveClusterDo carries out a request another member's Do routed here
// (doAt), if this node leads its group; else it answers where to go.
// Only on the node-to-node port.
func (s *Server) serveClusterDo(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "a request carried out for another member") {
		return
	}
	if faultEnvelopesOnly {
		r.URL.RawQuery = "" // as a fifoq from before the query form
	}
	d, query, err := readRouted(r)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	req, ok := api.NewRequest(d.Action)
	if !ok {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("unknown action %q", d.Action))
		return
	}
	if err := json.Unmarshal(d.Request, req); err != nil {
		writeJSONError(w, http.StatusBadRequest, "the request: "+err.Error())
		return
	}
	if err := api.NoteSentFIFOIDs(req, d.Request); err != nil {
		writeJSONError(w, http.StatusBadRequest, "the request: "+err.Error())
		return
	}
	in := api.Scope{Account: d.Account}
	id := d.Shard
	if d.Part > engine.MaxPart {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("no partition %d", d.Part))
		return
	}
	if q, named := s.queueOfRequest(in, req); named {
		q.Part = d.Part
		if at := s.shards.Of(q); at != 0 {
			id = at // this node's map is as new as the sender's, or newer
		}
	}
	g, leads := s.leaderHere(w, id)
	if !leads {
		return
	}
	ctx := withPart(withGroup(r.Context(), g), d.Part)
	if d.Peek {
		ctx = withPeek(ctx)
	}
	resp, err := s.do(ctx, in, req)
	err = s.misrouted(ctx, in, req, err)
	var a doAnswer
	if _, ok := resp.(receivable); ok && err == nil {
		a.Receivable = true
	} else if err != nil {
		a.Error = api.AsError(err)
	} else if a.Result, err = json.Marshal(resp); err != nil {
		a.Error = api.ErrInternalFailure("Could not encode the result: %v", err)
	} else if query {
		writeDoResult(w, a.Result)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
