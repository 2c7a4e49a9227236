package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go/aws/request"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// What fifoq does for harnesses and clients written for LocalStack beyond
// its developer endpoint (devapi_test.go): its health probe, and the
// ReceiveMessage override headers of LocalStack's TestSqsOverrideHeaders
// (tests/aws/services/sqs/test_sqs_developer_api.py), which its Lambda
// event source mapping sends.

// TestLocalstackHealth polls /_localstack/health as a harness written for
// LocalStack does, GET and HEAD: 200, JSON, services.sqs "running".
func TestLocalstackHealth(t *testing.T) {
	t.Parallel()
	env := Start(t)
	resp, err := env.HTTP.Get(env.URL + "/_localstack/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &doc) != nil || dig(doc, "services", "sqs") != "running" || dig(doc, "edition") != "fifoq" {
		t.Fatalf("GET /_localstack/health: %d %s", resp.StatusCode, b)
	}
	head, err := env.HTTP.Head(env.URL + "/_localstack/health")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /_localstack/health: %d", head.StatusCode)
	}
}

// The override headers, by the names LocalStack's constants.py gives them.
const (
	overrideCount = "x-localstack-sqs-override-message-count"
	overrideWait  = "x-localstack-sqs-override-wait-time-seconds"
)

// receiveWith receives through the protocol's SDK with extra headers, as
// LocalStack's Lambda poller does (it adds them in a botocore hook), and
// returns the bodies received.
func receiveWith(ctx context.Context, env *Env, proto string, q string, max, wait int32, headers map[string]string) ([]string, error) {
	var out []string
	if proto == "query" {
		res, err := env.V1.ReceiveMessageWithContext(ctx, &sqsv1.ReceiveMessageInput{QueueUrl: &q,
			MaxNumberOfMessages: awsv2.Int64(int64(max)), WaitTimeSeconds: awsv2.Int64(int64(wait))},
			request.WithSetRequestHeaders(headers))
		if err != nil {
			return nil, err
		}
		for _, m := range res.Messages {
			out = append(out, awsv2.ToString(m.Body))
		}
		return out, nil
	}
	res, err := env.V2.ReceiveMessage(ctx, &sqsv2.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: max, WaitTimeSeconds: wait},
		func(o *sqsv2.Options) {
			for k, v := range headers {
				o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(k, v))
			}
		})
	if err != nil {
		return nil, err
	}
	for _, m := range res.Messages {
		out = append(out, awsv2.ToString(m.Body))
	}
	return out, nil
}

// receiveWithAsync is receiveWith in a goroutine of its own.
func receiveWithAsync(ctx context.Context, env *Env, proto, q string, max, wait int32, headers map[string]string) <-chan receivedOrFailed {
	done := make(chan receivedOrFailed, 1)
	go func() {
		got, err := receiveWith(ctx, env, proto, q, max, wait, headers)
		msgs := make([]Msg, len(got))
		for i, b := range got {
			msgs[i].Body = b
		}
		done <- receivedOrFailed{msgs, err}
	}()
	return done
}

// sent returns the bodies sendMany gives messages from to to+n-1.
func sent(prefix string, from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// TestLocalstackOverrideMessageCount: the count header lifts a receive's
// count past 10, as LocalStack's
// test_receive_message_override_max_number_of_messages expects (20
// messages from one receive whose MaxNumberOfMessages says 10).
func TestLocalstackOverrideMessageCount(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "override-count", nil)
		sendMany(t, c, u, "", "m", 25)
		got, err := receiveWith(ctxT(t), env, c.Proto(), u, 10, 0, map[string]string{overrideCount: "20"})
		if err != nil || len(got) != 20 {
			t.Fatalf("a receive of 10 with %s: 20 took %d messages (%v)", overrideCount, len(got), err)
		}
		if n := numAttr(t, c, u, "ApproximateNumberOfMessagesNotVisible"); n != 20 {
			t.Fatalf("%d messages in flight after the receive, want 20", n)
		}
	})
}

// TestLocalstackOverrideWaitTime: the wait-time header makes a receive go
// on waiting, past the first messages it finds, until it holds its count
// or the wait ends, as LocalStack's
// test_receive_message_override_message_wait_time_seconds expects (nine
// messages there, the tenth sent during the wait: one answer of ten). The
// server's clock is the Env's fake one: the wait ends when the test
// advances it, and no longer than 40 s, whatever the header says.
func TestLocalstackOverrideWaitTime(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "override-wait", nil)
		sendMany(t, c, u, "", "m", 9)
		done := receiveWithAsync(ctx, env, c.Proto(), u, 10, 20, map[string]string{overrideWait: "30"})
		// It took the nine and waits for one more.
		waitForWaiters(t, env, 1)
		if n := numAttr(t, c, u, "ApproximateNumberOfMessagesNotVisible"); n != 9 {
			t.Fatalf("%d messages in flight while the receive waits, want 9", n)
		}
		mustSend(t, c, u, SendIn{Body: "m-9"})
		got := bodies(awaitReceive(t, done, "a receive waiting for its tenth message"))
		if !slices.Equal(got, sent("m", 0, 10)) {
			t.Fatalf("the receive answered %v, want m-0 to m-9", got)
		}

		// The wait ends with what it has when its time is up.
		u = mustCreate(t, c, "override-wait-end", nil)
		sendMany(t, c, u, "", "n", 2)
		done = receiveWithAsync(ctx, env, c.Proto(), u, 5, 20, map[string]string{overrideWait: "30"})
		waitForWaiters(t, env, 1)
		env.Clock.Advance(30 * time.Second)
		if got := bodies(awaitReceive(t, done, "a receive whose wait ended")); !slices.Equal(got, sent("n", 0, 2)) {
			t.Fatalf("the receive answered %v at the end of its wait, want n-0 and n-1", got)
		}
		// Or when what it took becomes visible again, if that is sooner.
		u = mustCreate(t, c, "override-wait-vis", map[string]string{"VisibilityTimeout": "5"})
		sendMany(t, c, u, "", "p", 2)
		done = receiveWithAsync(ctx, env, c.Proto(), u, 5, 20, map[string]string{overrideWait: "30"})
		waitForWaiters(t, env, 1)
		env.Clock.Advance(5 * time.Second)
		if got := bodies(awaitReceive(t, done, "a receive whose messages' visibility timeout ran out")); !slices.Equal(got, sent("p", 0, 2)) {
			t.Fatalf("the receive answered %v when its messages became visible again, want p-0 and p-1 once", got)
		}
		// A longer wait is cut to 40 s.
		u = mustCreate(t, c, "override-wait-cap", nil)
		done = receiveWithAsync(ctx, env, c.Proto(), u, 5, 20, map[string]string{overrideWait: "300", overrideCount: "not a number"})
		waitForWaiters(t, env, 1)
		env.Clock.Advance(40 * time.Second)
		if got := awaitReceive(t, done, "a receive asking to wait 300 s, 40 s on"); len(got) != 0 {
			t.Fatalf("an empty queue answered %v", bodies(got))
		}
	})
}

// TestLocalstackOverrideFIFO: a receive of more than 10 messages of a FIFO
// queue, waiting to fill its count, keeps SQS's group rules, since it is
// made of receives of up to ten: each group in order, and nothing more of
// a group it holds in flight, not even a message sent to it during the
// wait. Of group a's 15 it takes the first ten; the count fills from
// group b, sent during the wait.
func TestLocalstackOverrideFIFO(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		u := mustCreate(t, c, "override.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		sendMany(t, c, u, "a", "a", 15)
		done := receiveWithAsync(ctx, env, c.Proto(), u, 10, 20, map[string]string{overrideCount: "18", overrideWait: "30"})
		waitForWaiters(t, env, 1)
		if n := numAttr(t, c, u, "ApproximateNumberOfMessagesNotVisible"); n != 10 {
			t.Fatalf("%d messages in flight while the receive waits, want group a's first 10", n)
		}
		mustSend(t, c, u, SendIn{Body: "a-15", Group: "a"})
		sendMany(t, c, u, "b", "b", 8)
		got := bodies(awaitReceive(t, done, "a receive of 18 waiting for group b"))
		if want := append(sent("a", 0, 10), sent("b", 0, 8)...); !slices.Equal(got, want) {
			t.Fatalf("the receive answered %v, want %v", got, want)
		}
		if n := numAttr(t, c, u, "ApproximateNumberOfMessages"); n != 6 {
			t.Fatalf("%d messages visible after the receive, want a-10 to a-15", n)
		}
	})
}

// TestLocalstackOverrideNeedsValidRequest: the headers lift the bounds of
// the count and the wait, not the request's own: a MaxNumberOfMessages of
// 20 is still refused, as SQS (and LocalStack, without the header)
// refuses it; the client's hook sends 10 and the header 20.
func TestLocalstackOverrideNeedsValidRequest(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "override-invalid", nil)
		_, err := receiveWith(ctxT(t), env, c.Proto(), u, 20, 0, map[string]string{overrideCount: "20"})
		wantErr(t, err, "InvalidParameterValue")
		_, err = receiveWith(ctxT(t), env, c.Proto(), u, 10, 30, map[string]string{overrideWait: "30"})
		wantErr(t, err, "InvalidParameterValue")
	})
}
