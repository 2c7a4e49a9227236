package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/bench"
	"github.com/fifoq/fifoq/internal/integration"
)

// sqsClient wraps the AWS SDK for Go v2 client of a test server, failing
// the test on any error: the console's results are checked through the
// real SQS API, as an application would see them.
type sqsClient struct {
	t    *testing.T
	c    *sqs.Client
	base string           // the server's URL
	env  *integration.Env // the server's test environment, if the harness started it
	// clockStopped stops traffic from moving the harness server's clock,
	// for a step whose outcome depends on how much time passes.
	clockStopped atomic.Bool
}

func newSQS(t *testing.T, env *integration.Env) *sqsClient {
	return &sqsClient{t: t, c: env.V2, base: env.URL, env: env}
}

// newSQSAt returns a client of the server at url signing with a key.
func newSQSAt(t *testing.T, url, keyID, secret string) *sqsClient {
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(hc.CloseIdleConnections)
	c := sqs.NewFromConfig(aws.Config{
		Region:      integration.Region,
		Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, ""),
		HTTPClient:  bench.OwnRequestBodies(hc), // see its doc: one attempt must not lose its answer
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
	return &sqsClient{t: t, c: c, base: url}
}

func (s *sqsClient) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	s.t.Cleanup(cancel)
	return ctx
}

func (s *sqsClient) url(name string) string {
	return s.base + "/" + integration.Account + "/" + name
}

func (s *sqsClient) arn(name string) string {
	return "arn:aws:sqs:" + integration.Region + ":" + integration.Account + ":" + name
}

func (s *sqsClient) create(name string, attrs map[string]string, tags map[string]string) {
	s.t.Helper()
	if _, err := s.c.CreateQueue(s.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs, Tags: tags}); err != nil {
		s.t.Fatalf("CreateQueue %s: %v", name, err)
	}
}

func (s *sqsClient) send(name, body, group string, attrs map[string]types.MessageAttributeValue) string {
	s.t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.url(name)), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId = aws.String(group)
	}
	out, err := s.c.SendMessage(s.ctx(), in)
	if err != nil {
		s.t.Fatalf("SendMessage to %s: %v", name, err)
	}
	return *out.MessageId
}

// receive receives up to max messages with every attribute.
func (s *sqsClient) receive(name string, max int32, vis int32, attempt string) []types.Message {
	s.t.Helper()
	in := &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.url(name)), MaxNumberOfMessages: max, VisibilityTimeout: vis,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
	if attempt != "" {
		in.ReceiveRequestAttemptId = aws.String(attempt)
	}
	out, err := s.c.ReceiveMessage(s.ctx(), in)
	if err != nil {
		s.t.Fatalf("ReceiveMessage from %s: %v", name, err)
	}
	return out.Messages
}

// counts returns ApproximateNumberOfMessages, ...NotVisible and ...Delayed.
func (s *sqsClient) counts(name string) [3]int {
	s.t.Helper()
	out, err := s.c.GetQueueAttributes(s.ctx(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.url(name)), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		s.t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	var c [3]int
	for i, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		n, err := strconv.Atoi(out.Attributes[k])
		if err != nil {
			s.t.Fatalf("%s of %s = %q", k, name, out.Attributes[k])
		}
		c[i] = n
	}
	return c
}

func (s *sqsClient) moveTasks(dlq string) []types.ListMessageMoveTasksResultEntry {
	s.t.Helper()
	out, err := s.c.ListMessageMoveTasks(s.ctx(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(s.arn(dlq)), MaxResults: aws.Int32(10)})
	if err != nil {
		s.t.Fatalf("ListMessageMoveTasks %s: %v", dlq, err)
	}
	return out.Results
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The fixture: queues an operator would recognise, with messages in every
// state, a held FIFO group, and a dead-letter queue with a backlog.
const (
	qOrders    = "orders.fifo"
	qOrdersDLQ = "orders-dlq.fifo"
	qEvents    = "events"
	qAudit     = "audit-log"
	qTraffic   = "traffic"
	heldGroup  = "customer-1"
	attemptID  = "worker-7-3f2a9c"
)

// seed creates the fixture and returns the body of each orders message by
// group, oldest first.
func seed(s *sqsClient) map[string][]string {
	s.t.Helper()
	s.create(qOrdersDLQ, map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "MessageRetentionPeriod": "1209600"}, nil)
	s.create(qOrders, map[string]string{
		"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "60",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, s.arn(qOrdersDLQ)),
	}, map[string]string{"team": "checkout", "env": "staging"})
	s.create(qEvents, map[string]string{"DelaySeconds": "0"}, nil)
	s.create(qAudit, map[string]string{"MessageRetentionPeriod": "86400"}, nil)
	s.create(qTraffic, nil, nil)

	groups := map[string][]string{}
	for i, n := range []int{2, 3, 1, 4, 2, 1} {
		g := "customer-" + strconv.Itoa(i+1)
		for j := range n {
			body := fmt.Sprintf(`{"order":%d,"customer":%q,"total":%d.%02d,"items":%d}`, 1000+i*10+j, g, 20+i*7+j, (i*37+j*11)%100, 1+j)
			s.send(qOrders, body, g, map[string]types.MessageAttributeValue{
				"source": {DataType: aws.String("String"), StringValue: aws.String("web")},
			})
			groups[g] = append(groups[g], body)
		}
	}
	// A consumer holds customer-1 (both its messages) with an attempt id,
	// another holds customer-2 without one.
	if got := s.receive(qOrders, 2, 60, attemptID); len(got) != 2 {
		s.t.Fatalf("holding %s: received %d messages", heldGroup, len(got))
	}
	if got := s.receive(qOrders, 1, 60, ""); len(got) != 1 {
		s.t.Fatalf("holding customer-2: received %d messages", len(got))
	}
	for i := range 12 {
		s.send(qOrdersDLQ, fmt.Sprintf(`{"order":%d,"error":"payment declined"}`, 900+i), "customer-"+strconv.Itoa(7+i%3), nil)
	}
	for i := range 5 {
		s.send(qEvents, fmt.Sprintf(`{"event":"signup","user":%d}`, 40+i), "", nil)
	}
	for i := range 30 {
		s.send(qAudit, fmt.Sprintf("user %d signed in from 10.0.0.%d", 40+i, i), "", nil)
	}
	return groups
}

// traffic sends, receives and deletes on the traffic queue until the test
// ends, so that the throughput charts have something to draw. A harness
// server's fake clock moves with the real time meanwhile, as a server's
// clock does, so that the console samples the traffic second by second,
// unless s.clockStopped.
func traffic(s *sqsClient) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s.t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	url := aws.String(s.url(qTraffic))
	if s.env != nil {
		wg.Go(func() {
			last := time.Now()
			for ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
				now := time.Now()
				if !s.clockStopped.Load() {
					s.env.Clock.Advance(now.Sub(last))
				}
				last = now
			}
		})
	}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			s.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("tick " + strconv.Itoa(i))})
			time.Sleep(time.Duration(8+i%7) * time.Millisecond)
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			out, err := s.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 4, WaitTimeSeconds: 1})
			if err != nil {
				continue
			}
			for _, m := range out.Messages {
				s.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
			}
			time.Sleep(15 * time.Millisecond)
		}
	})
}
