package replog

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// hangGuard bounds a wait that must end, so that a regression fails the
// test instead of hanging it. It is not a timing assertion: the wait is
// expected to end at once, and the bound is far beyond any machine.
const hangGuard = time.Minute

// blockFSM holds the engine's read lock until the returned function is
// called, so that the state machine blocks on the next entry it applies:
// a request is then in the pipeline, its entry in the log, without an
// outcome.
func blockFSM(t *testing.T, l *Raft) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	go l.Read(func(*engine.Engine) {
		close(entered)
		<-gate
	})
	<-entered
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

// applyAsync runs Apply on its own goroutine.
func applyAsync(ctx context.Context, l Log, cmd *engine.Command) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := l.Apply(ctx, cmd)
		errc <- err
	}()
	return errc
}

// waitLastIndex waits until the log holds an entry after index: the
// command sent meanwhile has been appended.
func waitLastIndex(t *testing.T, l *Raft, after uint64) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); l.raft.LastIndex() <= after; {
		if time.Now().After(deadline) {
			t.Fatal("the command never reached the log")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitErr returns what a request answered, failing if it never does.
func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(hangGuard):
		t.Fatal("the request hung")
		return nil
	}
}

// wantAPIError checks that err is an api error with the given code and a
// 5xx status whose message contains want.
func wantAPIError(t *testing.T, err error, code, want string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an api error", err, err)
	}
	if e.Code != code || e.Status < 500 || !strings.Contains(e.Message, want) {
		t.Fatalf("error %s (%d) %q; want %s, 5xx, mentioning %q", e.Code, e.Status, e.Message, code, want)
	}
}

func sendCommand(c *clock, body string) *engine.Command {
	now := c.next()
	return &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, Entropy: uint64(now),
		Request:    &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: body, MessageGroupId: "g"},
		MessageIDs: []string{"id-" + body}}
}

// TestApplyEndsWhenRaftStops stops Raft under a request whose entry is in
// the log but not yet applied: the request answers that its outcome is
// unknown instead of waiting for ever, and the log still closes.
func TestApplyEndsWhenRaftStops(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	createFIFO(t, l, c)
	release := blockFSM(t, l)
	before := l.raft.LastIndex()
	errc := applyAsync(context.Background(), l, sendCommand(c, "m0"))
	waitLastIndex(t, l, before)
	// Not .Error(): that waits for the state machine, which is blocked.
	l.raft.Shutdown()
	wantAPIError(t, waitErr(t, errc), "ServiceUnavailable", "outcome was known")
	// A new request is refused at once, not queued.
	wantAPIError(t, waitErr(t, applyAsync(context.Background(), l, sendCommand(c, "m1"))), "ServiceUnavailable", "command log has stopped")
	release()
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Close hung after Raft stopped")
	}
}

// TestApplyEndsWithContext ends a request's context while its entry waits
// to be applied: the request answers at once that the outcome is unknown,
// and the command is applied all the same, in memory and after a restart.
func TestApplyEndsWithContext(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, eng := openTest(t, dir, RaftConfig{})
	createFIFO(t, l, c)
	release := blockFSM(t, l)
	before := l.raft.LastIndex()
	ctx, cancel := context.WithCancel(context.Background())
	errc := applyAsync(ctx, l, sendCommand(c, "m0"))
	waitLastIndex(t, l, before)
	cancel()
	wantAPIError(t, waitErr(t, errc), "InternalFailure", "outcome was known")
	release()
	// The entry is committed: the command is applied once the state
	// machine goes on. A barrier returns after it.
	if err := l.raft.Barrier(0).Error(); err != nil {
		t.Fatal(err)
	}
	if n := queuedCount(t, eng); n != 1 {
		t.Fatalf("%d messages queued after the abandoned send; want 1", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c.t += 1e12
	l, _ = openTest(t, dir, RaftConfig{})
	defer l.Close()
	if got := receiveBodies(t, l, c, 10); len(got) != 1 || got[0] != "m0" {
		t.Fatalf("after a restart received %v; want [m0]", got)
	}
}

func queuedCount(t *testing.T, eng *engine.Engine) int {
	t.Helper()
	resp, err := eng.Read(&engine.Command{Caller: testQueue.Account, Queue: testQueue,
		Request: &api.GetQueueAttributesRequest{QueueUrl: testQueue.Path(), AttributeNames: []string{"ApproximateNumberOfMessages"}}})
	if err != nil {
		t.Fatal(err)
	}
	n := resp.(*api.GetQueueAttributesResult).Attributes["ApproximateNumberOfMessages"]
	switch n {
	case "0":
		return 0
	case "1":
		return 1
	}
	t.Fatalf("ApproximateNumberOfMessages %q", n)
	return -1
}

// TestApplyAfterCloseRefused checks that a command after Close is refused
// at once.
func TestApplyAfterCloseRefused(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	createFIFO(t, l, c)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, waitErr(t, applyAsync(context.Background(), l, sendCommand(c, "m0"))), "ServiceUnavailable", "shutting down")
}

// rawEntry frames payloads as one log entry of the given format version,
// with a correct checksum.
func rawEntry(version byte, cmds ...string) []byte {
	b := []byte{version}
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestFSMFailureRefusesAppends appends an entry the state machine cannot
// apply, as a damaged or foreign entry would be: from then on every
// command is refused with ServiceUnavailable naming the entry, and nothing
// more is appended.
func TestFSMFailureRefusesAppends(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	defer l.Close()
	createFIFO(t, l, c)
	if err := l.raft.Apply(rawEntry(1, `{"t":1,"a":"NoSuchAction","r":{}}`), 0).Error(); err != nil {
		t.Fatal(err)
	}
	bad := l.raft.LastIndex()
	if err := l.Ready(); err == nil {
		t.Fatal("Ready after a failed entry")
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Apply(context.Background(), sendCommand(c, "m"))
			var e *api.Error
			if !errors.As(err, &e) || e.Code != "ServiceUnavailable" || e.Status != http.StatusServiceUnavailable ||
				!strings.Contains(e.Message, "log entry "+itoa(bad)) {
				t.Errorf("Apply after a failed entry: %v; want ServiceUnavailable naming log entry %d", err, bad)
			}
		}()
	}
	wg.Wait()
	if got := l.raft.LastIndex(); got != bad {
		t.Fatalf("the log's last index went from %d to %d after the failure", bad, got)
	}
}

func itoa(n uint64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// v1Commands are version-1 commands exactly as fifoq has written them
// since the format began: they must always decode.
var v1Commands = []string{
	`{"t":1767225600000000000,"c":"000000000000","qa":"000000000000","a":"CreateQueue","r":{"QueueName":"q.fifo","Attributes":{"FifoQueue":"true"}},"e":5}`,
	`{"t":1767225600001000000,"c":"000000000000","qa":"000000000000","qn":"q.fifo","a":"SendMessage","r":{"QueueUrl":"/000000000000/q.fifo","MessageBody":"m0","MessageDeduplicationId":"d0","MessageGroupId":"g"},"m":["id-0"],"e":6}`,
	`{"t":1767225600002000000,"c":"000000000000","qa":"000000000000","qn":"q.fifo","a":"ReceiveMessage","r":{"QueueUrl":"/000000000000/q.fifo","MaxNumberOfMessages":3},"e":7}`,
	`{"t":1767225600003000000,"a":"fifoq:Tick","r":{},"e":8}`,
	`{"t":1767225600004000000,"c":"000000000000","qa":"000000000000","qn":"q.fifo","a":"DeleteQueue","r":{"QueueUrl":"/000000000000/q.fifo"},"e":9,"rd":-1}`,
}

// TestDecodeVersion1 reads entries as fifoq writes them today.
func TestDecodeVersion1(t *testing.T) {
	cmds, err := decodeEntry(rawEntry(1, v1Commands...))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != len(v1Commands) || cmds[1].Request.(*api.SendMessageRequest).MessageBody != "m0" ||
		cmds[4].RecreateDelay != -1 || cmds[3].Request.Action() != engine.ActionTick {
		t.Fatalf("decoded %+v", cmds)
	}
}

// TestDecodeStrict checks that anything this fifoq does not understand in
// an entry is refused, never skipped.
func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		name, cmd, want string
	}{
		{"unknown command field", `{"t":1,"a":"PurgeQueue","r":{"QueueUrl":"/000000000000/q"},"zz":1}`, `unknown field "zz"`},
		{"unknown request field", `{"t":1,"a":"PurgeQueue","r":{"QueueUrl":"/000000000000/q","Force":true}}`, `unknown field "Force"`},
		{"unknown field in a nested request value", `{"t":1,"a":"SendMessageBatch","r":{"QueueUrl":"/000000000000/q","Entries":[{"Id":"a","MessageBody":"b","Priority":1}]}}`, `unknown field "Priority"`},
		{"unknown tick field", `{"t":1,"a":"fifoq:Tick","r":{"Rate":5}}`, `unknown field "Rate"`},
		{"unknown kind", `{"t":1,"a":"FrobnicateQueue","r":{}}`, `unknown action "FrobnicateQueue"`},
		{"no kind", `{"t":1,"r":{}}`, `unknown action ""`},
		{"no request", `{"t":1,"a":"PurgeQueue"}`, "not a JSON object"},
		{"null request", `{"t":1,"a":"PurgeQueue","r":null}`, "not a JSON object"},
		{"data after the command", `{"t":1,"a":"PurgeQueue","r":{}} {}`, "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeEntry(rawEntry(1, v1Commands[0], tc.cmd))
			if !errors.Is(err, errCorruptEntry) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "command 1") {
				t.Fatalf("decodeEntry: %v; want a corrupt entry naming command 1 and %q", err, tc.want)
			}
		})
	}
}

// TestDecodeFutureVersion checks that an entry of a newer format is refused
// naming its version, and one whose version byte is damaged as damaged.
func TestDecodeFutureVersion(t *testing.T) {
	newer := rawEntry(entryFormatVersion+1, v1Commands[0])
	_, err := decodeEntry(newer)
	if want := fmt.Sprintf("format version %d,", entryFormatVersion+1); !errors.Is(err, errNewerEntry) || !strings.Contains(err.Error(), want) {
		t.Fatalf("decodeEntry of a version-%d entry: %v; want %q", entryFormatVersion+1, err, want)
	}
	damaged := rawEntry(1, v1Commands[0])
	damaged[0] = entryFormatVersion + 1
	_, err = decodeEntry(damaged)
	if !errors.Is(err, errCorruptEntry) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d", entryFormatVersion+1)) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("decodeEntry of an entry with a damaged version byte: %v", err)
	}
	zero := rawEntry(0, v1Commands[0])
	if _, err := decodeEntry(zero); !errors.Is(err, errCorruptEntry) {
		t.Fatalf("decodeEntry of a version-0 entry: %v", err)
	}
}

// TestStartRefusesEntry writes an entry this fifoq cannot apply into a
// real log, as a newer fifoq or damage would: the next start is refused
// with the entry's index and the reason named.
func TestStartRefusesEntry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry []byte
		want  string
	}{
		{"future version", rawEntry(entryFormatVersion+1, v1Commands[0]), fmt.Sprintf("format version %d,", entryFormatVersion+1)},
		{"unknown field", rawEntry(1, `{"t":1,"a":"PurgeQueue","r":{"QueueUrl":"/000000000000/q"},"zz":1}`), `unknown field "zz"`},
		{"unknown kind", rawEntry(1, `{"t":1,"a":"FrobnicateQueue","r":{}}`), `unknown action "FrobnicateQueue"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := newClock()
			l, _ := openTest(t, dir, RaftConfig{})
			createFIFO(t, l, c)
			if err := l.raft.Apply(tc.entry, 0).Error(); err != nil {
				t.Fatal(err)
			}
			index := l.raft.LastIndex()
			send := applyAsync(context.Background(), l, sendCommand(c, "m0"))
			wantAPIError(t, waitErr(t, send), "ServiceUnavailable", "log entry "+itoa(index))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
			if err == nil {
				t.Fatal("OpenRaft started on a log with an entry it cannot apply")
			}
			if !strings.Contains(err.Error(), "log entry "+itoa(index)+" ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("OpenRaft: %v; want log entry %d and %q named", err, index, tc.want)
			}
			t.Logf("refused as expected: %v", err)
		})
	}
}

// TestCodecRoundTripEveryAction encodes a request of every action, as
// written by this fifoq, and decodes it strictly: the strict decoder must
// accept all that the encoder writes.
func TestCodecRoundTripEveryAction(t *testing.T) {
	n := 0
	for _, a := range []api.Action{api.ActionAddPermission, api.ActionCancelMessageMoveTask, api.ActionChangeMessageVisibility,
		api.ActionChangeMessageVisibilityBatch, api.ActionCreateQueue, api.ActionDeleteMessage, api.ActionDeleteMessageBatch,
		api.ActionDeleteQueue, api.ActionGetQueueAttributes, api.ActionGetQueueUrl, api.ActionListDeadLetterSourceQueues,
		api.ActionListMessageMoveTasks, api.ActionListQueueTags, api.ActionListQueues, api.ActionPurgeQueue, api.ActionReceiveMessage,
		api.ActionRemovePermission, api.ActionSendMessage, api.ActionSendMessageBatch, api.ActionSetQueueAttributes,
		api.ActionStartMessageMoveTask, api.ActionTagQueue, api.ActionUntagQueue} {
		req, ok := api.NewRequest(a)
		if !ok {
			t.Fatalf("no request type for %s", a)
		}
		fill(reflect.ValueOf(req).Elem(), 0)
		data, err := encodeEntry([]*engine.Command{{Time: 1, Request: req}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeEntry(data); err != nil {
			t.Errorf("%s: %v", a, err)
		}
		n++
	}
	t.Logf("%d actions round-tripped", n)
}

// fill sets every exported field of v, nested ones included, to a
// non-zero value, so that the encoder writes every field there is.
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("x"))
		}
	}
}

// TestStartRefusesNewerSnapshot gives the newest snapshot a format version
// newer than this fifoq reads, as a newer fifoq would write it (raft's own
// checksum updated): the start is refused naming the version, not calling
// the snapshot damaged.
func TestStartRefusesNewerSnapshot(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	createFIFO(t, l, c)
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(states) != 1 {
		t.Fatalf("snapshots: %v", states)
	}
	b, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(b[8:12], snapshotFormatVersion+1)
	if err := os.WriteFile(states[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	metaPath := filepath.Join(filepath.Dir(states[0]), "meta.json")
	mb, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(mb, &meta); err != nil {
		t.Fatal(err)
	}
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	h.Write(b)
	meta["CRC"] = h.Sum(nil)
	if mb, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metaPath, mb, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
	if err == nil {
		t.Fatal("OpenRaft started from a snapshot of a newer format")
	}
	if !errors.Is(err, errNewerSnapshot) || !strings.Contains(err.Error(), fmt.Sprintf("snapshot format version %d", snapshotFormatVersion+1)) || strings.Contains(err.Error(), "damaged") {
		t.Fatalf("OpenRaft: %v; want the newer version named", err)
	}
	t.Logf("refused as expected: %v", err)
}

// TestEmptyIDsSurviveTheLog sends a batch entry whose deduplication id was
// sent empty, which the engine refuses: the replayed command must be
// refused the same way. Before entries carried "ei", a replay accepted it,
// so a restart produced a message the client had been told failed.
func TestEmptyIDsSurviveTheLog(t *testing.T) {
	q := testQueue
	create := &engine.Command{Time: 1, Caller: q.Account, Queue: api.QueueKey{Account: q.Account},
		Request: &api.CreateQueueRequest{QueueName: q.Name, Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}}}
	send := &engine.Command{Time: 2, Caller: q.Account, Queue: q, MessageIDs: []string{"a", "b"},
		Request: &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: []api.SendMessageBatchRequestEntry{
			{Id: "1", MessageBody: "x", MessageGroupId: "g", MessageGroupIdSet: true, MessageDeduplicationIdSet: true},
			{Id: "2", MessageBody: "y", MessageGroupId: "g", MessageGroupIdSet: true},
		}}}
	results := func(cmds []*engine.Command) string {
		e := newLogEngine(testEngine)
		var out string
		for _, c := range cmds {
			resp, err := e.Apply(c)
			out += fmt.Sprintf("%+v %v\n", resp, err)
		}
		return out
	}
	leader := results([]*engine.Command{create, send})
	if !strings.Contains(leader, "InvalidParameterValue") {
		t.Fatalf("the engine accepted an empty deduplication id: %s", leader)
	}
	// The JSON layout (versions 1 to 3), as older fifoqs wrote it.
	ordinary, err := encodeEntryJSON([]*engine.Command{create})
	if err != nil {
		t.Fatal(err)
	}
	if ordinary[0] != 1 {
		t.Errorf("an entry without empty ids is written as version %d; want 1, readable by older fifoqs", ordinary[0])
	}
	data, err := encodeEntryJSON([]*engine.Command{create, send})
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != minVersionEmptyIDs {
		t.Errorf("an entry with empty ids is written as version %d; want %d", data[0], minVersionEmptyIDs)
	}
	// Version 4 carries the "sent" flags in its binary layout.
	v4, err := encodeEntry([]*engine.Command{create, send})
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range [][]byte{data, v4} {
		cmds, err := decodeEntry(entry)
		if err != nil {
			t.Fatal(err)
		}
		if replay := results(cmds); replay != leader {
			t.Fatalf("version %d replay differs from the leader:\nleader %s\nreplay %s", entry[0], leader, replay)
		}
	}

	for _, bad := range []struct {
		version byte
		cmd     string
	}{
		{1, `{"t":1,"a":"SendMessageBatch","r":{"QueueUrl":"/000000000000/q.fifo","Entries":[{"Id":"1","MessageBody":"x"}]},"ei":[1]}`},
		{2, `{"t":1,"a":"SendMessageBatch","r":{"QueueUrl":"/000000000000/q.fifo","Entries":[{"Id":"1","MessageBody":"x"}]},"ei":[1,0]}`},
		{2, `{"t":1,"a":"SendMessageBatch","r":{"QueueUrl":"/000000000000/q.fifo","Entries":[{"Id":"1","MessageBody":"x"}]},"ei":[4]}`},
		{2, `{"t":1,"a":"PurgeQueue","r":{"QueueUrl":"/000000000000/q.fifo"},"ei":[1]}`},
	} {
		if _, err := decodeEntry(rawEntry(bad.version, bad.cmd)); !errors.Is(err, errCorruptEntry) {
			t.Errorf("version %d entry %s: %v; want refused", bad.version, bad.cmd, err)
		}
	}
}

// TestHousekeepNeedsVersion3 checks that an entry holding the internal
// fifoq:Housekeep command is written as format version 3, so that a fifoq
// reading only older versions refuses it by its version, and that the
// command is refused in an entry that claims an older version.
func TestHousekeepNeedsVersion3(t *testing.T) {
	data, err := encodeEntryJSON([]*engine.Command{
		{Time: 1, Request: &api.PurgeQueueRequest{QueueUrl: "/000000000000/q"}},
		{Time: 2, Request: &engine.HousekeepRequest{Limit: 10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != minVersionHousekeep {
		t.Errorf("an entry with a housekeeping command is written as version %d; want %d", data[0], minVersionHousekeep)
	}
	cmds, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if hk, ok := cmds[1].Request.(*engine.HousekeepRequest); !ok || hk.Limit != 10 {
		t.Fatalf("decoded %#v, want the housekeeping command with limit 10", cmds[1].Request)
	}
	housekeep := `{"t":1,"a":"fifoq:Housekeep","r":{"limit":10}}`
	if _, err := decodeEntry(rawEntry(2, housekeep)); !errors.Is(err, errCorruptEntry) || !strings.Contains(err.Error(), "version 2 entry") {
		t.Fatalf("decodeEntry of a housekeeping command in a version-2 entry: %v", err)
	}
	if _, err := decodeEntry(rawEntry(3, housekeep)); err != nil {
		t.Fatalf("decodeEntry of a housekeeping command in a version-3 entry: %v", err)
	}
}

// TestApplyInOrderKeepsTheOrder applies dependent writes with
// ApplyInOrder beside other writers: they are applied in the order given
// (the last value of a key is the last one written), each answered, and a
// refused one in the middle is the error while those after it are still
// applied, as queued.
func TestApplyInOrderKeepsTheOrder(t *testing.T) {
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	defer l.Close()
	ctx := context.Background()
	set := func(k, v string) *engine.Command {
		return &engine.Command{Request: &engine.SetMetaRequest{Key: k, Value: v}}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Apply(ctx, set("other-"+strconv.Itoa(i), strconv.Itoa(n))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for round := range 20 {
		var cmds []*engine.Command
		for i := range 10 {
			cmds = append(cmds, set("ordered", strconv.Itoa(round*10+i)))
		}
		out, err := l.ApplyInOrder(ctx, cmds...)
		if err != nil || len(out) != 10 {
			t.Fatalf("round %d: %d answers, %v", round, len(out), err)
		}
		var got string
		l.Read(func(e *engine.Engine) { got = e.Meta("ordered") })
		if want := strconv.Itoa(round*10 + 9); got != want {
			t.Fatalf("round %d: the key holds %q after the writes; want %q, the last one", round, got, want)
		}
	}
	close(stop)
	wg.Wait()
	_, err := l.ApplyInOrder(ctx, set("a", "1"), set("", "refused"), set("b", "2"))
	if e := (*api.Error)(nil); !errors.As(err, &e) || e.Code != "InvalidParameterValue" {
		t.Fatalf("around a refused write: %v; want its InvalidParameterValue", err)
	}
	var a, b string
	l.Read(func(e *engine.Engine) { a, b = e.Meta("a"), e.Meta("b") })
	if a != "1" || b != "2" {
		t.Fatalf("around a refused write: a=%q b=%q; want both written", a, b)
	}
}
