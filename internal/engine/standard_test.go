package engine

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/testenv"
)

func TestStandardSendReceiveDelete(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrVisibilityTimeout: "30"})
	r := h.send(q, &api.SendMessageRequest{MessageBody: "hello"})
	if r.SequenceNumber != "" {
		t.Errorf("standard queue returned sequence number %q", r.SequenceNumber)
	}
	if r.MD5OfMessageBody != api.MD5OfBody("hello") {
		t.Errorf("MD5OfMessageBody = %s", r.MD5OfMessageBody)
	}
	msgs := h.receive(q, 10, -1)
	if len(msgs) != 1 || msgs[0].MessageId != r.MessageId || msgs[0].MD5OfBody != r.MD5OfMessageBody {
		t.Fatalf("received %+v", msgs)
	}
	for _, name := range []string{api.MsgAttrSequenceNumber, api.MsgAttrMessageDeduplicationId, api.MsgAttrMessageGroupId} {
		if v, ok := msgs[0].Attributes[name]; ok {
			t.Errorf("standard message has %s = %q", name, v)
		}
	}
	first := msgs[0].ReceiptHandle
	// At-least-once: the visibility timeout runs out, the message returns.
	h.advance(30 * time.Second)
	again := h.receive(q, 10, -1)
	if len(again) != 1 || again[0].MessageId != r.MessageId {
		t.Fatalf("after expiry got %+v", again)
	}
	// A stale handle still changes the visibility of the message in a
	// standard queue (LocalStack's AWS-validated
	// test_terminate_visibility_timeout_after_receive) and deletes it
	// (moto's AWS-verified test_delete_message_using_old_receipt_handle).
	if err := h.changeVis(q, first, 10); err != nil {
		t.Errorf("visibility change with a stale handle: %v", err)
	}
	if err := h.deleteMsg(q, first); err != nil {
		t.Fatalf("stale handle: %v", err)
	}
	if c := h.counts(q); c != [3]int{} {
		t.Fatalf("counts after a stale delete = %v, want none", c)
	}
	// The latest handle of the deleted message succeeds too.
	if err := h.deleteMsg(q, again[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
}

func TestStandardDeleteAfterVisibilityTimeout(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	h.send(q, &api.SendMessageRequest{MessageBody: "a"})
	m := h.receive(q, 1, 1)[0]
	h.advance(2 * time.Second)
	// Unlike a FIFO queue, a standard queue still accepts the latest handle.
	if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if got := h.receive(q, 1, -1); len(got) != 0 {
		t.Fatalf("message still there after delete")
	}
}

func TestStandardDelays(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrDelaySeconds: "20"})
	h.send(q, &api.SendMessageRequest{MessageBody: "queue-delay"})
	h.send(q, &api.SendMessageRequest{MessageBody: "no-delay", DelaySeconds: intp(0)})
	h.send(q, &api.SendMessageRequest{MessageBody: "short", DelaySeconds: intp(5)})
	if c := h.counts(q); c != [3]int{1, 0, 2} {
		t.Fatalf("counts = %v", c)
	}
	steps := []struct {
		after time.Duration
		want  []string
	}{
		{0, []string{"no-delay"}},
		{5 * time.Second, []string{"short"}},
		{14 * time.Second, nil},
		{time.Second, []string{"queue-delay"}},
	}
	for i, s := range steps {
		h.advance(s.after)
		got := bodies(h.receive(q, 10, 600))
		if !slices.Equal(got, s.want) && !(len(got) == 0 && s.want == nil) {
			t.Fatalf("step %d: received %v, want %v", i, got, s.want)
		}
	}
}

func TestStandardRejectsDeduplicationID(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	_, err := h.do(q, &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "a", MessageDeduplicationId: "d"})
	wantCode(t, err, "InvalidParameterValue")
	res := h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.SendMessageBatchRequestEntry{
		{Id: "a", MessageBody: "a", MessageDeduplicationId: "d"},
		{Id: "b", MessageBody: "b", DelaySeconds: intp(1000)},
		{Id: "c", MessageBody: "c"},
	}}).(*api.SendMessageBatchResult)
	if len(res.Successful) != 1 || res.Successful[0].Id != "c" || len(res.Failed) != 2 {
		t.Fatalf("batch = %+v", res)
	}
}

func TestFIFOBatchReportsInvalidEntryAlone(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	res := h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.SendMessageBatchRequestEntry{
		{Id: "a", MessageBody: "a", MessageGroupId: "g", MessageDeduplicationId: "a"},
		{Id: "b", MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "b", DelaySeconds: intp(1000)},
	}}).(*api.SendMessageBatchResult)
	if len(res.Successful) != 1 || res.Successful[0].Id != "a" {
		t.Fatalf("Successful = %+v, want only a", res.Successful)
	}
	if len(res.Failed) != 1 || res.Failed[0].Id != "b" || res.Failed[0].Code != "InvalidParameterValue" || !res.Failed[0].SenderFault {
		t.Fatalf("Failed = %+v, want b with InvalidParameterValue", res.Failed)
	}
	if c := h.counts(q); c != [3]int{1, 0, 0} {
		t.Fatalf("counts = %v, want the one good entry visible", c)
	}
}

func TestFairQueuePrefersTenantsWithFewerInFlight(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrVisibilityTimeout: "600"})
	// A noisy tenant sends a large backlog, and its consumers hold 20 of
	// its messages in flight; then two quiet tenants send a message each.
	for i := range 50 {
		h.send(q, &api.SendMessageRequest{MessageBody: "noisy-" + strconv.Itoa(i), MessageGroupId: "noisy"})
	}
	for range 2 {
		h.receive(q, 10, -1)
	}
	h.send(q, &api.SendMessageRequest{MessageBody: "quiet-a", MessageGroupId: "a"})
	h.send(q, &api.SendMessageRequest{MessageBody: "quiet-b", MessageGroupId: "b"})
	got := h.receive(q, 3, -1)
	tenants := map[string]int{}
	for _, m := range got {
		tenants[m.Attributes[api.MsgAttrMessageGroupId]]++
	}
	if tenants["a"] != 1 || tenants["b"] != 1 {
		t.Fatalf("received tenants %v, want the quiet tenants served first", tenants)
	}
	// A standard queue returns messages of one tenant in parallel.
	more := h.receive(q, 10, -1)
	if len(more) != 10 {
		t.Fatalf("received %d, want 10 noisy messages in parallel", len(more))
	}
}

func TestStandardInflightLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 120,000 messages")
	}
	testenv.Long(t, "sends 120,000 messages")
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrVisibilityTimeout: "3600"})
	entries := make([]api.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = api.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), MessageBody: "x"}
	}
	for range api.MaxInflightStandard/10 + 1 {
		h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: entries})
	}
	var last []api.Message
	for range api.MaxInflightStandard / 10 {
		last = h.receive(q, 10, -1)
	}
	max := 10
	_, err := h.do(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max})
	wantCode(t, err, "OverLimit")
	if err := h.deleteMsg(q, last[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if got := h.receive(q, 10, -1); len(got) != 1 {
		t.Fatalf("after one deletion received %d, want 1", len(got))
	}
}

func TestReceiveSelection(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	attrs := map[string]api.MessageAttributeValue{
		"color":      {DataType: "String", StringValue: strp("red")},
		"size":       {DataType: "Number", StringValue: strp("3")},
		"foo.bar":    {DataType: "String", StringValue: strp("x")},
		"foo.baz":    {DataType: "Binary", BinaryValue: []byte{1, 2}},
		"foolscap":   {DataType: "String", StringValue: strp("no")},
		"trace.like": {DataType: "String", StringValue: strp("y")},
	}
	sent := h.send(q, &api.SendMessageRequest{MessageBody: "b", MessageGroupId: "g", MessageDeduplicationId: "d", MessageAttributes: attrs,
		MessageSystemAttributes: map[string]api.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: "String", StringValue: strp("Root=1-5759e988-bd862e3fe1be46a994272793")}}})
	if sent.MD5OfMessageAttributes != api.MD5OfMessageAttributes(attrs) || sent.MD5OfMessageSystemAttributes == "" {
		t.Fatalf("send result = %+v", sent)
	}
	tests := []struct {
		name     string
		sys      []string
		old      []string
		msgAttrs []string
		wantSys  []string
		wantAttr []string
	}{
		{name: "nothing asked"},
		{name: "all system", sys: []string{"All"}, wantSys: []string{"AWSTraceHeader", "ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount",
			"MessageDeduplicationId", "MessageGroupId", "SenderId", "SentTimestamp", "SequenceNumber"}},
		// Both lists: MessageSystemAttributeNames wins (the JSON rule;
		// localstack test_sqs.snapshot.json:
		// test_message_system_attribute_names_with_attribute_names).
		{name: "named system, deprecated parameter too", sys: []string{"SenderId"}, old: []string{"SequenceNumber", "Policy"}, wantSys: []string{"SenderId"}},
		{name: "deprecated parameter alone", old: []string{"SequenceNumber", "Policy"}, wantSys: []string{"SequenceNumber"}},
		{name: "all attributes", msgAttrs: []string{"All"}, wantAttr: []string{"color", "foo.bar", "foo.baz", "foolscap", "size", "trace.like"}},
		{name: "dot star", msgAttrs: []string{".*"}, wantAttr: []string{"color", "foo.bar", "foo.baz", "foolscap", "size", "trace.like"}},
		{name: "star", msgAttrs: []string{"*"}, wantAttr: []string{"color", "foo.bar", "foo.baz", "foolscap", "size", "trace.like"}},
		// "foo.*" selects the names that start with "foo", foolscap too:
		// SQS's "Hel.*" returned Hello and Help.Me (localstack
		// test_sqs.snapshot.json:
		// test_receive_message_message_attribute_names_filters/prefix_filter).
		{name: "names and prefix", msgAttrs: []string{"color", "foo.*", "missing"}, wantAttr: []string{"color", "foo.bar", "foo.baz", "foolscap"}},
		{name: "illegal names select nothing", msgAttrs: []string{"AWS.", "..foo"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			max := 1
			res := h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &max, VisibilityTimeout: intp(0),
				MessageSystemAttributeNames: tc.sys, AttributeNames: tc.old, MessageAttributeNames: tc.msgAttrs}).(*api.ReceiveMessageResult)
			if len(res.Messages) != 1 {
				t.Fatalf("received %d messages", len(res.Messages))
			}
			m := res.Messages[0]
			if got := slices.Sorted(maps.Keys(m.Attributes)); !slices.Equal(got, tc.wantSys) && !(len(got) == 0 && tc.wantSys == nil) {
				t.Errorf("system attributes %v, want %v", got, tc.wantSys)
			}
			if got := slices.Sorted(maps.Keys(m.MessageAttributes)); !slices.Equal(got, tc.wantAttr) && !(len(got) == 0 && tc.wantAttr == nil) {
				t.Errorf("message attributes %v, want %v", got, tc.wantAttr)
			}
			if want := api.MD5OfMessageAttributes(m.MessageAttributes); m.MD5OfMessageAttributes != want {
				t.Errorf("MD5OfMessageAttributes = %q, want %q (of the returned attributes)", m.MD5OfMessageAttributes, want)
			}
			if m.MD5OfBody != api.MD5OfBody("b") {
				t.Errorf("MD5OfBody = %q", m.MD5OfBody)
			}
			if v := m.Attributes[api.MsgAttrApproximateReceiveCount]; v != "" && v != strconv.Itoa(i+1) {
				t.Errorf("ApproximateReceiveCount = %s, want %d", v, i+1)
			}
			if v := m.Attributes[api.MsgAttrSenderId]; v != "" && v != testAccount {
				t.Errorf("SenderId = %s", v)
			}
			if v := m.Attributes[api.MsgAttrSentTimestamp]; v != "" && v != strconv.FormatInt(t0/1e6, 10) {
				t.Errorf("SentTimestamp = %s, want %d", v, t0/1e6)
			}
		})
		h.advance(time.Millisecond)
	}
}

func TestRetention(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrMessageRetentionPeriod: "60", api.AttrVisibilityTimeout: "600"})
	fq := h.fifoQueue("q.fifo", map[string]string{api.AttrMessageRetentionPeriod: "60", api.AttrVisibilityTimeout: "600"})
	h.send(q, &api.SendMessageRequest{MessageBody: "old-visible"})
	h.send(q, &api.SendMessageRequest{MessageBody: "old-inflight"})
	h.sendFIFO(fq, "f-old", "g", "1")
	h.receive(q, 1, -1)
	h.advance(30 * time.Second)
	h.send(q, &api.SendMessageRequest{MessageBody: "new-delayed", DelaySeconds: intp(40)})
	h.sendFIFO(fq, "f-new", "g", "2")
	if c := h.counts(q); c != [3]int{1, 1, 1} {
		t.Fatalf("counts = %v", c)
	}
	h.advance(30 * time.Second)
	// Read alone reflects the expiry.
	if c := h.counts(q); c != [3]int{0, 0, 1} {
		t.Fatalf("counts at the end of retention = %v, want only the delayed message", c)
	}
	if c := h.counts(fq); c != [3]int{1, 0, 0} {
		t.Fatalf("FIFO counts at the end of retention = %v", c)
	}
	if got := bodies(h.receive(fq, 10, -1)); !slices.Equal(got, []string{"f-new"}) {
		t.Fatalf("FIFO received %v, want [f-new]", got)
	}
	h.advance(15 * time.Second)
	if got := bodies(h.receive(q, 10, -1)); !slices.Equal(got, []string{"new-delayed"}) {
		t.Fatalf("received %v", got)
	}
	// A delay longer than what is left of the retention period: the
	// message expires before it is ever visible.
	h.send(q, &api.SendMessageRequest{MessageBody: "too-late", DelaySeconds: intp(90)})
	h.advance(90 * time.Second)
	if c := h.counts(q); c != [3]int{} {
		t.Fatalf("counts = %v, want everything expired", c)
	}
}

func TestReadDoesNotChangeState(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "10"})
	h.sendFIFO(q, "a", "g", "a")
	h.sendFIFO(q, "b", "g", "b")
	h.receive(q, 1, -1)
	h.advance(11 * time.Second)
	before := h.e.queues[q]
	n := before.nInflight
	// Reads and the read-only helpers at a later time see the expiry...
	if c := h.counts(q); c != [3]int{2, 0, 0} {
		t.Fatalf("counts = %v", c)
	}
	if !h.e.Receivable(q, h.now) {
		t.Errorf("Receivable = false after the visibility timeout")
	}
	// ...without applying it.
	if before.nInflight != n || n != 1 {
		t.Errorf("a read changed the in-flight count: %d -> %d", n, before.nInflight)
	}
}

func TestNextWakeAndReceivable(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", map[string]string{api.AttrVisibilityTimeout: "10"})
	if _, ok := h.e.NextWake(q, h.now); ok {
		t.Errorf("NextWake on an empty queue")
	}
	if h.e.Receivable(q, h.now) {
		t.Errorf("empty queue receivable")
	}
	h.sendFIFO(q, "a", "g", "a")
	h.sendFIFO(q, "b", "g", "b")
	if !h.e.Receivable(q, h.now) {
		t.Fatalf("not receivable after a send")
	}
	h.receive(q, 1, -1)
	// b waits behind a, in flight for 10 s.
	if h.e.Receivable(q, h.now) {
		t.Errorf("receivable while the only group is in flight")
	}
	when, ok := h.e.NextWake(q, h.now)
	if !ok || when != h.now+10*int64(time.Second) {
		t.Errorf("NextWake = %d %v, want %d", when, ok, h.now+10*int64(time.Second))
	}
	if h.e.Receivable(q, when-1) || !h.e.Receivable(q, when) {
		t.Errorf("Receivable around the wake time is wrong")
	}
	if _, ok := h.e.NextWake(q, when); ok {
		t.Errorf("NextWake after the last timer")
	}
	if _, ok := h.e.NextWake(api.QueueKey{Account: "1", Name: "none"}, h.now); ok {
		t.Errorf("NextWake for a missing queue")
	}
}

func TestAvailableHook(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{api.AttrVisibilityTimeout: "5"})
	h.takeWoken()
	h.send(q, &api.SendMessageRequest{MessageBody: "a", DelaySeconds: intp(10)})
	if w := h.takeWoken(); len(w) != 0 {
		t.Errorf("hook called for a delayed send: %v", w)
	}
	h.send(q, &api.SendMessageRequest{MessageBody: "b"})
	if w := h.takeWoken(); !slices.Equal(w, []api.QueueKey{q}) {
		t.Errorf("hook after a send = %v", w)
	}
	h.receive(q, 10, -1)
	h.takeWoken()
	h.advance(6 * time.Second)
	// Any command on the queue processes the expiry and wakes waiters.
	h.attrs(q) // a read does not
	if w := h.takeWoken(); len(w) != 0 {
		t.Errorf("hook called by a read: %v", w)
	}
	h.must(q, &api.TagQueueRequest{QueueUrl: q.Path(), Tags: map[string]string{"a": "b"}})
	if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
		t.Fatal(err)
	}
	if w := h.takeWoken(); !slices.Equal(w, []api.QueueKey{q}) {
		t.Errorf("hook after an expiry = %v", w)
	}
}

func TestPurgeQueue(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	h.sendFIFO(q, "a", "g", "a")
	h.sendFIFO(q, "b", "h", "b")
	m := h.receive(q, 1, -1)[0]
	h.must(q, &api.PurgeQueueRequest{QueueUrl: q.Path()})
	if c := h.counts(q); c != [3]int{} {
		t.Fatalf("counts after purge = %v", c)
	}
	if err := h.deleteMsg(q, m.ReceiptHandle); err != nil {
		t.Errorf("deleting a purged message: %v", err)
	}
	h.advance(59 * time.Second)
	_, err := h.do(q, &api.PurgeQueueRequest{QueueUrl: q.Path()})
	if ae := wantCode(t, err, "PurgeQueueInProgress"); ae.Message != "Only one PurgeQueue operation on q.fifo is allowed every 60 seconds." {
		t.Errorf("message = %q", ae.Message)
	}
	// Messages sent after the purge stay; the queue works as before.
	h.sendFIFO(q, "c", "g", "c")
	h.advance(time.Second)
	h.must(q, &api.PurgeQueueRequest{QueueUrl: q.Path()})
	if got := h.receive(q, 10, -1); len(got) != 0 {
		t.Errorf("received %v after the second purge", bodies(got))
	}
}
