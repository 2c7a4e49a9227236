package clustertest

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/historycheck"
	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	flagKills     = flag.Int("cluster.kills", 3, "how many times the leader is killed with SIGKILL (≥ 20 for a soak); TestFailover kills it once in the first tier unless given (internal/testenv)")
	flagInterval  = flag.Duration("cluster.interval", 2*time.Second, "mean time between disruptions")
	flagProducers = flag.Int("cluster.producers", 4, "concurrent producers (each with its own message groups)")
	flagConsumers = flag.Int("cluster.consumers", 4, "concurrent consumers")
	flagFreeze    = flag.Duration("cluster.freeze", 3*time.Second, "how long a node stays frozen by SIGSTOP")
	flagSeed      = flag.Int64("cluster.seed", 0, "random seed (0: from the clock)")
	flagVisualize = flag.String("cluster.visualize", "", "directory for porcupine's visualization of a group that is not linearizable")
	flagFailovers = flag.String("cluster.failover-out", "", "file to append each measured failover time to (one duration a line)")
	flagHistory   = flag.String("cluster.history-out", "", "file to write the run's history to (JSON), for TestCheckHistoryFile")
)

// parseFlags is called by TestMain.
func parseFlags() { flag.Parse() }

const (
	groupsPerProducer = 6
	// visibility is every receive's visibility timeout: longer than a
	// freeze, so that a consumer retrying its receive across a disruption
	// usually finds its messages still held for it.
	visibility = 5 * time.Second
	// clientTimeout bounds one HTTP attempt; a receive's long poll is 1 s.
	clientTimeout = 3 * time.Second
)

// workload is the producers and consumers of one run and their history.
type workload struct {
	ids      []string // the nodes' ids, one per client
	queueURL string
	hist     *historycheck.History
	clients  []*sqs.Client // one per node
	// sendGap, if not 0, is each producer's pause between two sends, so
	// that a long run's backlog stays drainable.
	sendGap time.Duration

	mu sync.Mutex
	// clientErrors are the answers that refused a request as the
	// client's fault (4xx) when it was not: an SDK does not retry them,
	// so an application would have failed where the test retried.
	clientErrors []string
	// peerRefusals are the answers that passed on a member's refusal of
	// a request another member routed to it (POST /cluster/do).
	peerRefusals []string
}

// peerRefusal is what a client is answered when a member refused a part
// of its request routed to it (internal/server, doAt).
const peerRefusal = "asked to carry the request out refused it"

// noteClientError records err, node's answer to op, if it blames the
// client (a 4xx the request did not earn): the workload sends only
// requests SQS takes, and a disruption of the cluster (a kill, a move,
// a split, a stale map) must be answered with a retryable error.
func (w *workload) noteClientError(op *historycheck.Op, node string, err error) {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() < 400 || re.HTTPStatusCode() >= 500 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clientErrors = append(w.clientErrors, fmt.Sprintf("%s through %s at %s: %v", op.Kind, node, time.Now().Format("15:04:05.000"), err))
}

// attempt runs call against node (preferred+try) % n, the next node at
// each retry, until the server answers definitively: success, or an error
// refused classifies as a refusal. It records in op the first invocation,
// the final answer's time and outcome, the nodes tried and the last error;
// when ctx ends first the outcome is unknown.
func (w *workload) attempt(ctx context.Context, preferred int, op *historycheck.Op, refused func(error) bool, call func(*sqs.Client) error) {
	op.Invoke = time.Now()
	for try := 0; ; try++ {
		i := (preferred + try) % len(w.clients)
		op.Attempts++
		op.Nodes = append(op.Nodes, w.ids[i])
		err := call(w.clients[i])
		switch {
		case err == nil:
			op.Return, op.Outcome = time.Now(), historycheck.OK
			return
		case refused != nil && refused(err):
			op.Return, op.Outcome, op.Err = time.Now(), historycheck.Refused, err.Error()
			return
		}
		op.Err = err.Error()
		w.noteClientError(op, w.ids[i], err)
		if strings.Contains(op.Err, peerRefusal) {
			w.mu.Lock()
			w.peerRefusals = append(w.peerRefusals, fmt.Sprintf("%s through %s at %s: %v", op.Kind, w.ids[i], time.Now().Format("15:04:05.000"), err))
			w.mu.Unlock()
		}
		if ctx.Err() != nil {
			op.Outcome = historycheck.Unknown
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// refusedHandle reports a FIFO queue's definitive refusal of a receipt
// handle: the delete or release took no effect.
func refusedHandle(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "InvalidParameterValue", "ReceiptHandleIsInvalid", "MessageNotInflight",
		"AWS.SimpleQueueService.MessageNotInflight":
		return true
	}
	return false
}

// produce sends this producer's messages, in order, each request retried
// with the same deduplication ids until acknowledged.
func (w *workload) produce(ctx context.Context, p int, rng *rand.Rand) {
	seq := 0
	for ctx.Err() == nil {
		n := 1
		if rng.Intn(2) == 0 {
			n = 2 + rng.Intn(4)
		}
		msgs := make([]historycheck.Msg, n)
		for i := range msgs {
			seq++
			g := fmt.Sprintf("p%dg%d", p, rng.Intn(groupsPerProducer))
			msgs[i] = historycheck.Msg{Group: g, Dedup: fmt.Sprintf("p%d-%d", p, seq), Seq: seq}
		}
		op := historycheck.Op{Kind: historycheck.Send, Client: p, Msgs: msgs}
		w.attempt(ctx, p+rng.Intn(len(w.clients)), &op, nil, func(cl *sqs.Client) error {
			ids, err := w.send(ctx, cl, msgs)
			if err == nil {
				for i := range op.Msgs {
					op.Msgs[i].ID = ids[i]
				}
			}
			return err
		})
		w.hist.Add(op)
		if w.sendGap > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(w.sendGap):
			}
		}
	}
}

// body is the text of a test message: it names the message, so that a
// receive can be matched to its send.
func body(m historycheck.Msg) string {
	return fmt.Sprintf("clustertest %s %s %d", m.Group, m.Dedup, m.Seq)
}

func parseBody(s string) (historycheck.Msg, bool) {
	var m historycheck.Msg
	_, err := fmt.Sscanf(s, "clustertest %s %s %d", &m.Group, &m.Dedup, &m.Seq)
	return m, err == nil
}

func (w *workload) send(ctx context.Context, cl *sqs.Client, msgs []historycheck.Msg) ([]string, error) {
	// The request must not outlive the run's end by more than the client
	// timeout, but the run's end must not cut a request short either: an
	// attempt cut short is as unknown as a failed one, which is fine.
	if len(msgs) == 1 {
		m := msgs[0]
		out, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.queueURL), MessageBody: aws.String(body(m)),
			MessageGroupId: aws.String(m.Group), MessageDeduplicationId: aws.String(m.Dedup)})
		if err != nil {
			return nil, err
		}
		return []string{aws.ToString(out.MessageId)}, nil
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body(m)),
			MessageGroupId: aws.String(m.Group), MessageDeduplicationId: aws.String(m.Dedup)}
	}
	out, err := cl.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(w.queueURL), Entries: entries})
	if err != nil {
		return nil, err
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return nil, fmt.Errorf("batch entry %s failed: %s %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	ids := make([]string, len(msgs))
	for _, s := range out.Successful {
		i, err := strconv.Atoi(aws.ToString(s.Id))
		if err != nil || i < 0 || i >= len(ids) {
			return nil, fmt.Errorf("batch answered an unknown entry id %q", aws.ToString(s.Id))
		}
		ids[i] = aws.ToString(s.MessageId)
	}
	for i, id := range ids {
		if id == "" {
			return nil, fmt.Errorf("batch did not answer entry %d", i)
		}
	}
	return ids, nil
}

// consume receives (retrying with the same ReceiveRequestAttemptId),
// and mostly deletes what it got; sometimes it gives a message back
// (visibility 0) or leaves it to time out, so redelivery is exercised.
func (w *workload) consume(ctx context.Context, c int, rng *rand.Rand, drain bool) {
	attempt := 0
	for ctx.Err() == nil {
		attempt++
		max := int32(1 + rng.Intn(10))
		if drain {
			max = 10
		}
		op := w.receive(ctx, c, fmt.Sprintf("c%d-%d-%d", c, rng.Int63(), attempt), max, rng)
		w.hist.Add(op)
		if op.Outcome != historycheck.OK {
			continue
		}
		if drain && len(op.Msgs) == 0 {
			return
		}
		for _, m := range op.Msgs {
			x := rng.Intn(20)
			if drain {
				x = 2
			}
			switch {
			case x == 0:
				// Leave it in flight: it comes back after the visibility timeout.
			case x == 1:
				w.ack(ctx, c, historycheck.Release, m, rng)
			default:
				w.ack(ctx, c, historycheck.Delete, m, rng)
			}
		}
	}
}

func (w *workload) receive(ctx context.Context, c int, attemptID string, max int32, rng *rand.Rand) historycheck.Op {
	op := historycheck.Op{Kind: historycheck.Receive, Client: c, Visibility: visibility, AttemptID: attemptID}
	w.attempt(ctx, c+rng.Intn(len(w.clients)), &op, nil, func(cl *sqs.Client) error {
		out, err := cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.queueURL), MaxNumberOfMessages: max, WaitTimeSeconds: 1,
			VisibilityTimeout: int32(visibility / time.Second), ReceiveRequestAttemptId: aws.String(attemptID),
		})
		if err != nil {
			return err
		}
		op.Msgs = op.Msgs[:0]
		for _, m := range out.Messages {
			got, ok := parseBody(aws.ToString(m.Body))
			if !ok {
				return fmt.Errorf("a message not of the test: %q", aws.ToString(m.Body))
			}
			got.ID, got.Handle = aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle)
			op.Msgs = append(op.Msgs, got)
		}
		return nil
	})
	return op
}

// ack deletes or releases a message, retrying until the server answers
// definitively.
func (w *workload) ack(ctx context.Context, c int, kind historycheck.Kind, m historycheck.Msg, rng *rand.Rand) {
	op := historycheck.Op{Kind: kind, Client: c, Msgs: []historycheck.Msg{m}}
	w.attempt(ctx, c+rng.Intn(len(w.clients)), &op, refusedHandle, func(cl *sqs.Client) error {
		var err error
		if kind == historycheck.Delete {
			_, err = cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.queueURL), ReceiptHandle: aws.String(m.Handle)})
		} else {
			_, err = cl.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(w.queueURL),
				ReceiptHandle: aws.String(m.Handle), VisibilityTimeout: 0})
		}
		return err
	})
	w.hist.Add(op)
}

// drain receives and deletes, with as many consumers as the run had,
// until the queue holds nothing, visible or in flight, and returns when it
// found it empty.
func (w *workload) drain(t *testing.T, rng *rand.Rand) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for i := range *flagConsumers {
			wg.Add(1)
			go func(c int, rng *rand.Rand) {
				defer wg.Done()
				w.consume(ctx, c, rng, true)
			}(*flagConsumers+i, rand.New(rand.NewSource(rng.Int63())))
		}
		wg.Wait()
		for i, cl := range w.clients {
			attrs, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w.queueURL),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
			if err != nil {
				t.Logf("drain: attributes from %s: %v", w.ids[i], err)
				continue
			}
			if attrs.Attributes["ApproximateNumberOfMessages"] == "0" && attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" &&
				attrs.Attributes["ApproximateNumberOfMessagesDelayed"] == "0" {
				return time.Now()
			}
			break
		}
	}
	t.Fatal("the queue did not drain within 5 minutes")
	return time.Time{}
}

// run is one failover run's settings.
type run struct {
	kills    int  // leader kills
	follower bool // then kill a follower
	freeze   bool // then freeze a node
	bins     []string
	env      [][]string
	// tweak, if not nil, changes node i before the cluster starts.
	tweak func(i int, nd *node)
	// nemesis, if not nil, disrupts the cluster while the workload runs,
	// in place of the kills, the follower kill and the freeze above;
	// pause waits a random time around -cluster.interval.
	nemesis func(t *testing.T, c *cluster, rng *rand.Rand, pause func())
	// sendGap is each producer's pause between two sends (workload).
	sendGap time.Duration
	measure bool // measure each leader kill's failover time
	// shards, if more than 1, runs the nodes with --shards: the queue
	// under test goes to one of the shards, and the kills and the freeze
	// strike the leader of that queue's shard. Otherwise the nodes run
	// one group (--shards 1), so that the queue stays in the group whose
	// leader the nemesis strikes, rather than the default's shards.
	shards int
	// queueAttrs are attributes of the queue under test beside
	// FifoQueue and its visibility timeout.
	queueAttrs map[string]string
	// movable, with shards, leaves the queue under test movable: its
	// probe queue is then not put beside it by a redrive policy naming
	// it (a dead-letter queue is not moved).
	movable bool
	// checkTimeout, if not 0, bounds porcupine's search of one group in
	// place of a minute: the first tier's 5 s keeps the test process's
	// memory to a laptop's (the search grows by ~100 MB/s under -race).
	checkTimeout time.Duration
	failovers    []time.Duration
	seed         int64
	problems     []string
	// peerRefusals are the workload's answers that passed on a member's
	// refusal of a routed request (workload.peerRefusals).
	peerRefusals []string
	report       historycheck.Report
}

// runFailover starts a 3-node cluster, runs the workload through r's
// disruptions, drains the queue and checks the history.
func runFailover(t *testing.T, r *run) {
	r.seed = *flagSeed
	if r.seed == 0 {
		r.seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -cluster.seed=%d)", r.seed, r.seed)
	rng := rand.New(rand.NewSource(r.seed))

	c := startFailoverCluster(t, r)
	defer func() {
		if t.Failed() {
			for _, nd := range c.nodes {
				t.Logf("log tail of %s:\n%s", nd.id, nd.tail(30))
			}
		}
		if t.Failed() || len(r.problems) > 0 {
			// The caller reports the history's problems after this.
			saveNodeLogs(t, c)
		}
	}()
	attrs := map[string]string{"FifoQueue": "true", "VisibilityTimeout": strconv.Itoa(int(visibility / time.Second))}
	maps.Copy(attrs, r.queueAttrs)
	if r.shards > 1 {
		waitShards(t, c, r.shards+1)
		c.leaderOfTest = func() *node { return c.shardLeader("failover.fifo") }
	}
	w := &workload{hist: &historycheck.History{}, sendGap: r.sendGap}
	w.queueURL = c.createQueue("failover.fifo", attrs)
	if r.shards > 1 {
		shard := uint32(waitPlaced(t, c, "failover.fifo")["failover.fifo"])
		c.seenLeader = func(nd *node) string {
			for _, sh := range shardsOrNone(nd) {
				if sh.Shard == shard && sh.Held {
					return sh.LeaderID
				}
			}
			return ""
		}
	}
	probeAttrs := map[string]string{"FifoQueue": "true"}
	if r.shards > 1 && !r.movable {
		// The probe measures the failover of the queue's shard: a
		// redrive policy naming the queue puts the probe beside it. No
		// probe is ever received, so none is moved.
		probeAttrs["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:failover.fifo","maxReceiveCount":"1000"}`
	}
	probeURL := c.createQueue("probe.fifo", probeAttrs)
	for _, nd := range c.nodes {
		w.ids = append(w.ids, nd.id)
		w.clients = append(w.clients, newClient(nd.httpAddr, clientTimeout))
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	startWorkload(ctx, &wg, w, r.seed)
	pause := func() {
		time.Sleep(time.Duration(float64(*flagInterval) * (0.5 + rng.Float64())))
	}
	disrupt(t, c, r, rng, pause, probeURL)
	pause()
	stop()
	wg.Wait()
	// Every hold of a receive the test never saw answered ends by then.
	time.Sleep(visibility + clientTimeout)
	drainedAt := w.drain(t, rand.New(rand.NewSource(r.seed+2000)))
	checkFailoverHistory(t, r, w, drainedAt)
}

// startFailoverCluster starts the 3-node cluster of r, each node with r's
// binary, environment and tweak for it.
func startFailoverCluster(t *testing.T, r *run) *cluster {
	t.Helper()
	return newClusterWith(t, 3, func(i int, nd *node) {
		if i < len(r.bins) && r.bins[i] != "" {
			nd.bin = r.bins[i]
		}
		if i < len(r.env) {
			nd.env = r.env[i]
		}
		if r.tweak != nil {
			r.tweak(i, nd)
		}
		nd.args = append(nd.args, "--shards", strconv.Itoa(max(r.shards, 1)))
	})
}

// startWorkload starts w's producers and consumers (-cluster.producers and
// -cluster.consumers of them), each with a random source of its own drawn
// from seed, until ctx is cancelled; wg counts them.
func startWorkload(ctx context.Context, wg *sync.WaitGroup, w *workload, seed int64) {
	for p := 0; p < *flagProducers; p++ {
		wg.Add(1)
		go func(p int, rng *rand.Rand) {
			defer wg.Done()
			w.produce(ctx, p, rng)
		}(p, rand.New(rand.NewSource(seed+int64(p))))
	}
	for i := 0; i < *flagConsumers; i++ {
		wg.Add(1)
		go func(i int, rng *rand.Rand) {
			defer wg.Done()
			w.consume(ctx, i, rng, false)
		}(i, rand.New(rand.NewSource(seed+1000+int64(i))))
	}
}

// disrupt runs r's disruptions of c while the workload runs, each after a
// pause: r's nemesis, then r.kills leader kills (each restarted after up to
// half a second, and, if r.measure, timed to the first write a surviving
// node acknowledges on the queue at probeURL), then a follower's kill and a
// node's freeze if r asks for them.
func disrupt(t *testing.T, c *cluster, r *run, rng *rand.Rand, pause func(), probeURL string) {
	if r.nemesis != nil {
		r.nemesis(t, c, rng, pause)
	}
	probeSeq := 0
	for k := 0; k < r.kills; k++ {
		pause()
		leader := c.target()
		killed := time.Now()
		c.kill(leader)
		if r.measure {
			via := c.nodes[(indexOf(c, leader)+1+rng.Intn(2))%3]
			probeSeq = firstWriteThrough(via, probeURL, probeSeq)
			d := time.Since(killed)
			r.failovers = append(r.failovers, d)
			t.Logf("kill %d: leader %s; a write through %s succeeded %v later", k+1, leader.id, via.id, d.Round(time.Millisecond))
		} else {
			t.Logf("kill %d: leader %s", k+1, leader.id)
		}
		time.Sleep(time.Duration(rng.Intn(500)) * time.Millisecond)
		c.restart(leader)
	}
	if r.follower {
		pause()
		leader := c.target()
		f := c.nodes[(indexOf(c, leader)+1+rng.Intn(2))%3]
		t.Logf("kill follower %s", f.id)
		c.kill(f)
		pause()
		c.restart(f)
	}
	if r.freeze {
		pause()
		nd := c.target()
		t.Logf("freeze %s (the leader) for %v", nd.id, *flagFreeze)
		c.freeze(nd)
		time.Sleep(*flagFreeze)
		c.thaw(nd)
	}
}

// firstWriteThrough sends probes to the queue at probeURL through via, the
// first numbered probeSeq+1, every 5 ms until one is acknowledged, and
// returns the number of the last probe sent.
func firstWriteThrough(via *node, probeURL string, probeSeq int) int {
	cl := newClient(via.httpAddr, time.Second)
	for {
		probeSeq++
		id := fmt.Sprintf("probe-%d", probeSeq)
		_, err := cl.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(probeURL),
			MessageBody: aws.String(id), MessageGroupId: aws.String("probe"), MessageDeduplicationId: aws.String(id)})
		if err == nil {
			return probeSeq
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkFailoverHistory writes w's history if -cluster.history asks, checks
// it (drained at drainedAt) into r.report and r.problems, and fails the
// run if no send was acknowledged.
func checkFailoverHistory(t *testing.T, r *run, w *workload, drainedAt time.Time) {
	t.Helper()
	ops := w.hist.Ops()
	if *flagHistory != "" {
		if err := writeHistory(*flagHistory, ops, drainedAt); err != nil {
			t.Errorf("write the history: %v", err)
		}
	}
	sent, delivered, deleted, unknown := historycheck.Counts(ops)
	t.Logf("history: %d operations; %d messages sent and acknowledged, %d deliveries, %d deletes acknowledged, %d operations without an answer",
		len(ops), sent, delivered, deleted, unknown)
	checkStart := time.Now()
	timeout := cmp.Or(r.checkTimeout, time.Minute)
	r.report = historycheck.Check(ops, historycheck.CheckConfig{DedupInterval: 5 * time.Minute, Slack: 20 * time.Millisecond, Timeout: timeout,
		DrainedAt: drainedAt, VisualizeDir: *flagVisualize})
	r.problems = r.report.Problems
	if dir := artifactDir(t); dir != "" && len(r.problems) > 0 {
		// The history a failed check read, for TestCheckHistoryFile
		// (-cluster.check-history) to check again where it can be studied.
		path := filepath.Join(dir, "history.json")
		if err := writeHistory(path, ops, drainedAt); err != nil {
			t.Logf("write the history to %s: %v", path, err)
		} else {
			t.Logf("the history is in %s", path)
		}
	}
	r.peerRefusals = w.peerRefusals
	for _, e := range w.clientErrors {
		r.problems = append(r.problems, "a request refused as the client's fault, which no SQS client retries: "+e)
	}
	t.Logf("linearizability: %d groups checked, %d unchecked (porcupine timed out); the check took %v",
		r.report.Groups, r.report.Unchecked, time.Since(checkStart).Round(time.Millisecond))
	if sent == 0 {
		t.Error("no send was acknowledged: the run exercised nothing")
	}
}

func indexOf(c *cluster, nd *node) int {
	for i, x := range c.nodes {
		if x == nd {
			return i
		}
	}
	return 0
}

// TestFailover is the cluster's failover test: leader kills, a follower
// kill and a frozen node under load, and the history checked.
func TestFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	runFailoverTest(t, 1)
}

// runFailoverTest is TestFailover on nodes that run shards shards (1:
// none beside the first group).
func runFailoverTest(t *testing.T, shards int) {
	r := &run{kills: *flagKills, follower: true, freeze: true, measure: true, shards: shards}
	// The first tier's failover is one leader kill, in a third of the
	// time, its check's search bounded to 5 s a group: FIFOQ_TESTS=all, or
	// a size flag, adds the follower's kill, the freeze, -cluster.kills
	// leader kills and a minute a group.
	if testenv.Quick(t, "cluster.kills", "cluster.freeze") {
		r.kills, r.follower, r.freeze, r.checkTimeout = 1, false, false, 5*time.Second
	}
	runFailover(t, r)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
	reportFailovers(t, r.failovers)
}

// TestFailoverWithShards is TestFailover on nodes that run three shards
// (--shards 3), its queue in a shard other than the first group: every
// request is routed to, or forwarded to, that shard's leader, which is
// the one the test kills and freezes.
func TestFailoverWithShards(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	runFailoverTest(t, 3)
}

// TestFailoverCatchesBrokenNode runs the same workload on nodes built to
// acknowledge what they never apply (the fifoq_faults build tag: see
// internal/server/fault_inject.go): one run whose leader loses some
// acknowledged sends, one whose leader drops some acknowledged deletes. The check must fail
// both, or it could not catch a cluster that acknowledges before commit.
func TestFailoverCatchesBrokenNode(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "two failover runs on nodes that lose writes, and porcupine's proof that their groups are not linearizable")
	bin := faultyBinary(t)
	for _, c := range []struct{ fault, want string }{
		{"lose-send:7", "lost"},
		{"drop-delete:20", "undone delete"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			// Each run has a cluster of its own, and spends most of its
			// time waiting: a drain that waits out the visibility timeouts
			// of deletes the fault dropped, most of all.
			t.Parallel()
			// Every node carries the fault: a follower forwards the raw
			// request, so the fault acts wherever the leader is.
			env := []string{"FIFOQ_TEST_FAULT=" + c.fault}
			r := &run{kills: 1, bins: []string{bin, bin, bin}, env: [][]string{env, env, env}}
			runFailover(t, r)
			joined := strings.Join(r.problems, "\n")
			if !strings.Contains(joined, c.want+":") {
				t.Fatalf("a node with fault %s went unnoticed (seed %d); problems: %v", c.fault, r.seed, r.problems)
			}
			if !strings.Contains(joined, "not linearizable") {
				t.Errorf("the linearizability check missed fault %s (seed %d)", c.fault, r.seed)
			}
			t.Logf("caught: %d problems, first: %s", len(r.problems), r.problems[0])
		})
	}
}

// reportFailovers logs the failover times' median and worst and appends
// them to -cluster.failover-out if set.
func reportFailovers(t *testing.T, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	t.Logf("failover (kill → first acknowledged write through a surviving node) over %d kills: median %v, worst %v",
		len(s), med.Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	if *flagFailovers == "" {
		return
	}
	f, err := os.OpenFile(*flagFailovers, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("failover-out: %v", err)
		return
	}
	defer f.Close()
	for _, d := range ds {
		fmt.Fprintln(f, d)
	}
}

// TestReplicaMovesUnderLoad runs the failover test's workload on a queue
// in one of three shards, on three nodes, while replicas move: three
// times a fourth node joins (the map gives it a share of the shards'
// replicas: each moved shard adds it, then removes an old replica) and
// is removed again with fifoq cluster remove (its replicas move back),
// and each time the leader of the queue's shard is killed with SIGKILL
// while the replicas move. The history checker must find nothing
// acknowledged lost, no delete undone, order kept per group and every
// group linearizable.
func TestReplicaMovesUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover test runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "three joins and removals of a node under load, with the shard's leader killed during each move, about two minutes")
	t.Parallel()
	r := &run{
		sendGap: 50 * time.Millisecond,
		shards:  3,
		nemesis: func(t *testing.T, c *cluster, rng *rand.Rand, pause func()) {
			for round := range 3 {
				pause()
				joiner := &node{id: fmt.Sprintf("j%d", round+1), httpAddr: freeAddr(t), raftAddr: freeAddr(t), dataDir: t.TempDir(), bin: binary,
					args: []string{"--shards", "3"}, join: "http://" + c.nodes[0].httpAddr}
				joiner.logPath = filepath.Join(t.TempDir(), joiner.id+".log")
				// The workload reads c.nodes as it runs: the cluster with
				// the joiner is a view of its own.
				grown := &cluster{t: t, nodes: append(slices.Clone(c.nodes), joiner)}
				grown.leaderOfTest = func() *node { return grown.shardLeader("failover.fifo") }
				grown.start(joiner, "")
				t.Cleanup(func() {
					if joiner.running() {
						grown.kill(joiner)
					}
				})
				waitHolds(t, joiner, true)
				// The moves toward the joiner go on: kill the leader of the
				// queue's shard in the middle of them.
				victim := grown.target()
				t.Logf("nemesis: %s joined and holds replicas; kill %s, the leader of the queue's shard", joiner.id, victim.id)
				c.kill(victim)
				time.Sleep(time.Duration(200+rng.Intn(500)) * time.Millisecond)
				c.restart(victim)
				waitShards(t, grown, 4)
				pause()
				t.Logf("nemesis: remove %s", joiner.id)
				retrying(t, "fifoq cluster remove", func() error {
					out, err := exec.Command(binary, "cluster", "remove", joiner.id, "--endpoint", "http://"+c.nodes[0].httpAddr).CombinedOutput()
					if err != nil {
						return fmt.Errorf("%v: %s", err, out)
					}
					return nil
				})
				grown.kill(joiner)
				waitShards(t, c, 4)
				t.Logf("nemesis: %s removed; its replicas moved back", joiner.id)
			}
		},
	}
	runFailover(t, r)
	if len(r.problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", r.seed, strings.Join(r.problems, "\n  "))
	}
}

// waitHolds waits up to 90 s until nd holds a replica of some shard
// beyond the first group (want true), or of none (want false).
func waitHolds(t *testing.T, nd *node, want bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		held := false
		for _, sh := range shardsOrNone(nd) {
			held = held || (sh.Held && sh.Shard != 0)
		}
		if held == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds a shard's replica: %v after 90 s, want %v\n%s", nd.id, held, want, nd.tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
