package crashtest

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	be "encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/bench"
	"github.com/fifoq/fifoq/internal/testbin"
)

// upgradeFixture is testdata/datadir-v4: a data dir that the fifoq of
// commit 3e26ba0 wrote (snapshot frame 4, engine format 3, body store
// payloads without their message's id and MD5), and what it held.
const upgradeFixture = "testdata/datadir-v4"

// upgradeMsg and upgradeFixtureDoc are expected.json (see its gen.go).
type upgradeMsg struct {
	Name, MessageId, Body, MD5OfBody, MD5OfMessageAttributes string
	MessageAttributes                                        map[string]upgradeAttr
	MessageGroupId, MessageDeduplicationId, SequenceNumber   string
	SentAfterSnapshot                                        bool
	State, ReceiptHandle                                     string
	ApproximateReceiveCount                                  int
	SentTimestamp, ApproximateFirstReceiveTimestamp          string
}

type upgradeAttr struct {
	DataType, StringValue string
	BinaryValue           []byte
}

type upgradeFixtureDoc struct {
	Commit, Account string
	StoppedAt       time.Time
	SnapshotFrame   uint32
	EngineFormat    uint32
	Queues          []struct {
		Name     string
		Messages []*upgradeMsg
	}
}

// TestUpgradeFromFrame4DataDir guards the upgrade of a real data dir that
// the previous fifoq (3e26ba0) wrote — a snapshot of frame 4 with engine
// format 3 whose body store payloads lack the head (MessageId, MD5OfBody
// and deduplication id) that today's payloads begin with, plus log entries
// after it —
// to today's binary. Every message not deleted must be received exactly
// once, with its MessageId, body, MD5s, message attributes, group,
// deduplication id, sequence number, sent and first-receive times and
// receive count; the ones in flight stay in flight until their old receipt
// handles make them visible; FIFO groups keep their order and their
// deduplication records; deleted messages never come back. Then the
// server snapshots in today's format (frame 5, engine format 4), restarts,
// and must still serve the same state, and new messages.
//
// The server runs with its clock set back to the fixture's (the fifoq_faults
// build's FIFOQ_TEST_CLOCK_SKEW), so that neither retention periods, the
// visibility timeouts nor the deduplication window run out however old the
// fixture is.
func TestUpgradeFromFrame4DataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	r := newUpgradeRun(t)

	// Today's fifoq on the old data dir, which has no record of its
	// region: it is its snapshot's, us-east-1, and no other.
	refuseStart(t, r.dir, "eu-west-1", "us-east-1")
	r.start()
	checkRegionAdopted(t, r.dir, "us-east-1", r.p)
	r.receiveOldDataDir()
	r.checkDedupRecords()

	// Change the state, take today's snapshot, change it again, and stop.
	r.changeState()
	r.snapshotToday()
	r.stop()

	// Restarted on its own snapshot and log.
	r.start()
	r.receiveAfterRestart()
	r.sendNew()
	r.stop()
}

// upgradeLiveMsg is a message of the fixture not deleted, as
// TestUpgradeFromFrame4DataDir knows it: its receive count and last receipt
// handle.
type upgradeLiveMsg struct {
	*upgradeMsg
	rc       int
	handle   string
	inflight bool
}

// upgradeQueue is a queue as TestUpgradeFromFrame4DataDir knows it: every
// message not deleted, its receive count and last receipt handle, and the
// deleted ones' names by MessageId.
type upgradeQueue struct {
	name, url string
	fifo      bool
	msgs      []*upgradeLiveMsg // in the order sent
	deleted   map[string]string
}

// upgradeRun is TestUpgradeFromFrame4DataDir's state: the fixture, the data
// dir, the binary and how it runs, the queues as the test knows them, and
// the server running (p, c, addr), if any.
type upgradeRun struct {
	t             *testing.T
	ctx           context.Context
	fx            *upgradeFixtureDoc
	bin, dir      string
	env           []string
	keyID, secret string
	skew          time.Duration
	queues        []*upgradeQueue
	std, fifo     *upgradeQueue // queues[0] and queues[1], once checked

	p    *fifoqProc
	c    *sqs.Client
	addr string
}

// newUpgradeRun unpacks the fixture's data dir (checking that its snapshot
// is of frame 4 and engine format 3), builds the fifoq_faults binary, and
// sets the server's clock back to when the fixture's server stopped.
func newUpgradeRun(t *testing.T) *upgradeRun {
	t.Helper()
	fx := readUpgradeFixture(t)
	dir := filepath.Join(t.TempDir(), "data")
	unpackDataDir(t, filepath.Join(upgradeFixture, "datadir.tar.gz"), dir)
	if frame, engine := newestSnapshotFormat(t, dir); frame != 4 || engine != 3 {
		t.Fatalf("the fixture's snapshot is frame %d, engine format %d; want 4 and 3 (regenerated with a newer fifoq?)", frame, engine)
	}

	bin := faultsBinary(t)
	const keyID, secret = "AKIDUPGRADETEST00001", "secret-of-the-upgrade-test"
	skew := time.Until(fx.StoppedAt.Add(time.Second))
	r := &upgradeRun{t: t, ctx: context.Background(), fx: fx, bin: bin, dir: dir, keyID: keyID, secret: secret, skew: skew,
		env: []string{"FIFOQ_ACCESS_KEY_ID=" + keyID, "FIFOQ_SECRET_ACCESS_KEY=" + secret, "FIFOQ_TEST_CLOCK_SKEW=" + skew.String()}}
	for _, fq := range fx.Queues {
		q := &upgradeQueue{name: fq.Name, fifo: filepath.Ext(fq.Name) == ".fifo", deleted: map[string]string{}}
		for _, m := range fq.Messages {
			if m.State == "deleted" {
				q.deleted[m.MessageId] = m.Name
				continue
			}
			q.msgs = append(q.msgs, &upgradeLiveMsg{upgradeMsg: m, rc: m.ApproximateReceiveCount, handle: m.ReceiptHandle, inflight: m.State == "inflight"})
		}
		r.queues = append(r.queues, q)
	}
	return r
}

// start runs the server on the data dir, and a client of it at its skewed
// time, and waits until it is ready.
func (r *upgradeRun) start() {
	t := r.t
	t.Helper()
	addr := freeAddr(t)
	p := launchBinary(t, r.bin, r.env, "serve", "--listen", addr, "--data-dir", r.dir)
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider(r.keyID, r.secret, ""), RetryMaxAttempts: 1,
		HTTPClient: bench.OwnRequestBodies(plainHTTP()), HTTPSignerV4: skewedSigner{v4.NewSigner(), r.skew}})
	p.waitReady(t, func() error { _, err := c.ListQueues(r.ctx, &sqs.ListQueuesInput{}); return err })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server output:\n%s", p.out)
		}
	})
	r.p, r.c, r.addr = p, c, addr
}

// stop stops the server with SIGTERM, which it must exit 0 on.
func (r *upgradeRun) stop() {
	r.t.Helper()
	r.p.stop()
	if r.p.exitCode() != 0 {
		r.t.Fatalf("fifoq exited %d on SIGTERM; output:\n%s", r.p.exitCode(), r.p.out)
	}
}

// receiveOldDataDir finds the fixture's queues on the old data dir, checks
// how many messages each holds, and receives every one of them, and that
// the first queue is a standard one and the second a FIFO one.
func (r *upgradeRun) receiveOldDataDir() {
	t := r.t
	t.Helper()
	for _, q := range r.queues {
		out, err := r.c.GetQueueUrl(r.ctx, &sqs.GetQueueUrlInput{QueueName: &q.name})
		if err != nil {
			t.Fatalf("queue %s: %v", q.name, err)
		}
		q.url = aws.ToString(out.QueueUrl)
		if n := countMessages(t, r.c, q.url); n != len(q.msgs) {
			t.Errorf("%s holds %d messages, want %d", q.name, n, len(q.msgs))
		}
		// What was visible, then what was in flight (made visible with
		// the receipt handles the old fifoq gave).
		r.receiveAll(q, q.receivable())
		var old []string
		for _, m := range q.msgs {
			if m.State == "inflight" {
				m.handle = m.ReceiptHandle
				old = append(old, m.Name)
			}
		}
		r.setVisible(q, old...)
		r.receiveAll(q, q.receivable())
	}
	r.std, r.fifo = r.queues[0], r.queues[1]
	if r.std.fifo || !r.fifo.fifo {
		t.Fatalf("the fixture's queues are %s and %s, want a standard one and a FIFO one", r.std.name, r.fifo.name)
	}
}

// checkDedupRecords checks that the deduplication records came along:
// content-based (f5, in flight in the old snapshot) and explicit (f9,
// deleted, only in the log).
func (r *upgradeRun) checkDedupRecords() {
	t, fifo := r.t, r.fifo
	t.Helper()
	for _, d := range []struct{ name, body, group, dedup string }{{"f5", "", "C", ""}, {"f9", "D-1 again", "D", "dedup-D-1"}} {
		m := r.fx.message(t, fifo.name, d.name)
		body := cmp.Or(d.body, m.Body)
		out, err := r.c.SendMessage(r.ctx, &sqs.SendMessageInput{QueueUrl: &fifo.url, MessageBody: &body, MessageGroupId: &d.group, MessageDeduplicationId: optionalString(d.dedup)})
		if err != nil || aws.ToString(out.MessageId) != m.MessageId {
			t.Errorf("a duplicate of %s got MessageId %v (%v), want %s's %s", d.name, aws.ToString(out.MessageId), err, d.name, m.MessageId)
		}
	}
}

// changeState changes the state: it deletes messages that were in the old
// snapshot and in the old log, leaves some in flight across the restart
// (s6, s7 and f7), and makes the others visible.
func (r *upgradeRun) changeState() {
	r.t.Helper()
	std, fifo := r.std, r.fifo
	r.del(std, "s3", "s8")
	r.del(fifo, "f4", "f8")
	r.setVisible(std, slices.DeleteFunc(std.inflightNames(), func(n string) bool { return n == "s7" || n == "s6" })...)
	r.setVisible(fifo, slices.DeleteFunc(fifo.inflightNames(), func(n string) bool { return n == "f7" })...)
}

// snapshotToday has the server take today's snapshot (a backup takes one),
// checks that it is of frame 5 and engine format 4, and makes a change
// after it (s6 deleted).
func (r *upgradeRun) snapshotToday() {
	t := r.t
	t.Helper()
	takeSnapshot(t, r.addr, r.keyID, r.secret, r.skew)
	if frame, engine := newestSnapshotFormat(t, r.dir); frame != 5 || engine != 4 {
		t.Fatalf("after the backup, the newest snapshot is frame %d, engine format %d; want 5 and 4", frame, engine)
	}
	r.del(r.std, "s6")
}

// receiveAfterRestart checks, after the restart on its own snapshot and
// log, how many messages each queue holds, receives the visible ones, and
// then the one left in flight across the restart (made visible with its
// receipt handle).
func (r *upgradeRun) receiveAfterRestart() {
	t := r.t
	t.Helper()
	held := map[string]string{r.std.name: "s7", r.fifo.name: "f7"} // in flight across the restart
	for _, q := range r.queues {
		if n := countMessages(t, r.c, q.url); n != len(q.msgs) {
			t.Errorf("%s holds %d messages after the restart, want %d", q.name, n, len(q.msgs))
		}
		r.receiveAll(q, q.receivable())
		r.setVisible(q, held[q.name])
		r.receiveAll(q, q.receivable())
	}
}

// sendNew sends a new message to each queue, beside the old ones (in
// flight), checks that a FIFO queue's SequenceNumber goes on after the old
// ones', and receives it.
func (r *upgradeRun) sendNew() {
	t := r.t
	t.Helper()
	var maxSeq string
	for _, m := range r.fifo.msgs {
		maxSeq = max(maxSeq, m.SequenceNumber)
	}
	for _, q := range r.queues {
		body := "new on " + q.name + " ✓"
		in := &sqs.SendMessageInput{QueueUrl: &q.url, MessageBody: &body, MessageAttributes: map[string]types.MessageAttributeValue{
			"s": {DataType: aws.String("String"), StringValue: aws.String("new")},
			"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xff}}}}
		if q.fifo {
			in.MessageGroupId = aws.String("N")
		}
		out, err := r.c.SendMessage(r.ctx, in)
		if err != nil {
			t.Fatalf("%s: send a new message: %v", q.name, err)
		}
		if seq := aws.ToString(out.SequenceNumber); q.fifo && (len(seq) != len(maxSeq) || seq <= maxSeq) {
			t.Errorf("%s: a new message's SequenceNumber %s is not after the old ones' %s", q.name, seq, maxSeq)
		}
		nm := &upgradeMsg{Name: "new", MessageId: aws.ToString(out.MessageId), Body: body,
			MD5OfBody: aws.ToString(out.MD5OfMessageBody), MD5OfMessageAttributes: aws.ToString(out.MD5OfMessageAttributes),
			MessageGroupId: aws.ToString(in.MessageGroupId), SequenceNumber: aws.ToString(out.SequenceNumber)}
		nm.MessageAttributes = map[string]upgradeAttr{"s": {DataType: "String", StringValue: "new"}, "b": {DataType: "Binary", BinaryValue: []byte{0, 0xff}}}
		q.msgs = append(q.msgs, &upgradeLiveMsg{upgradeMsg: nm})
		r.receiveAll(q, []string{"new"})
	}
}

// byName returns q's live message called name.
func (q *upgradeQueue) byName(t *testing.T, name string) *upgradeLiveMsg {
	t.Helper()
	for _, m := range q.msgs {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("%s: no live message %s", q.name, name)
	return nil
}

// receivable is what a receive of every message may give: the
// messages not in flight, and of a FIFO group only those before its
// first message in flight (a group is received in order, from its
// first message on while they are visible: internal/engine/fifo.go).
func (q *upgradeQueue) receivable() []string {
	stopped := map[string]bool{}
	var names []string
	for _, m := range q.msgs {
		if m.inflight {
			stopped[m.MessageGroupId] = q.fifo
		} else if !stopped[m.MessageGroupId] {
			names = append(names, m.Name)
		}
	}
	return names
}

// inflightNames is the names of q's messages in flight, in the order sent.
func (q *upgradeQueue) inflightNames() []string {
	var names []string
	for _, m := range q.msgs {
		if m.inflight {
			names = append(names, m.Name)
		}
	}
	return names
}

// receiveAll receives every message it can (visibility timeout 300 s)
// until a receive gives none, and checks that it gets exactly want,
// each once and as sent, the groups of a FIFO queue in order.
func (r *upgradeRun) receiveAll(q *upgradeQueue, want []string) {
	t := r.t
	t.Helper()
	var got []string
	for {
		out, err := r.c.ReceiveMessage(r.ctx, &sqs.ReceiveMessageInput{QueueUrl: &q.url, MaxNumberOfMessages: 10, VisibilityTimeout: 300,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatalf("%s: receive: %v", q.name, err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, rm := range out.Messages {
			id := aws.ToString(rm.MessageId)
			if name, ok := q.deleted[id]; ok {
				t.Fatalf("%s: %s (%s), deleted, came back: %q", q.name, name, id, aws.ToString(rm.Body))
			}
			i := slices.IndexFunc(q.msgs, func(m *upgradeLiveMsg) bool { return m.MessageId == id })
			if i < 0 {
				t.Fatalf("%s: received a message never sent: %s %q (MD5 %s)", q.name, id, aws.ToString(rm.Body), aws.ToString(rm.MD5OfBody))
			}
			m := q.msgs[i]
			if slices.Contains(got, m.Name) {
				t.Fatalf("%s: %s received twice", q.name, m.Name)
			}
			got = append(got, m.Name)
			m.rc++
			m.handle, m.inflight = aws.ToString(rm.ReceiptHandle), true
			checkUpgradedMessage(t, q.name, m.upgradeMsg, m.rc, rm)
		}
	}
	if a, b := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)); !slices.Equal(a, b) {
		t.Fatalf("%s: received %v, want %v", q.name, a, b)
	}
	if q.fifo { // each group in the order sent
		for _, m := range q.msgs {
			for _, n := range q.msgs {
				if m.MessageGroupId == n.MessageGroupId && m.SequenceNumber < n.SequenceNumber &&
					slices.Contains(got, m.Name) && slices.Contains(got, n.Name) && slices.Index(got, m.Name) > slices.Index(got, n.Name) {
					t.Errorf("%s: group %s: %s received before %s", q.name, m.MessageGroupId, n.Name, m.Name)
				}
			}
		}
	}
}

// setVisible makes q's messages called names visible, with their last
// receipt handles.
func (r *upgradeRun) setVisible(q *upgradeQueue, names ...string) {
	r.t.Helper()
	for _, name := range names {
		m := q.byName(r.t, name)
		if _, err := r.c.ChangeMessageVisibility(r.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q.url, ReceiptHandle: &m.handle, VisibilityTimeout: 0}); err != nil {
			r.t.Fatalf("%s: make %s visible with its receipt handle: %v", q.name, name, err)
		}
		m.inflight = false
	}
}

// del deletes q's messages called names, with their last receipt handles.
func (r *upgradeRun) del(q *upgradeQueue, names ...string) {
	r.t.Helper()
	for _, name := range names {
		m := q.byName(r.t, name)
		if _, err := r.c.DeleteMessage(r.ctx, &sqs.DeleteMessageInput{QueueUrl: &q.url, ReceiptHandle: &m.handle}); err != nil {
			r.t.Fatalf("%s: delete %s: %v", q.name, name, err)
		}
		q.msgs = slices.DeleteFunc(q.msgs, func(x *upgradeLiveMsg) bool { return x == m })
		q.deleted[m.MessageId] = name
	}
}

// checkUpgradedMessage checks a received message against the fixture's,
// received rc times in all.
func checkUpgradedMessage(t *testing.T, queue string, want *upgradeMsg, rc int, got types.Message) {
	t.Helper()
	fail := func(what string, g, w any) {
		t.Errorf("%s: %s (%s): %s %v, want %v", queue, want.Name, want.MessageId, what, g, w)
	}
	if b := aws.ToString(got.Body); b != want.Body {
		fail("body", strconv.Quote(b), strconv.Quote(want.Body))
	}
	if s := aws.ToString(got.MD5OfBody); s != want.MD5OfBody {
		fail("MD5OfBody", s, want.MD5OfBody)
	}
	if s := aws.ToString(got.MD5OfMessageAttributes); s != want.MD5OfMessageAttributes {
		fail("MD5OfMessageAttributes", s, want.MD5OfMessageAttributes)
	}
	if len(got.MessageAttributes) != len(want.MessageAttributes) {
		fail("message attributes", got.MessageAttributes, want.MessageAttributes)
	}
	for k, w := range want.MessageAttributes {
		g, ok := got.MessageAttributes[k]
		if !ok || aws.ToString(g.DataType) != w.DataType || aws.ToString(g.StringValue) != w.StringValue || !bytes.Equal(g.BinaryValue, w.BinaryValue) {
			fail("message attribute "+k, g, w)
		}
	}
	for attr, w := range map[string]string{
		"MessageGroupId": want.MessageGroupId, "MessageDeduplicationId": want.MessageDeduplicationId,
		"SequenceNumber": want.SequenceNumber, "SentTimestamp": want.SentTimestamp,
		"ApproximateReceiveCount":          strconv.Itoa(rc),
		"ApproximateFirstReceiveTimestamp": want.ApproximateFirstReceiveTimestamp,
	} {
		if w == "" {
			continue // new, or not received before: any
		}
		if g := got.Attributes[attr]; g != w {
			fail(attr, g, w)
		}
	}
}

func (fx *upgradeFixtureDoc) message(t *testing.T, queue, name string) *upgradeMsg {
	t.Helper()
	for _, q := range fx.Queues {
		for _, m := range q.Messages {
			if q.Name == queue && m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("the fixture has no message %s in %s", name, queue)
	return nil
}

func readUpgradeFixture(t *testing.T) *upgradeFixtureDoc {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(upgradeFixture, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx upgradeFixtureDoc
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Queues) != 2 || fx.StoppedAt.IsZero() {
		t.Fatalf("expected.json: %d queues, stopped at %v", len(fx.Queues), fx.StoppedAt)
	}
	return &fx
}

// unpackDataDir unpacks the tar.gz archive into dir, leaving holes where
// the files hold zeros: the log's segment file is preallocated, 64 MiB of
// mostly zeros.
func unpackDataDir(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	buf := make([]byte, 64<<10)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsLocal(hdr.Name) {
			t.Fatalf("%s: %q is not within the data dir", archive, hdr.Name)
		}
		name := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, hdr.FileInfo().Mode().Perm())
		case tar.TypeReg:
			err = writeSparse(name, tr, hdr.Size, hdr.FileInfo().Mode().Perm(), buf)
		default:
			t.Fatalf("%s: %s is of type %c", archive, hdr.Name, hdr.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeSparse(name string, r io.Reader, size int64, perm os.FileMode, buf []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer out.Close()
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			var werr error
			if bytes.Count(buf[:n], []byte{0}) == n {
				_, werr = out.Seek(int64(n), io.SeekCurrent)
			} else {
				_, werr = out.Write(buf[:n])
			}
			if werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := out.Truncate(size); err != nil {
		return err
	}
	return out.Close()
}

// newestSnapshotFormat returns the snapshot frame version and engine
// format of the data dir's newest snapshot (the highest index).
func newestSnapshotFormat(t *testing.T, dir string) (frame, engine uint32) {
	t.Helper()
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	var newest string
	var newestIndex uint64
	for _, s := range states {
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(s), "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Index uint64 }
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Index >= newestIndex {
			newest, newestIndex = s, meta.Index
		}
	}
	if newest == "" {
		t.Fatalf("no snapshot in %s", dir)
	}
	f, err := os.Open(newest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [32]byte // frame: magic, version, body store position; engine: magic, format
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if string(hdr[:8]) != "FIFOQFSM" || string(hdr[20:28]) != "FIFOQSNP" {
		t.Fatalf("%s: not a snapshot by reference: %q", newest, hdr)
	}
	return be.BigEndian.Uint32(hdr[8:12]), be.BigEndian.Uint32(hdr[28:32])
}

// takeSnapshot has the server take a snapshot, by taking a backup (signed
// by its admin key at the server's skewed time) and throwing it away.
func takeSnapshot(t *testing.T, addr, keyID, secret string, skew time.Duration) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/admin/backup", nil)
	if err := auth.SignRequest(req, nil, auth.Credential{AccessKeyID: keyID, SecretAccessKey: secret}, "us-east-1", time.Now().Add(skew)); err != nil {
		t.Fatal(err)
	}
	resp, err := plainHTTP().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("backup: %d, %d bytes (%v)", resp.StatusCode, n, err)
	}
}

// skewedSigner signs requests at the server's skewed time: SigV4 refuses
// a signature more than 15 minutes off the server's clock.
type skewedSigner struct {
	s    *v4.Signer
	skew time.Duration
}

func (s skewedSigner) SignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string, at time.Time, opts ...func(*v4.SignerOptions)) error {
	return s.s.SignHTTP(ctx, creds, r, payloadHash, service, region, at.Add(s.skew), opts...)
}

var (
	faultsOnce sync.Once
	faultsBin  string
	faultsErr  error
)

// faultsBinary returns fifoq built with the fifoq_faults tag, whose
// FIFOQ_TEST_CLOCK_SKEW sets the server's clock.
func faultsBinary(t *testing.T) string {
	t.Helper()
	testbin.Track(t, "fifoq_faults")
	faultsOnce.Do(func() {
		faultsBin = filepath.Join(filepath.Dir(binary), "fifoq-faults")
		faultsErr = testbin.Build(faultsBin, "fifoq_faults")
	})
	if faultsErr != nil {
		t.Fatalf("build fifoq with the fifoq_faults tag: %v", faultsErr)
	}
	return faultsBin
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
