package crashtest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/bench"
	"github.com/fifoq/fifoq/internal/historycheck"
	"github.com/fifoq/fifoq/internal/testbin"
	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	kills     = flag.Int("crash.kills", 3, "how many times the server is killed with SIGKILL (TestCrashRecovery: once in the first tier unless given; internal/testenv)")
	interval  = flag.Duration("crash.interval", 1500*time.Millisecond, "mean time between kills")
	producers = flag.Int("crash.producers", 6, "concurrent producers")
	consumers = flag.Int("crash.consumers", 4, "concurrent consumers")
	seed      = flag.Int64("crash.seed", 0, "random seed (0: from the clock)")
)

// binary is the fifoq binary built for the test.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "fifoq-crashtest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "fifoq")
	if err := testbin.Build(binary); err != nil {
		fmt.Fprintln(os.Stderr, "build fifoq:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverProc is one run of the fifoq binary.
type serverProc struct {
	cmd  *exec.Cmd
	logs *os.File
}

func startServer(t *testing.T, addr, dataDir string, logs *os.File, extra ...string) *serverProc {
	t.Helper()
	testbin.Track(t)
	cmd := exec.Command(binary, append([]string{"serve", "--listen", addr, "--data-dir", dataDir}, extra...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start fifoq: %v", err)
	}
	// Ready when it answers over HTTP.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/?Action=ListQueues")
		if err == nil {
			resp.Body.Close()
			return &serverProc{cmd: cmd, logs: logs}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("fifoq did not come up on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *serverProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

// freeAddr is a loopback address no other test of this process was given.
func freeAddr(t *testing.T) string { return testenv.FreeAddr(t) }

func newClient(addr string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + addr),
		// One attempt per call: the test decides what to retry, so that it
		// knows which outcomes are unknown.
		RetryMaxAttempts: 1,
		// A single attempt must not lose its answer to the SDK closing
		// the request body under net/http (see bench.OwnRequestBodies).
		HTTPClient: bench.OwnRequestBodies(&http.Client{Timeout: 10 * time.Second}),
	})
}

const groupsPerProducer = 4

var queueAttrs = map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "2"}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs the real binary; skipped in -short mode")
	}
	// One kill in the first tier: a broken recovery path still fails it,
	// in seconds. FIFOQ_TESTS=all, or -crash.kills, runs the longer form.
	n, quick := *kills, testenv.Quick(t, "crash.kills")
	if quick {
		n = 1
	}
	h, s := runCrashes(t, n, 0)
	if quick {
		h.timeout = quickCheckTimeout
	}
	t.Logf("history: %s", h.summary())
	r := h.check()
	t.Logf("linearizability: %d groups checked, %d unchecked (porcupine timed out)", r.Groups, r.Unchecked)
	if len(r.Problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", s, strings.Join(r.Problems, "\n  "))
	}
	if h.sent() == 0 {
		t.Error("no send was acknowledged: the test exercised nothing")
	}
}

// TestCrashTestCatchesLoss runs the same workload against a server that
// keeps nothing (--in-memory) and kills it once: the history check must
// report lost messages, or it could not catch a durability bug either.
func TestCrashTestCatchesLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs the real binary; skipped in -short mode")
	}
	h, s := runCrashes(t, 1, 0, "--in-memory")
	// Loss is what it asserts: porcupine's proof that the broken groups
	// are not linearizable is left out, which could take it a minute a
	// group and gigabytes under -race.
	problems := h.checkWithout(true).Problems
	if !strings.Contains(strings.Join(problems, "\n"), "lost:") {
		t.Fatalf("killing an in-memory server lost nothing the check could see (seed %d); problems: %v", s, problems)
	}
}

// runCrashes starts fifoq, runs producers and consumers against it while
// killing it with SIGKILL the given number of times and restarting it on
// the same data dir, then drains the queue and returns the history. The
// bodies sent are padded to pad bytes, if longer than they would be, and
// every body received is checked against the one sent.
func runCrashes(t *testing.T, kills, pad int, serverArgs ...string) (*history, int64) {
	h, s, _ := runCrashesObserved(t, kills, pad, nil, serverArgs...)
	return h, s
}

// runCrashesObserved is runCrashes calling beforeKill, if not nil, with the
// server's address before each kill and before the final stop.
func runCrashesObserved(t *testing.T, kills, pad int, beforeKill func(addr string), serverArgs ...string) (*history, int64, string) {
	s := *seed
	if s == 0 {
		s = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -crash.seed=%d)", s, s)
	rng := rand.New(rand.NewSource(s))

	dataDir := t.TempDir()
	logs := serverLog(t)
	addr := freeAddr(t)
	proc := startServer(t, addr, dataDir, logs, serverArgs...)
	client := newClient(addr)

	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("crash.fifo"), Attributes: queueAttrs})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	queueURL := aws.ToString(out.QueueUrl)

	h := newHistory(pad)
	runCtx, stopRun := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := 0; p < *producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			produce(runCtx, client, queueURL, p, pad, h, rand.New(rand.NewSource(s+int64(p))))
		}(p)
	}
	for c := 0; c < *consumers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			consume(runCtx, client, queueURL, c, h, rand.New(rand.NewSource(s+1000+int64(c))))
		}(c)
	}

	for k := 0; k < kills; k++ {
		wait := time.Duration(float64(*interval) * (0.3 + 1.4*rng.Float64()))
		time.Sleep(wait)
		if beforeKill != nil {
			beforeKill(addr)
		}
		proc.kill()
		t.Logf("kill %d after %v: %s", k+1, wait.Round(time.Millisecond), h.summary())
		time.Sleep(time.Duration(rng.Intn(200)) * time.Millisecond)
		proc = startServer(t, addr, dataDir, logs, serverArgs...)
		if len(serverArgs) > 0 {
			// A server that lost its queue: create it again so the run goes on.
			_, _ = client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("crash.fifo"), Attributes: queueAttrs})
		}
	}
	time.Sleep(*interval / 2)
	stopRun()
	wg.Wait()

	// Final drain: receive until nothing is left, in flight or visible.
	drain(t, client, queueURL, h)
	if beforeKill != nil {
		beforeKill(addr)
	}
	// A graceful stop exits 0.
	proc.cmd.Process.Signal(syscall.SIGTERM)
	if err := proc.cmd.Wait(); err != nil {
		t.Errorf("fifoq did not stop cleanly on SIGTERM: %v", err)
	}

	return h, s, dataDir
}

// produce sends this producer's messages in order. Each message goes to
// one of the producer's own groups; an unacknowledged send is retried with
// the same body and dedup id until it is acknowledged, as a client of SQS
// FIFO queues should, so the dedup interval makes it exactly-once.
func produce(ctx context.Context, client *sqs.Client, queueURL string, p, pad int, h *history, rng *rand.Rand) {
	explicit := explicitDedup(p)
	seq := 0
	for ctx.Err() == nil {
		n := 1
		if rng.Intn(2) == 0 {
			n = 1 + rng.Intn(10)
		}
		batch := make([]outgoing, n)
		for i := range batch {
			batch[i] = newOutgoing(p, seq, explicit, pad)
			seq++
		}
		sendUntilAcked(ctx, client, queueURL, p, batch, h)
	}
}

// sendUntilAcked sends a batch, again and again with the same bodies and
// dedup ids until every message is acknowledged or ctx ends, and records
// it: the messages first acknowledged by one attempt as one operation
// (invoked with the first attempt: an earlier attempt whose answer was
// lost may have stored them), and each message never acknowledged as an
// operation of its own without an answer (an attempt may store some
// messages of a batch and refuse others).
func sendUntilAcked(ctx context.Context, client *sqs.Client, queueURL string, p int, batch []outgoing, h *history) {
	msgs := make([]historycheck.Msg, len(batch))
	for i, o := range batch {
		msgs[i] = testMsg(o.ref.producer, o.ref.seq, o.group)
	}
	invoke := time.Now()
	for attempt := 1; ; attempt++ {
		ids, err := sendBatch(ctx, client, queueURL, batch)
		op := historycheck.Op{Kind: historycheck.Send, Client: p, Invoke: invoke, Return: time.Now(), Attempts: attempt, Outcome: historycheck.OK}
		pending := 0
		for i, id := range ids {
			if id != "" && msgs[i].ID == "" {
				msgs[i].ID = id
				op.Msgs = append(op.Msgs, msgs[i])
			}
			if msgs[i].ID == "" {
				pending++
			}
		}
		if len(op.Msgs) > 0 {
			h.Add(op)
		}
		if pending == 0 {
			return
		}
		if ctx.Err() != nil {
			for _, m := range msgs {
				if m.ID == "" {
					h.Add(historycheck.Op{Kind: historycheck.Send, Client: p, Invoke: invoke, Attempts: attempt, Outcome: historycheck.Unknown,
						Err: fmt.Sprint(err), Msgs: []historycheck.Msg{m}})
				}
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// msgRef names a message the test sends: its producer and that producer's
// sequence number.
type msgRef struct {
	producer, seq int
}

type outgoing struct {
	ref   msgRef
	group string
	body  string
	dedup string // explicit dedup id, or "" for content-based
}

func newOutgoing(p, seq int, explicit bool, pad int) outgoing {
	o := outgoing{ref: msgRef{p, seq}, group: groupOf(p, seq)}
	o.body = crashBody(p, seq, o.group, pad)
	if explicit {
		o.dedup = fmt.Sprintf("d-%d-%d", p, seq)
	}
	return o
}

// groupOf is the group of producer p's message seq.
func groupOf(p, seq int) string { return fmt.Sprintf("p%d-g%d", p, seq%groupsPerProducer) }

// crashBody is the body of producer p's message seq in group g: a line
// that names it, padded to pad bytes (if longer) with bytes of its own, so
// that a body read back from the wrong place is seen.
func crashBody(p, seq int, g string, pad int) string {
	body := fmt.Sprintf("crash p=%d s=%d g=%s", p, seq, g)
	if n := pad - len(body) - 1; n > 0 {
		fill := []byte(fmt.Sprintf("|%d.%d|", p, seq))
		b := make([]byte, n)
		for i := range b {
			b[i] = fill[i%len(fill)]
		}
		body += " " + string(b)
	}
	return body
}

// testMsg is producer p's message seq of group g as the history names it:
// its deduplication id is the explicit one it is sent with, or for a
// message sent with content-based deduplication a name of its own (its
// body, whose hash the server deduplicates by, is unique to it too).
func testMsg(p, seq int, g string) historycheck.Msg {
	dedup := fmt.Sprintf("d-%d-%d", p, seq)
	if !explicitDedup(p) {
		dedup = fmt.Sprintf("content-%d-%d", p, seq)
	}
	return historycheck.Msg{Group: g, Dedup: dedup, Seq: seq}
}

// explicitDedup tells whether producer p sends explicit deduplication ids:
// half the producers do, half use content-based deduplication.
func explicitDedup(p int) bool { return p%2 == 0 }

// sendBatch makes one attempt to send a batch and returns the MessageId
// of each message it acknowledged ("" for the others).
func sendBatch(ctx context.Context, client *sqs.Client, queueURL string, batch []outgoing) ([]string, error) {
	ids := make([]string, len(batch))
	if len(batch) == 1 {
		o := batch[0]
		in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(o.body), MessageGroupId: aws.String(o.group)}
		if o.dedup != "" {
			in.MessageDeduplicationId = aws.String(o.dedup)
		}
		out, err := client.SendMessage(ctx, in)
		if err != nil {
			return ids, err
		}
		ids[0] = aws.ToString(out.MessageId)
		return ids, nil
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, o := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(o.body), MessageGroupId: aws.String(o.group)}
		if o.dedup != "" {
			entries[i].MessageDeduplicationId = aws.String(o.dedup)
		}
	}
	out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return ids, err
	}
	for _, s := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i >= 0 && i < len(ids) {
			ids[i] = aws.ToString(s.MessageId)
		}
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return ids, fmt.Errorf("batch entry %s failed: %s %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return ids, nil
}

// consume receives, records, and mostly deletes; sometimes it gives a
// message back (visibility 0) or leaves it to expire, so redelivery is
// exercised too.
func consume(ctx context.Context, client *sqs.Client, queueURL string, consumer int, h *history, rng *rand.Rand) {
	for ctx.Err() == nil {
		msgs, err := receive(ctx, client, queueURL, consumer, int32(1+rng.Intn(10)), h)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, m := range msgs {
			switch x := rng.Intn(20); {
			case x == 0:
				// Leave it in flight: it comes back after the visibility timeout.
			case x == 1:
				ack(h, historycheck.Release, consumer, m, func() error {
					_, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(m.Handle), VisibilityTimeout: 0})
					return err
				})
			default:
				ack(h, historycheck.Delete, consumer, m, func() error {
					_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(m.Handle)})
					return err
				})
			}
		}
	}
}

// visibility is the visibility timeout every receive asks for, so that the
// history knows how long each hold lasts at least.
const visibility = 2 * time.Second

// receive makes one ReceiveMessage request for up to max messages, with a
// long poll of a second and the test's visibility timeout, records it, and
// returns the test's messages it returned (a message whose body names
// none is recorded as a wrong body and left alone).
func receive(ctx context.Context, client *sqs.Client, queueURL string, consumer int, max int32, h *history) ([]historycheck.Msg, error) {
	op := historycheck.Op{Kind: historycheck.Receive, Client: consumer, Invoke: time.Now(), Attempts: 1, Visibility: visibility}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queueURL), MaxNumberOfMessages: max, WaitTimeSeconds: 1,
		VisibilityTimeout: int32(visibility / time.Second),
	})
	if err != nil {
		// Its answer lost, it may have taken messages for the visibility
		// timeout: they come back, and the history allows it.
		op.Outcome, op.Err = historycheck.Unknown, err.Error()
		h.Add(op)
		return nil, err
	}
	op.Return, op.Outcome = time.Now(), historycheck.OK
	got, ok := h.received(op, out.Messages)
	var msgs []historycheck.Msg
	for i, m := range got {
		if ok[i] {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// ack makes one delete or release (ChangeMessageVisibility 0) of m with
// call, and records it: acknowledged, or without an answer on any error
// (a refusal of an expired handle and a request cut by a kill look alike
// to the test).
func ack(h *history, kind historycheck.Kind, consumer int, m historycheck.Msg, call func() error) error {
	op := historycheck.Op{Kind: kind, Client: consumer, Invoke: time.Now(), Attempts: 1, Msgs: []historycheck.Msg{m}}
	err := call()
	if err != nil {
		op.Outcome, op.Err = historycheck.Unknown, err.Error()
	} else {
		op.Return, op.Outcome = time.Now(), historycheck.OK
	}
	h.Add(op)
	return err
}

// drainer is the consumer number of the final drain.
const drainer = -1

// drainStall is how long the drain may go without a delivery before it
// fails. It fails on a stall, not on a deadline: the drain is one consumer
// deleting one message at a time, and a long run (more kills, longer
// intervals, more producers) leaves a backlog that takes it minutes.
const drainStall = 60 * time.Second

// drain receives and deletes until the queue holds nothing, visible or in
// flight, so every acknowledged message still stored has been delivered.
func drain(t *testing.T, client *sqs.Client, queueURL string, h *history) {
	ctx := context.Background()
	deadline := time.Now().Add(drainStall)
	failures := 0
	for time.Now().Before(deadline) {
		began := time.Now()
		msgs, err := receive(ctx, client, queueURL, drainer, 10, h)
		if err != nil {
			// A receive whose answer is lost took its messages for the
			// visibility timeout, as a consumer's may: they come back,
			// and the history allows it. The SDK, making one attempt,
			// loses one now and then when the consumers' cancelled
			// requests leave connections closing under the next
			// (aws-sdk-go-v2#2737). Only repeated failures fail the drain.
			if failures++; failures == 3 {
				t.Fatalf("drain receive, 3 times in a row: %v", err)
			}
			t.Logf("drain receive failed after %v (retrying): %v", time.Since(began).Round(time.Millisecond), err)
			continue
		}
		failures = 0
		for _, m := range msgs {
			err := ack(h, historycheck.Delete, drainer, m, func() error {
				_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(m.Handle)})
				return err
			})
			if err != nil {
				t.Fatalf("drain delete: %v", err)
			}
		}
		if len(msgs) > 0 {
			deadline = time.Now().Add(drainStall)
			continue
		}
		attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("drain attributes: %v", err)
		}
		if attrs.Attributes["ApproximateNumberOfMessages"] == "0" && attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" &&
			attrs.Attributes["ApproximateNumberOfMessagesDelayed"] == "0" {
			h.drained(time.Now())
			return
		}
	}
	t.Fatalf("queue did not drain: nothing delivered for %v", drainStall)
}

// serverLog creates the file a test's fifoq writes its log to, and dumps
// the log's tail into the test's output if the test fails.
func serverLog(t *testing.T) *os.File {
	t.Helper()
	logs, err := os.Create(filepath.Join(t.TempDir(), "fifoq.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpTail(t, logs.Name())
		}
		logs.Close()
	})
	return logs
}

func dumpTail(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 40 {
			lines = lines[1:]
		}
	}
	t.Logf("server log tail:\n%s", strings.Join(lines, "\n"))
}
