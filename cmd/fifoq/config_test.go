package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// elasticMQServerConf is a whole ElasticMQ server config of the
// converter's tests: FIFO queues with a dead-letter queue and tags, a
// delayed standard queue, copyTo and moveTo.
const elasticMQServerConf = "../../internal/config/elasticmq/testdata/server.conf"

// TestConfigFromElasticMQEndToEnd converts an ElasticMQ config with the
// built binary, serves the result with fifoq serve --config, and checks
// with the AWS SDK that the queues exist with ElasticMQ's settings and
// that the dead-letter queue takes a message received too often.
func TestConfigFromElasticMQEndToEnd(t *testing.T) {
	fifoq, _ := builtBinaries(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "fifoq.yaml")

	var yamlOut, warnings bytes.Buffer
	convert := exec.Command(fifoq, "config", "from-elasticmq", elasticMQServerConf)
	convert.Stdout, convert.Stderr = &yamlOut, &warnings
	if err := convert.Run(); err != nil {
		t.Fatalf("fifoq config from-elasticmq: %v\n%s", err, warnings.String())
	}
	for _, want := range []string{"warning: " + elasticMQServerConf + ":56: queue emails: copyTo = audit", "queue legacy-emails: moveTo = emails"} {
		if !strings.Contains(warnings.String(), want) {
			t.Errorf("the warnings lack %q:\n%s", want, warnings.String())
		}
	}
	// Standard input converts the same.
	src, err := os.ReadFile(elasticMQServerConf)
	if err != nil {
		t.Fatal(err)
	}
	fromStdin := exec.Command(fifoq, "config", "from-elasticmq", "-")
	fromStdin.Stdin = bytes.NewReader(src)
	stdinOut, err := fromStdin.Output()
	if err != nil {
		t.Fatalf("from standard input: %v", err)
	}
	if strip := func(b []byte) string { _, rest, _ := strings.Cut(string(b), "queues:"); return rest }; strip(stdinOut) != strip(yamlOut.Bytes()) {
		t.Errorf("from standard input:\n%s\nfrom the file:\n%s", stdinOut, yamlOut.Bytes())
	}
	if err := os.WriteFile(out, yamlOut.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	endpoint := serveBinary(t, fifoq, "serve", "--in-memory", "--config", out)
	ctx := context.Background()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})

	attrs := func(name string) map[string]string {
		t.Helper()
		url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("queue %s: %v", name, err)
		}
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("attributes of %s: %v", name, err)
		}
		return out.Attributes
	}
	for name, want := range map[string]map[string]string{
		"payments.fifo":     {"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "45", "ReceiveMessageWaitTimeSeconds": "20", "DelaySeconds": "0"},
		"payments-dlq.fifo": {"FifoQueue": "true", "VisibilityTimeout": "30"},
		"emails":            {"DelaySeconds": "60", "VisibilityTimeout": "30"},
		"audit":             {"DelaySeconds": "0"},
		"legacy-emails":     {"DelaySeconds": "0"},
	} {
		got := attrs(name)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("queue %s: %s = %q, want %q", name, k, got[k], v)
			}
		}
	}
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs("payments.fifo")["RedrivePolicy"]), &redrive); err != nil ||
		redrive.DeadLetterTargetArn != "arn:aws:sqs:us-east-1:000000000000:payments-dlq.fifo" || redrive.MaxReceiveCount != float64(5) {
		t.Errorf("RedrivePolicy of payments.fifo %+v (%v), want payments-dlq.fifo after 5 receives", redrive, err)
	}
	paymentsURL := aws.String(endpoint + "/000000000000/payments.fifo")
	tags, err := client.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: paymentsURL})
	if err != nil || tags.Tags["team"] != "billing" || tags.Tags["cost-center"] != "1234" {
		t.Errorf("tags of payments.fifo %v (%v), want team billing, cost-center 1234", tags, err)
	}

	// The dead-letter link works: a message received 5 times without
	// being deleted moves to payments-dlq.fifo on the next receive.
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: paymentsURL, MessageBody: aws.String("poison"), MessageGroupId: aws.String("g")}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: paymentsURL, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			if len(got.Messages) != 0 {
				t.Fatalf("receive %d still got the message", i+1)
			}
			break
		}
		if len(got.Messages) != 1 {
			t.Fatalf("receive %d got %d messages, want the one sent", i+1, len(got.Messages))
		}
		if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: paymentsURL,
			ReceiptHandle: got.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(endpoint + "/000000000000/payments-dlq.fifo")})
	if err != nil || len(dead.Messages) != 1 || aws.ToString(dead.Messages[0].Body) != "poison" {
		t.Errorf("the dead-letter queue gave %+v (%v), want the poison message", dead, err)
	}
}

// TestConfigCommandRefuses checks the exit codes and messages of fifoq
// config's mistakes: 2 for a usage error, 1 for a file that cannot be
// converted, with nothing written to standard output.
func TestConfigCommandRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("include file(\"queues.conf\")\nqueues {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config"}, 2, "fifoq config from-elasticmq FILE"},
		{[]string{"config", "to-elasticmq", "x"}, 2, `unknown subcommand "to-elasticmq"`},
		{[]string{"config", "from-elasticmq"}, 2, "Usage: fifoq config from-elasticmq FILE"},
		{[]string{"config", "from-elasticmq", "a", "b"}, 2, "Usage: fifoq config from-elasticmq FILE"},
		{[]string{"config", "from-elasticmq", filepath.Join(dir, "missing.conf")}, 1, "no such file"},
		{[]string{"config", "from-elasticmq", bad}, 1, bad + ":1: include file(\"queues.conf\"): included files are not read"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("fifoq %s: exit %d, stderr %q, stdout %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr.String(), stdout.String(), tc.code, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"config", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "from-elasticmq") {
		t.Errorf("fifoq config --help: exit %d, %q", code, stdout.String())
	}
}

// serveBinary runs the built fifoq with args and --listen on a free
// loopback port, waits until its readiness probe answers, stops it with
// SIGTERM when the test ends, and returns its endpoint URL.
func serveBinary(t *testing.T, fifoq string, args ...string) string {
	t.Helper()
	endpoint := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	var logs bytes.Buffer
	cmd := exec.Command(fifoq, append(args, "--listen", strings.TrimPrefix(endpoint, "http://"))...)
	cmd.Env = containerEnv(nil, nil, 0)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(endpoint + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("fifoq %s exited (%v) before it was ready", strings.Join(args, " "), err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fifoq %s was not ready after 30s", strings.Join(args, " ")) // the cleanup logs its output, once it has exited
		}
		time.Sleep(50 * time.Millisecond)
	}
}
