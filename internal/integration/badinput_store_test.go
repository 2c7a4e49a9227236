package integration

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// keptMessage is a message stored before the bad-input suite, as the send
// acknowledged it.
type keptMessage struct {
	in  SendIn
	out SendOut
}

// keptQueue is a queue filled before the bad-input suite, with everything
// about it that no refused request may change.
type keptQueue struct {
	name, url string
	fifo      bool
	msgs      []keptMessage
	attrs     map[string]string
	tags      map[string]string
}

// keptStore is the state the bad-input suite must leave as it found it.
type keptStore struct {
	queues []*keptQueue
	// list is ListQueues' answer.
	list []string
}

func (s *keptStore) queue(name string) *keptQueue {
	for _, q := range s.queues {
		if q.name == name {
			return q
		}
	}
	panic("no kept queue " + name)
}

// keepAttrs are the message attributes of the i-th kept message: every
// data type, so that a change to any of them shows.
func keepAttrs(i int) map[string]Attr {
	return map[string]Attr{
		"color":  {DataType: "String", String: fmt.Sprintf("red-%d", i)},
		"n":      {DataType: "Number", String: fmt.Sprintf("%d.5", i)},
		"blob":   {DataType: "Binary", Binary: []byte{byte(i), 0, 0xff, '\n'}},
		"custom": {DataType: "String.tag", String: "ü & <x>"},
	}
}

// storeKept creates the kept queues and sends their messages, singly and
// in batches.
func storeKept(t *testing.T, c Client) *keptStore {
	t.Helper()
	ctx := ctxT(t)
	s := &keptStore{}
	create := func(name string, attrs, tags map[string]string) *keptQueue {
		url := must(c.CreateQueue(ctx, name, attrs, tags))(t)
		q := &keptQueue{name: name, url: url, fifo: strings.HasSuffix(name, ".fifo")}
		s.queues = append(s.queues, q)
		return q
	}
	send := func(q *keptQueue, in SendIn) {
		q.msgs = append(q.msgs, keptMessage{in: in, out: mustSend(t, c, q.url, in)})
	}
	sendBatch := func(q *keptQueue, ins []SendIn) {
		entries := make([]BatchSend, len(ins))
		for i, in := range ins {
			entries[i] = BatchSend{ID: fmt.Sprintf("b%d", i), SendIn: in}
		}
		okByID, fails, err := c.SendBatch(ctx, q.url, entries)
		if err != nil || len(fails) > 0 {
			t.Fatalf("SendMessageBatch to %s: %v %v", q.name, err, fails)
		}
		for i, in := range ins {
			q.msgs = append(q.msgs, keptMessage{in: in, out: okByID[entries[i].ID]})
		}
	}

	fifo := create("keep.fifo", fifoAttrs(), map[string]string{"kind": "fifo"})
	for i := 0; i < 9; i++ {
		in := SendIn{Body: fmt.Sprintf("fifo body %d\r\nline two", i), Group: fmt.Sprintf("g%d", i%3), Dedup: fmt.Sprintf("dedup-%d", i), Attrs: keepAttrs(i)}
		send(fifo, in)
	}
	var batch []SendIn
	for i := 9; i < 15; i++ {
		batch = append(batch, SendIn{Body: fmt.Sprintf("fifo batch %d", i), Group: fmt.Sprintf("g%d", i%3), Dedup: fmt.Sprintf("dedup-%d", i), Attrs: keepAttrs(i)})
	}
	sendBatch(fifo, batch)

	cbd := create("keep-cbd.fifo", fifoAttrs("ContentBasedDeduplication", "true"), nil)
	for i := 0; i < 5; i++ {
		send(cbd, SendIn{Body: fmt.Sprintf("content %d", i), Group: "only"})
	}

	// MaximumMessageSize below the 1 MiB default, for the body over it.
	std := create("keep-std", map[string]string{"VisibilityTimeout": "45", "MessageRetentionPeriod": "86400", "MaximumMessageSize": "262144"}, map[string]string{"env": "test", "team": "sec"})
	for i := 0; i < 8; i++ {
		send(std, SendIn{Body: fmt.Sprintf("standard %d", i), Attrs: keepAttrs(100 + i)})
	}
	batch = nil
	for i := 8; i < 12; i++ {
		batch = append(batch, SendIn{Body: fmt.Sprintf("standard batch %d", i)})
	}
	sendBatch(std, batch)

	big := create("keep-big", map[string]string{"MaximumMessageSize": "1048576"}, nil)
	send(big, SendIn{Body: strings.Repeat("large ", 40000), Attrs: keepAttrs(7)})

	for _, q := range s.queues {
		q.attrs = must(c.GetAttrs(ctx, q.url, "All"))(t)
		q.tags = must(c.ListTags(ctx, q.url))(t)
	}
	s.list = must2(c.ListQueues(ctx, "", 0, ""))(t)
	return s
}

// checkKept fails the test for every difference between the state now and
// the state storeKept left: queues listed, their attributes and tags, and
// every message with its body, attributes, digests, ids, group, sequence
// number and receive count of 1 (no refused request received it). It
// drains the kept queues.
func checkKept(t *testing.T, c Client, s *keptStore) {
	t.Helper()
	ctx := ctxT(t)
	list := must2(c.ListQueues(ctx, "", 0, ""))(t)
	if !slices.Equal(list, s.list) {
		t.Errorf("ListQueues changed:\n before %q\n after  %q", s.list, list)
	}
	for _, q := range s.queues {
		attrs := must(c.GetAttrs(ctx, q.url, "All"))(t)
		if !maps.Equal(attrs, q.attrs) {
			t.Errorf("queue %s: attributes changed:\n before %v\n after  %v", q.name, q.attrs, attrs)
		}
		if tags := must(c.ListTags(ctx, q.url))(t); !maps.Equal(tags, q.tags) {
			t.Errorf("queue %s: tags changed: before %v, after %v", q.name, q.tags, tags)
		}
		checkKeptMessages(t, c, q)
	}
}

func checkKeptMessages(t *testing.T, c Client, q *keptQueue) {
	t.Helper()
	ctx := ctxT(t)
	byID := map[string]keptMessage{}
	for _, m := range q.msgs {
		byID[m.out.ID] = m
	}
	seen := map[string]bool{}
	lastSeq := map[string]string{} // per group, to check FIFO order
	for round := 0; round < 100 && len(seen) < len(q.msgs); round++ {
		msgs := must(c.Receive(ctx, q.url, RecvIn{Max: 10, Wait: i32(0)}))(t)
		if len(msgs) == 0 {
			break
		}
		for _, got := range msgs {
			want, ok := byID[got.ID]
			if !ok {
				t.Errorf("queue %s: message %s %q was not stored before the suite", q.name, got.ID, got.Body)
				continue
			}
			if seen[got.ID] {
				t.Errorf("queue %s: message %s received twice", q.name, got.ID)
			}
			seen[got.ID] = true
			compareKept(t, q, want, got)
			if q.fifo {
				g := got.Sys["MessageGroupId"]
				if prev := lastSeq[g]; prev != "" && !seqLess(prev, got.Sys["SequenceNumber"]) {
					t.Errorf("queue %s group %s: sequence %s received after %s", q.name, g, got.Sys["SequenceNumber"], prev)
				}
				lastSeq[g] = got.Sys["SequenceNumber"]
			}
		}
		if _, fails, err := c.DeleteBatch(ctx, q.url, handles(msgs)); err != nil || len(fails) > 0 {
			t.Fatalf("queue %s: DeleteMessageBatch: %v %v", q.name, err, fails)
		}
	}
	for _, m := range q.msgs {
		if !seen[m.out.ID] {
			t.Errorf("queue %s: stored message %s %.40q is gone", q.name, m.out.ID, m.in.Body)
		}
	}
	if extra := mustReceive(t, c, q.url, 10); len(extra) > 0 {
		t.Errorf("queue %s: holds messages that were never stored: %q", q.name, bodies(extra))
	}
}

// compareKept compares a received message with what was sent.
func compareKept(t *testing.T, q *keptQueue, want keptMessage, got Msg) {
	t.Helper()
	where := fmt.Sprintf("queue %s message %s", q.name, got.ID)
	if got.Body != want.in.Body {
		t.Errorf("%s: body %.60q, want %.60q", where, got.Body, want.in.Body)
	}
	if got.MD5Body != want.out.MD5Body || got.MD5Body != bodyMD5(want.in.Body) {
		t.Errorf("%s: MD5OfBody %s, sent %s", where, got.MD5Body, want.out.MD5Body)
	}
	if got.MD5Attrs != want.out.MD5Attrs || got.MD5Attrs != attrsMD5(want.in.Attrs) {
		t.Errorf("%s: MD5OfMessageAttributes %s, sent %s, computed %s", where, got.MD5Attrs, want.out.MD5Attrs, attrsMD5(want.in.Attrs))
	}
	if len(got.Attrs) != len(want.in.Attrs) {
		t.Errorf("%s: %d attributes, want %d", where, len(got.Attrs), len(want.in.Attrs))
	}
	for name, w := range want.in.Attrs {
		g := got.Attrs[name]
		if g.DataType != w.DataType || g.String != w.String || !bytes.Equal(g.Binary, w.Binary) {
			t.Errorf("%s: attribute %s = %+v, want %+v", where, name, g, w)
		}
	}
	if n := got.Sys["ApproximateReceiveCount"]; n != "1" {
		t.Errorf("%s: ApproximateReceiveCount %s, want 1: a refused request received it", where, n)
	}
	if q.fifo {
		if g := got.Sys["MessageGroupId"]; g != want.in.Group {
			t.Errorf("%s: MessageGroupId %q, want %q", where, g, want.in.Group)
		}
		if s := got.Sys["SequenceNumber"]; s != want.out.Seq || s == "" {
			t.Errorf("%s: SequenceNumber %q, want %q", where, s, want.out.Seq)
		}
		if want.in.Dedup != "" && got.Sys["MessageDeduplicationId"] != want.in.Dedup {
			t.Errorf("%s: MessageDeduplicationId %q, want %q", where, got.Sys["MessageDeduplicationId"], want.in.Dedup)
		}
	}
}

// seqLess compares two sequence numbers, decimal strings of any length.
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
