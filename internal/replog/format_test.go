package replog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestEntryVersionFollowsTheCluster checks what format.go promises of the
// entries a node writes: the cluster's format, raised only by a raise, and
// never a command in a format older than it needs.
func TestEntryVersionFollowsTheCluster(t *testing.T) {
	send := &engine.Command{Time: 1, Request: &api.PurgeQueueRequest{QueueUrl: "/a/b"}}
	meta := &engine.Command{Request: &engine.SetMetaRequest{Key: memberKey("n1"), Value: strings.Repeat("a", 32)}}
	raise := &engine.Command{Request: &engine.SetMetaRequest{Key: formatKey, Value: "5"}}

	l := &Raft{}
	l.format.Store(uint32(baseFormat))
	if v := l.entryVersion([]*engine.Command{send}); v != 4 {
		t.Fatalf("an entry of a cluster writing format 4 is version %d", v)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{send, meta}, l.entryVersion([]*engine.Command{send, meta})); err == nil {
		t.Fatal("a fifoq:SetMeta went into a version 4 entry, which a fifoq of format 4 refuses")
	}
	data, _, err := encodeEntryHeld([]*engine.Command{send, raise}, l.entryVersion([]*engine.Command{send, raise}))
	if err != nil || data[0] != 5 {
		t.Fatalf("a raise to format 5: version %v, %v; want an entry of version 5", data[:min(1, len(data))], err)
	}
	cmds, err := decodeEntry(data)
	if err != nil || len(cmds) != 2 {
		t.Fatalf("decode the raise: %v", err)
	}
	if n, ok := formatRaise(cmds[1]); !ok || n != 5 {
		t.Fatalf("decoded raise names format %d (%v)", n, ok)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{send}, 3); err == nil {
		t.Fatal("wrote a version 3 entry; the binary layout starts at 4")
	}
}

// TestOlderFormatReader stands in for a fifoq that reads format 4 only,
// as the fifoq_faults build does: it refuses a version 5 entry as newer,
// and a fifoq:SetMeta wherever it is.
func TestOlderFormatReader(t *testing.T) {
	meta := &engine.Command{Request: &engine.SetMetaRequest{Key: "k", Value: "v"}}
	v5, _, err := encodeEntryHeld([]*engine.Command{meta}, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Version 4 entries with SetMeta, as development builds wrote them.
	v4 := append([]byte(nil), v5[:len(v5)-4]...)
	v4[0] = 4
	v4 = binary.BigEndian.AppendUint32(v4, crc32.Checksum(v4, castagnoli))
	if _, err := decodeEntry(v4); err != nil {
		t.Fatalf("a fifoq that reads format 5 refuses a version 4 entry with fifoq:SetMeta: %v", err)
	}

	saved := maxEntryFormat
	maxEntryFormat = 4
	defer func() { maxEntryFormat = saved }()
	if _, err := decodeEntry(v5); !errors.Is(err, errNewerEntry) {
		t.Fatalf("a format-4 reader decoded a version 5 entry: %v", err)
	}
	if _, err := decodeEntry(v4); err == nil || !strings.Contains(err.Error(), "fifoq:SetMeta") {
		t.Fatalf("a format-4 reader took a fifoq:SetMeta: %v", err)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{meta}, 5); err == nil {
		t.Fatal("a format-4 fifoq wrote a version 5 entry")
	}
}

// TestHelloFormat checks the format field of a hello: absent in a fifoq's
// from before it (version 4), else a version.
func TestHelloFormat(t *testing.T) {
	for _, c := range []struct {
		line string
		want byte
		ok   bool
	}{
		{"n1 inc -", 4, true},
		{"n1 inc - 5", 5, true},
		{"n1 inc - 0", 0, false},
		{"n1 inc - x", 0, false},
		{"n1 inc - 5 6", 0, false},
		{"n1 inc", 0, false},
	} {
		got, ok := helloFormat(strings.Fields(c.line), 3)
		if got != c.want || ok != c.ok {
			t.Errorf("helloFormat(%q) = %d, %v; want %d, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// TestRegionRaisesTheFormatAlone checks the raise a command makes for
// itself: a node alone writes its recorded format (4, for a data dir an
// older fifoq can still read) until a command in another region needs
// format 6; the command raises the record first, and is applied. The
// queue of that region is another queue than the one of the same name at
// home, and both come back, each in its region, after a snapshot and a
// restart.
func TestRegionRaisesTheFormatAlone(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	l, _ := openTest(t, dir, RaftConfig{})
	home := api.QueueKey{Account: "000000000000", Name: "q"}
	far := api.QueueKey{Region: "eu-west-1", Account: "000000000000", Name: "q"}
	create := func(l *Raft, k api.QueueKey) {
		t.Helper()
		if _, err := l.Apply(context.Background(), &engine.Command{Time: c.next(), Caller: k.Account, Region: k.Region,
			Request: &api.CreateQueueRequest{QueueName: k.Name}}); err != nil {
			t.Fatalf("create %s: %v", k, err)
		}
	}
	create(l, home)
	if f := l.format.Load(); f != uint32(baseFormat) {
		t.Fatalf("a node alone writes format %d before any command needs more; want %d", f, baseFormat)
	}
	create(l, far)
	if f := l.format.Load(); f != minVersionRegions {
		t.Fatalf("after a command in another region the node writes format %d, want %d", f, minVersionRegions)
	}
	if got := l.recordedFormat(); got != minVersionRegions {
		t.Fatalf("recorded format %d, want %d", got, minVersionRegions)
	}
	apply(t, l, c, home, &api.SendMessageRequest{QueueUrl: home.Path(), MessageBody: "home"}, "id-home")
	apply(t, l, c, far, &api.SendMessageRequest{QueueUrl: far.Path(), MessageBody: "far"}, "id-far")
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	apply(t, l, c, far, &api.SendMessageRequest{QueueUrl: far.Path(), MessageBody: "far2"}, "id-far2")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l, _ = openTest(t, dir, RaftConfig{})
	defer l.Close()
	if f := l.format.Load(); f != minVersionRegions {
		t.Fatalf("reopened, the node writes format %d, want %d", f, minVersionRegions)
	}
	for k, want := range map[api.QueueKey]string{home: "1", far: "2"} {
		res := apply(t, l, c, k, &api.GetQueueAttributesRequest{QueueUrl: k.Path(), AttributeNames: []string{"All"}}).(*api.GetQueueAttributesResult)
		if got := res.Attributes["ApproximateNumberOfMessages"]; got != want {
			t.Errorf("%s holds %s messages after the restart, want %s", k, got, want)
		}
		if arn := res.Attributes["QueueArn"]; arn != k.ARN("us-east-1") {
			t.Errorf("%s has ARN %s, want %s", k, arn, k.ARN("us-east-1"))
		}
	}
	list := func(region string) []string {
		res, err := l.Apply(context.Background(), &engine.Command{Time: c.next(), Caller: home.Account, Region: region, Request: &api.ListQueuesRequest{}})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*api.ListQueuesResult).QueueUrls
	}
	if got := strings.Join(list(""), ","); got != home.Path() {
		t.Errorf("ListQueues at home = %s, want %s", got, home.Path())
	}
	if got := strings.Join(list("eu-west-1"), ","); got != far.Path() {
		t.Errorf("ListQueues in eu-west-1 = %s, want %s", got, far.Path())
	}
}

// TestRegionNeedsFormat6 checks that a command in another region is never
// written in a format that cannot carry its region: an older reader would
// apply it to the queue of the same name at home.
func TestRegionNeedsFormat6(t *testing.T) {
	cmd := &engine.Command{Time: 1, Region: "eu-west-1", Caller: "000000000000", Request: &api.CreateQueueRequest{QueueName: "q"}}
	if got := commandFormat(cmd); got != minVersionRegions {
		t.Fatalf("commandFormat = %d, want %d", got, minVersionRegions)
	}
	if _, _, err := encodeEntryHeld([]*engine.Command{cmd}, minVersionSetMeta); err == nil {
		t.Fatal("a command in another region went into a version 5 entry")
	}
	q := &engine.Command{Time: 2, Caller: "000000000000", Queue: api.QueueKey{Region: "eu-west-1", Account: "000000000000", Name: "q"},
		Request: &api.PurgeQueueRequest{QueueUrl: "/queue/eu-west-1/000000000000/q"}}
	data, _, err := encodeEntryHeld([]*engine.Command{cmd, q}, minVersionRegions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(data)
	if err != nil || len(got) != 2 || got[0].Region != "eu-west-1" || got[1].Queue != q.Queue {
		t.Fatalf("decoded %+v, %v; want the regions back", got, err)
	}
}

// TestOutboxNeedsFormat10 checks that the outbox's commands and a fence
// spanning redrives are never written in a format before 10, and that
// such a command in an older entry is refused rather than applied: an
// engine that knows no outbox would part a queue from its dead-letter
// queue and lose the messages between them.
func TestOutboxNeedsFormat10(t *testing.T) {
	q := api.QueueKey{Account: "000000000000", Name: "q.fifo"}
	for _, req := range []api.Request{
		&engine.FenceQueueRequest{Move: "m", Spanning: true},
		&engine.TakeMessagesRequest{Source: q, Created: 1},
		&engine.SettleOutboxRequest{Created: 1, Through: 1},
	} {
		cmd := &engine.Command{Time: 1, Queue: q, Request: req}
		if got := commandFormat(cmd); got != minVersionOutbox {
			t.Fatalf("%T: commandFormat = %d, want %d", req, got, minVersionOutbox)
		}
		if _, _, err := encodeEntryHeld([]*engine.Command{cmd}, minVersionSharedLog); err == nil {
			t.Fatalf("%T went into a version %d entry", req, minVersionSharedLog)
		}
		data, _, err := encodeEntryHeld([]*engine.Command{cmd}, minVersionOutbox)
		if err != nil {
			t.Fatal(err)
		}
		// The same entry, labelled as version 9, as a damaged or forged
		// one would be: refused.
		old := relabelled(data, minVersionSharedLog)
		if _, err := decodeEntry(old); err == nil {
			t.Fatalf("%T read from a version %d entry", req, minVersionSharedLog)
		}
	}
	if got := commandFormat(&engine.Command{Queue: q, Request: &engine.FenceQueueRequest{Move: "m"}}); got != minVersionMoves {
		t.Fatalf("a fence that does not span: commandFormat = %d, want %d", got, minVersionMoves)
	}
}

// TestPartitionsNeedFormat11 checks that a command on a partition of a
// split queue, a split, a merge, a fence of a queue whose move tasks
// ended, and an outbox take from a partition are written only in entries
// of version 11 (which carry the partition), are read back
// with their partition, and are refused in an entry labelled older.
func TestPartitionsNeedFormat11(t *testing.T) {
	q := api.QueueKey{Account: "000000000000", Name: "q.fifo"}
	p := q
	p.Part = 3
	for _, cmd := range []*engine.Command{
		{Time: 1, Queue: p, Request: &api.SendMessageRequest{QueueUrl: q.Path(), MessageBody: "b", MessageGroupId: "g", MessageGroupIdSet: true}},
		{Time: 1, Queue: p, Request: &api.DeleteQueueRequest{QueueUrl: q.Path()}},
		{Time: 1, Queue: q, Request: &engine.SplitQueueRequest{At: 1 << 31, Part: 3}},
		{Time: 1, Queue: q, Request: &engine.MergeQueueRequest{Part: 3}},
		{Time: 1, Queue: q, Request: &engine.FenceQueueRequest{Move: "m", Spanning: true, Ended: true}},
		{Time: 1, Queue: q, Request: &engine.TakeMessagesRequest{Source: p, Created: 1}},
	} {
		if got := commandFormat(cmd); got != minVersionPartitions {
			t.Fatalf("%T on %s: commandFormat = %d, want %d", cmd.Request, cmd.Queue, got, minVersionPartitions)
		}
		if _, _, err := encodeEntryHeld([]*engine.Command{cmd}, minVersionOutbox); err == nil {
			t.Fatalf("%T on %s went into a version %d entry", cmd.Request, cmd.Queue, minVersionOutbox)
		}
		data, _, err := encodeEntryHeld([]*engine.Command{cmd}, minVersionPartitions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEntry(data)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Queue != cmd.Queue {
			t.Fatalf("%T: decoded queue %+v, want %+v", cmd.Request, got[0].Queue, cmd.Queue)
		}
		old := relabelled(data, minVersionOutbox)
		if cmds, err := decodeEntry(old); err == nil && cmds[0].Queue == cmd.Queue {
			t.Fatalf("%T on %s read whole from a version %d entry", cmd.Request, cmd.Queue, minVersionOutbox)
		}
	}
	if got := commandFormat(&engine.Command{Queue: q, Request: &api.DeleteQueueRequest{QueueUrl: q.Path()}}); got != minVersionBinary {
		t.Fatalf("a command on a queue never split: commandFormat = %d, want %d", got, minVersionBinary)
	}
}

// TestInstallImageAsBytes checks that a fifoq:InstallQueue goes into an
// entry of version 12 in its binary layout, the image as it is, and into an
// older entry as JSON (base64), that both read back as the command given,
// and that the binary layout is refused in an entry labelled older.
func TestInstallImageAsBytes(t *testing.T) {
	image := bytes.Repeat([]byte{0xff, 0, 'i'}, 1000)
	cmd := &engine.Command{Time: 1, Queue: api.QueueKey{Account: "000000000000", Name: "q.fifo"},
		Request: &engine.InstallQueueRequest{Move: "m-1", Image: image}}
	if got := commandFormat(cmd); got != minVersionMoves {
		t.Fatalf("commandFormat = %d, want %d: an install needs no newer format than a move's", got, minVersionMoves)
	}
	sizes := map[byte]int{}
	for _, version := range []byte{minVersionPartitions, minVersionImageBytes} {
		data, held, err := encodeEntryHeld([]*engine.Command{cmd}, version)
		if err != nil {
			t.Fatal(err)
		}
		sizes[version] = len(data)
		got, err := decodeEntry(data)
		if err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		if !reflect.DeepEqual(got[0], cmd) || !reflect.DeepEqual(held[0], cmd) {
			t.Fatalf("version %d: decoded %#v, held %#v, want %#v", version, got[0], held[0], cmd)
		}
		if binaryLayout := held[0] == cmd; binaryLayout != (version >= minVersionImageBytes) {
			t.Fatalf("version %d: the leader applies the command it holds: %v", version, binaryLayout)
		}
	}
	if bin, js := sizes[minVersionImageBytes], sizes[minVersionPartitions]; bin > len(image)+64 || js < len(image)*4/3 {
		t.Fatalf("an entry of a %d-byte image: %d bytes in version %d, %d in version %d", len(image), bin, minVersionImageBytes, js, minVersionPartitions)
	}
	data, _, err := encodeEntryHeld([]*engine.Command{cmd}, minVersionImageBytes)
	if err != nil {
		t.Fatal(err)
	}
	old := relabelled(data, minVersionPartitions)
	if _, err := decodeEntry(old); err == nil {
		t.Fatalf("an install in the binary layout read from a version %d entry", minVersionPartitions)
	}
}

// relabelled returns entry data as an entry labelled version, its checksum
// made again: what a fifoq that reads only version would be given.
func relabelled(data []byte, version byte) []byte {
	old := append([]byte{version}, data[1:len(data)-4]...)
	return binary.BigEndian.AppendUint32(old, crc32.Checksum(old, castagnoli))
}
