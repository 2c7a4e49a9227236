package fifoqtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running
// when they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNewStopsTheServerWhenTheTestEnds(t *testing.T) {
	var url string
	t.Run("inner", func(t *testing.T) {
		srv := New(t)
		url = srv.URL()
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("URL %q is not on loopback", url)
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/readyz answered %d", resp.StatusCode)
		}
	})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := c.Get(url + "/readyz"); err == nil {
		resp.Body.Close()
		t.Fatalf("the server still answers after its test ended")
	}
}

func TestStartRefusesBadOptions(t *testing.T) {
	for name, opts := range map[string][]Option{
		"account":         {WithAccount("12")},
		"fifo name":       {WithQueues(Queue{Name: "a.fifo"})},
		"attribute":       {WithQueues(Queue{Name: "a", Attributes: map[string]string{"DelaySeconds": "901"}})},
		"dead-letter":     {WithQueues(Queue{Name: "a", DeadLetter: &DeadLetter{Queue: "b", MaxReceiveCount: 1}})},
		"two policies":    {WithQueues(Queue{Name: "a", Policy: "{}", Attributes: map[string]string{"Policy": "{}"}})},
		"declared twice":  {WithQueues(Queue{Name: "a"}, Queue{Name: "a"})},
		"data dir a file": {WithDataDir("/dev/null")},
	} {
		srv, err := Start(opts...)
		if err == nil {
			srv.Close()
			t.Errorf("%s: Start succeeded", name)
		}
	}
}

// waitPending waits until the fake clock has n timers pending: a long poll
// waits on one for its end, and on another for the next message that
// becomes visible, so that an Advance made after it reaches it.
func waitPending(t *testing.T, c *Clock, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for c.fake.Pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the fake clock has %d timers pending after 20 s, want %d", c.fake.Pending(), n)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func TestLongPollsFollowTheFakeClock(t *testing.T) {
	clock := NewClock(epoch)
	srv := New(t, WithClock(clock), WithQueues(Queue{Name: "q", Attributes: map[string]string{"VisibilityTimeout": "10"}}))
	client := srv.Client()
	ctx := context.Background()
	url := aws.String(srv.QueueURL("q"))

	type result struct {
		n   int
		err error
	}
	poll := func(wait int32) chan result {
		c := make(chan result, 1)
		go func() {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: wait})
			if err != nil {
				c <- result{err: err}
				return
			}
			c <- result{n: len(out.Messages)}
		}()
		return c
	}

	// A long poll of an empty queue ends when the clock passes its wait.
	done := poll(20)
	waitPending(t, clock, 1)
	clock.Advance(19 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("a 20 s long poll ended after 19 s of the clock: %+v", r)
	default:
	}
	clock.Advance(time.Second)
	if r := <-done; r.err != nil || r.n != 0 {
		t.Fatalf("long poll past its wait: %+v, want no message", r)
	}

	// A long poll waiting for a delayed message gets it when the clock
	// reaches the end of the delay.
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("later"), DelaySeconds: 10}); err != nil {
		t.Fatal(err)
	}
	done = poll(20)
	waitPending(t, clock, 2)
	clock.Advance(10 * time.Second)
	if r := <-done; r.err != nil || r.n != 1 {
		t.Fatalf("long poll after the delay: %+v, want the message", r)
	}

	// And one waiting for an in-flight message gets it back when its
	// visibility timeout runs out.
	done = poll(20)
	waitPending(t, clock, 2)
	clock.Advance(10 * time.Second)
	if r := <-done; r.err != nil || r.n != 1 {
		t.Fatalf("long poll after the visibility timeout: %+v, want the message", r)
	}
}

func TestDelaysAreMeasuredOnTheFakeClock(t *testing.T) {
	clock := NewClock(epoch)
	srv := New(t, WithClock(clock), WithQueues(Queue{Name: "q"}))
	client := srv.Client()
	ctx := context.Background()
	url := aws.String(srv.QueueURL("q"))
	if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: url}); err != nil {
		t.Fatal(err)
	}
	_, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	var gone *types.QueueDeletedRecently
	if !errors.As(err, &gone) {
		t.Fatalf("CreateQueue at once after DeleteQueue: %v, want QueueDeletedRecently", err)
	}
	clock.Advance(60 * time.Second)
	if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatalf("CreateQueue 60 s of the clock later: %v", err)
	}

	noDelay := New(t, WithRecreateDelay(0), WithPurgeDelay(0), WithQueues(Queue{Name: "q"}))
	c2 := noDelay.Client()
	url2 := aws.String(noDelay.QueueURL("q"))
	for range 2 {
		if _, err := c2.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: url2}); err != nil {
			t.Fatalf("PurgeQueue twice with WithPurgeDelay(0): %v", err)
		}
	}
	if _, err := c2.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: url2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatalf("CreateQueue at once after DeleteQueue with WithRecreateDelay(0): %v", err)
	}
}

func TestAccountAndRegion(t *testing.T) {
	srv := New(t, WithAccount("123456789012"), WithRegion("eu-west-1"), WithQueues(Queue{Name: "q"}))
	out, err := srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(srv.QueueURL("q")), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Attributes["QueueArn"], "arn:aws:sqs:eu-west-1:123456789012:q"; got != want {
		t.Errorf("QueueArn %q, want %q", got, want)
	}
}

func TestDataDirKeepsStateAcrossServers(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first := New(t, WithDataDir(dir), WithQueues(Queue{Name: "q.fifo", Attributes: map[string]string{"FifoQueue": "true"}}))
	if _, err := first.Client().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(first.QueueURL("q.fifo")),
		MessageBody: aws.String("kept"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("1")}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := New(t, WithDataDir(dir))
	out, err := second.Client().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(second.QueueURL("q.fifo"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || *out.Messages[0].Body != "kept" {
		t.Fatalf("the restarted server received %+v, want the message sent before", out.Messages)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(entries)
}

// TestManyServersLeakNothing starts and stops 100 servers, each used by
// a client over HTTP (long poll included), and checks that no goroutine
// and no file descriptor is left.
func TestManyServersLeakNothing(t *testing.T) {
	running := goleak.IgnoreCurrent()
	before := openFDs(t)
	ctx := context.Background()
	for i := range 100 {
		opts := []Option{WithQueues(Queue{Name: "q.fifo", Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})}
		if i%25 == 0 {
			// A few on the durable log too, which has files and
			// goroutines of its own.
			opts = append(opts, WithDataDir(t.TempDir()))
		}
		srv, err := Start(opts...)
		if err != nil {
			t.Fatal(err)
		}
		client := srv.Client()
		url := aws.String(srv.QueueURL("q.fifo"))
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m"), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v %+v", err, out)
		}
		// A long poll left waiting: Close must answer it.
		done := make(chan error, 1)
		go func() {
			_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 20})
			done <- err
		}()
		for longPolls(srv) == 0 {
			select {
			case err := <-done:
				t.Fatalf("the long poll ended before Close: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the long poll waiting at Close: %v", err)
		}
	}
	goleak.VerifyNone(t, running)
	// Closed connections leave the descriptor table as the kernel gets to
	// them; wait for that rather than for a fixed time.
	after := openFDs(t)
	for tries := 0; after > before && tries < 500; tries++ {
		time.Sleep(10 * time.Millisecond)
		after = openFDs(t)
	}
	if after > before {
		t.Errorf("%d file descriptors open before 100 servers, %d after", before, after)
	}
}

// longPolls returns the number of receives waiting on srv, from its
// metrics.
func longPolls(srv *Server) int {
	resp, err := srv.client.Get(srv.URL() + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "fifoq_long_poll_waiters "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
