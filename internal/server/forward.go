package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/protocol"
	"github.com/fifoq/fifoq/internal/replog"
)

// RaftLog is the durable command log's view of itself and of its
// cluster; replog.Raft is the one fifoq runs with. When it is a networked
// cluster's member (Clustered), the server forwards to the leader what a
// follower cannot answer, and runs the leader's work only where the log
// leads.
type RaftLog interface {
	Clustered() bool
	PeersAuthenticated() bool
	Leading() bool
	LeadershipChanged() <-chan struct{}
	Leader() (id, raftAddr string)
	LeaderSilent() bool
	NodeID() string
	ReadBarrier(ctx context.Context) error
	PeerListener() net.Listener
	DialPeer(ctx context.Context, raftAddr string) (net.Conn, error)
	Members() ([]replog.Member, error)
	CommittedMembers() ([]replog.Member, bool)
	CommittedMembersAt() ([]replog.Member, uint64, bool)
	AddVoter(ctx context.Context, id, raftAddr, incarnation string) error
	RemoveServer(ctx context.Context, id string) error
	Status() replog.NodeStatus
	SetClockOff(why string)
	SetPeersClockOff(ids []string)
	ClockAgreed(wall time.Time)
	Promote(ctx context.Context, id string) error
	WritesImageBytes() bool
}

// replog.Raft is the durable log fifoq runs with.
var _ RaftLog = (*replog.Raft)(nil)

// Headers a follower adds to a request it forwards. The leader reads them
// only on the node-to-node port: on the public port they are ignored, so a
// client cannot claim them. The one that grants something, the client's
// TLS, is believed only from a member that proved itself by its
// certificate (mutual TLS); without --raft-tls-* anyone who reaches the
// port could claim it.
const (
	// hdrForwardedBase is the scheme and host the client reached the
	// follower by: queue URLs in the answer are built from it, so that
	// they lead back to where the client sent its request.
	hdrForwardedBase = "X-Fifoq-Forwarded-Base"
	// hdrForwardedSecure says whether the client's connection to the
	// follower was TLS (aws:SecureTransport): "true" or "false".
	hdrForwardedSecure = "X-Fifoq-Forwarded-Secure"
	// hdrForwardedBy names the follower, for the leader's request log.
	hdrForwardedBy = "X-Fifoq-Forwarded-By"
	// hdrForwardHops counts the members a forwarded request has passed
	// through, believed only from a member (forwardHops).
	hdrForwardHops = "X-Fifoq-Forward-Hops"
)

// maxForwardHops bounds how many times a request is forwarded: a member
// that is sent a request after it stopped leading sends it on to the
// leader it knows, and members whose views of the leader lag each other
// for a moment must not pass a request round.
const maxForwardHops = 3

// forwardHops returns how many members r passed through before this one:
// 0 for a client's request.
func forwardHops(r *http.Request) int {
	if !fromPeer(r) {
		return 0
	}
	n, err := strconv.Atoi(r.Header.Get(hdrForwardHops))
	if err != nil || n < 1 {
		return 1 // a member from before hops were counted
	}
	return n
}

// leaderWait is how long a node without a known leader holds a request,
// waiting for an election, before it answers a retryable error.
const leaderWait = 3 * time.Second

// peerKey marks the context of a request that came in on the node-to-node
// port, with a peerConn.
type peerKey struct{}

// peerConn is what is known of the connection of a request that came in
// on the node-to-node port.
type peerConn struct {
	// authenticated: the connection is mutual TLS with a certificate the
	// cluster's CA signed (replog.PeerAuthenticated).
	authenticated bool
}

// fromPeer reports whether r came from another node of the cluster.
func fromPeer(r *http.Request) bool { return r.Context().Value(peerKey{}) != nil }

// fromAuthenticatedPeer reports whether r came from a member that proved
// itself by its certificate.
func fromAuthenticatedPeer(r *http.Request) bool {
	p, ok := r.Context().Value(peerKey{}).(peerConn)
	return ok && p.authenticated
}

// forwarder carries requests from this node to the leader over the
// node-to-node port.
type forwarder struct {
	cluster RaftLog
	client  *http.Client
}

func newForwarder(c RaftLog) *forwarder {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return c.DialPeer(ctx, addr)
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		MaxConnsPerHost:     maxForwardConns,
		IdleConnTimeout:     90 * time.Second,
		// The body and its encoding pass unchanged, as the client sent
		// them: the signature covers them.
		DisableCompression: true,
		// Above the longest long poll (20 s, or 40 s with LocalStack's
		// override header: maxOverrideWait).
		ResponseHeaderTimeout: 45 * time.Second,
		WriteBufferSize:       forwardWriteBuffer,
	}
	return &forwarder{cluster: c, client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (f *forwarder) close() { f.client.CloseIdleConnections() }

// route decides where a request is answered: here (local is true) when
// this node leads, else by the leader whose Raft address it returns. With
// no leader after leaderWait, or when the request has been forwarded
// maxForwardHops times already and this node does not lead, it returns a
// retryable error.
func (s *Server) route(r *http.Request) (local bool, leaderAddr string, err error) {
	return s.routeIn(r, s.cluster)
}

// routeIn is route for the group whose log is c.
func (s *Server) routeIn(r *http.Request, c RaftLog) (local bool, leaderAddr string, err error) {
	deadline := time.Now().Add(leaderWait)
	for {
		changed := c.LeadershipChanged()
		if c.Leading() {
			return true, "", nil
		}
		id, addr := c.Leader()
		switch {
		case fromPeer(r) && forwardHops(r) >= maxForwardHops:
			if id != c.NodeID() {
				return false, "", api.ErrServiceUnavailable("The leadership moved while the request was forwarded; retry.")
			}
		case id != "" && id != c.NodeID() && addr != "":
			// A request another member forwarded here after this node
			// stopped leading (a handover, an election) goes on to the
			// leader: the member relays whatever it is answered.
			return false, addr, nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return false, "", api.ErrServiceUnavailable("The cluster has no leader now (an election is in progress, or a majority of its nodes is unreachable); retry.")
		}
		t := time.NewTimer(min(wait, 50*time.Millisecond))
		select {
		case <-changed:
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return false, "", api.ErrServiceUnavailable("The request ended while the cluster had no leader.")
		case <-s.done:
			t.Stop()
			return false, "", api.ErrServiceUnavailable("The server is shutting down.")
		}
		t.Stop()
	}
}

// forward sends the client's request, unchanged (method, path, query,
// headers with Host and the signature, body), to the leader, and relays
// the leader's answer. The leader verifies the signature and the queue
// policies itself, as it would for a request sent to it directly. If the
// leader changes or cannot be reached before it answers, the client gets
// a retryable error: the request may or may not have been carried out,
// and a retry with the same deduplication id or receive attempt id is
// harmless.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body []byte, leaderAddr string) error {
	return s.forwardIn(w, r, body, s.first, leaderAddr)
}

// forwardIn is forward to the leader of group g, saying g in hdrGroup. A
// 421 answer naming another group (misdirectedError) is returned, not
// relayed, for the caller to route again.
func (s *Server) forwardIn(w http.ResponseWriter, r *http.Request, body []byte, g *group, leaderAddr string) error {
	return s.forwardTo(w, r, body, g.id, g.raft, leaderAddr)
}

// forwardTo is forwardIn to the node at addr for group id, whose log here
// is c, or nil if this node holds no replica of it: the request then is
// given up on only when the node stops answering, as this node cannot
// see the group's leadership move.
func (s *Server) forwardTo(w http.ResponseWriter, r *http.Request, body []byte, id uint32, c RaftLog, leaderAddr string) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if c != nil {
		target, _ := c.Leader()
		go watchForwardTarget(ctx, cancel, c, target)
	}
	return s.sendForward(ctx, w, r, body, id, leaderAddr)
}

// watchForwardTarget cancels a forward to target, the leader c knew when
// it was sent, once c has known another leader for handOverGrace, or
// known none for forwardGrace. A leader that dies or is frozen answers
// nothing: give up on it then. A leader that handed its leadership over
// is alive and answers: a request it had not carried out it sends on to
// the group's new leader, or answers 421 for this node to (serveInShards),
// so the forward waits a moment for that answer rather than give the
// client a 503 whose outcome it cannot know. A moment without a known
// leader (this node's heartbeat timeout ran out during a pause, say) is
// not enough either: the leader may be answering, and giving up turns a
// request that succeeds into one whose outcome is unknown.
func watchForwardTarget(ctx context.Context, cancel context.CancelFunc, c RaftLog, target string) {
	var blank, moved <-chan time.Time
	for {
		changed := c.LeadershipChanged()
		switch id, _ := c.Leader(); {
		case id == "":
			if blank == nil {
				t := time.NewTimer(forwardGrace)
				defer t.Stop()
				blank = t.C
			}
		case id == target:
			blank, moved = nil, nil
		default:
			blank = nil
			if moved == nil {
				t := time.NewTimer(handOverGrace)
				defer t.Stop()
				moved = t.C
			}
		}
		select {
		case <-changed:
		case <-blank:
			cancel()
			return
		case <-moved:
			cancel()
			return
		case <-ctx.Done():
			return
		}
	}
}

// sendForward sends the request to the node at leaderAddr for group id
// and relays its answer (forwardIn).
func (s *Server) sendForward(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, id uint32, leaderAddr string) error {
	out, err := s.forwardedRequest(ctx, r, body, leaderAddr)
	if err != nil {
		return api.ErrInternalFailure("Could not forward the request: %v", err)
	}
	if s.sharded() {
		out.Header.Set(hdrGroup, strconv.FormatUint(uint64(id), 10))
	}
	resp, answer, err := doForwarded(ctx, s.fwd.client, out)
	if err != nil {
		if dialFailed(err) {
			// Nothing was sent: the request can go to the next leader.
			return errNotSent
		}
		if r.Context().Err() != nil {
			return api.ErrServiceUnavailable("The request ended before the leader answered.")
		}
		return api.ErrServiceUnavailable("The leader could not be reached or stopped answering (%v); the request may or may not have been carried out: retry.", errors.Unwrap(err))
	}
	if resp.StatusCode == http.StatusMisdirectedRequest && s.shards != nil {
		if n, perr := strconv.ParseUint(resp.Header.Get(hdrGroup), 10, 32); perr == nil {
			return &misdirectedError{group: uint32(n), leader: resp.Header.Get(hdrLeader)}
		}
	}
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(hdrMoving) != "" && s.shards != nil {
		return errMovedOn
	}
	for k, vs := range resp.Header {
		if !hopHeader(k) && !connectionHeader(resp.Header, k) {
			w.Header()[k] = vs
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
	return nil
}

// forwardedRequest returns client request r, with its body, as this node
// sends it on to the member at raftAddr over the node-to-node port: the
// client's headers but those of the hop, its Host (which its signature
// covers), and the address and transport it came by, which the member
// answers as if it had been reached itself.
func (s *Server) forwardedRequest(ctx context.Context, r *http.Request, body []byte, raftAddr string) (*http.Request, error) {
	u := &url.URL{Scheme: "http", Host: raftAddr, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		if hopHeader(k) || connectionHeader(r.Header, k) {
			continue
		}
		out.Header[k] = vs
	}
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	// A request another member forwarded here (serveInOneGroup sends one
	// on) keeps the address and transport its client came by.
	out.Header.Set(hdrForwardedBase, forwardedBase(r))
	out.Header.Set(hdrForwardedSecure, strconv.FormatBool(forwardedSecure(r)))
	out.Header.Set(hdrForwardedBy, s.cluster.NodeID())
	out.Header.Set(hdrForwardHops, strconv.Itoa(forwardHops(r)+1))
	return out, nil
}

// doForwarded sends out, a request forwarded to a leader, and returns the
// leader's answer with its body read whole, or an error: never part of an
// answer, which relayed would reach the client as a complete one cut
// short. ctx ends the forward until the leader answers (the client gone,
// or watchForwardTarget giving up on the leader); once it has, a change
// of leader no longer matters, as what it answered stands, and its body is
// read within forwardBodyWait.
func doForwarded(ctx context.Context, client *http.Client, out *http.Request) (*http.Response, []byte, error) {
	reqCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopFollowing := context.AfterFunc(ctx, cancel)
	resp, err := client.Do(out.WithContext(reqCtx))
	if err != nil {
		stopFollowing()
		return nil, nil, err
	}
	defer resp.Body.Close()
	if stopFollowing() {
		t := time.AfterFunc(forwardBodyWait, cancel)
		defer t.Stop()
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardedAnswer+1))
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("the leader's answer was cut off: %w", err)
	case len(answer) > maxForwardedAnswer:
		return nil, nil, fmt.Errorf("the leader's answer is longer than %d bytes", maxForwardedAnswer)
	}
	return resp, answer, nil
}

// forwardBodyWait bounds the reading of a leader's answer once it has
// begun: its body follows at once, as the leader writes it whole.
const forwardBodyWait = 30 * time.Second

// maxForwardedAnswer bounds a leader's answer that a follower reads and
// relays: above the longest an SQS action gives, ten messages of 1 MiB
// each, escaped for XML.
const maxForwardedAnswer = 64 << 20

// forwardGrace is how long a forwarded request waits on its leader while
// this node knows no leader at all: about three election timeouts, time
// for an election to name a new one.
const forwardGrace = time.Second

// handOverGrace is how long a forwarded request waits on its leader once
// this node knows another: a leader that handed its leadership over
// learns it no later than this node, and answers within a moment.
const handOverGrace = 500 * time.Millisecond

// maxForwardConns bounds the connections a follower opens to its leader,
// so that a burst of clients on a follower cannot exhaust the leader's.
const maxForwardConns = 512

// forwardWriteBuffer is the write buffer of each connection a follower
// forwards over. net/http's default, 4 KiB, split a batch of ten 256-byte
// messages with its signed headers into two writes to the leader; 16 KiB
// sends a batch of ten 1-KiB messages in one. A larger request is written
// in pieces of this size. A node holds at most maxForwardConns such
// connections to each member it forwards to.
const forwardWriteBuffer = 16 << 10

// errNotSent is a forward that failed before anything reached the leader.
var errNotSent = errors.New("the leader could not be reached")

// dialFailed reports whether err is a request's failure to connect: a
// member that is down or gone refused it before any of it was sent, so it
// may go to the next leader without having been carried out twice.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// hopHeader reports the headers that belong to one connection and are not
// passed on (RFC 9110, 7.6.1).
func hopHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length":
		return true
	}
	return false
}

// connectionHeader reports whether h's Connection header names k: a header
// of this connection only, not passed on (RFC 9110, 7.6.1).
func connectionHeader(h http.Header, k string) bool {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(name), k) {
				return true
			}
		}
	}
	return false
}

// forwardedBase returns the base URL to answer a request with: the one
// the follower reported, for a request that came from another node; the
// request's own otherwise. Only the few answers that hold queue URLs need
// it.
func forwardedBase(r *http.Request) string {
	base := baseURL(r)
	if !fromPeer(r) {
		return base
	}
	if b := r.Header.Get(hdrForwardedBase); b != "" {
		if u, err := url.Parse(b); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Path == "" {
			base = b
		}
	}
	return base
}

// forwardedSecure returns whether the request came over TLS: as the
// follower reported, for a request that came from another node, if that
// node proved itself; a claim on a port without mutual TLS counts for
// nothing.
func forwardedSecure(r *http.Request) bool {
	if !fromPeer(r) {
		return r.TLS != nil
	}
	return fromAuthenticatedPeer(r) && r.Header.Get(hdrForwardedSecure) == "true"
}

// serveRouted answers an SQS API request: here when this node leads (or
// is a cluster of one), else by forwarding it to the leader. A forwarded
// request is counted in the metrics of the leader, which answers it, and
// in this node's forwarded-requests counter.
func (s *Server) serveRouted(w http.ResponseWriter, r *http.Request) {
	if s.cluster == nil || s.sharded() {
		// A node with shards routes a request once it has decoded it,
		// by the queue it names (serveInGroup).
		s.serveAPI(w, r)
		return
	}
	local, addr, err := s.route(r)
	if local {
		s.serveAPI(w, r)
		return
	}
	if err == nil {
		if r.ContentLength > MaxRequestBodyBytes {
			// The leader would refuse it; so does this node, at once.
			s.serveAPI(w, r)
			return
		}
		var body []byte
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				err = api.ErrRequestEntityTooLarge(MaxRequestBodyBytes)
			} else {
				err = api.ErrMalformedQueryString("Could not read the request body: %v", err)
			}
			protocol.WriteError(w, protocol.Detect(r), api.AsError(err), newUUID())
			return
		}
		err = s.forwardLoop(w, r, body, s.first, addr)
		if errors.Is(err, errServeHere) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.serveAPI(w, r)
			return
		}
		var mis *misdirectedError
		if errors.As(err, &mis) {
			// This node has not yet read the shard map its leader routes
			// by (it is catching up after a start): the client retries.
			err = api.ErrServiceUnavailable("This node is catching up with the cluster's shard map; retry.")
		}
	}
	if err != nil {
		protocol.WriteError(w, protocol.Detect(r), api.AsError(err), newUUID())
	}
}

// errServeHere is forwardLoop's word that this node came to lead the
// group while it tried to forward: the request is to be served here.
var errServeHere = errors.New("serve here")

// forwardLoop forwards a request to the leader of group g at addr and
// relays the answer; when that leader cannot be reached before anything
// was sent, it waits for the next and forwards there, up to leaderWait.
// It returns errServeHere if this node came to lead g meanwhile, and a
// misdirectedError as forwardIn does.
func (s *Server) forwardLoop(w http.ResponseWriter, r *http.Request, body []byte, g *group, addr string) error {
	s.metrics.ObserveForward()
	deadline := time.Now().Add(leaderWait)
	for {
		err := s.forwardIn(w, r, body, g, addr)
		if !errors.Is(err, errNotSent) || time.Now().After(deadline) {
			if errors.Is(err, errNotSent) {
				err = api.ErrServiceUnavailable("The cluster's leader could not be reached; the request was not carried out: retry.")
			}
			return err
		}
		// The leader this node knew is gone: wait for the next one.
		changed := g.raft.LeadershipChanged()
		if id, _ := g.raft.Leader(); id != "" {
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-changed:
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
		}
		local, next, err := s.routeIn(r, g.raft)
		if local {
			return errServeHere
		} else if err != nil {
			return err
		}
		addr = next
	}
}
