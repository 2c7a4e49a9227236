package auth_test

import (
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/engine"
)

// queueHost drives an engine as the server would, for one owner account,
// so that the policies under test are the exact documents AddPermission,
// RemovePermission and SetQueueAttributes leave in the Policy attribute.
type queueHost struct {
	t     *testing.T
	e     *engine.Engine
	owner string
	key   api.QueueKey
	arn   string
	now   int64
}

func newQueueHost(t *testing.T, owner, name string) *queueHost {
	h := &queueHost{t: t, e: engine.New(engine.Config{Region: "us-east-1"}), owner: owner, now: 1_700_000_000_000_000_000}
	h.key = api.QueueKey{Account: owner, Name: name}
	h.arn = h.key.ARN("us-east-1")
	h.do(&api.CreateQueueRequest{QueueName: name, Attributes: map[string]string{api.AttrFifoQueue: "true"}})
	return h
}

// do validates and applies (or reads) one request of the owner's.
func (h *queueHost) do(req api.Request) api.Response {
	h.t.Helper()
	if err := api.Validate(req); err != nil {
		h.t.Fatalf("%s: %v", req.Action(), err)
	}
	h.now += 1_000_000
	cmd := &engine.Command{Time: h.now, Caller: h.owner, Queue: h.key, Request: req}
	var resp api.Response
	var err error
	if req.Action().ReadOnly() {
		resp, err = h.e.Read(cmd)
	} else {
		resp, err = h.e.Apply(cmd)
	}
	if err != nil {
		h.t.Fatalf("%s: %v", req.Action(), err)
	}
	return resp
}

func (h *queueHost) addPermission(label string, accounts, actions []string) {
	h.t.Helper()
	h.do(&api.AddPermissionRequest{QueueUrl: h.key.Path(), Label: label, AWSAccountIds: accounts, Actions: actions})
}

func (h *queueHost) removePermission(label string) {
	h.t.Helper()
	h.do(&api.RemovePermissionRequest{QueueUrl: h.key.Path(), Label: label})
}

// policy reads the Policy attribute and parses it; nil if the queue has none.
func (h *queueHost) policy() *auth.Policy {
	h.t.Helper()
	res := h.do(&api.GetQueueAttributesRequest{QueueUrl: h.key.Path(), AttributeNames: []string{api.AttrPolicy}}).(*api.GetQueueAttributesResult)
	doc, ok := res.Attributes[api.AttrPolicy]
	if !ok {
		return nil
	}
	p, err := auth.ParsePolicy(doc)
	if err != nil {
		h.t.Fatalf("ParsePolicy of the engine's policy %s: %v", doc, err)
	}
	return p
}

// access is one expected outcome of Authorize.
type access struct {
	caller, action string
	allowed        bool
}

func (h *queueHost) check(p *auth.Policy, want []access) {
	h.t.Helper()
	for _, w := range want {
		err := auth.Authorize(p, w.caller, h.owner, w.action, h.arn)
		if w.allowed != (err == nil) {
			h.t.Errorf("Authorize(%s, %s) = %v, want allowed=%v", w.caller, w.action, err, w.allowed)
		}
		if err != nil {
			if e, ok := err.(*api.Error); !ok || e.Code != "AccessDenied" {
				h.t.Errorf("Authorize(%s, %s) = %#v, want AccessDenied", w.caller, w.action, err)
			}
		}
	}
}

const (
	owner   = "000000000000"
	alice   = "111111111111"
	bob     = "222222222222"
	charlie = "333333333333"
)

func TestAddPermissionPoliciesGrantCrossAccountAccess(t *testing.T) {
	h := newQueueHost(t, owner, "orders.fifo")
	h.check(h.policy(), []access{
		{owner, "SendMessage", true},
		{owner, "DeleteQueue", true},
		{alice, "SendMessage", false},
	})

	// One account, one action: Principal and Action are single strings.
	h.addPermission("send", []string{alice}, []string{"SendMessage"})
	// Several of each: Principal and Action are lists.
	h.addPermission("consume", []string{alice, bob}, []string{"ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility"})
	h.check(h.policy(), []access{
		{alice, "SendMessage", true},
		{alice, "SendMessageBatch", true},
		{alice, "ReceiveMessage", true},
		{alice, "DeleteMessageBatch", true},
		{alice, "ChangeMessageVisibilityBatch", true},
		{alice, "PurgeQueue", false},
		{alice, "GetQueueAttributes", false},
		{bob, "SendMessage", false},
		{bob, "ReceiveMessage", true},
		{bob, "DeleteMessage", true},
		{charlie, "ReceiveMessage", false},
		{owner, "PurgeQueue", true},
	})

	h.removePermission("consume")
	h.check(h.policy(), []access{
		{alice, "SendMessage", true},
		{alice, "ReceiveMessage", false},
		{bob, "ReceiveMessage", false},
	})

	// "*" grants every grantable action, and still none the owner keeps.
	h.addPermission("all", []string{charlie}, []string{"*"})
	h.check(h.policy(), []access{
		{charlie, "SendMessage", true},
		{charlie, "PurgeQueue", true},
		{charlie, "GetQueueUrl", true},
		{charlie, "ListDeadLetterSourceQueues", true},
		{charlie, "DeleteQueue", false},
		{charlie, "SetQueueAttributes", false},
		{charlie, "AddPermission", false},
	})

	h.removePermission("send")
	h.removePermission("all")
	if p := h.policy(); p != nil {
		t.Errorf("a policy remains after every permission is removed")
	}
	h.check(nil, []access{{alice, "SendMessage", false}, {charlie, "SendMessage", false}, {owner, "SendMessage", true}})
}

func TestSetPolicyDenyWinsOverAddPermission(t *testing.T) {
	h := newQueueHost(t, owner, "orders.fifo")
	custom := `{"Version":"2012-10-17","Id":"custom","Statement":[` +
		`{"Sid":"noPurge","Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue","Resource":"` + h.arn + `"},` +
		`{"Sid":"notBob","Effect":"Deny","Principal":{"AWS":"arn:aws:iam::222222222222:user/mallory"},"Action":"sqs:*"}]}`
	if _, err := auth.ParsePolicy(custom); err != nil {
		t.Fatalf("ParsePolicy(custom): %v", err)
	}
	h.do(&api.SetQueueAttributesRequest{QueueUrl: h.key.Path(), Attributes: map[string]string{api.AttrPolicy: custom}})
	h.addPermission("grant", []string{alice, bob}, []string{"*"})
	h.check(h.policy(), []access{
		{alice, "SendMessage", true},
		{alice, "PurgeQueue", false},
		{owner, "PurgeQueue", false}, // the owner too: an explicit Deny binds everyone
		{owner, "SendMessage", true},
		{bob, "SendMessage", false}, // an IAM user's ARN stands for its whole account
		{bob, "ReceiveMessage", false},
	})
}
