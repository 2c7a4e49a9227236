package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	credentialsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/fifoq/fifoq/internal/testenv"
)

// The scenario of split_answers_test.go through the other real clients:
// the AWS SDK for Go v1 (AWS Query), boto3 and the AWS CLI. Each is a
// shorter form of the SDK's scenario, each transcript compared between a
// split queue and a plain one the same way.

// queryScenario runs the scenario through the AWS SDK for Go v1, which
// speaks AWS Query (form-encoded requests, XML answers), with its own
// retries of 5xx answers.
func queryScenario(t *testing.T, c *memCluster, url, foreign string) []string {
	t.Helper()
	tr := newTranscript(url)
	client := sqsv1.New(session.Must(session.NewSession(&awsv1.Config{
		Endpoint:    awsv1.String("http://" + c.nodes[1].httpAddr),
		Region:      awsv1.String("us-east-1"),
		Credentials: credentialsv1.NewStaticCredentials("test", "test", ""),
		MaxRetries:  awsv1.Int(10),
	})))
	errText := func(err error) string {
		var ae awserr.RequestFailure
		if errors.As(err, &ae) {
			return fmt.Sprintf("error %d %s: %s", ae.StatusCode(), ae.Code(), ae.Message())
		}
		return "error: " + err.Error()
	}
	entry := func(id, group, body string) *sqsv1.SendMessageBatchRequestEntry {
		return &sqsv1.SendMessageBatchRequestEntry{Id: awsv1.String(id), MessageBody: awsv1.String(body),
			MessageGroupId: awsv1.String(group), MessageDeduplicationId: awsv1.String("d-" + body)}
	}
	var ten []*sqsv1.SendMessageBatchRequestEntry
	for i := range 10 {
		ten = append(ten, entry("e"+strconv.Itoa(i), "g"+strconv.Itoa(i+3), "c"+strconv.Itoa(i)))
	}
	noDedup := []*sqsv1.SendMessageBatchRequestEntry{entry("ok", "g3", "y3"), entry("nodedup", "g4", "y4")}
	noDedup[1].MessageDeduplicationId = nil
	for _, b := range []struct {
		what    string
		entries []*sqsv1.SendMessageBatchRequestEntry
	}{{"ten groups", ten}, {"ten groups again", ten}, {"one without a deduplication id", noDedup}} {
		out, err := client.SendMessageBatch(&sqsv1.SendMessageBatchInput{QueueUrl: awsv1.String(url), Entries: b.entries})
		if err != nil {
			tr.add("batch %s: %s", b.what, errText(err))
			continue
		}
		for _, e := range out.Successful {
			tr.add("batch %s: %s ok, id %s md5 %s", b.what, awsv1.StringValue(e.Id), tr.id(awsv1.StringValue(e.MessageId)), awsv1.StringValue(e.MD5OfMessageBody))
		}
		for _, e := range out.Failed {
			tr.add("batch %s: %s failed, %s", b.what, awsv1.StringValue(e.Id), awsv1.StringValue(e.Code))
		}
	}
	attrs, err := client.GetQueueAttributes(&sqsv1.GetQueueAttributesInput{QueueUrl: awsv1.String(url),
		AttributeNames: awsv1.StringSlice([]string{"ApproximateNumberOfMessages", "DeduplicationScope", "FifoQueue", "ContentBasedDeduplication"})})
	if err != nil {
		t.Fatalf("attributes: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(attrs.Attributes)) {
		tr.add("attribute %s=%s", k, awsv1.StringValue(attrs.Attributes[k]))
	}
	receive := func(attempt string) []*sqsv1.Message {
		out, err := client.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: awsv1.String(url), MaxNumberOfMessages: awsv1.Int64(10),
			WaitTimeSeconds: awsv1.Int64(1), VisibilityTimeout: awsv1.Int64(60), ReceiveRequestAttemptId: awsv1.String(attempt),
			AttributeNames: awsv1.StringSlice([]string{"All"})})
		if err != nil {
			t.Fatalf("receive %s: %v", attempt, err)
		}
		return out.Messages
	}
	ids := func(msgs []*sqsv1.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, awsv1.StringValue(m.MessageId))
		}
		slices.Sort(out)
		return out
	}
	first := receive("r1")
	tr.add("receive r1: something %v; retried alike: %v", len(first) > 0, slices.Equal(ids(first), ids(receive("r1"))))
	received := map[string][]string{}
	msgs := first
	for round := 0; len(msgs) > 0; round++ {
		if round > 30 {
			t.Fatal("still receiving after 30 rounds")
		}
		var del []*sqsv1.DeleteMessageBatchRequestEntry
		for i, m := range msgs {
			g := awsv1.StringValue(m.Attributes["MessageGroupId"])
			received[g] = append(received[g], awsv1.StringValue(m.Body))
			del = append(del, &sqsv1.DeleteMessageBatchRequestEntry{Id: awsv1.String("d" + strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if round == 0 {
			del = append(del[:min(len(del), 9)], &sqsv1.DeleteMessageBatchRequestEntry{Id: awsv1.String("garbage"), ReceiptHandle: awsv1.String("garbage")})
		}
		out, err := client.DeleteMessageBatch(&sqsv1.DeleteMessageBatchInput{QueueUrl: awsv1.String(url), Entries: del})
		if err != nil {
			t.Fatalf("delete batch: %v", err)
		}
		for _, f := range out.Failed {
			tr.add("delete batch %d: %s failed, %s sender fault %v", round, awsv1.StringValue(f.Id), awsv1.StringValue(f.Code), awsv1.BoolValue(f.SenderFault))
		}
		if round == 0 && len(msgs) > 9 {
			// The tenth, left out to make room for the garbage entry.
			if _, err := client.DeleteMessage(&sqsv1.DeleteMessageInput{QueueUrl: awsv1.String(url), ReceiptHandle: msgs[9].ReceiptHandle}); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
		msgs = receive("r-drain-" + strconv.Itoa(round))
	}
	for _, g := range slices.Sorted(maps.Keys(received)) {
		tr.add("group %s received in order: %s", g, strings.Join(received[g], ","))
	}
	_, err = client.DeleteMessage(&sqsv1.DeleteMessageInput{QueueUrl: awsv1.String(url), ReceiptHandle: awsv1.String(foreign)})
	tr.add("delete by another queue's handle: %s", errText(err))
	_, err = client.DeleteMessage(&sqsv1.DeleteMessageInput{QueueUrl: awsv1.String(url), ReceiptHandle: awsv1.String("garbage")})
	tr.add("delete by no handle: %s", errText(err))
	for n := 1; n <= 2; n++ {
		if _, err := client.PurgeQueue(&sqsv1.PurgeQueueInput{QueueUrl: awsv1.String(url)}); err != nil {
			tr.add("purge %d: %s", n, errText(err))
		} else {
			tr.add("purge %d: ok", n)
		}
	}
	if _, err := client.DeleteQueue(&sqsv1.DeleteQueueInput{QueueUrl: awsv1.String(url)}); err != nil {
		t.Fatalf("delete queue: %v", err)
	}
	return tr.lines
}

// boto3Scenario runs testdata/split_answers_boto3.py on the queue at url
// through the third member, and returns the transcript it prints.
func boto3Scenario(t *testing.T, c *memCluster, python, url, foreign string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "split_answers_boto3.py"), "http://"+c.nodes[2].httpAddr, url, foreign)
	cmd.Env = testenv.ClientEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the boto3 scenario on %s: %v\n%s", url, err, stderr.String())
	}
	var lines []string
	if err := json.Unmarshal(out, &lines); err != nil {
		t.Fatalf("the boto3 scenario printed %q: %v", out, err)
	}
	return lines
}

// cliScenario runs a short form of the scenario through the AWS CLI, each
// command through the next member in turn.
func cliScenario(t *testing.T, c *memCluster, cli, url, foreign string) []string {
	t.Helper()
	tr := newTranscript(url)
	env := testenv.ClientEnv(t)
	turn := 0
	// run runs one command and returns what it printed, or the error
	// line it wrote ("An error occurred (Code) when calling ...").
	run := func(args ...string) (map[string]any, string) {
		t.Helper()
		turn++
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append([]string{"--endpoint-url", "http://" + c.nodes[turn%len(c.nodes)].httpAddr, "--output", "json", "sqs"}, args...)...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if !strings.Contains(msg, "An error occurred") {
				t.Fatalf("aws sqs %s: %v\n%s", strings.Join(args, " "), err, msg)
			}
			return nil, msg
		}
		res := map[string]any{}
		if len(strings.TrimSpace(string(out))) > 0 {
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("aws sqs %s printed %q: %v", args[0], out, err)
			}
		}
		return res, ""
	}
	list := func(v any) []map[string]any {
		var out []map[string]any
		items, _ := v.([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			out = append(out, m)
		}
		return out
	}
	var ten []map[string]string
	for i := range 10 {
		ten = append(ten, map[string]string{"Id": "e" + strconv.Itoa(i), "MessageBody": "c" + strconv.Itoa(i),
			"MessageGroupId": "g" + strconv.Itoa(i+3), "MessageDeduplicationId": "d" + strconv.Itoa(i)})
	}
	noDedup := []map[string]string{ten[0], {"Id": "nodedup", "MessageBody": "y", "MessageGroupId": "g4"}}
	for _, b := range []struct {
		what    string
		entries []map[string]string
	}{{"ten groups", ten}, {"one without a deduplication id", noDedup}} {
		entries, _ := json.Marshal(b.entries)
		out, failed := run("send-message-batch", "--queue-url", url, "--entries", string(entries))
		if failed != "" {
			tr.add("batch %s: %s", b.what, failed)
			continue
		}
		for _, e := range list(out["Successful"]) {
			tr.add("batch %s: %v ok, id %s md5 %v", b.what, e["Id"], tr.id(fmt.Sprint(e["MessageId"])), e["MD5OfMessageBody"])
		}
		for _, e := range list(out["Failed"]) {
			tr.add("batch %s: %v failed, %v", b.what, e["Id"], e["Code"])
		}
	}
	out, _ := run("get-queue-attributes", "--queue-url", url, "--attribute-names", "ApproximateNumberOfMessages", "DeduplicationScope")
	tr.add("attributes: %v", out["Attributes"])
	received := map[string][]string{}
	for round := 0; ; round++ {
		if round > 30 {
			t.Fatal("still receiving after 30 rounds")
		}
		out, failed := run("receive-message", "--queue-url", url, "--max-number-of-messages", "10", "--wait-time-seconds", "1",
			"--attribute-names", "All", "--receive-request-attempt-id", "r"+strconv.Itoa(round))
		if failed != "" {
			t.Fatalf("receive-message: %s", failed)
		}
		msgs := list(out["Messages"])
		if len(msgs) == 0 {
			break
		}
		var del []map[string]string
		for i, m := range msgs {
			a, _ := m["Attributes"].(map[string]any)
			g := fmt.Sprint(a["MessageGroupId"])
			received[g] = append(received[g], fmt.Sprint(m["Body"]))
			del = append(del, map[string]string{"Id": "d" + strconv.Itoa(i), "ReceiptHandle": fmt.Sprint(m["ReceiptHandle"])})
		}
		entries, _ := json.Marshal(del)
		if _, failed := run("delete-message-batch", "--queue-url", url, "--entries", string(entries)); failed != "" {
			t.Fatalf("delete-message-batch: %s", failed)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(received)) {
		tr.add("group %s received in order: %s", g, strings.Join(received[g], ","))
	}
	_, failed := run("delete-message", "--queue-url", url, "--receipt-handle", foreign)
	tr.add("delete by another queue's handle: %s", failed)
	for n := 1; n <= 2; n++ {
		_, failed := run("purge-queue", "--queue-url", url)
		tr.add("purge %d: %s", n, failed)
	}
	_, failed = run("delete-queue", "--queue-url", url)
	tr.add("delete queue: %s", failed)
	return tr.lines
}
