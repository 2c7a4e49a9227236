package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestAWSCLI drives a FIFO queue with the AWS CLI, which speaks AWS JSON
// through botocore.
func TestAWSCLI(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("aws")
	if err != nil {
		testenv.ClientMissing(t, "the aws CLI is not installed")
	}
	env := Start(t)
	procEnv := testenv.ClientEnv(t)
	run := func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--endpoint-url", env.URL, "--output", "json", "sqs"}, args...)...)
		cmd.Env = procEnv
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("aws sqs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		res := map[string]any{}
		if len(strings.TrimSpace(string(out))) > 0 {
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("aws sqs %s printed %q: %v", args[0], out, err)
			}
		}
		return res
	}

	created := run("create-queue", "--queue-name", "cli.fifo", "--attributes", "FifoQueue=true,ContentBasedDeduplication=true")
	url, _ := created["QueueUrl"].(string)
	if url != env.URL+"/"+Account+"/cli.fifo" {
		t.Fatalf("create-queue QueueUrl = %q", url)
	}
	sent := run("send-message", "--queue-url", url, "--message-body", "from the CLI", "--message-group-id", "g")
	if sent["MessageId"] == nil || sent["SequenceNumber"] == nil || sent["MD5OfMessageBody"] != bodyMD5("from the CLI") {
		t.Fatalf("send-message printed %v", sent)
	}
	got := run("receive-message", "--queue-url", url, "--attribute-names", "All", "--max-number-of-messages", "10")
	msgs, _ := got["Messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("receive-message printed %v, want one message", got)
	}
	m := msgs[0].(map[string]any)
	if m["Body"] != "from the CLI" || m["MessageId"] != sent["MessageId"] {
		t.Fatalf("received %v, want the sent message %v", m, sent["MessageId"])
	}
	if attrs, _ := m["Attributes"].(map[string]any); attrs["MessageGroupId"] != "g" {
		t.Errorf("received attributes %v, want MessageGroupId g", m["Attributes"])
	}
	run("delete-message", "--queue-url", url, "--receipt-handle", m["ReceiptHandle"].(string))
	after := run("get-queue-attributes", "--queue-url", url, "--attribute-names", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
	if attrs, _ := after["Attributes"].(map[string]any); attrs["ApproximateNumberOfMessages"] != "0" || attrs["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Fatalf("after delete-message the queue has %v", after["Attributes"])
	}
}

// boto3Script sends, receives and deletes through boto3, and checks the
// typed error of a missing queue. It prints "ok" when all went well.
const boto3Script = `
import sys
import boto3

sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
q = sqs.create_queue(QueueName="boto.fifo",
                     Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
sent = sqs.send_message(QueueUrl=q, MessageBody="from boto3", MessageGroupId="g",
                        MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
msgs = sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                           MessageSystemAttributeNames=["All"],
                           MessageAttributeNames=["All"]).get("Messages", [])
assert len(msgs) == 1, msgs
m = msgs[0]
assert m["Body"] == "from boto3" and m["MessageId"] == sent["MessageId"], m
assert m["Attributes"]["MessageGroupId"] == "g", m
assert m["MessageAttributes"]["k"]["StringValue"] == "v", m
assert m["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"], (m, sent)
sqs.delete_message(QueueUrl=q, ReceiptHandle=m["ReceiptHandle"])
assert "Messages" not in sqs.receive_message(QueueUrl=q, WaitTimeSeconds=0)
try:
    sqs.get_queue_url(QueueName="no-such-queue")
except sqs.exceptions.QueueDoesNotExist:
    pass
else:
    raise AssertionError("get_queue_url of a missing queue succeeded")
print("ok")
`

// TestBoto3 drives a FIFO queue with boto3.
func TestBoto3(t *testing.T) {
	t.Parallel()
	python := testenv.Boto3Python(t)
	env := Start(t)
	runPython(t, python, boto3Script, 30*time.Second, env.URL)
}

// runPython runs script with python and args, in the clients'
// environment, and fails the test unless it prints just "ok".
func runPython(t *testing.T, python, script string, timeout time.Duration, args ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.py")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{path}, args...)...)
	cmd.Env = testenv.ClientEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("python script: %v\n%s", err, out)
	}
}
