package auth

import (
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Policy is a parsed queue policy: the Policy attribute of a queue, written
// by SetQueueAttributes or built by AddPermission and RemovePermission.
// ParsePolicy accepts only what Evaluate honours in full, so a Policy never
// carries a rule that evaluation would skip. The zero Policy and a nil
// *Policy have no statements: they decide nothing.
type Policy struct {
	statements []statement
}

// statement is one parsed statement. Each of its three tests (principal,
// action, resource) may be negated by the policy's Not* form of the element.
type statement struct {
	sid  string
	deny bool

	principals   principalSet
	notPrincipal bool

	// actions are lower-case glob patterns over "service:action" names;
	// "*" matches every action. An action of another service never matches
	// an SQS request.
	actions   []string
	notAction bool

	// resources are glob patterns over queue ARNs, their service part in
	// lower case. nil means the element was absent: the statement is about
	// the queue whose policy it is, so it matches any queue ARN asked about.
	resources   []string
	notResource bool
	// resourceUnknown: a resource holds a policy variable (${...}), which
	// fifoq does not substitute, so whether it matches cannot be told.
	resourceUnknown bool

	conditions []condition
}

// applies reports whether the statement is about this request: triTrue,
// triFalse, or triUnknown when a condition or a policy variable cannot be
// evaluated. name is "sqs:" and the lower-case permission name.
func (s *statement) applies(r *Request, name string) tri {
	if s.principals.has(r.Caller) == s.notPrincipal {
		return triFalse
	}
	if matchesAny(s.actions, name) == s.notAction {
		return triFalse
	}
	result := triTrue
	if s.resourceUnknown {
		result = triUnknown
	} else if s.resources != nil && matchesAny(s.resources, normalizeARNService(r.QueueARN)) == s.notResource {
		return triFalse
	}
	if len(s.conditions) == 0 {
		return result
	}
	switch evalConditions(s.conditions, r) {
	case triFalse:
		return triFalse
	case triUnknown:
		return triUnknown
	}
	return result
}

// Request is what a policy is asked about: who calls, what action on which
// queue, and what fifoq knows of the request for conditions.
type Request struct {
	Caller   string // the caller's 12-digit account
	Action   string // the SQS action name, "SendMessage"
	QueueARN string // the target queue
	// SecureTransport says whether the request came over TLS, for the
	// aws:SecureTransport condition key; nil when it is not known.
	SecureTransport *bool
}

// Decision is the outcome of evaluating a request against a policy.
type Decision int

// The decisions of Evaluate.
const (
	// NoDecision: no statement applies to the request.
	NoDecision Decision = iota
	// Allow: a statement allows the request and none denies it.
	Allow
	// Deny: a statement denies the request.
	Deny
)

// String returns the decision's name.
func (d Decision) String() string {
	switch d {
	case NoDecision:
		return "NoDecision"
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "Decision(?)"
}

// Evaluate returns Deny if any matching statement denies, else Allow if any
// matching statement allows, else NoDecision. callerAccount is the 12-digit
// account of the caller; action is the SQS action name ("SendMessage"), and
// queueARN the ARN of the target queue. It is EvaluateRequest with nothing
// known of the request's transport.
func (p *Policy) Evaluate(callerAccount, action, queueARN string) Decision {
	return p.EvaluateRequest(&Request{Caller: callerAccount, Action: action, QueueARN: queueARN})
}

// EvaluateRequest returns Deny if any statement that applies to r denies,
// else Allow if any allows, else NoDecision. A statement whose condition
// or resource cannot be evaluated counts as applying when it denies and as
// not applying when it allows, so that what fifoq cannot tell never widens
// access.
//
// The batch actions are authorized as their single forms, as in SQS:
// SendMessageBatch needs sqs:SendMessage, DeleteMessageBatch
// sqs:DeleteMessage, ChangeMessageVisibilityBatch
// sqs:ChangeMessageVisibility. Action names compare case-insensitively; ARNs
// compare case-sensitively but for their service part.
func (p *Policy) EvaluateRequest(r *Request) Decision {
	if p == nil {
		return NoDecision
	}
	name := permissionFor(r.Action)
	d := NoDecision
	for i := range p.statements {
		s := &p.statements[i]
		switch s.applies(r, name) {
		case triFalse:
			continue
		case triUnknown:
			if !s.deny {
				continue
			}
		}
		if s.deny {
			return Deny
		}
		d = Allow
	}
	return d
}

// Authorize is the whole access decision for one request on a queue: the
// owner may do anything unless the policy explicitly denies it; another
// account needs an Allow and no Deny, and even then may not perform the
// actions SQS keeps for the owner (api.IsOwnerOnlyAction). p may be nil: a queue
// without a policy is the owner's alone. It returns nil or AccessDenied.
//
// There is no exemption for the owner: a Deny that matches the owner's
// SetQueueAttributes locks the owner out of changing the policy, as it
// locks out every IAM identity of the owning account in SQS.
func Authorize(p *Policy, callerAccount, ownerAccount, action, queueARN string) error {
	return AuthorizeRequest(p, &Request{Caller: callerAccount, Action: action, QueueARN: queueARN}, ownerAccount)
}

// AuthorizeRequest is Authorize for a request whose transport may be known.
func AuthorizeRequest(p *Policy, r *Request, ownerAccount string) error {
	switch p.EvaluateRequest(r) {
	case Deny:
		return AccessDenied(r.QueueARN)
	case Allow:
		if r.Caller == ownerAccount || !api.IsOwnerOnlyAction(r.Action) {
			return nil
		}
		return AccessDenied(r.QueueARN)
	}
	if r.Caller == ownerAccount {
		return nil
	}
	return AccessDenied(r.QueueARN)
}

// AccessDenied is SQS's answer to a request the caller may not make:
// AccessDenied, HTTP 403, "Access to the resource RESOURCE is denied.". SQS
// names the URL the request was sent to (the endpoint's root, or the queue's
// URL when the client sent the request there); Authorize, which does not
// know it, names the queue's ARN, and a server that knows the URL may answer
// AccessDenied(url) instead.
func AccessDenied(resource string) *api.Error {
	return api.ErrAccessDenied("Access to the resource %s is denied.", resource)
}

// permissionFor returns "sqs:" and the lower-case name of the permission an
// action needs: its own name, or for a batch action the name of its single
// form.
func permissionFor(action string) string {
	if name, ok := permissionNames[action]; ok {
		return name
	}
	return "sqs:" + strings.ToLower(action)
}

// permissionNames maps every SQS action to permissionFor's answer, computed
// once so that evaluating a request allocates nothing.
var permissionNames = func() map[string]string {
	m := make(map[string]string, len(api.Actions))
	for _, a := range api.Actions {
		m[string(a)] = "sqs:" + strings.ToLower(string(a))
	}
	m[string(api.ActionSendMessageBatch)] = "sqs:sendmessage"
	m[string(api.ActionDeleteMessageBatch)] = "sqs:deletemessage"
	m[string(api.ActionChangeMessageVisibilityBatch)] = "sqs:changemessagevisibility"
	return m
}()
