package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/memguard"
	"github.com/fifoq/fifoq/internal/metrics"
	"github.com/fifoq/fifoq/internal/protocol"
	"github.com/fifoq/fifoq/internal/replog"
)

// serveAPI answers one SQS API request in either wire protocol, and
// meters (and, if configured, logs) it once answered.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	rec := requestRecord{id: newUUID(), began: time.Now()}
	proto := protocol.Detect(r)
	sw := &statusWriter{ResponseWriter: w}
	fail := func(e *api.Error) {
		rec.err = e
		protocol.WriteError(sw, proto, e, rec.id)
	}
	defer func() {
		// A bug must cost one request, never the server: answer 500 with the
		// request id, and log the stack so the bug can be found.
		if v := recover(); v != nil {
			s.logger.Error("panic serving request", "request_id", rec.id, "panic", v, "stack", string(debug.Stack()))
			fail(api.ErrInternalFailure("Internal failure; request id %s.", rec.id))
		}
		rec.status = sw.status
		s.finishRequest(&rec)
	}()

	// A body declared larger than the limit is refused before a byte of it
	// is read, so an abusive client cannot make the server read 8 MiB to
	// learn what the header already says; net/http then closes the
	// connection rather than drain the rest.
	if r.ContentLength > MaxRequestBodyBytes {
		w.Header().Set("Connection", "close")
		fail(api.ErrRequestEntityTooLarge(MaxRequestBodyBytes))
		return
	}
	release, apiErr := s.reserveBody(r.ContentLength)
	if apiErr != nil {
		fail(apiErr)
		return
	}
	defer release()
	// The reader is given the original writer: through it, net/http learns
	// that the body was too large and closes the connection.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(api.ErrRequestEntityTooLarge(MaxRequestBodyBytes))
			return
		}
		fail(api.ErrMalformedQueryString("Could not read the request body: %v", err))
		return
	}
	// The signature covers the raw request, so it is checked before the
	// body is decoded; an unsigned request learns nothing about queues.
	caller, err := s.verifier.Verify(r, body)
	if err != nil {
		fail(api.AsError(err))
		return
	}
	rec.scope = s.scopeOf(r, caller)
	action, req, apiErr := protocol.Decode(proto, r, body)
	rec.action = action
	if apiErr != nil {
		fail(apiErr)
		return
	}
	rec.req = req
	traceHeaderAttribute(req, r.Header.Get("X-Amzn-Trace-Id"))
	// A request a follower forwarded is answered as the follower saw it.
	ctx := withTransport(r.Context(), forwardedSecure(r))
	if s.sharded() && !fromPeer(r) {
		// What spans several partitions of a split queue is carried out
		// in each, from here (serveOverParts).
		if resp, spans, err := s.serveOverParts(ctx, rec.scope, req); spans {
			if err != nil {
				fail(api.AsError(err))
				return
			}
			writeAnswer(sw, r, proto, req.Action(), resp, rec.id)
			return
		}
	}
	if _, ok := req.(*api.ReceiveMessageRequest); ok {
		ctx = withReceiveOverride(ctx, r.Header)
	}
	var resp api.Response
	if s.sharded() {
		var done bool
		if resp, done, err = s.serveInShards(ctx, sw, r, body, &rec); done {
			return
		}
	} else {
		var done bool
		if resp, done, err = s.serveInOneGroup(ctx, sw, r, body, &rec); done {
			return
		}
	}
	if err != nil {
		fail(api.AsError(err))
		return
	}
	if holdsQueueURLs(resp) {
		// Only these answers pay for working out the base URL.
		rewriteQueueURLs(resp, forwardedBase(r))
	}
	defer s.holdAnswer(resp)()
	writeAnswer(sw, r, proto, req.Action(), resp, rec.id)
}

// movingWait bounds how long a request refused because its queue is
// moving between shards (or its partition split or merged) waits for this
// node's map to show where the queue went, to be routed there, before the
// client is given the retryable refusal: a partition's move takes about a
// second (docs/benchmarks.md), and an SDK's retries back off from about as
// long.
const movingWait = 3 * time.Second

// hdrMoving marks a forwarded request's answer that refused it, without
// carrying it out, because its queue is moving, split or merged: the
// forwarder routes it again once its map has changed (errMovedOn).
const hdrMoving = "X-Fifoq-Moving"

// errMovedOn is a forwarded request refused under hdrMoving.
var errMovedOn = errors.New("the queue is moving, split or merged")

// serveInShards serves a request rec on a node with shards: in its queue's
// group here, or forwarded to that group's leader. It returns the answer
// of one served here, or done once the answer is written (forwarded,
// answered by the group's leader; or this node's 421 to a forwarder). A
// request whose queue answers that it is moving (a move's fence, or a
// partition that no longer holds the request's group) is routed again as
// soon as this node's map changes, for up to movingWait: the refusal
// changed nothing, and the client is spared its backoff. A forwarded one
// is answered under hdrMoving, for its forwarder to do the same.
func (s *Server) serveInShards(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, rec *requestRecord) (api.Response, bool, error) {
	ctx, deadline := movingDeadline(ctx)
	joined := false // joinDeadLetterQueue tried
	for again := false; ; again = true {
		epoch := s.shards.Epoch()
		if again && !fromPeer(r) {
			// A queue split meanwhile: what now spans its partitions is
			// carried out in each, as it would have been had it arrived
			// now.
			if resp, spans, err := s.serveOverParts(ctx, rec.scope, rec.req); spans {
				return resp, false, err
			}
		}
		gctx, forwarded, err := s.serveInGroup(ctx, w, r, body, rec.scope, rec.req)
		var mis *misdirectedError
		switch {
		case errors.As(err, &mis):
			// Not metered: the forwarder routes the request again.
			rec.forwarded = true
			w.Header().Set(hdrGroup, strconv.FormatUint(uint64(mis.group), 10))
			w.Header().Set(hdrLeader, mis.leader)
			writeJSONError(w, http.StatusMisdirectedRequest, mis.Error())
			return nil, true, nil
		case errors.Is(err, errMovedOn):
			if s.awaitReroute(ctx, epoch, deadline) {
				continue
			}
			return nil, false, engine.ErrQueueMoving()
		case forwarded && err == nil:
			// The group's leader answered, and metered it.
			rec.forwarded = true
			return nil, true, nil
		case err != nil:
			return nil, false, err
		}
		resp, err := s.doOrFault(gctx, rec.scope, rec.req)
		err = s.misrouted(gctx, rec.scope, rec.req, err)
		if !joined && s.joinDeadLetterQueue(gctx, rec.scope, rec.req, err) {
			joined = true
			continue
		}
		if err != nil && engine.IsQueueMoving(err) {
			if fromPeer(r) {
				w.Header().Set(hdrMoving, "1")
			} else if s.awaitReroute(ctx, epoch, deadline) {
				continue
			}
		}
		if replog.IsNotLeading(err) && awaitLeaderMove(ctx, deadline) {
			// Raft refused the write before appending it: this node no
			// longer leads the group, or is handing its leadership over
			// (the balancer spreading leaders, a node that stops).
			// Nothing was done, so it is routed again, to the next
			// leader once there is one, as a client's retry would be.
			continue
		}
		return resp, false, err
	}
}

// serveInOneGroup serves a request on a node of one group: a cluster
// without shards, or a server alone. It returns the answer of one served
// here, or done once another member's answer is written. A write Raft
// refused before appending it, because this node no longer leads the
// group or is handing its leadership over (a node that stops does), was
// not carried out: it is forwarded to the next leader once there is one,
// for up to movingWait, as serveInShards carries a shard's, instead of
// answered with a 503. This node forwards it itself even when another
// member forwarded it here: that member relays whatever it is answered,
// and a member from before this answered the refusal 503.
func (s *Server) serveInOneGroup(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, rec *requestRecord) (api.Response, bool, error) {
	resp, err := s.doOrFault(ctx, rec.scope, rec.req)
	if s.cluster == nil || s.first == nil || s.first.raft == nil {
		return resp, false, err
	}
	ctx, deadline := movingDeadline(ctx)
	for replog.IsNotLeading(err) && awaitLeaderMove(ctx, deadline) {
		c := s.first.raft
		if c.Leading() {
			resp, err = s.doOrFault(ctx, rec.scope, rec.req)
			continue
		}
		id, addr := c.Leader()
		if id == "" || id == c.NodeID() || addr == "" {
			continue // an election, or a leader not yet ready
		}
		ferr := s.forwardLoop(w, r, body, s.first, addr)
		if errors.Is(ferr, errServeHere) {
			resp, err = s.doOrFault(ctx, rec.scope, rec.req)
			continue
		}
		// The leader answered, and metered it.
		rec.forwarded = ferr == nil
		return nil, ferr == nil, ferr
	}
	return resp, false, err
}

// leaderMoveGap is how long a write refused because its group's
// leadership is moving waits before it is routed again: a handover takes
// a few heartbeats, an election after a lost leadership a second or so.
const leaderMoveGap = 50 * time.Millisecond

// awaitLeaderMove waits leaderMoveGap, or until ctx ends, and reports
// whether a write refused because its group's leadership is moving may be
// routed again before deadline.
func awaitLeaderMove(ctx context.Context, deadline time.Time) bool {
	return sleepUntil(ctx, deadline, leaderMoveGap)
}

// rerouteEvery bounds how long a request refused because its queue is
// moving waits for this node's map to change before it is routed again
// all the same: the member that refused it may be the one whose map lags
// (it sent the request on to the queue's old shard), and its answer then
// changes without this node's map.
const rerouteEvery = 200 * time.Millisecond

// awaitReroute waits until this node's map has changed since epoch, or
// rerouteEvery has passed, and reports whether a request refused because
// its queue is moving may be routed again before deadline.
func (s *Server) awaitReroute(ctx context.Context, epoch string, deadline time.Time) bool {
	until := time.Now().Add(rerouteEvery)
	if deadline.Before(until) {
		until = deadline
	}
	s.shards.AwaitChange(ctx, epoch, until)
	return ctx.Err() == nil && time.Now().Before(deadline)
}

// writeAnswer writes the answer to request r of the given action, in the
// protocol it came in (AWS Query answered in JSON where it asks so).
func writeAnswer(w http.ResponseWriter, r *http.Request, proto protocol.Protocol, action api.Action, resp api.Response, id string) {
	if proto == protocol.Query && protocol.WantsQueryJSON(r) && protocol.WriteQueryJSON(w, action, resp, id) {
		return
	}
	protocol.WriteResponse(w, proto, action, resp, id)
}

// reserveBody counts a request's body against MaxBodyBytesInFlight before
// it is read: a thousand clients each posting a large batch at once would
// otherwise hold gigabytes before any of their requests reached a check.
// It returns the function that gives the bytes back once the request is
// answered, or the retryable 503 to answer when they are not to be had.
// Without a bound it counts nothing.
//
// A small request (smallRequestBytes or less: every receive, delete and
// visibility change) is counted but never refused, so that consumers keep
// draining while large sends and answers fill the bound.
func (s *Server) reserveBody(contentLength int64) (release func(), err *api.Error) {
	limit := s.cfg.MaxBodyBytesInFlight
	if limit <= 0 {
		return func() {}, nil
	}
	n := contentLength
	if n < 0 {
		n = MaxRequestBodyBytes // chunked: it may be as large as allowed
	}
	if s.bodyBytes.Add(n) > limit && n > smallRequestBytes {
		s.bodyBytes.Add(-n)
		s.metrics.WritesRefused(metrics.RefusedMemory, 1)
		return nil, api.ErrServiceUnavailable("The server is reading as many request bytes as its memory budget allows (%s); retry.", memguard.HumanSize(limit))
	}
	return func() { s.bodyBytes.Add(-n) }, nil
}

// smallRequestBytes is the size up to which reserveBody admits a request
// whatever the bytes in flight.
const smallRequestBytes = 16 << 10

// holdAnswer counts a receive's answer against MaxBodyBytesInFlight while
// it is encoded and written, and returns the function that gives the bytes
// back. It never refuses (the messages are taken: refusing now would hide
// them for their visibility timeout); it makes the requests that arrive
// meanwhile wait their turn through reserveBody's refusals, so that many
// consumers of large messages cannot hold more answers at once than the
// bound, give or take the answers being made at the moment it is reached.
func (s *Server) holdAnswer(resp api.Response) (release func()) {
	rm, ok := resp.(*api.ReceiveMessageResult)
	if !ok || s.cfg.MaxBodyBytesInFlight <= 0 || len(rm.Messages) == 0 {
		return func() {}
	}
	var n int64
	for i := range rm.Messages {
		m := &rm.Messages[i]
		// The encoded answer is a copy of the body and the attributes
		// (the message's own strings are shared with the engine).
		n += int64(api.MessageSize(m.Body, m.MessageAttributes))
	}
	s.bodyBytes.Add(n)
	return func() { s.bodyBytes.Add(-n) }
}

// Do carries out one typed request as the given account would over HTTP:
// validated, authorized against queue policies and applied through the
// log. It is how parts of fifoq other than the wire API (the config file's
// queues, the web console) act on queues, so that they obey the same rules.
// Queue URLs in the response are paths (/ACCOUNT/NAME), not absolute URLs.
// It acts in the server's own region.
//
// On a node with shards, the request is carried out in its queue's group
// (a new queue placed first, as CreateQueue through the API places it),
// by that group's leader: here, or asked over the node-to-node port
// (do_route.go).
func (s *Server) Do(ctx context.Context, account string, req api.Request) (api.Response, error) {
	in := api.Scope{Account: account}
	if s.sharded() {
		// What spans a split queue's partitions is carried out in each
		// (serveOverParts), as for a client's request.
		if resp, spans, err := s.serveOverParts(ctx, in, req); spans {
			return resp, err
		}
		if q, ok := s.queueOfRequest(in, req); ok {
			return s.doSharded(ctx, in, q, req)
		}
	}
	return s.do(ctx, in, req)
}

// scopeOf returns the scope of an API request made by the given account:
// the region is the one its signature names (placed against the server's
// own, see api.QueueKey), or the server's own for an unsigned request.
func (s *Server) scopeOf(r *http.Request, account string) api.Scope {
	if s.cfg.SingleRegion {
		return api.Scope{Account: account}
	}
	return api.Scope{Account: account, Region: api.QueueKey{}.InRegion(auth.RequestRegion(r), s.cfg.Region).Region}
}

// resolve returns the queue a QueueUrl names for a request of scope in.
func (s *Server) resolve(raw string, in api.Scope) (api.QueueKey, error) {
	k, err := api.ResolveQueueURL(raw, in, s.cfg.Region)
	return s.placed(k), err
}

// placed returns k in the server's own region if SingleRegion says every
// queue is there, else k.
func (s *Server) placed(k api.QueueKey) api.QueueKey {
	if s.cfg.SingleRegion {
		k.Region = ""
	}
	return k
}

// do carries out a request and counts its outcome in the queue's counters.
func (s *Server) do(ctx context.Context, in api.Scope, req api.Request) (api.Response, error) {
	resp, err := s.doRequest(ctx, in, req)
	if err == nil {
		if u, ok := api.QueueURLOf(req); ok {
			if q, perr := s.resolve(u, in); perr == nil {
				s.stats.record(q, req, resp)
				if _, ok := req.(*api.DeleteQueueRequest); ok && s.stats.deletes.Load()%pruneEvery == 0 {
					s.pruneGone()
				}
			}
		}
	}
	return resp, err
}

// doRequest validates a typed request from the caller's account, checks
// that the caller may make it, and carries it out.
func (s *Server) doRequest(ctx context.Context, in api.Scope, req api.Request) (api.Response, error) {
	if err := api.Validate(req); err != nil {
		return nil, err
	}
	if err := validatePolicies(req); err != nil {
		return nil, err
	}
	cmd := &engine.Command{
		Time:    s.now().UnixNano(),
		Caller:  in.Account,
		Region:  in.Region,
		Request: req,
	}
	if u, ok := api.QueueURLOf(req); ok {
		q, err := s.resolve(u, in)
		if err != nil {
			return nil, err
		}
		q.Part = partOf(ctx) // a split queue's partition (partition_route.go)
		cmd.Queue = q
	}
	if err := s.authorize(ctx, in, req, cmd.Queue); err != nil {
		if err = s.confirmNegative(ctx, err, func() error { return s.authorize(ctx, in, req, cmd.Queue) }); err != nil {
			return nil, err
		}
	}
	switch req := req.(type) {
	case *api.SendMessageRequest:
		cmd.MessageIDs = []string{newUUID()}
	case *api.SendMessageBatchRequest:
		cmd.MessageIDs = make([]string, len(req.Entries))
		for i := range cmd.MessageIDs {
			cmd.MessageIDs[i] = newUUID()
		}
	case *api.ReceiveMessageRequest:
		return s.receive(ctx, cmd, req)
	case *api.DeleteQueueRequest:
		cmd.RecreateDelay = s.cfg.RecreateDelay
	case *api.PurgeQueueRequest:
		cmd.PurgeDelay = s.cfg.PurgeDelay
	}
	if req.Action().ReadOnly() {
		if err := s.readBarrier(ctx); err != nil {
			return nil, err
		}
		if r, ok := req.(*api.ListQueuesRequest); ok && s.sharded() {
			return s.listQueuesOfAllGroups(ctx, cmd, r)
		}
		return s.read(ctx, cmd)
	}
	if err := s.admitGrowth(req); err != nil {
		return nil, err
	}
	cmd.Entropy = newEntropy()
	return s.apply(ctx, cmd)
}

// admitGrowth refuses, with a retryable 503, the requests that add to the
// state while the memory guard says the process is at its budget: sends
// and new queues. Receives, deletes and visibility changes go on, so
// that consumers drain the backlog and free the memory. (A request that
// is invalid or not allowed has already had its own answer.)
func (s *Server) admitGrowth(req api.Request) error {
	if s.cfg.Memory == nil {
		return nil
	}
	switch req.(type) {
	case *api.SendMessageRequest, *api.SendMessageBatchRequest, *api.CreateQueueRequest:
	default:
		return nil
	}
	err := s.cfg.Memory.Admit()
	if err != nil {
		s.metrics.WritesRefused(metrics.RefusedMemory, 1)
	}
	return err
}

// baseURL is the scheme and host the client reached us by, from which queue
// URLs are built so that they work behind port mappings and proxies.
//
// Some clients name the host without the port they connected to (Debian's
// Perl SQS client sends "Host: 127.0.0.1" to port 9324) and then post to
// the queue URL they were given. Where the Host header has no port, no
// proxy says it forwarded the request, and the connection's own port is
// not the scheme's default, the URL gets the connection's port, so that
// it leads back here.
func baseURL(r *http.Request) string {
	scheme, defaultPort := "http", "80"
	if r.TLS != nil {
		scheme, defaultPort = "https", "443"
	}
	host := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil && !forwarded(r.Header) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if _, port, err := net.SplitHostPort(local.String()); err == nil && port != defaultPort {
				if host == "" {
					return scheme + "://" + local.String()
				}
				host = net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
			}
		}
	}
	return scheme + "://" + host
}

// forwarded reports whether a proxy says it forwarded the request; its
// Host header is then the public name, port included or implied.
func forwarded(h http.Header) bool {
	for _, k := range []string{"Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-For"} {
		if h.Get(k) != "" {
			return true
		}
	}
	return false
}

// holdsQueueURLs reports whether resp is of a type rewriteQueueURLs
// rewrites.
func holdsQueueURLs(resp api.Response) bool {
	switch resp.(type) {
	case *api.CreateQueueResult, *api.GetQueueUrlResult, *api.ListQueuesResult, *api.ListDeadLetterSourceQueuesResult:
		return true
	}
	return false
}

// rewriteQueueURLs turns the queue paths the engine answers with into
// absolute URLs.
func rewriteQueueURLs(resp api.Response, base string) {
	abs := func(p string) string {
		if strings.HasPrefix(p, "/") {
			return base + p
		}
		return p
	}
	switch r := resp.(type) {
	case *api.CreateQueueResult:
		r.QueueUrl = abs(r.QueueUrl)
	case *api.GetQueueUrlResult:
		r.QueueUrl = abs(r.QueueUrl)
	case *api.ListQueuesResult:
		for i := range r.QueueUrls {
			r.QueueUrls[i] = abs(r.QueueUrls[i])
		}
	case *api.ListDeadLetterSourceQueuesResult:
		for i := range r.QueueUrls {
			r.QueueUrls[i] = abs(r.QueueUrls[i])
		}
	}
}

// traceHeaderAttribute gives a SendMessage the AWSTraceHeader system
// attribute from the request's X-Amzn-Trace-Id header, as SQS does for an
// X-Ray-traced sender (localstack test_sqs.snapshot.json:
// test_aws_trace_header_propagation/xray-msg), unless the request sets the
// attribute itself.
func traceHeaderAttribute(req api.Request, header string) {
	send, ok := req.(*api.SendMessageRequest)
	if !ok || header == "" {
		return
	}
	if _, set := send.MessageSystemAttributes[api.MsgAttrAWSTraceHeader]; set {
		return
	}
	if send.MessageSystemAttributes == nil {
		send.MessageSystemAttributes = map[string]api.MessageSystemAttributeValue{}
	}
	send.MessageSystemAttributes[api.MsgAttrAWSTraceHeader] = api.MessageSystemAttributeValue{DataType: "String", StringValue: &header}
}
