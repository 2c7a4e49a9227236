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

	// actions are lower-case glob patterns over action names, without the
	// "sqs:" prefix; "*" matches every action.
	actions   []string
	notAction bool

	// resources are glob patterns over queue ARNs, their service part in
	// lower case. nil means the element was absent: the statement is about
	// the queue whose policy it is, so it matches any queue ARN asked about.
	resources   []string
	notResource bool
}

// applies reports whether the statement is about this caller, action and
// queue. action is a lower-case action name, as permissionFor returns it.
func (s *statement) applies(callerAccount, action, queueARN string) bool {
	if s.principals.has(callerAccount) == s.notPrincipal {
		return false
	}
	if matchesAny(s.actions, action) == s.notAction {
		return false
	}
	if s.resources == nil {
		return true
	}
	return matchesAny(s.resources, normalizeARNService(queueARN)) != s.notResource
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
// queueARN the ARN of the target queue.
//
// The batch actions are authorized as their single forms, as in SQS:
// SendMessageBatch needs sqs:SendMessage, DeleteMessageBatch
// sqs:DeleteMessage, ChangeMessageVisibilityBatch
// sqs:ChangeMessageVisibility. Action names compare case-insensitively; ARNs
// compare case-sensitively but for their service part.
func (p *Policy) Evaluate(callerAccount, action, queueARN string) Decision {
	if p == nil {
		return NoDecision
	}
	name := permissionFor(action)
	d := NoDecision
	for i := range p.statements {
		s := &p.statements[i]
		if !s.applies(callerAccount, name, queueARN) {
			continue
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
	switch p.Evaluate(callerAccount, action, queueARN) {
	case Deny:
		return AccessDenied(queueARN)
	case Allow:
		if callerAccount == ownerAccount || !api.IsOwnerOnlyAction(action) {
			return nil
		}
		return AccessDenied(queueARN)
	}
	if callerAccount == ownerAccount {
		return nil
	}
	return AccessDenied(queueARN)
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

// permissionFor returns the lower-case name of the permission an action
// needs: its own name, or for a batch action the name of its single form.
func permissionFor(action string) string {
	if name, ok := permissionNames[action]; ok {
		return name
	}
	return strings.ToLower(action)
}

// permissionNames maps every SQS action to permissionFor's answer, computed
// once so that evaluating a request allocates nothing.
var permissionNames = func() map[string]string {
	m := make(map[string]string, len(api.Actions))
	for _, a := range api.Actions {
		m[string(a)] = strings.ToLower(string(a))
	}
	m[string(api.ActionSendMessageBatch)] = "sendmessage"
	m[string(api.ActionDeleteMessageBatch)] = "deletemessage"
	m[string(api.ActionChangeMessageVisibilityBatch)] = "changemessagevisibility"
	return m
}()
