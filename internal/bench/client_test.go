package bench

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// TestOwnRequestBodiesKeepsConnections makes certain, without timing, the
// race that closed the bench's connections: the server's answer reaches
// the SDK (which then closes the request body it built) before net/http's
// connection writer has finished with that body. The test's connection
// holds the write that completes a request until the SDK has had the
// answer; the requests must then all succeed on the one connection.
func TestOwnRequestBodiesKeepsConnections(t *testing.T) {
	addr := startServer(t)
	var dials atomic.Int64
	answered := make(chan struct{}, 64) // a token per attempt the SDK got an answer for
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		dials.Add(1)
		return &gatedConn{Conn: c, answered: answered, closed: make(chan struct{})}, nil
	}
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + addr),
		HTTPClient:   OwnRequestBodies(&http.Client{Transport: transport}),
		// One attempt: a retry would hide a connection closed mid-answer.
		RetryMaxAttempts: 1,
		APIOptions: []func(*middleware.Stack) error{func(s *middleware.Stack) error {
			// Innermost in the deserialize step: runs once the SDK's
			// HTTP handler has returned, and closed the request body.
			return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("answered",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleDeserialize(ctx, in)
					answered <- struct{}{}
					return out, md, err
				}), middleware.After)
		}},
	})

	ctx := context.Background()
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("gated.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	q := created.QueueUrl
	for round := range 3 {
		entries := make([]types.SendMessageBatchRequestEntry, 10)
		for i := range entries {
			// Batches of several KiB, as the bench sends: larger than
			// net/http's write buffer.
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
				MessageBody: aws.String(strings.Repeat("x", 400) + strconv.Itoa(round*10+i)), MessageGroupId: aws.String("g")}
		}
		if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: entries}); err != nil {
			t.Fatalf("send batch %d: %v", round, err)
		}
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatalf("receive %d: %v", round, err)
		}
		if len(got.Messages) == 0 {
			t.Fatalf("receive %d: no messages", round)
		}
		del := make([]types.DeleteMessageBatchRequestEntry, len(got.Messages))
		for i, m := range got.Messages {
			del[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: del}); err != nil {
			t.Fatalf("delete %d: %v", round, err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections dialled for requests sent one after another; want 1 (the others were closed mid-request)", n)
	}
}

// gatedConn holds the write that completes each HTTP request until the SDK
// has had the answer to it (a token on answered), as a connection writer
// descheduled at that moment would be.
type gatedConn struct {
	net.Conn
	answered <-chan struct{}

	mu        sync.Mutex
	pending   []byte // bytes of the request being written
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		return n, err
	}
	c.mu.Lock()
	c.pending = append(c.pending, p[:n]...)
	complete := false
	if end := bytes.Index(c.pending, []byte("\r\n\r\n")); end >= 0 {
		length := 0
		for _, line := range strings.Split(string(c.pending[:end]), "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if total := end + 4 + length; len(c.pending) >= total {
			c.pending = append(c.pending[:0], c.pending[total:]...)
			complete = true
		}
	}
	c.mu.Unlock()
	if complete {
		select {
		case <-c.answered:
		case <-c.closed:
		}
	}
	return n, nil
}

func (c *gatedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
