package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

func redrive(dlq api.QueueKey, max int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%d}`, dlq.ARN(testRegion), max)
}

func TestRedrivePolicyChecks(t *testing.T) {
	h := newHarness(t)
	std := h.createQueue("dlq", nil)
	fifo := h.fifoQueue("dlq.fifo", nil)
	deny := h.createQueue("deny", map[string]string{api.AttrRedriveAllowPolicy: `{"redrivePermission":"denyAll"}`})
	byQueue := h.createQueue("byqueue", map[string]string{api.AttrRedriveAllowPolicy: fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":["%s"]}`,
		api.QueueKey{Account: testAccount, Name: "allowed"}.ARN(testRegion))})
	tests := []struct {
		name   string
		queue  string
		attrs  map[string]string
		reason string // "" for success
	}{
		{"standard to standard", "s1", map[string]string{api.AttrRedrivePolicy: redrive(std, 3)}, ""},
		{"fifo to fifo", "f1.fifo", map[string]string{api.AttrFifoQueue: "true", api.AttrRedrivePolicy: redrive(fifo, 3)}, ""},
		{"missing target", "s2", map[string]string{api.AttrRedrivePolicy: redrive(api.QueueKey{Account: testAccount, Name: "none"}, 3)}, "Dead letter target does not exist."},
		{"other region", "s3", map[string]string{api.AttrRedrivePolicy: `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:000000000000:dlq","maxReceiveCount":3}`}, "Dead letter target does not exist."},
		{"standard to fifo", "s4", map[string]string{api.AttrRedrivePolicy: redrive(fifo, 3)}, "Dead-letter queue must be same type of queue as the source."},
		{"fifo to standard", "f2.fifo", map[string]string{api.AttrFifoQueue: "true", api.AttrRedrivePolicy: redrive(std, 3)}, "Dead-letter queue must be same type of queue as the source."},
		// SQS takes a queue as its own dead-letter queue (localstack
		// test_sqs.py test_set_empty_redrive_policy, AWS-validated).
		{"itself", "dlq", map[string]string{api.AttrRedrivePolicy: redrive(std, 3)}, ""},
		{"denied by allow policy", "s5", map[string]string{api.AttrRedrivePolicy: redrive(deny, 3)}, "does not allow"},
		{"not listed by allow policy", "s6", map[string]string{api.AttrRedrivePolicy: redrive(byQueue, 3)}, "does not allow"},
		{"listed by allow policy", "allowed", map[string]string{api.AttrRedrivePolicy: redrive(byQueue, 3)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.name == "itself" {
				_, err = h.do(std, &api.SetQueueAttributesRequest{QueueUrl: std.Path(), Attributes: tc.attrs})
			} else {
				_, err = h.do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: tc.queue, Attributes: tc.attrs})
			}
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			ae := wantCode(t, err, "InvalidParameterValue")
			if !containsStr(ae.Message, tc.reason) {
				t.Errorf("message %q does not say %q", ae.Message, tc.reason)
			}
		})
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestFIFODeadLetterQueue(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dlq.fifo", nil)
	src := h.fifoQueue("src.fifo", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 2), api.AttrVisibilityTimeout: "10"})
	attrs := map[string]api.MessageAttributeValue{"k": {DataType: "String", StringValue: strp("v")}}
	var sent []*api.SendMessageResult
	for i := range 3 {
		sent = append(sent, h.send(src, &api.SendMessageRequest{MessageBody: "m" + strconv.Itoa(i), MessageGroupId: "g", MessageDeduplicationId: "d" + strconv.Itoa(i), MessageAttributes: attrs}))
	}
	// The DLQ already saw dedup id d0: moves bypass its deduplication.
	h.sendFIFO(dlq, "direct", "z", "d0")

	// m0, m1 received twice, never deleted.
	for range 2 {
		got := h.receive(src, 2, -1)
		if !slices.Equal(bodies(got), []string{"m0", "m1"}) {
			t.Fatalf("received %v", bodies(got))
		}
		h.advance(11 * time.Second)
	}
	// Sent after group g turned visible again, so that g comes first: groups
	// are served in the order their first message turned visible.
	h.sendFIFO(src, "other", "h", "other")
	h.takeWoken()
	// The third attempt moves m0 and m1 to the DLQ and returns m2 instead.
	got := h.receive(src, 2, -1)
	if !slices.Equal(bodies(got), []string{"m2", "other"}) {
		t.Fatalf("third receive = %v, want [m2 other]", bodies(got))
	}
	if w := h.takeWoken(); !slices.Contains(w, dlq) {
		t.Errorf("hook not called for the DLQ: %v", w)
	}
	moved := h.receive(dlq, 10, -1)
	if !slices.Equal(bodies(moved), []string{"direct", "m0", "m1"}) {
		t.Fatalf("DLQ holds %v", bodies(moved))
	}
	for i, m := range moved[1:] {
		a := m.Attributes
		if m.MessageId != sent[i].MessageId || a[api.MsgAttrMessageGroupId] != "g" || a[api.MsgAttrMessageDeduplicationId] != "d"+strconv.Itoa(i) ||
			a[api.MsgAttrDeadLetterQueueSourceArn] != src.ARN(testRegion) || m.MessageAttributes["k"].StringValue == nil || m.MD5OfMessageAttributes != sent[i].MD5OfMessageAttributes {
			t.Errorf("moved message %d = %+v", i, m)
		}
		if a[api.MsgAttrSequenceNumber] <= moved[0].Attributes[api.MsgAttrSequenceNumber] {
			t.Errorf("moved message got no new sequence number in the DLQ")
		}
	}
	if c := h.counts(src); c != [3]int{0, 2, 0} {
		t.Errorf("source counts = %v", c)
	}
	// ListDeadLetterSourceQueues.
	res := h.must(dlq, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: dlq.Path()}).(*api.ListDeadLetterSourceQueuesResult)
	if !slices.Equal(res.QueueUrls, []string{src.Path()}) {
		t.Errorf("dead-letter sources = %v", res.QueueUrls)
	}
}

func TestStandardDeadLetterQueueAndSources(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", map[string]string{api.AttrMessageRetentionPeriod: "120"})
	var srcs []api.QueueKey
	for _, n := range []string{"c", "a", "b"} {
		srcs = append(srcs, h.createQueue(n, map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)}))
	}
	h.send(srcs[0], &api.SendMessageRequest{MessageBody: "x"})
	h.receive(srcs[0], 1, 0)
	h.advance(100 * time.Second)
	if got := h.receive(srcs[0], 1, -1); len(got) != 0 {
		t.Fatalf("message returned past maxReceiveCount")
	}
	if c := h.counts(dlq); c != [3]int{1, 0, 0} {
		t.Fatalf("DLQ counts = %v", c)
	}
	// A standard DLQ keeps the original enqueue time for retention.
	h.advance(20 * time.Second)
	if c := h.counts(dlq); c != [3]int{} {
		t.Errorf("DLQ counts after the original retention ran out = %v", c)
	}

	list := func(tok string) *api.ListDeadLetterSourceQueuesResult {
		return h.must(dlq, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: dlq.Path(), NextToken: tok, MaxResults: intp(2)}).(*api.ListDeadLetterSourceQueuesResult)
	}
	p1 := list("")
	p2 := list(p1.NextToken)
	if !slices.Equal(p1.QueueUrls, []string{"/000000000000/a", "/000000000000/b"}) || !slices.Equal(p2.QueueUrls, []string{"/000000000000/c"}) || p2.NextToken != "" {
		t.Errorf("pages %v %v", p1, p2)
	}
	// Clearing a policy and deleting a source update the list.
	h.must(srcs[1], &api.SetQueueAttributesRequest{QueueUrl: srcs[1].Path(), Attributes: map[string]string{api.AttrRedrivePolicy: ""}})
	h.must(srcs[2], &api.DeleteQueueRequest{QueueUrl: srcs[2].Path()})
	if got := h.must(dlq, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: dlq.Path()}).(*api.ListDeadLetterSourceQueuesResult); !slices.Equal(got.QueueUrls, []string{"/000000000000/c"}) {
		t.Errorf("sources = %v", got.QueueUrls)
	}
}

func TestDeadLetterQueueDeleted(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	src := h.createQueue("src", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	h.must(dlq, &api.DeleteQueueRequest{QueueUrl: dlq.Path()})
	h.send(src, &api.SendMessageRequest{MessageBody: "x"})
	h.receive(src, 1, 0)
	// Without its dead-letter queue the message stays deliverable.
	if got := h.receive(src, 1, -1); len(got) != 1 {
		t.Fatalf("message lost with the dead-letter queue gone")
	}
}

// deadLetters sends n messages to src (FIFO: one group), receives each
// until they land in the DLQ of maxReceiveCount 1.
func deadLetters(h *harness, src api.QueueKey, fifo bool, n int) {
	h.t.Helper()
	for i := range n {
		if fifo {
			h.sendFIFO(src, "m"+strconv.Itoa(i), "g"+strconv.Itoa(i%2), "d"+strconv.Itoa(i))
		} else {
			h.send(src, &api.SendMessageRequest{MessageBody: "m" + strconv.Itoa(i)})
		}
	}
	for range n {
		h.receive(src, 10, 0)
	}
	if got := h.receive(src, 10, -1); len(got) != 0 {
		h.t.Fatalf("messages left in the source: %v", bodies(got))
	}
}

func TestMessageMoveTask(t *testing.T) {
	h := newHarness(t)
	dlq := h.fifoQueue("dlq.fifo", nil)
	src := h.fifoQueue("src.fifo", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	deadLetters(h, src, true, 6)
	if c := h.counts(dlq); c != [3]int{6, 0, 0} {
		t.Fatalf("DLQ counts = %v", c)
	}
	if h.e.HasActiveMoveTasks() {
		t.Fatalf("active tasks before any start")
	}
	start := h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), MaxNumberOfMessagesPerSecond: intp(2)}).(*api.StartMessageMoveTaskResult)
	if !h.e.HasActiveMoveTasks() {
		t.Fatalf("no active task after start")
	}
	_, err := h.do(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion)})
	ae := wantCode(t, err, "InvalidParameterValue")
	if !containsStr(ae.Message, "already a task running") {
		t.Errorf("message %q", ae.Message)
	}
	tick := func(d time.Duration) {
		h.advance(d)
		if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(max int) []api.ListMessageMoveTasksResultEntry {
		return h.must(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: dlq.ARN(testRegion), MaxResults: &max}).(*api.ListMessageMoveTasksResult).Results
	}
	tick(500 * time.Millisecond)
	if r := list(1)[0]; r.ApproximateNumberOfMessagesMoved != 1 || *r.ApproximateNumberOfMessagesToMove != 6 || r.Status != "RUNNING" || r.TaskHandle != start.TaskHandle ||
		r.StartedTimestamp != t0/1e6 || *r.MaxNumberOfMessagesPerSecond != 2 || r.DestinationArn != "" {
		t.Errorf("after 0.5 s: %+v", r)
	}
	h.takeWoken()
	tick(time.Second)
	if w := h.takeWoken(); !slices.Contains(w, src) {
		t.Errorf("hook not called for the destination: %v", w)
	}
	if r := list(1)[0]; r.ApproximateNumberOfMessagesMoved != 3 {
		t.Errorf("after 1.5 s moved %d, want 3", r.ApproximateNumberOfMessagesMoved)
	}
	// Messages went back to their source, in group order, as new messages.
	back := h.receive(src, 10, -1)
	if !slices.Equal(bodies(back), []string{"m0", "m2", "m4"}) {
		t.Errorf("source holds %v", bodies(back))
	}
	for _, m := range back {
		if m.Attributes[api.MsgAttrApproximateReceiveCount] != "1" || m.Attributes[api.MsgAttrDeadLetterQueueSourceArn] != "" {
			t.Errorf("moved message %s: %v", m.Body, m.Attributes)
		}
	}
	cancel := h.must(api.QueueKey{}, &api.CancelMessageMoveTaskRequest{TaskHandle: start.TaskHandle}).(*api.CancelMessageMoveTaskResult)
	if cancel.ApproximateNumberOfMessagesMoved != 3 {
		t.Errorf("cancel moved = %d", cancel.ApproximateNumberOfMessagesMoved)
	}
	if h.e.HasActiveMoveTasks() {
		t.Errorf("task still active after cancel")
	}
	_, err = h.do(api.QueueKey{}, &api.CancelMessageMoveTaskRequest{TaskHandle: start.TaskHandle})
	wantCode(t, err, "ResourceNotFoundException")
	tick(10 * time.Second)
	if c := h.counts(dlq); c != [3]int{3, 0, 0} {
		t.Errorf("DLQ after cancel = %v", c)
	}

	// A second task, to a given destination, without a rate, completes.
	dest := h.fifoQueue("dest.fifo", nil)
	second := h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: dest.ARN(testRegion)}).(*api.StartMessageMoveTaskResult)
	tick(100 * time.Millisecond)
	results := list(10)
	if len(results) != 2 || results[0].Status != "COMPLETED" || results[0].TaskHandle != "" || results[0].ApproximateNumberOfMessagesMoved != 3 ||
		results[0].DestinationArn != dest.ARN(testRegion) || results[0].MaxNumberOfMessagesPerSecond != nil || results[1].Status != "CANCELLED" {
		t.Errorf("tasks = %+v", results)
	}
	if got := bodies(h.receive(dest, 10, -1)); !slices.Equal(got, []string{"m1", "m3", "m5"}) {
		t.Errorf("destination holds %v", got)
	}
	_, err = h.do(api.QueueKey{}, &api.CancelMessageMoveTaskRequest{TaskHandle: second.TaskHandle})
	wantCode(t, err, "ResourceNotFoundException")
	if h.e.HasActiveMoveTasks() {
		t.Errorf("active task after completion")
	}
}

func TestMessageMoveTaskErrors(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	h.createQueue("src", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	plain := h.createQueue("plain", nil)
	fifo := h.fifoQueue("f.fifo", nil)
	missing := api.QueueKey{Account: testAccount, Name: "missing"}
	tests := []struct {
		name string
		req  api.StartMessageMoveTaskRequest
		code string
	}{
		{"missing source", api.StartMessageMoveTaskRequest{SourceArn: missing.ARN(testRegion)}, "ResourceNotFoundException"},
		{"not a dead-letter queue", api.StartMessageMoveTaskRequest{SourceArn: plain.ARN(testRegion)}, "InvalidParameterValue"},
		{"missing destination", api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: missing.ARN(testRegion)}, "ResourceNotFoundException"},
		{"destination is the source", api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: dlq.ARN(testRegion)}, "InvalidParameterValue"},
		{"destination of another type", api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: fifo.ARN(testRegion)}, "InvalidParameterValue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			_, err := h.do(api.QueueKey{}, &req)
			wantCode(t, err, tc.code)
		})
	}
	// Recorded: localstack test_sqs_move_task.snapshot.json, the three
	// test_cancel_with_invalid_* tests.
	for _, tc := range []struct{ handle, code string }{
		{"foobared", "InvalidParameterValue"},
		{"bm9wZQ", "InvalidParameterValue"},
		{encodeTaskHandle(1, missing.ARN(testRegion)), "ResourceNotFoundException"},
		{encodeTaskHandle(1, dlq.ARN(testRegion)), "ResourceNotFoundException"},
	} {
		_, err := h.do(api.QueueKey{}, &api.CancelMessageMoveTaskRequest{TaskHandle: tc.handle})
		wantCode(t, err, tc.code)
	}
	_, err := h.do(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: missing.ARN(testRegion)})
	wantCode(t, err, "ResourceNotFoundException")
	if got := h.must(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: dlq.ARN(testRegion)}).(*api.ListMessageMoveTasksResult); len(got.Results) != 0 {
		t.Errorf("tasks = %+v", got)
	}
}

func TestMessageMoveTaskFailsWithoutSource(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	src := h.createQueue("src", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)})
	deadLetters(h, src, false, 2)
	h.send(dlq, &api.SendMessageRequest{MessageBody: "sent directly"})
	h.must(src, &api.DeleteQueueRequest{QueueUrl: src.Path()})
	h.createQueue("other", map[string]string{api.AttrRedrivePolicy: redrive(dlq, 1)}) // keeps dlq a dead-letter queue
	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), MaxNumberOfMessagesPerSecond: intp(100)})
	h.advance(time.Second)
	if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
		t.Fatal(err)
	}
	r := h.must(api.QueueKey{}, &api.ListMessageMoveTasksRequest{SourceArn: dlq.ARN(testRegion)}).(*api.ListMessageMoveTasksResult).Results[0]
	if r.Status != "FAILED" || r.FailureReason == "" || r.ApproximateNumberOfMessagesMoved != 0 {
		t.Errorf("task = %+v", r)
	}
	if h.e.HasActiveMoveTasks() {
		t.Errorf("failed task still active")
	}
}

// TestTaskHandleFormat: a handle is the padded base64 of
// {"taskId":UUID,"sourceArn":ARN}, as AWS's (localstack
// test_sqs_move_task.py::test_basic_move_task_workflow decodes it), and the
// handles fifoq wrote before still name their source.
func TestTaskHandleFormat(t *testing.T) {
	const arn = "arn:aws:sqs:us-east-1:000000000000:dlq"
	h := encodeTaskHandle(42, arn)
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		t.Fatalf("handle %q: %v", h, err)
	}
	var doc map[string]string
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 2 || doc["sourceArn"] != arn ||
		!regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(doc["taskId"]) {
		t.Fatalf("handle decodes to %s (%v)", raw, err)
	}
	if h == encodeTaskHandle(43, arn) {
		t.Errorf("two tasks share a handle")
	}
	if got, ok := decodeTaskHandle(h); !ok || got != arn {
		t.Errorf("decode = %q, %v", got, ok)
	}
	legacy := base64.RawURLEncoding.EncodeToString([]byte("2a:" + arn))
	if got, ok := decodeTaskHandle(legacy); !ok || got != arn {
		t.Errorf("legacy decode = %q, %v", got, ok)
	}
	for _, bad := range []string{"", "foobared", base64.StdEncoding.EncodeToString([]byte(`{"taskId":"x"}`)), base64.StdEncoding.EncodeToString([]byte(`[]`))} {
		if _, ok := decodeTaskHandle(bad); ok {
			t.Errorf("decode(%q) ok", bad)
		}
	}
}
