package replog

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// everyAction lists the SQS actions and fifoq's internal ones.
var everyAction = []api.Action{api.ActionAddPermission, api.ActionCancelMessageMoveTask, api.ActionChangeMessageVisibility,
	api.ActionChangeMessageVisibilityBatch, api.ActionCreateQueue, api.ActionDeleteMessage, api.ActionDeleteMessageBatch,
	api.ActionDeleteQueue, api.ActionGetQueueAttributes, api.ActionGetQueueUrl, api.ActionListDeadLetterSourceQueues,
	api.ActionListMessageMoveTasks, api.ActionListQueueTags, api.ActionListQueues, api.ActionPurgeQueue, api.ActionReceiveMessage,
	api.ActionRemovePermission, api.ActionSendMessage, api.ActionSendMessageBatch, api.ActionSetQueueAttributes,
	api.ActionStartMessageMoveTask, api.ActionTagQueue, api.ActionUntagQueue, engine.ActionTick, engine.ActionHousekeep}

func newRequest(t *testing.T, a api.Action) api.Request {
	t.Helper()
	req, ok := engine.NewInternalRequest(a)
	if !ok {
		req, ok = api.NewRequest(a)
	}
	if !ok {
		t.Fatalf("no request type for %s", a)
	}
	return req
}

// TestBinaryCodecExact checks that version 4 gives back exactly the command
// it was given, every field of it, for every action: the leader applies the
// commands it holds and a replay applies the decoded ones, so any
// difference would make a restarted node's state differ from the one its
// clients saw. Fields are filled, left zero, and (for the binary layouts)
// given the values JSON would not keep: invalid UTF-8, empty maps and
// lists beside nil ones.
func TestBinaryCodecExact(t *testing.T) {
	for _, a := range everyAction {
		for _, filled := range []bool{true, false} {
			req := newRequest(t, a)
			if filled {
				fill(reflect.ValueOf(req).Elem(), 0)
			}
			cmd := &engine.Command{Time: -5, Caller: "c", Queue: api.QueueKey{Account: "a", Name: "n"}, Request: req,
				MessageIDs: []string{"m1", ""}, Entropy: 1<<64 - 1, RecreateDelay: -1, PurgeDelay: 7}
			data, held, err := encodeEntryHeld([]*engine.Command{cmd}, entryFormatVersion)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			if data[0] != entryFormatVersion {
				t.Fatalf("%s: written as version %d, want %d", a, data[0], entryFormatVersion)
			}
			got, err := decodeEntry(data)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			if !reflect.DeepEqual(got[0], held[0]) {
				t.Errorf("%s (filled %v): the leader would apply\n%#v\nand a replay\n%#v", a, filled, held[0].Request, got[0].Request)
			}
			if layoutOf(a, entryFormatVersion) != reqJSON && held[0] != cmd {
				t.Errorf("%s: the leader does not apply the command it holds", a)
			}
		}
	}
	s := "\xff\xfe"
	odd := []*engine.Command{
		{Request: &api.SendMessageRequest{MessageBody: "a\xffb", MessageAttributes: map[string]api.MessageAttributeValue{},
			MessageSystemAttributes: map[string]api.MessageAttributeValue{"k\xff": {StringValue: &s, BinaryValue: []byte{}, StringListValues: []string{},
				BinaryListValues: [][]byte{nil, {}}}, "a": {}}, MessageDeduplicationIdSet: true}, MessageIDs: []string{}},
		{Request: &api.SendMessageBatchRequest{Entries: []api.SendMessageBatchRequestEntry{}}},
		{Request: &api.SendMessageBatchRequest{Entries: []api.SendMessageBatchRequestEntry{{MessageGroupIdSet: true, MessageBody: "\x00"}}}},
		{Request: &api.DeleteMessageBatchRequest{Entries: []api.DeleteMessageBatchRequestEntry{}}},
		{Request: &api.ReceiveMessageRequest{AttributeNames: []string{}, MessageAttributeNames: []string{"\xc3"}}},
	}
	data, err := encodeEntry(odd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range odd {
		if !reflect.DeepEqual(got[i], odd[i]) {
			t.Errorf("command %d: encoded\n%#v\ndecoded\n%#v", i, odd[i].Request, got[i].Request)
		}
	}
}

// TestBinaryLayoutsCoverEveryField fails when a field is added to a request
// that an entry writes in a binary layout (from version 4; an install
// from version 12), or to Command: the layout must then write it too (as a
// new format version), or the log would lose it.
func TestBinaryLayoutsCoverEveryField(t *testing.T) {
	want := map[reflect.Type][]string{
		reflect.TypeOf(engine.Command{}): {"Time", "Caller", "Region", "Queue", "Request", "MessageIDs", "Entropy", "RecreateDelay", "PurgeDelay"},
		reflect.TypeOf(api.QueueKey{}):   {"Region", "Account", "Name", "Part"},
		reflect.TypeOf(api.SendMessageRequest{}): {"QueueUrl", "MessageBody", "DelaySeconds", "MessageAttributes", "MessageSystemAttributes",
			"MessageDeduplicationId", "MessageGroupId", "MessageDeduplicationIdSet", "MessageGroupIdSet"},
		reflect.TypeOf(api.SendMessageBatchRequest{}): {"QueueUrl", "Entries"},
		reflect.TypeOf(api.SendMessageBatchRequestEntry{}): {"Id", "MessageBody", "DelaySeconds", "MessageAttributes", "MessageSystemAttributes",
			"MessageDeduplicationId", "MessageGroupId", "MessageDeduplicationIdSet", "MessageGroupIdSet"},
		reflect.TypeOf(api.MessageAttributeValue{}): {"StringValue", "BinaryValue", "StringListValues", "BinaryListValues", "DataType"},
		reflect.TypeOf(api.ReceiveMessageRequest{}): {"QueueUrl", "AttributeNames", "MessageSystemAttributeNames", "MessageAttributeNames",
			"MaxNumberOfMessages", "VisibilityTimeout", "WaitTimeSeconds", "ReceiveRequestAttemptId"},
		reflect.TypeOf(api.DeleteMessageRequest{}):           {"QueueUrl", "ReceiptHandle"},
		reflect.TypeOf(api.DeleteMessageBatchRequest{}):      {"QueueUrl", "Entries"},
		reflect.TypeOf(api.DeleteMessageBatchRequestEntry{}): {"Id", "ReceiptHandle"},
		reflect.TypeOf(engine.InstallQueueRequest{}):         {"Move", "Image"},
	}
	for typ, fields := range want {
		var got []string
		for i := 0; i < typ.NumField(); i++ {
			got = append(got, typ.Field(i).Name)
		}
		if !reflect.DeepEqual(got, fields) {
			t.Errorf("%s has fields %v; the binary layout writes %v", typ, got, fields)
		}
	}
}

// TestBinaryDecodeStrict checks that a version 4 command this fifoq does
// not fully understand is refused: a layout that does not match its
// action, an unknown layout, an unknown action, bytes left over, bad flags.
func TestBinaryDecodeStrict(t *testing.T) {
	good := &engine.Command{Time: 1, Request: &api.DeleteMessageRequest{QueueUrl: "/a/q", ReceiptHandle: "h"}}
	cmd, _, err := appendCommand(nil, good, entryFormatVersion)
	if err != nil {
		t.Fatal(err)
	}
	layoutAt := bytes.LastIndexByte(cmd[:len(cmd)-len("/a/q")-len("h")-2], reqDelete)
	for name, mutate := range map[string]func([]byte) []byte{
		"trailing byte":         func(b []byte) []byte { return append(b, 0) },
		"truncated":             func(b []byte) []byte { return b[:len(b)-1] },
		"layout of another one": func(b []byte) []byte { b[layoutAt] = reqSend; return b },
		"unknown layout":        func(b []byte) []byte { b[layoutAt] = 99; return b },
		"JSON layout":           func(b []byte) []byte { b[layoutAt] = reqJSON; return b },
	} {
		b := mutate(append([]byte{}, cmd...))
		if _, err := decodeEntry(rawBinaryEntry(b)); !errors.Is(err, errCorruptEntry) {
			t.Errorf("%s: %v; want a corrupt entry", name, err)
		}
	}
	unknown, _, _ := appendCommand(nil, &engine.Command{Request: &api.PurgeQueueRequest{QueueUrl: "/a/q"}}, entryFormatVersion)
	unknown = bytes.Replace(unknown, []byte("\x0aPurgeQueue"), []byte("\x0aFrobQueues"), 1)
	if _, err := decodeEntry(rawBinaryEntry(unknown)); !errors.Is(err, errCorruptEntry) {
		t.Errorf("unknown action: %v; want a corrupt entry", err)
	}
	field, _, _ := appendCommand(nil, &engine.Command{Request: &api.PurgeQueueRequest{QueueUrl: "/a/q"}}, entryFormatVersion)
	field = bytes.Replace(field, []byte(`{"QueueUrl":"/a/q"}`), []byte(`{"QueueUrl":"/a","x":1}`), 1)
	if _, err := decodeEntry(rawBinaryEntry(field)); !errors.Is(err, errCorruptEntry) {
		t.Errorf("unknown JSON field: %v; want a corrupt entry", err)
	}
}

// rawBinaryEntry frames one version 4 command as an entry.
func rawBinaryEntry(cmd []byte) []byte { return rawEntry(minVersionBinary, string(cmd)) }

// TestOldFormatLogReplays writes entries in the JSON layouts of versions 1
// to 3 into a real log, beside version 4 entries, and checks that a
// restart replays all of them to the state the running node had.
func TestOldFormatLogReplays(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	createFIFO(t, l, c)
	for i := 0; i < 3; i++ {
		now := c.next()
		cmd := &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, MessageIDs: []string{itoa(uint64(i))}, Entropy: uint64(now),
			Request: &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: "old" + itoa(uint64(i)), MessageGroupId: "g", MessageGroupIdSet: true}}
		data, err := encodeEntryJSON([]*engine.Command{cmd})
		if err != nil {
			t.Fatal(err)
		}
		if data[0] >= minVersionBinary {
			t.Fatalf("the JSON layout wrote version %d", data[0])
		}
		if err := l.raft.Apply(data, 0).Error(); err != nil {
			t.Fatal(err)
		}
	}
	send(t, l, c, 3)
	var before bytes.Buffer
	l.Read(func(e *engine.Engine) { _ = e.Snapshot(&before) })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := openTest(t, dir, RaftConfig{})
	defer l2.Close()
	var after bytes.Buffer
	l2.Read(func(e *engine.Engine) { _ = e.Snapshot(&after) })
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the replayed state differs from the running node's")
	}
	c.t += 1e12
	if got := receiveBodies(t, l2, c, 10); !reflect.DeepEqual(got, []string{"old0", "old1", "old2", "m3"}) {
		t.Fatalf("after replay received %v", got)
	}
}

// TestLeaderAnswersFromHeldCommands checks that entries the leader hands to
// Raft are applied from the commands it holds and leave nothing held
// behind, under concurrent load.
func TestLeaderAnswersFromHeldCommands(t *testing.T) {
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	defer l.Close()
	c := newClock()
	createFIFO(t, l, c)
	done := make(chan error, 64)
	for i := 0; i < 64; i++ {
		go func(i int) {
			now := c.next()
			_, err := l.Apply(context.Background(), &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, MessageIDs: []string{itoa(uint64(i))},
				Request: &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: "b", MessageGroupId: "g", MessageGroupIdSet: true, MessageDeduplicationId: itoa(uint64(i)), MessageDeduplicationIdSet: true}})
			done <- err
		}(i)
	}
	for i := 0; i < 64; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	l.fsm.heldMu.Lock()
	n := len(l.fsm.held)
	l.fsm.heldMu.Unlock()
	if n != 0 {
		t.Fatalf("%d entries still held after every command was answered", n)
	}
	if l.fsm.heldApplied.Load() == 0 {
		t.Fatal("no entry was applied from the commands the leader holds: every one was decoded")
	}
	if got := len(receiveBodies(t, l, c, 10)); got != 10 {
		t.Fatalf("received %d messages, want 10", got)
	}
}
