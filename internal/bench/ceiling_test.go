package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func ceilingClient(t *testing.T) *sqs.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	url, stop, err := StartCeiling(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); cancel() })
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(url),
		HTTPClient:   &http.Client{Transport: transport},
	})
}

// TestRunAgainstCeiling runs the bench against the ceiling endpoint: the
// SDK must accept every response (it checks the MD5s of sent and received
// bodies) and the verification must be clean, FIFO order included.
func TestRunAgainstCeiling(t *testing.T) {
	client := ceilingClient(t)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"fifo batches", Config{FIFO: true, Groups: 8, Batch: 10}},
		{"fifo single sends", Config{FIFO: true, Groups: 3, Batch: 1}},
		{"standard", Config{Groups: 0, Batch: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Duration, cfg.Producers, cfg.Consumers, cfg.BodySize = 500*time.Millisecond, 4, 3, 200
			res, err := Run(context.Background(), client, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res.WriteText(&out)
			t.Log(out.String())
			if !res.OK() {
				t.Fatalf("bench against the ceiling failed: first error %q, verification %+v", res.FirstError, res.Verification)
			}
			if res.Sent == 0 || int64(res.Verification.Acknowledged) != res.Sent || res.Verification.Duplicates != 0 {
				t.Fatalf("sent %d, verification %+v", res.Sent, res.Verification)
			}
			if res.Resources.ClientCPUSeconds == nil {
				t.Error("no client CPU figure")
			}
		})
	}
}

// TestCeilingFIFOGroupLock checks that a FIFO group's next message is not
// handed out while an earlier one is received and not yet deleted.
func TestCeilingFIFOGroupLock(t *testing.T) {
	client := ceilingClient(t)
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("lock.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range []string{"a", "a", "b"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprint("m", i)),
			MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(max int32) []types.Message {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: max})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	bodies := func(ms []types.Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, aws.ToString(m.Body))
		}
		return strings.Join(s, ",")
	}
	first := receive(1)
	if got := bodies(first); got != "m0" {
		t.Fatalf("first receive: %q, want m0", got)
	}
	if got := bodies(receive(10)); got != "m2" {
		t.Fatalf("while group a is locked: %q, want only m2 of group b", got)
	}
	if got := bodies(receive(10)); got != "" {
		t.Fatalf("with both groups locked: %q, want nothing", got)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: first[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := bodies(receive(10)); got != "m1" {
		t.Fatalf("after deleting m0: %q, want m1", got)
	}
}

// TestCeilingRejectsUnknown checks that an action the ceiling does not
// implement is an error the SDK reports, not a silent success.
func TestCeilingRejectsUnknown(t *testing.T) {
	client := ceilingClient(t)
	_, err := client.ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if err == nil || !strings.Contains(err.Error(), "InvalidAction") {
		t.Fatalf("ListQueues: err %v, want InvalidAction", err)
	}
}

// TestResourcesFromMetrics checks that the server's figures are the growth
// of its counters between the scrape before and the scrape after the run.
func TestResourcesFromMetrics(t *testing.T) {
	var scrapes atomic.Int64
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := float64(scrapes.Add(1))
		fmt.Fprintf(w, "# HELP process_cpu_seconds_total x\n# TYPE process_cpu_seconds_total counter\n")
		fmt.Fprintf(w, "process_cpu_seconds_total %g\n", 10*n)
		fmt.Fprintf(w, "fifoq_log_commit_duration_seconds_bucket{le=\"0.001\"} 1\n")
		fmt.Fprintf(w, "fifoq_log_commit_duration_seconds_count %g\n", 100*n)
		fmt.Fprintf(w, "fifoq_log_commands_per_entry_sum %g\n", 1000*n)
	}))
	defer ms.Close()
	client := ceilingClient(t)
	res, err := Run(context.Background(), client, Config{FIFO: true, Groups: 2, Batch: 2, Producers: 1, Consumers: 1,
		BodySize: 100, Duration: 200 * time.Millisecond, MetricsURL: ms.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Resources
	if r.ServerCPUSeconds == nil || *r.ServerCPUSeconds != 10 || r.LogEntries == nil || *r.LogEntries != 100 ||
		r.LogCommands == nil || *r.LogCommands != 1000 {
		t.Fatalf("resources %+v, want server CPU 10, log entries 100, commands 1000", r)
	}
	var out bytes.Buffer
	res.WriteText(&out)
	if !strings.Contains(out.String(), "100 entries committed") || !strings.Contains(out.String(), "10.0 commands per entry") {
		t.Fatalf("text lacks the log figures:\n%s", out.String())
	}
}

// TestResourcesMetricsUnavailable checks that a server without /metrics
// leaves the figures absent, with a note, rather than zero.
func TestResourcesMetricsUnavailable(t *testing.T) {
	ms := httptest.NewServer(http.NotFoundHandler())
	defer ms.Close()
	client := ceilingClient(t)
	res, err := Run(context.Background(), client, Config{Groups: 0, Batch: 1, Producers: 1, Consumers: 1,
		BodySize: 100, Duration: 100 * time.Millisecond, MetricsURL: ms.URL})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resources.ServerCPUSeconds != nil || len(res.Resources.Notes) == 0 {
		t.Fatalf("resources %+v, want no server CPU and a note", res.Resources)
	}
}

// countingAPI counts the sends and receives made through it.
type countingAPI struct {
	API
	sends, receives atomic.Int64
}

func (c *countingAPI) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.sends.Add(1)
	return c.API.SendMessageBatch(ctx, in, opts...)
}

func (c *countingAPI) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.receives.Add(1)
	return c.API.ReceiveMessage(ctx, in, opts...)
}

// TestRunOverSpreadsTheClients: with several clients (a cluster's
// endpoints), every client carries sends and receives, the run verifies
// clean, and a high-throughput queue is asked for with its attributes.
func TestRunOverSpreadsTheClients(t *testing.T) {
	base := ceilingClient(t)
	clients := []*countingAPI{{API: base}, {API: base}, {API: base}}
	apis := []API{clients[0], clients[1], clients[2]}
	cfg := Config{FIFO: true, HighThroughput: true, Groups: 16, Batch: 10, Duration: 500 * time.Millisecond, Producers: 3, Consumers: 3, BodySize: 200}
	res, err := RunOver(context.Background(), apis, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Sent == 0 {
		t.Fatalf("sent %d, first error %q, verification %+v", res.Sent, res.FirstError, res.Verification)
	}
	for i, c := range clients {
		if c.sends.Load() == 0 || c.receives.Load() == 0 {
			t.Errorf("client %d carried %d sends and %d receives; want some of each", i, c.sends.Load(), c.receives.Load())
		}
	}
	if err := (&Config{HighThroughput: true, Groups: 1, Batch: 1, Duration: time.Second, Producers: 1, Consumers: 1, BodySize: 200}).Validate(); err == nil {
		t.Error("a standard queue asked to be high-throughput passed validation")
	}
}
