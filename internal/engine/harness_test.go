package engine

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// t0 is the time the harness starts at: an ordinary Unix time in ns.
const t0 = int64(1_700_000_000) * int64(time.Second)

const testRegion = "us-east-1"
const testAccount = "000000000000"

// harness drives an engine the way the server does: every request goes
// through api.Validate, then Apply or Read, with a fake clock, fresh
// message ids and entropy per command.
type harness struct {
	t       *testing.T
	e       *Engine
	bodies  *testBodies // the engine's BodyStore, with harnessBodies
	now     int64
	caller  string
	entropy uint64
	ids     int
	woken   []api.QueueKey
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, e: New(Config{Region: testRegion}), now: t0, caller: testAccount, entropy: 0x1234}
	if harnessBodies {
		h.bodies = newTestBodies(t)
		h.e.SetBodyStore(h.bodies)
	}
	h.e.SetAvailableHook(func(k api.QueueKey) { h.woken = append(h.woken, k) })
	return h
}

// advance moves the fake clock.
func (h *harness) advance(d time.Duration) { h.now += int64(d) }

// command builds the command for a request, as the server would.
func (h *harness) command(q api.QueueKey, req api.Request) *Command {
	ids := messageIDs(req, func() string {
		h.ids++
		return fmt.Sprintf("msg-%06d", h.ids)
	})
	h.entropy = mix64(h.entropy)
	return &Command{Time: h.now, Caller: h.caller, Queue: q, Request: req, MessageIDs: ids, Entropy: h.entropy}
}

// messageIDs gives a request one fresh message id, from next, for each
// message it may create, as the server does: one for SendMessage, one per
// entry for SendMessageBatch.
func messageIDs(req api.Request, next func() string) []string {
	n := 0
	switch r := req.(type) {
	case *api.SendMessageRequest:
		n = 1
	case *api.SendMessageBatchRequest:
		n = len(r.Entries)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = next()
	}
	return ids
}

// do validates a request and applies or reads it.
func (h *harness) do(q api.QueueKey, req api.Request) (api.Response, error) {
	h.t.Helper()
	if err := api.Validate(req); err != nil {
		return nil, err
	}
	return h.raw(q, req)
}

// raw applies or reads a request without validating it, to reach the
// engine's own checks of rules api.Validate enforces first.
func (h *harness) raw(q api.QueueKey, req api.Request) (api.Response, error) {
	cmd := h.command(q, req)
	if _, ok := req.(*TickRequest); !ok && req.Action().ReadOnly() {
		return h.e.Read(cmd)
	}
	return h.e.Apply(cmd)
}

// must is do, failing the test on error.
func (h *harness) must(q api.QueueKey, req api.Request) api.Response {
	h.t.Helper()
	resp, err := h.do(q, req)
	if err != nil {
		h.t.Fatalf("%s: unexpected error: %v", req.Action(), err)
	}
	return resp
}

func (h *harness) createQueue(name string, attrs map[string]string) api.QueueKey {
	h.t.Helper()
	res := h.must(api.QueueKey{}, &api.CreateQueueRequest{QueueName: name, Attributes: attrs}).(*api.CreateQueueResult)
	k := api.QueueKey{Account: h.caller, Name: name}
	if res.QueueUrl != k.Path() {
		h.t.Fatalf("CreateQueue URL = %q, want %q", res.QueueUrl, k.Path())
	}
	return k
}

func (h *harness) fifoQueue(name string, attrs map[string]string) api.QueueKey {
	h.t.Helper()
	all := map[string]string{api.AttrFifoQueue: "true"}
	for k, v := range attrs {
		all[k] = v
	}
	return h.createQueue(name, all)
}

func (h *harness) sendFIFO(q api.QueueKey, body, group, dedup string) *api.SendMessageResult {
	h.t.Helper()
	return h.must(q, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup}).(*api.SendMessageResult)
}

func (h *harness) send(q api.QueueKey, req *api.SendMessageRequest) *api.SendMessageResult {
	h.t.Helper()
	req.QueueUrl = q.Path()
	return h.must(q, req).(*api.SendMessageResult)
}

// receive receives up to max messages with all system attributes; vis < 0
// means the queue's visibility timeout.
func (h *harness) receive(q api.QueueKey, max, vis int) []api.Message {
	h.t.Helper()
	req := &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max, MessageSystemAttributeNames: []string{"All"}, MessageAttributeNames: []string{"All"}}
	if vis >= 0 {
		req.VisibilityTimeout = &vis
	}
	return h.must(q, req).(*api.ReceiveMessageResult).Messages
}

func (h *harness) deleteMsg(q api.QueueKey, handle string) error {
	h.t.Helper()
	_, err := h.do(q, &api.DeleteMessageRequest{QueueUrl: q.Path(), ReceiptHandle: handle})
	return err
}

func (h *harness) changeVis(q api.QueueKey, handle string, vis int) error {
	h.t.Helper()
	_, err := h.do(q, &api.ChangeMessageVisibilityRequest{QueueUrl: q.Path(), ReceiptHandle: handle, VisibilityTimeout: &vis})
	return err
}

// attrs reads queue attributes.
func (h *harness) attrs(q api.QueueKey, names ...string) map[string]string {
	h.t.Helper()
	if len(names) == 0 {
		names = []string{"All"}
	}
	return h.must(q, &api.GetQueueAttributesRequest{QueueUrl: q.Path(), AttributeNames: names}).(*api.GetQueueAttributesResult).Attributes
}

// counts reads the three message counts.
func (h *harness) counts(q api.QueueKey) [3]int {
	h.t.Helper()
	a := h.attrs(q, api.AttrApproximateNumberOfMessages, api.AttrApproximateNumberOfMessagesNotVisible, api.AttrApproximateNumberOfMessagesDelayed)
	var c [3]int
	for i, name := range []string{api.AttrApproximateNumberOfMessages, api.AttrApproximateNumberOfMessagesNotVisible, api.AttrApproximateNumberOfMessagesDelayed} {
		n, err := strconv.Atoi(a[name])
		if err != nil {
			h.t.Fatalf("attribute %s = %q", name, a[name])
		}
		c[i] = n
	}
	return c
}

// takeWoken returns and clears the queues the hook was called with.
func (h *harness) takeWoken() []api.QueueKey {
	w := h.woken
	h.woken = nil
	return w
}

// wantCode fails the test unless err is an *api.Error with the given code.
func wantCode(t *testing.T, err error, code string) *api.Error {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error = %v, want %s", err, code)
	}
	if ae.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	return ae
}

func bodies(msgs []api.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Body
	}
	return out
}

func intp(n int) *int       { return &n }
func strp(s string) *string { return &s }
