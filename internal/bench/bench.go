// Package bench is fifoq's load generator: it drives any SQS endpoint with
// concurrent producers and consumers, measures throughput and latency, and
// verifies what it received against what the endpoint acknowledged —
// nothing lost, no duplicate, per-group order kept.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Config says what load to generate.
type Config struct {
	// Duration is how long the producers send.
	Duration time.Duration
	// Producers and Consumers are the numbers of concurrent senders and receivers.
	Producers, Consumers int
	// Groups is the number of message groups messages are spread over (FIFO,
	// and standard fair queues); 0 sends standard messages without a group.
	Groups int
	// GroupRun is how many consecutive messages of a producer go to one
	// group before the next (1 if below): with GroupRun equal to Batch,
	// each batch holds one group's messages, as a producer sending an
	// entity's events together does; with 1, a batch's messages are of as
	// many groups, which a high-throughput queue splits over partitions.
	GroupRun int
	// Batch is the number of messages per send and the most per receive
	// (1 uses SendMessage, 2-10 SendMessageBatch).
	Batch int
	// BodySize is the size of each message body in bytes (at least the
	// few bytes the bench's own header takes).
	BodySize int
	// FIFO makes the bench queue a FIFO queue.
	FIFO bool
	// HighThroughput makes the FIFO queue a high-throughput one
	// (DeduplicationScope messageGroup, FifoThroughputLimit
	// perMessageGroupId), which a cluster spreads over partitions.
	HighThroughput bool
	// QueueName names the queue to create; empty picks a fresh name.
	QueueName string
	// KeepQueue leaves the queue behind instead of deleting it at the end.
	KeepQueue bool
	// DrainTimeout bounds how long consumers go on after producers stop,
	// waiting for the last acknowledged messages.
	DrainTimeout time.Duration
	// Progress receives a line a second while the bench runs (nil: none).
	Progress io.Writer
	// MetricsURL is the server's Prometheus endpoint, read before and
	// after the load for the server's CPU and log commits (empty: not read).
	MetricsURL string
	// DataDir is the server's data directory, whose block device's
	// flushes and writes are counted over the load (empty: not counted).
	DataDir string
	// Rate caps the producers' total sends, in messages per second
	// (0: as fast as they go).
	Rate float64
	// ReportEvery, if positive, makes the run a soak: a Window is recorded
	// (and printed to Progress, instead of the per-second lines) at this
	// interval, and the result reports whether the server's memory,
	// goroutines, open files and send latency grew past Warmup.
	ReportEvery time.Duration
	// Warmup is the start of a soak left out of its trends (default: 10
	// minutes, or a sixth of Duration if that is shorter).
	Warmup time.Duration
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Duration <= 0:
		return errors.New("duration must be positive")
	case c.Producers < 1:
		return errors.New("producers must be at least 1")
	case c.Consumers < 1:
		return errors.New("consumers must be at least 1")
	case c.Batch < 1 || c.Batch > 10:
		return errors.New("batch must be between 1 and 10")
	case c.Groups < 0:
		return errors.New("groups must not be negative")
	case c.HighThroughput && !c.FIFO:
		return errors.New("only a FIFO queue is high-throughput")
	case c.FIFO && c.Groups < 1:
		return errors.New("a FIFO queue needs at least 1 group")
	case c.BodySize < minBodySize:
		return fmt.Errorf("body size must be at least %d bytes", minBodySize)
	case c.BodySize > 1<<20:
		return errors.New("body size must be at most 1 MiB")
	case c.Rate < 0:
		return errors.New("rate must not be negative")
	case c.ReportEvery < 0 || c.Warmup < 0:
		return errors.New("report interval and warm-up must not be negative")
	}
	return nil
}

// Run creates the bench queue, runs the load, verifies it, and returns the result.
func Run(ctx context.Context, client API, cfg Config) (*Result, error) {
	return RunOver(ctx, []API{client}, cfg)
}

// RunOver is Run with clients of several endpoints of one cluster:
// producer and consumer i each go through clients[i mod len(clients)],
// and the queue is created and deleted through the first. A consumer
// deletes through the client it received through.
func RunOver(ctx context.Context, clients []API, cfg Config) (*Result, error) {
	if len(clients) == 0 {
		return nil, errors.New("no client")
	}
	client := clients[0]
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	name := cfg.QueueName
	if name == "" {
		name = fmt.Sprintf("fifoq-bench-%d", time.Now().UnixNano())
		if cfg.FIFO {
			name += ".fifo"
		}
	}
	attrs := map[string]string{"VisibilityTimeout": "60"}
	if cfg.FIFO {
		attrs["FifoQueue"] = "true"
	}
	if cfg.HighThroughput {
		attrs["DeduplicationScope"], attrs["FifoThroughputLimit"] = "messageGroup", "perMessageGroupId"
	}
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	queueURL := aws.ToString(created.QueueUrl)
	if !cfg.KeepQueue {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = client.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
		}()
	}

	r := &run{cfg: cfg, clients: clients, queueURL: queueURL, ledger: newLedger(cfg.FIFO), pacer: newPacer(cfg.Rate)}
	return r.execute(ctx)
}

// run is one bench run in progress.
type run struct {
	cfg      Config
	clients  []API // producer or consumer i uses clients[i mod len]
	queueURL string
	ledger   *ledger
	pacer    *pacer      // nil: no rate cap
	window   windowStats // send latencies of the current soak window

	sent, received     atomic.Int64
	attempts           atomic.Int64 // receive request attempt ids
	sendErrs, recvErrs atomic.Int64
	sendLat, recvLat   latencies
	endToEnd           latencies
	firstErr           atomic.Value // string
}

func (r *run) execute(ctx context.Context) (*Result, error) {
	before := r.takeSample(ctx)
	start := time.Now()
	// Producers stop between sends when the duration is over: cancelling a
	// request in flight would leave its outcome unknown (and the HTTP
	// client may then close a connection another request is reading from).
	// Consumers likewise stop between receives once the drain is over;
	// only ctx (the user's interrupt) cancels a receive in flight.
	stopAt := start.Add(r.cfg.Duration)
	stopConsuming := make(chan struct{})

	var producers, consumers sync.WaitGroup
	for p := 0; p < r.cfg.Producers; p++ {
		producers.Add(1)
		go func(p int) {
			defer producers.Done()
			r.produce(ctx, stopAt, p)
		}(p)
	}
	for c := 0; c < r.cfg.Consumers; c++ {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			r.consume(ctx, stopConsuming, r.clients[c%len(r.clients)])
		}()
	}
	progressDone := make(chan struct{})
	var windowsOut chan []Window
	if r.cfg.ReportEvery > 0 {
		windowsOut = make(chan []Window, 1)
		if r.cfg.Progress != nil {
			writeWindowHeader(r.cfg.Progress)
		}
		go r.reportWindows(context.WithoutCancel(ctx), progressDone, start, windowsOut)
	} else {
		go r.reportProgress(progressDone, start)
	}

	producers.Wait()
	produced := time.Since(start)
	// Drain: consumers go on until every acknowledged message has arrived
	// or the drain timeout passes.
	drainDeadline := time.Now().Add(r.cfg.DrainTimeout)
	for time.Now().Before(drainDeadline) && ctx.Err() == nil && r.ledger.outstanding() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	close(stopConsuming)
	consumers.Wait()
	close(progressDone)
	elapsed := time.Since(start)
	after := r.takeSample(context.WithoutCancel(ctx))

	res := &Result{
		Endpoint:     strings.TrimSuffix(r.queueURL, "/"),
		FIFO:         r.cfg.FIFO,
		Producers:    r.cfg.Producers,
		Consumers:    r.cfg.Consumers,
		Groups:       r.cfg.Groups,
		Batch:        r.cfg.Batch,
		BodySize:     r.cfg.BodySize,
		SendSeconds:  produced.Seconds(),
		TotalSeconds: elapsed.Seconds(),
		Sent:         r.sent.Load(),
		Received:     r.received.Load(),
		SendErrors:   r.sendErrs.Load(),
		RecvErrors:   r.recvErrs.Load(),
		SendLatency:  r.sendLat.summary(),
		RecvLatency:  r.recvLat.summary(),
		EndToEnd:     r.endToEnd.summary(),
	}
	if e, ok := r.firstErr.Load().(string); ok {
		res.FirstError = e
	}
	res.SendRate = float64(res.Sent) / produced.Seconds()
	res.ReceiveRate = float64(res.Received) / elapsed.Seconds()
	res.Verification = r.ledger.verify()
	res.Resources = r.resources(before, after)
	if windowsOut != nil {
		warmup := r.cfg.Warmup
		if warmup == 0 {
			warmup = min(10*time.Minute, r.cfg.Duration/6)
		}
		res.Soak = soakReport(<-windowsOut, warmup)
	}
	return res, nil
}

// produce sends messages until stopAt or until ctx ends. Producer p numbers its messages
// 0, 1, 2, ... and sends message i to group (i / GroupRun) mod Groups; it waits for each
// acknowledgement before the next send, so within one group the order of
// its messages is the order of their numbers.
func (r *run) produce(ctx context.Context, stopAt time.Time, p int) {
	client := r.clients[p%len(r.clients)]
	seq := 0
	for ctx.Err() == nil && time.Now().Before(stopAt) {
		n := r.cfg.Batch
		msgs := make([]outgoing, n)
		for i := range msgs {
			msgs[i] = r.newMessage(p, seq)
			seq++
		}
		r.pacer.wait(ctx, n)
		began := time.Now()
		ok := r.send(ctx, client, msgs)
		if ctx.Err() != nil && !ok {
			return
		}
		took := time.Since(began)
		r.sendLat.add(took)
		r.window.add(took)
	}
}

// outgoing is one message about to be sent.
type outgoing struct {
	key   msgKey
	group string
	body  string
	dedup string
}

func (r *run) newMessage(p, seq int) outgoing {
	m := outgoing{key: msgKey{producer: p, seq: seq}}
	if r.cfg.Groups > 0 {
		m.group = "g" + strconv.Itoa(seq/max(r.cfg.GroupRun, 1)%r.cfg.Groups)
	}
	m.body = encodeBody(m.key, m.group, time.Now(), r.cfg.BodySize)
	if r.cfg.FIFO {
		m.dedup = strconv.Itoa(p) + "-" + strconv.Itoa(seq)
	}
	return m
}

// send sends msgs and records those acknowledged. It reports whether all were.
func (r *run) send(ctx context.Context, client API, msgs []outgoing) bool {
	if len(msgs) == 1 {
		m := msgs[0]
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(r.queueURL), MessageBody: aws.String(m.body),
			MessageGroupId: optional(m.group), MessageDeduplicationId: optional(m.dedup),
		})
		if err != nil {
			r.sendFailed(ctx, err)
			return false
		}
		r.ledger.sent(m.key)
		r.sent.Add(1)
		return true
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.body),
			MessageGroupId: optional(m.group), MessageDeduplicationId: optional(m.dedup),
		}
	}
	out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.queueURL), Entries: entries})
	if err != nil {
		r.sendFailed(ctx, err)
		return false
	}
	for _, ok := range out.Successful {
		i, _ := strconv.Atoi(aws.ToString(ok.Id))
		if i >= 0 && i < len(msgs) {
			r.ledger.sent(msgs[i].key)
			r.sent.Add(1)
		}
	}
	for _, f := range out.Failed {
		r.sendFailed(ctx, fmt.Errorf("batch entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
	}
	return len(out.Failed) == 0
}

func (r *run) sendFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		// Cut off by the end of the run: the send may or may not have
		// happened, which the ledger allows for (see ledger.uncertain).
		return
	}
	r.sendErrs.Add(1)
	r.firstErr.CompareAndSwap(nil, "send: "+err.Error())
}

// consume receives and deletes messages until stop is closed or ctx ends.
func (r *run) consume(ctx context.Context, stop <-chan struct{}, client API) {
	for ctx.Err() == nil {
		select {
		case <-stop:
			return
		default:
		}
		began := time.Now()
		in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1}
		if r.cfg.FIFO && retries(client) {
			// A retried receive (the SDK retries on network errors) must
			// return the same messages, or they stay in flight, and their
			// groups locked, until the visibility timeout. A client that
			// never retries has no use for one, and sends none: a split
			// queue's receive without one starts at a partition led by
			// the member it reaches, with one at the attempt's partition.
			in.ReceiveRequestAttemptId = aws.String(strconv.FormatInt(r.attempts.Add(1), 10))
		}
		out, err := client.ReceiveMessage(ctx, in)
		if err != nil {
			if ctx.Err() == nil {
				r.recvErrs.Add(1)
				r.firstErr.CompareAndSwap(nil, "receive: "+err.Error())
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		r.recvLat.add(time.Since(began))
		now := time.Now()
		entries := make([]types.DeleteMessageBatchRequestEntry, 0, len(out.Messages))
		for i, m := range out.Messages {
			key, group, sentAt, ok := decodeBody(aws.ToString(m.Body))
			if !ok {
				r.ledger.foreign()
			} else {
				r.ledger.received(key, group)
				r.endToEnd.add(now.Sub(sentAt))
			}
			r.received.Add(1)
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		out2, err := client.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.queueURL), Entries: entries})
		if err != nil {
			r.recvErrs.Add(1)
			r.firstErr.CompareAndSwap(nil, "delete: "+err.Error())
			continue
		}
		for _, f := range out2.Failed {
			r.recvErrs.Add(1)
			r.firstErr.CompareAndSwap(nil, fmt.Sprintf("delete entry: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
}

func (r *run) reportProgress(done <-chan struct{}, start time.Time) {
	if r.cfg.Progress == nil {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastSent, lastRecv int64
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			s, rc := r.sent.Load(), r.received.Load()
			fmt.Fprintf(r.cfg.Progress, "%6.1fs  sent %10d (%8d/s)  received %10d (%8d/s)  errors %d\n",
				now.Sub(start).Seconds(), s, s-lastSent, rc, rc-lastRecv, r.sendErrs.Load()+r.recvErrs.Load())
			lastSent, lastRecv = s, rc
		}
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}
