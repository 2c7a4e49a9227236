//go:build ignore

// gen makes this directory's fixture with a fifoq binary built from commit
// 3e26ba0 (the last that wrote snapshot frame 4, engine snapshot format 3,
// body store payloads without a head): it runs the binary durable on a new
// data dir, fills two queues, has it snapshot (through `fifoq backup`),
// changes the queues again so that part of the state is only in the log,
// stops it with SIGTERM, and writes datadir.tar.gz (the data dir) and
// expected.json (every message and its state). See README.md.
//
//	go run ./internal/crashtest/testdata/datadir-v4/gen.go -fifoq /tmp/fifoq-old -out internal/crashtest/testdata/datadir-v4
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/auth"
)

// The admin key the old server ran with (`fifoq backup` needs one); the
// data dir does not record it.
const keyID, secret = "AKIDUPGRADEFIXTURE01", "secret-of-the-upgrade-fixture"

// Attr is a message attribute as sent.
type Attr struct {
	DataType    string
	StringValue string `json:",omitempty"`
	BinaryValue []byte `json:",omitempty"`
}

// Message is one message sent, and its state when the server stopped.
type Message struct {
	Name                   string // the generator's name for it: s1, f3, ...
	MessageId              string
	Body                   string
	MD5OfBody              string
	MD5OfMessageAttributes string          `json:",omitempty"`
	MessageAttributes      map[string]Attr `json:",omitempty"`
	MessageGroupId         string          `json:",omitempty"`
	MessageDeduplicationId string          `json:",omitempty"` // as the server reports it (the body's SHA-256 if content-based)
	SequenceNumber         string          `json:",omitempty"`
	SentAfterSnapshot      bool            // only in the log, not in the snapshot
	// State is "visible", "inflight" (received with a visibility timeout
	// of 600 s, ReceiptHandle its last receipt handle) or "deleted".
	State                            string
	ReceiptHandle                    string `json:",omitempty"`
	ApproximateReceiveCount          int
	SentTimestamp                    string `json:",omitempty"`
	ApproximateFirstReceiveTimestamp string `json:",omitempty"`
}

// Queue is one queue and its messages, in the order sent.
type Queue struct {
	Name       string
	Attributes map[string]string
	Messages   []*Message
}

// Fixture is expected.json.
type Fixture struct {
	Commit        string
	Account       string
	StoppedAt     time.Time // after the last request, before SIGTERM
	SnapshotFrame uint32    // of the newest snapshot: 4
	EngineFormat  uint32    // of its engine state: 3
	Queues        []*Queue
}

var (
	bin    = flag.String("fifoq", "/tmp/fifoq-old", "fifoq binary built from 3e26ba0")
	outDir = flag.String("out", ".", "where to write datadir.tar.gz and expected.json")
)

var ctx = context.Background()

func main() {
	flag.Parse()
	log.SetFlags(0)
	tmp, err := os.MkdirTemp("", "fifoq-upgrade-fixture-")
	check(err)
	defer os.RemoveAll(tmp)
	dataDir := filepath.Join(tmp, "data")

	cmd, logs, c, addr := startServer(dataDir)
	defer cmd.Process.Kill()
	fx, urls := createQueues(c)
	std, fifo := fx.Queues[0], fx.Queues[1]
	fillBeforeSnapshot(c, std, fifo, urls)
	backupSnapshot(tmp, addr, dataDir)
	fillAfterSnapshot(c, std, fifo, urls)
	recordListing(addr, fx, urls)
	stopServer(cmd, logs, dataDir, fx)
	writeFixture(fx, dataDir)
	log.Printf("server log:\n%s", logs.String())
}

// startServer runs the old fifoq durable on dataDir, with the admin key,
// its output in logs, and waits until it answers c.
func startServer(dataDir string) (cmd *exec.Cmd, logs *bytes.Buffer, c *sqs.Client, addr string) {
	addr = freeAddr()
	cmd = exec.Command(*bin, "serve", "--listen", addr, "--data-dir", dataDir)
	cmd.Env = append(cleanEnv(), "FIFOQ_ACCESS_KEY_ID="+keyID, "FIFOQ_SECRET_ACCESS_KEY="+secret)
	logs = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	check(cmd.Start())
	c = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, "")})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := c.ListQueues(ctx, &sqs.ListQueuesInput{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			log.Fatalf("not ready: %v\n%s", err, logs.String())
		}
	}
	return cmd, logs, c, addr
}

// createQueues creates the fixture's two queues, a standard one and a FIFO
// one (content-based deduplication), and returns the fixture and the
// queues' URLs.
func createQueues(c *sqs.Client) (*Fixture, map[*Queue]string) {
	std := &Queue{Name: "legacy-std", Attributes: map[string]string{"VisibilityTimeout": "30"}}
	fifo := &Queue{Name: "legacy.fifo", Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30"}}
	fx := &Fixture{Commit: "3e26ba0", Account: "000000000000", Queues: []*Queue{std, fifo}}
	urls := map[*Queue]string{}
	for _, q := range fx.Queues {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &q.Name, Attributes: q.Attributes})
		check(err)
		urls[q] = aws.ToString(out.QueueUrl)
	}
	return fx, urls
}

// allAttrs is a message attribute of each data type.
var allAttrs = map[string]Attr{
	"str": {DataType: "String", StringValue: "grüße ✓"},
	"num": {DataType: "Number", StringValue: "-12.50"},
	"bin": {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xfe, 0xff}},
}

// fillBeforeSnapshot sends the messages that the snapshot holds, and
// receives some of them before it.
func fillBeforeSnapshot(c *sqs.Client, std, fifo *Queue, urls map[*Queue]string) {
	send(c, std, urls[std], false, &Message{Name: "s1", Body: "x"})
	send(c, std, urls[std], false, &Message{Name: "s2", Body: "héllo, wörld ✓ 日本語 🚀", MessageAttributes: map[string]Attr{"lang": {DataType: "String", StringValue: "de-DE"}}})
	send(c, std, urls[std], false, &Message{Name: "s3", Body: pattern("s3", 256), MessageAttributes: map[string]Attr{
		"count": {DataType: "Number", StringValue: "42"}, "blob": {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xff, 0xfe}}}})
	send(c, std, urls[std], false, &Message{Name: "s4", Body: pattern("s4", 4096), MessageAttributes: map[string]Attr{
		"trace": {DataType: "String.custom", StringValue: "abc-123"}, "ratio": {DataType: "Number.float", StringValue: "3.14"}}})
	sendBatch(c, std, urls[std], false,
		&Message{Name: "s5", Body: pattern("s5", 1024)},
		&Message{Name: "s6", Body: pattern("s6", 16000), MessageAttributes: allAttrs},
		&Message{Name: "s7", Body: "<xml a=\"1\">&amp; ' \" </xml>\r\n\ttab"})
	send(c, fifo, urls[fifo], false, &Message{Name: "f1", Body: "A-1", MessageGroupId: "A", MessageAttributes: map[string]Attr{"n": {DataType: "Number", StringValue: "1"}}})
	send(c, fifo, urls[fifo], false, &Message{Name: "f2", Body: "A-2", MessageGroupId: "A"})
	send(c, fifo, urls[fifo], false, &Message{Name: "f3", Body: "B-1", MessageGroupId: "B", MessageDeduplicationId: "dedup-B-1", MessageAttributes: allAttrs})
	send(c, fifo, urls[fifo], false, &Message{Name: "f4", Body: pattern("f4", 3000), MessageGroupId: "B"})
	send(c, fifo, urls[fifo], false, &Message{Name: "f5", Body: "C-1 ✓ ünïcödé", MessageGroupId: "C"})
	sendBatch(c, fifo, urls[fifo], false,
		&Message{Name: "f6", Body: "A-3", MessageGroupId: "A", MessageAttributes: map[string]Attr{"s": {DataType: "String", StringValue: "three"}}},
		&Message{Name: "f7", Body: pattern("f7", 700), MessageGroupId: "C", MessageDeduplicationId: "dedup-C-2"})

	// Received before the snapshot: s1 and f3 stay in flight, s2 and f1
	// are deleted, the others are made visible again.
	act(c, std, urls[std], map[string]string{"s1": "inflight", "s2": "delete"})
	act(c, fifo, urls[fifo], map[string]string{"f3": "inflight", "f1": "delete"})
}

// backupSnapshot has the server take the snapshot, through `fifoq backup`
// (the backup itself goes to tmp), and checks that there is one.
func backupSnapshot(tmp, addr, dataDir string) {
	bk := exec.Command(*bin, "backup", filepath.Join(tmp, "backup"))
	bk.Env = append(cleanEnv(), "FIFOQ_ENDPOINT=http://"+addr, "FIFOQ_ACCESS_KEY_ID="+keyID, "FIFOQ_SECRET_ACCESS_KEY="+secret)
	if out, err := bk.CombinedOutput(); err != nil {
		log.Fatalf("fifoq backup: %v\n%s", err, out)
	}
	snaps := snapshots(dataDir)
	if len(snaps) != 1 {
		log.Fatalf("%d snapshots after the backup, want 1", len(snaps))
	}
}

// fillAfterSnapshot changes the queues after the snapshot, so that this
// part of the state is only in the log.
func fillAfterSnapshot(c *sqs.Client, std, fifo *Queue, urls map[*Queue]string) {
	send(c, std, urls[std], true, &Message{Name: "s8", Body: pattern("s8", 2000), MessageAttributes: map[string]Attr{"k": {DataType: "String", StringValue: "after"}}})
	send(c, std, urls[std], true, &Message{Name: "s9", Body: "after the snapshot"})
	sendBatch(c, std, urls[std], true,
		&Message{Name: "s10", Body: "s10 ✓", MessageAttributes: map[string]Attr{"b": {DataType: "Binary", BinaryValue: []byte("\x00raw\xff")}}},
		&Message{Name: "s11", Body: pattern("s11", 512), MessageAttributes: allAttrs})
	send(c, fifo, urls[fifo], true, &Message{Name: "f8", Body: "A-4", MessageGroupId: "A", MessageAttributes: map[string]Attr{"k": {DataType: "String", StringValue: "after"}}})
	send(c, fifo, urls[fifo], true, &Message{Name: "f9", Body: "D-1", MessageGroupId: "D", MessageDeduplicationId: "dedup-D-1"})
	// s4 and f2, of the snapshot, are deleted after it; s9 and f9, sent
	// after it, too; s5, s10, f5 and f6 are left in flight.
	act(c, std, urls[std], map[string]string{"s4": "delete", "s9": "delete", "s5": "inflight", "s10": "inflight"})
	act(c, fifo, urls[fifo], map[string]string{"f2": "delete", "f9": "delete", "f5": "inflight", "f6": "inflight"})
	// Never received.
	send(c, std, urls[std], true, &Message{Name: "s12", Body: pattern("s12", 100)})
	send(c, fifo, urls[fifo], true, &Message{Name: "f10", Body: "E-1", MessageGroupId: "E", MessageAttributes: map[string]Attr{"e": {DataType: "Number", StringValue: "5"}}})
	// A duplicate of f5 (content-based) is not a new message.
	dup, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls[fifo]), MessageBody: aws.String("C-1 ✓ ünïcödé"), MessageGroupId: aws.String("C")})
	check(err)
	if id := aws.ToString(dup.MessageId); id != byName(fifo, "f5").MessageId {
		log.Fatalf("the duplicate of f5 got MessageId %s, want %s", id, byName(fifo, "f5").MessageId)
	}
}

// recordListing records what the server says of every message, without
// receiving it (sent and first-receive times, content-based deduplication
// ids of messages never received), and checks it against what was tracked.
func recordListing(addr string, fx *Fixture, urls map[*Queue]string) {
	for _, q := range fx.Queues {
		listed := devList(addr, urls[q])
		var live []string
		for _, m := range q.Messages {
			if m.State == "deleted" {
				continue
			}
			live = append(live, m.MessageId)
			a, ok := listed[m.MessageId]
			if !ok {
				log.Fatalf("%s %s is not listed", q.Name, m.Name)
			}
			m.SentTimestamp = a["SentTimestamp"]
			if m.MessageDeduplicationId == "content" { // never received
				m.MessageDeduplicationId = a["MessageDeduplicationId"]
			}
			m.ApproximateFirstReceiveTimestamp = a["ApproximateFirstReceiveTimestamp"]
			if m.ApproximateFirstReceiveTimestamp == "0" {
				m.ApproximateFirstReceiveTimestamp = ""
			}
			if a["ApproximateReceiveCount"] != strconv.Itoa(m.ApproximateReceiveCount) || a["SequenceNumber"] != m.SequenceNumber ||
				a["MessageGroupId"] != m.MessageGroupId || a["MessageDeduplicationId"] != m.MessageDeduplicationId {
				log.Fatalf("%s %s listed as %v, tracked as %+v", q.Name, m.Name, a, m)
			}
		}
		if len(listed) != len(live) {
			log.Fatalf("%s lists %d messages, want %d", q.Name, len(listed), len(live))
		}
	}
}

// stopServer records when the server stopped, stops it with SIGTERM, and
// checks that the data dir still holds the one snapshot, of frame 4 and
// engine format 3 (recorded in fx).
func stopServer(cmd *exec.Cmd, logs *bytes.Buffer, dataDir string, fx *Fixture) {
	fx.StoppedAt = time.Now().UTC()
	check(cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		log.Fatalf("fifoq exited: %v\n%s", err, logs.String())
	}
	snaps := snapshots(dataDir)
	if len(snaps) != 1 {
		log.Fatalf("%d snapshots after stopping, want 1", len(snaps))
	}
	state, err := os.ReadFile(filepath.Join(snaps[0], "state.bin"))
	check(err)
	if len(state) < 32 || string(state[:8]) != "FIFOQFSM" || string(state[20:28]) != "FIFOQSNP" {
		log.Fatalf("state.bin does not start with a frame 4 header: %q", state[:min(len(state), 32)])
	}
	fx.SnapshotFrame, fx.EngineFormat = binary.BigEndian.Uint32(state[8:12]), binary.BigEndian.Uint32(state[28:32])
	if fx.SnapshotFrame != 4 || fx.EngineFormat != 3 {
		log.Fatalf("snapshot frame %d, engine format %d; want 4 and 3", fx.SnapshotFrame, fx.EngineFormat)
	}
}

// writeFixture writes expected.json (fx) and datadir.tar.gz (dataDir) to
// the -out directory.
func writeFixture(fx *Fixture, dataDir string) {
	check(os.MkdirAll(*outDir, 0o755))
	j, err := json.MarshalIndent(fx, "", "  ")
	check(err)
	check(os.WriteFile(filepath.Join(*outDir, "expected.json"), append(j, '\n'), 0o644))
	check(writeTarGz(filepath.Join(*outDir, "datadir.tar.gz"), dataDir))
}

// pattern is a body of n bytes that names the message and compresses well.
func pattern(name string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s line %d of a body; ", name, i)
	}
	return b.String()[:n]
}

func attrsIn(a map[string]Attr) map[string]types.MessageAttributeValue {
	if len(a) == 0 {
		return nil
	}
	out := map[string]types.MessageAttributeValue{}
	for k, v := range a {
		mv := types.MessageAttributeValue{DataType: aws.String(v.DataType), BinaryValue: v.BinaryValue}
		if v.BinaryValue == nil {
			mv.StringValue = aws.String(v.StringValue)
		}
		out[k] = mv
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func send(c *sqs.Client, q *Queue, u string, after bool, m *Message) {
	out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &u, MessageBody: &m.Body,
		MessageAttributes: attrsIn(m.MessageAttributes), MessageGroupId: optional(m.MessageGroupId),
		MessageDeduplicationId: optional(m.MessageDeduplicationId)})
	check(err)
	sent(q, after, m, aws.ToString(out.MessageId), aws.ToString(out.MD5OfMessageBody), aws.ToString(out.MD5OfMessageAttributes), aws.ToString(out.SequenceNumber))
}

func sendBatch(c *sqs.Client, q *Queue, u string, after bool, ms ...*Message) {
	var entries []types.SendMessageBatchRequestEntry
	for _, m := range ms {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(m.Name), MessageBody: &m.Body,
			MessageAttributes: attrsIn(m.MessageAttributes), MessageGroupId: optional(m.MessageGroupId),
			MessageDeduplicationId: optional(m.MessageDeduplicationId)})
	}
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &u, Entries: entries})
	check(err)
	if len(out.Failed) > 0 || len(out.Successful) != len(ms) {
		log.Fatalf("batch: %+v", out.Failed)
	}
	for _, m := range ms {
		for _, s := range out.Successful {
			if aws.ToString(s.Id) == m.Name {
				sent(q, after, m, aws.ToString(s.MessageId), aws.ToString(s.MD5OfMessageBody), aws.ToString(s.MD5OfMessageAttributes), aws.ToString(s.SequenceNumber))
			}
		}
	}
}

func sent(q *Queue, after bool, m *Message, id, md5, md5Attrs, seq string) {
	m.MessageId, m.MD5OfBody, m.MD5OfMessageAttributes, m.SequenceNumber = id, md5, md5Attrs, seq
	m.SentAfterSnapshot, m.State = after, "visible"
	if m.MessageGroupId != "" && m.MessageDeduplicationId == "" {
		m.MessageDeduplicationId = "content" // filled in from the first receive or the listing
	}
	q.Messages = append(q.Messages, m)
}

func byName(q *Queue, name string) *Message {
	for _, m := range q.Messages {
		if m.Name == name {
			return m
		}
	}
	log.Fatalf("no message %s", name)
	return nil
}

// act receives every visible message of q with a visibility timeout of
// 600 s, checks each against what was sent, and then deletes those named
// "delete" in what, leaves those named "inflight" in flight, and makes the
// others visible again.
func act(c *sqs.Client, q *Queue, u string, what map[string]string) {
	got := map[string]types.Message{}
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MaxNumberOfMessages: 10, VisibilityTimeout: 600,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
		check(err)
		if len(out.Messages) == 0 {
			break
		}
		for _, r := range out.Messages {
			got[aws.ToString(r.MessageId)] = r
		}
	}
	for name := range what {
		if _, ok := got[byName(q, name).MessageId]; !ok {
			log.Fatalf("%s: %s was not received", q.Name, name)
		}
	}
	for _, m := range q.Messages {
		r, ok := got[m.MessageId]
		if !ok {
			continue
		}
		m.ApproximateReceiveCount++
		if aws.ToString(r.Body) != m.Body || aws.ToString(r.MD5OfBody) != m.MD5OfBody || r.Attributes["ApproximateReceiveCount"] != strconv.Itoa(m.ApproximateReceiveCount) {
			log.Fatalf("%s: %s received as %+v", q.Name, m.Name, r)
		}
		if m.MessageDeduplicationId == "content" {
			m.MessageDeduplicationId = r.Attributes["MessageDeduplicationId"]
		}
		switch what[m.Name] {
		case "delete":
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: r.ReceiptHandle})
			check(err)
			m.State, m.ReceiptHandle = "deleted", ""
		case "inflight":
			m.State, m.ReceiptHandle = "inflight", aws.ToString(r.ReceiptHandle)
		default:
			_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &u, ReceiptHandle: r.ReceiptHandle, VisibilityTimeout: 0})
			check(err)
			m.State, m.ReceiptHandle = "visible", ""
		}
	}
}

// devList lists every message of queue u, in flight too, without receiving
// it (/_aws/sqs/messages), and returns its attributes by MessageId.
func devList(addr, u string) map[string]map[string]string {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/_aws/sqs/messages?"+url.Values{
		"QueueUrl": {u}, "ShowInvisible": {"true"}, "ShowDelayed": {"true"}}.Encode(), nil)
	check(auth.SignRequest(req, nil, auth.Credential{AccessKeyID: keyID, SecretAccessKey: secret}, "us-east-1", time.Now()))
	resp, err := http.DefaultClient.Do(req)
	check(err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("list %s: %d %s", u, resp.StatusCode, raw)
	}
	var doc struct {
		Messages []struct {
			ID    string                         `xml:"MessageId"`
			Attrs []struct{ Name, Value string } `xml:"Attribute"`
		} `xml:"ReceiveMessageResult>Message"`
	}
	check(xml.Unmarshal(raw, &doc))
	out := map[string]map[string]string{}
	for _, m := range doc.Messages {
		a := map[string]string{}
		for _, kv := range m.Attrs {
			a[kv.Name] = kv.Value
		}
		out[m.ID] = a
	}
	return out
}

func snapshots(dataDir string) []string {
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "snapshots", "*"))
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "state.bin")); err == nil {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// writeTarGz writes the tree under dir, its paths relative to it, sorted,
// with fixed times and owners so that only the content varies.
func writeTarGz(path, dir string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), time.Unix(0, 0), 0, 0, "", ""
		hdr.Format = tar.FormatPAX
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FIFOQ_") {
			env = append(env, kv)
		}
	}
	return env
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
