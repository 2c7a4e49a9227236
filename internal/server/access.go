package server

import (
	"context"
	"sync"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// authorize decides whether caller may carry out req, as SQS does: a
// queue's owner may do anything its policy does not explicitly deny;
// another account needs a policy statement that allows the action and
// none that denies it. Queues that do not exist are left to the engine,
// which answers QueueDoesNotExist.
func (s *Server) authorize(ctx context.Context, in api.Scope, req api.Request, target api.QueueKey) error {
	secure := transportOf(ctx)
	caller := in.Account
	switch r := req.(type) {
	case *api.CreateQueueRequest, *api.ListQueuesRequest:
		return nil // always in the caller's own account
	case *api.AddPermissionRequest, *api.RemovePermissionRequest:
		// Only the owner manages a queue's permissions.
		if target.Account != caller {
			return s.denied(target)
		}
		return nil
	case *api.GetQueueUrlRequest:
		owner := r.QueueOwnerAWSAccountId
		if owner == "" {
			owner = caller
		}
		q := api.QueueKey{Region: in.Region, Account: owner, Name: r.QueueName}
		return s.authorizeIn(s.queueLog(ctx, q), secure, caller, req.Action(), q)
	case *api.StartMessageMoveTaskRequest:
		if err := s.authorizeARN(ctx, secure, caller, req.Action(), r.SourceArn); err != nil {
			return err
		}
		if r.DestinationArn != "" {
			return s.authorizeARN(ctx, secure, caller, api.ActionSendMessage, r.DestinationArn)
		}
		return nil
	case *api.ListMessageMoveTasksRequest:
		return s.authorizeARN(ctx, secure, caller, req.Action(), r.SourceArn)
	case *api.CancelMessageMoveTaskRequest:
		if arn, ok := engine.MoveTaskSource(r.TaskHandle); ok {
			return s.authorizeARN(ctx, secure, caller, req.Action(), arn)
		}
		return nil // a malformed handle: the engine says so
	}
	if _, ok := api.QueueURLOf(req); ok {
		return s.authorizeIn(s.queueLog(ctx, target), secure, caller, req.Action(), target)
	}
	return nil
}

// authorizeARN checks access to the queue an ARN names; ARNs that name no
// queue of this server are left to the engine to refuse.
func (s *Server) authorizeARN(ctx context.Context, secure *bool, caller string, action api.Action, arn string) error {
	q, ok := api.QueueOfARN(arn, s.cfg.Region)
	if !ok || q.Region != "" && s.cfg.SingleRegion {
		return nil // no such queue: the engine says so
	}
	return s.authorizeIn(s.queueLog(ctx, q), secure, caller, action, q)
}

// authorizeOn applies the queue's policy to one action on queue q, as
// the group this node's map puts q in holds it.
func (s *Server) authorizeOn(secure *bool, caller string, action api.Action, q api.QueueKey) error {
	return s.authorizeIn(s.logOf(q), secure, caller, action, q)
}

// authorizeIn is authorizeOn with the policy read from l: for a request,
// the log of the group it is served in (queueLog).
func (s *Server) authorizeIn(l replog.Log, secure *bool, caller string, action api.Action, q api.QueueKey) error {
	var doc string
	var exists bool
	l.Read(func(e *engine.Engine) { doc, exists = e.QueuePolicy(q) })
	if !exists {
		return nil
	}
	if doc == "" {
		if q.Account == caller {
			return nil
		}
		return s.denied(q)
	}
	p, err := s.policies.get(doc)
	if err != nil {
		// A stored policy was validated when it was set; one that no
		// longer parses grants nothing to others and denies nothing to
		// the owner.
		s.logger.Warn("stored queue policy does not parse", "queue", q.String(), "err", err)
		if q.Account == caller {
			return nil
		}
		return s.denied(q)
	}
	r := &auth.Request{Caller: caller, Action: string(action), QueueARN: q.ARN(s.cfg.Region), SecureTransport: secure}
	if err := auth.AuthorizeRequest(p, r, q.Account); err != nil {
		return err
	}
	return nil
}

// transportKey marks a request's context with whether it came over TLS.
type transportKey struct{}

// withTransport records in ctx whether the request came over TLS, for the
// aws:SecureTransport condition key.
func withTransport(ctx context.Context, tls bool) context.Context {
	return context.WithValue(ctx, transportKey{}, tls)
}

// transportOf returns whether the request of ctx came over TLS, or nil for
// a request that did not come over HTTP (the console, the config file):
// then a condition on aws:SecureTransport cannot be evaluated.
func transportOf(ctx context.Context) *bool {
	if tls, ok := ctx.Value(transportKey{}).(bool); ok {
		return &tls
	}
	return nil
}

func (s *Server) denied(q api.QueueKey) error {
	return api.ErrAccessDenied("Access to the resource %s is denied.", q.ARN(s.cfg.Region))
}

// validatePolicies checks a Policy attribute being set with the policy
// parser, which refuses what is not a policy document (see
// auth.ParsePolicy). The engine knows nothing of IAM.
func validatePolicies(req api.Request) error {
	var attrs map[string]string
	switch r := req.(type) {
	case *api.CreateQueueRequest:
		attrs = r.Attributes
	case *api.SetQueueAttributesRequest:
		attrs = r.Attributes
	default:
		return nil
	}
	if doc, ok := attrs[api.AttrPolicy]; ok && doc != "" {
		if _, err := auth.ParsePolicy(doc); err != nil {
			return err
		}
	}
	return nil
}

// policyCache keeps parsed policies by their text, so that a queue's
// policy is parsed once, not on every request.
type policyCache struct {
	mu     sync.Mutex
	parsed map[string]*auth.Policy
}

// maxCachedPolicies bounds the cache; past it, the cache starts over.
const maxCachedPolicies = 4096

func (c *policyCache) get(doc string) (*auth.Policy, error) {
	c.mu.Lock()
	p, ok := c.parsed[doc]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := auth.ParsePolicy(doc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.parsed == nil || len(c.parsed) >= maxCachedPolicies {
		c.parsed = map[string]*auth.Policy{}
	}
	c.parsed[doc] = p
	c.mu.Unlock()
	return p, nil
}
