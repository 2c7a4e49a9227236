package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/protocol"
)

// serveAPI answers one SQS API request in either wire protocol.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	requestID := newUUID()
	proto := protocol.Detect(r)
	defer func() {
		// A bug must cost one request, never the server: answer 500 with the
		// request id, and log the stack so the bug can be found.
		if v := recover(); v != nil {
			s.logger.Error("panic serving request", "request_id", requestID, "panic", v, "stack", string(debug.Stack()))
			protocol.WriteError(w, proto, api.ErrInternalFailure("Internal failure; request id %s.", requestID), requestID)
		}
	}()

	// A body declared larger than the limit is refused before a byte of it
	// is read, so an abusive client cannot make the server read 8 MiB to
	// learn what the header already says; net/http then closes the
	// connection rather than drain the rest.
	if r.ContentLength > MaxRequestBodyBytes {
		w.Header().Set("Connection", "close")
		protocol.WriteError(w, proto, api.ErrRequestEntityTooLarge(MaxRequestBodyBytes), requestID)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			protocol.WriteError(w, proto, api.ErrRequestEntityTooLarge(MaxRequestBodyBytes), requestID)
			return
		}
		protocol.WriteError(w, proto, api.ErrMalformedQueryString("Could not read the request body: %v", err), requestID)
		return
	}
	// The signature covers the raw request, so it is checked before the
	// body is decoded; an unsigned request learns nothing about queues.
	caller, err := s.verifier.Verify(r, body)
	if err != nil {
		protocol.WriteError(w, proto, api.AsError(err), requestID)
		return
	}
	_, req, apiErr := protocol.Decode(proto, r, body)
	if apiErr != nil {
		protocol.WriteError(w, proto, apiErr, requestID)
		return
	}
	resp, err := s.do(r.Context(), caller, req)
	if err != nil {
		protocol.WriteError(w, proto, api.AsError(err), requestID)
		return
	}
	rewriteQueueURLs(resp, baseURL(r))
	protocol.WriteResponse(w, proto, req.Action(), resp, requestID)
}

// Do carries out one typed request as the given account would over HTTP:
// validated, authorized against queue policies and applied through the
// log. It is how parts of fifoq other than the wire API (the config file's
// queues, the web console) act on queues, so that they obey the same rules.
// Queue URLs in the response are paths (/ACCOUNT/NAME), not absolute URLs.
func (s *Server) Do(ctx context.Context, account string, req api.Request) (api.Response, error) {
	return s.do(ctx, account, req)
}

// do carries out a request and counts its outcome in the queue's counters.
func (s *Server) do(ctx context.Context, caller string, req api.Request) (api.Response, error) {
	resp, err := s.doRequest(ctx, caller, req)
	if err == nil {
		if u, ok := api.QueueURLOf(req); ok {
			if q, perr := api.ParseQueueURL(u); perr == nil {
				s.stats.record(q, req, resp)
			}
		}
	}
	return resp, err
}

// doRequest validates a typed request from the caller's account, checks
// that the caller may make it, and carries it out.
func (s *Server) doRequest(ctx context.Context, caller string, req api.Request) (api.Response, error) {
	if err := api.Validate(req); err != nil {
		return nil, err
	}
	if err := validatePolicies(req); err != nil {
		return nil, err
	}
	cmd := &engine.Command{
		Time:    s.now().UnixNano(),
		Caller:  caller,
		Request: req,
	}
	if u, ok := api.QueueURLOf(req); ok {
		q, err := api.ParseQueueURL(u)
		if err != nil {
			return nil, err
		}
		cmd.Queue = q
	}
	if err := s.authorize(caller, req, cmd.Queue); err != nil {
		return nil, err
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
	}
	if req.Action().ReadOnly() {
		return s.read(cmd)
	}
	cmd.Entropy = newEntropy()
	return s.apply(ctx, cmd)
}

// baseURL is the scheme and host the client reached us by, from which queue
// URLs are built so that they work behind port mappings and proxies.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
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
