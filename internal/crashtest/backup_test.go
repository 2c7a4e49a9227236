package crashtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/backup"
	"github.com/fifoq/fifoq/internal/server"
	"github.com/fifoq/fifoq/internal/testenv"
)

// TestBackupUnderLoadRestores runs the real binary with an admin key: it
// fills two queues with messages in every state (FIFO ones in flight and
// visible with live deduplication records, standard ones delayed, with
// attributes), then takes a backup with `fifoq backup` while a producer
// keeps sending to a third queue, restores it with `fifoq restore` into a
// new data dir, and serves that. The two queues must answer exactly as
// before (every message, its state, attributes and receive count, as
// /_aws/sqs/messages lists them), a deduplication id sent before the
// backup must still be a duplicate, and the third queue must hold every
// message acknowledged before the backup began.
func TestBackupUnderLoadRestores(t *testing.T) {
	const keyID, secret = "AKIDBACKUPTEST000001", "secret-of-the-backup-test"
	env := []string{"FIFOQ_ACCESS_KEY_ID=" + keyID, "FIFOQ_SECRET_ACCESS_KEY=" + secret}
	addr := freeAddr(t)
	src := launch(t, env, "serve", "--listen", addr, "--data-dir", t.TempDir())
	client := signedClient("http://"+addr, plainHTTP(), keyID, secret)
	ctx := context.Background()
	src.waitReady(t, func() error { _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })

	fifo := mustQueue(t, client, "orders.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "600"})
	std := mustQueue(t, client, "events", map[string]string{"DelaySeconds": "600"})
	load := mustQueue(t, client, "load", nil)
	fillBackupQueues(t, client, fifo, std)
	before := map[string]string{"fifo": devListing(t, addr, keyID, secret, fifo), "std": devListing(t, addr, keyID, secret, std)}

	// A producer keeps writing to the third queue while the backup runs.
	prod := startLoadProducer(client, load)
	time.Sleep(300 * time.Millisecond)
	file := filepath.Join(t.TempDir(), "fifoq.backup")
	ackedBefore := prod.ackedCount()
	began := time.Now()
	bk := launch(t, append(env, "FIFOQ_ENDPOINT=http://"+addr), "backup", file)
	if !bk.exited(2*time.Minute) || bk.exitCode() != 0 {
		t.Fatalf("fifoq backup: exit %d; output:\n%s", bk.exitCode(), bk.out)
	}
	took := time.Since(began)
	ackedDuring := prod.ackedCount() - ackedBefore
	time.Sleep(200 * time.Millisecond)
	prod.stopAndWait()
	t.Logf("fifoq backup ran %v, while %d sends were acknowledged; it said: %s", took.Round(time.Millisecond), ackedDuring, bk.out)

	// Unsigned, or signed by no admin key, no backup is given.
	bad := launch(t, []string{"FIFOQ_ENDPOINT=http://" + addr}, "backup", filepath.Join(t.TempDir(), "x"))
	if !bad.exited(time.Minute) || bad.exitCode() == 0 {
		t.Fatalf("an unsigned fifoq backup succeeded: %s", bad.out)
	}
	src.stop()

	dir := restoreBackup(t, file)
	addr2 := freeAddr(t)
	dst := launch(t, env, "serve", "--listen", addr2, "--data-dir", dir)
	client2 := signedClient("http://"+addr2, plainHTTP(), keyID, secret)
	dst.waitReady(t, func() error { _, err := client2.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })
	for name, q := range map[string]string{"fifo": fifo, "std": std} {
		q2 := "http://" + addr2 + q[len("http://"+addr):]
		if after := devListing(t, addr2, keyID, secret, q2); after != before[name] {
			t.Fatalf("queue %s after the restore lists\n%s\nbefore the backup it listed\n%s", name, after, before[name])
		}
	}
	fifo2 := "http://" + addr2 + fifo[len("http://"+addr):]
	out, err := client2.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fifo2, MessageBody: aws.String("order 7"),
		MessageGroupId: aws.String("g3"), MessageDeduplicationId: aws.String("d7")})
	if err != nil {
		t.Fatal(err)
	}
	if n := countMessages(t, client2, fifo2); n != 59 {
		t.Fatalf("after resending deduplication id d7 the FIFO queue holds %d messages, want 59: the id's record was lost (send answered %s)", n, aws.ToString(out.MessageId))
	}
	load2 := "http://" + addr2 + load[len("http://"+addr):]
	if n := countMessages(t, client2, load2); n < ackedBefore || n > len(prod.acked)+1 {
		t.Fatalf("the loaded queue holds %d messages; %d were acknowledged before the backup began, %d by its end", n, ackedBefore, len(prod.acked))
	}
	latencies := prod.latencies
	slices.Sort(latencies)
	if len(latencies) > 0 {
		t.Logf("send latency while the backup ran: p50 %v, p99 %v over %d sends", latencies[len(latencies)/2], latencies[len(latencies)*99/100], len(latencies))
	}
}

// fillBackupQueues fills the queues TestBackupUnderLoadRestores backs up:
// 60 messages with a Number attribute in four groups of the FIFO queue at
// fifo, 20 with a Binary attribute in the standard queue at std (delayed
// by its DelaySeconds), and then a receive that holds two groups, one of
// whose messages it deletes.
func fillBackupQueues(t *testing.T, client *sqs.Client, fifo, std string) {
	t.Helper()
	ctx := context.Background()
	for i := range 60 {
		id := strconv.Itoa(i)
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("order " + id),
			MessageGroupId: aws.String("g" + strconv.Itoa(i%4)), MessageDeduplicationId: aws.String("d" + id),
			MessageAttributes: map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String(id)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &std, MessageBody: aws.String("event " + strconv.Itoa(i)),
			MessageAttributes: map[string]types.MessageAttributeValue{"b": {DataType: aws.String("Binary"), BinaryValue: []byte{byte(i), 0, 255}}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Two groups held by receives, one of their messages deleted.
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &fifo, MaxNumberOfMessages: 4})
	if err != nil || len(got.Messages) == 0 {
		t.Fatalf("receive: %v, %v", got, err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &fifo, ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
}

// loadProducer sends to one queue, one message after another without
// pause, until it is stopped, recording when each send was acknowledged
// and how long it took.
type loadProducer struct {
	mu        sync.Mutex
	acked     []time.Time
	latencies []time.Duration
	stop      chan struct{}
	done      chan struct{}
}

// startLoadProducer starts a loadProducer that sends to the queue at queue
// through client.
func startLoadProducer(client *sqs.Client, queue string) *loadProducer {
	p := &loadProducer{stop: make(chan struct{}), done: make(chan struct{})}
	ctx := context.Background()
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			began := time.Now()
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &queue, MessageBody: aws.String(strconv.Itoa(i))})
			if err == nil {
				p.mu.Lock()
				p.acked = append(p.acked, time.Now())
				p.latencies = append(p.latencies, time.Since(began))
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// ackedCount is how many sends have been acknowledged so far.
func (p *loadProducer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// stopAndWait stops the producer and waits for its last send to end;
// after it, acked and latencies can be read without the lock.
func (p *loadProducer) stopAndWait() {
	close(p.stop)
	<-p.done
}

// restoreBackup restores the backup file with fifoq restore into a new
// data dir, which it returns, and checks that a second restore into that
// dir, no longer empty, is refused.
func restoreBackup(t *testing.T, file string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "restored")
	if p := launch(t, nil, "restore", "--data-dir", dir, file); !p.exited(2*time.Minute) || p.exitCode() != 0 {
		t.Fatalf("fifoq restore: exit %d; output:\n%s", p.exitCode(), p.out)
	}
	if p := launch(t, nil, "restore", "--data-dir", dir, file); !p.exited(time.Minute) || p.exitCode() == 0 {
		t.Fatalf("fifoq restore into a data dir that is not empty succeeded: %s", p.out)
	}
	return dir
}

func mustQueue(t *testing.T, c *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func countMessages(t *testing.T, c *sqs.Client, q string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &q,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		k, _ := strconv.Atoi(out.Attributes[a])
		n += k
	}
	return n
}

// devListing is every message of queue q, in every state, as a signed
// GET of /_aws/sqs/messages lists it (ShowInvisible, ShowDelayed), written
// out one message a line with its attributes in order.
func devListing(t *testing.T, addr, keyID, secret, q string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/_aws/sqs/messages?"+url.Values{
		"QueueUrl": {q}, "ShowInvisible": {"true"}, "ShowDelayed": {"true"}}.Encode(), nil)
	if err := auth.SignRequest(req, nil, auth.Credential{AccessKeyID: keyID, SecretAccessKey: secret}, "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list %s: %d %s", q, resp.StatusCode, raw)
	}
	var doc struct {
		Messages []struct {
			ID       string `xml:"MessageId"`
			Body     string
			MD5      string                         `xml:"MD5OfBody"`
			MD5Attrs string                         `xml:"MD5OfMessageAttributes"`
			Attrs    []struct{ Name, Value string } `xml:"Attribute"`
			MsgAttrs []struct {
				Name  string
				Value struct{ DataType, StringValue, BinaryValue string }
			} `xml:"MessageAttribute"`
		} `xml:"ReceiveMessageResult>Message"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("list %s: %v", q, err)
	}
	var lines []string
	for _, m := range doc.Messages {
		var parts []string
		for _, a := range m.Attrs {
			parts = append(parts, a.Name+"="+a.Value)
		}
		for _, a := range m.MsgAttrs {
			parts = append(parts, fmt.Sprintf("%s:%s=%s%s", a.Name, a.Value.DataType, a.Value.StringValue, a.Value.BinaryValue))
		}
		slices.Sort(parts)
		lines = append(lines, fmt.Sprintf("%s %q %s %s %v", m.ID, m.Body, m.MD5, m.MD5Attrs, parts))
	}
	if len(lines) == 0 {
		t.Fatalf("list %s: no message", q)
	}
	return strings.Join(lines, "\n")
}

// TestSlowReaderGetsBackupAndExportWhole reads a backup and an export
// of a queue of 24 MiB slowly, as a file streamed to a slow disk or over a
// slow link is: a megabyte, then nothing for longer than the server's
// write timeout for API answers (60 s), then the rest. Each must arrive
// whole (the backup's checksum, the export's last line): neither is an API
// answer, and its size, not a timeout, says how long it takes.
func TestSlowReaderGetsBackupAndExportWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the server's write timeout; skipped in -short mode")
	}
	testenv.Long(t, "a reader that pauses longer than the server's 60 s write timeout")
	addr := freeAddr(t)
	src := launch(t, nil, "serve", "--listen", addr, "--data-dir", t.TempDir())
	client := signedClient("http://"+addr, plainHTTP(), "AKIDANY", "any")
	ctx := context.Background()
	src.waitReady(t, func() error { _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); return err })
	q := mustQueue(t, client, "big", nil)
	// Random bodies: the loopback's socket buffers (a few MiB) must not
	// hold the whole answer, or the server would finish writing at once.
	const messages = 24
	body := make([]byte, 1<<20-1024)
	for i := range messages {
		rand.Read(body)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(base64.StdEncoding.EncodeToString(body)[:len(body)])}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	slowly := func(path string) (io.Reader, func()) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Error(err)
			return nil, func() {}
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
		return &pausingReader{r: resp.Body, after: 1 << 20, pause: server.WriteTimeout + 5*time.Second}, func() { resp.Body.Close() }
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r, done := slowly(server.BackupPath)
		defer done()
		hdr, snap, err := backup.Read(r)
		if err == nil {
			_, err = io.Copy(io.Discard, snap)
		}
		switch {
		case err != nil:
			t.Errorf("the backup read slowly did not arrive whole: %v", err)
		case hdr.Messages != messages:
			t.Errorf("the backup holds %d messages, want %d", hdr.Messages, messages)
		}
	}()
	go func() {
		defer wg.Done()
		r, done := slowly(server.ExportPath + "?QueueUrl=" + url.QueryEscape(q))
		defer done()
		b, err := io.ReadAll(r)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if err != nil || len(lines) != messages+1 || lines[messages] != `{"ExportComplete":true}` {
			t.Errorf("the export read slowly did not arrive whole: %d lines, %v", len(lines), err)
		}
	}()
	wg.Wait()
}

// pausingReader reads r, and stops for pause once after bytes.
type pausingReader struct {
	r      io.Reader
	after  int64
	pause  time.Duration
	n      int64
	paused bool
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if !p.paused && p.n >= p.after {
		p.paused = true
		time.Sleep(p.pause)
	}
	if !p.paused {
		b = b[:min(int64(len(b)), p.after-p.n)]
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}
