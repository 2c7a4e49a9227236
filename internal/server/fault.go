package server

import (
	"context"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// faultHook, when set, may answer a decoded client request in place of the
// server: ok true means resp is the answer and the request is not carried
// out. Only a binary built with the fifoq_faults build tag sets it
// (fault_inject.go), for the cluster failover test's proof that its checker
// catches a node that acknowledges what it did not commit; a normal build
// has no way to set it.
var faultHook func(req api.Request) (resp api.Response, ok bool)

// faultClockSkew, when not 0, sets the server's wall clock that far off the
// machine's: only a fifoq_faults build sets it (fault_inject.go), for the
// cluster tests' member with a skewed clock.
var faultClockSkew time.Duration

// faultEnvelopesOnly, when true, makes the server route requests to other
// members as a fifoq from before POST /cluster/do's query form did: it
// sends envelopes only, and reads a routed request's body as an envelope
// whatever its query says (do_wire.go). Only a fifoq_faults build sets it
// (fault_inject.go), for the cluster test of a rolling upgrade over it.
var faultEnvelopesOnly bool

// doOrFault carries out a client's request, unless a test build's fault
// answers it instead.
func (s *Server) doOrFault(ctx context.Context, in api.Scope, req api.Request) (api.Response, error) {
	if faultHook != nil {
		if resp, ok := faultHook(req); ok {
			return resp, nil
		}
	}
	return s.do(ctx, in, req)
}
