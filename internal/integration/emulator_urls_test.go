package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// emulatorURLs are the URLs other SQS emulators give the queue name of
// this server: ElasticMQ's /queue/NAME and LocalStack's path form
// /queue/REGION/ACCOUNT/NAME, as code and scripts written against them
// carry them.
func emulatorURLs(env *Env, name string) map[string]string {
	return map[string]string{
		"elasticmq":  env.URL + "/queue/" + name,
		"localstack": env.URL + "/queue/" + Region + "/" + Account + "/" + name,
	}
}

// TestEmulatorQueueURLs drives a FIFO queue through the other emulators'
// URL forms with both SDK protocols: every action on a queue takes them
// as QueueUrl and acts on the queue fifoq names /ACCOUNT/NAME.
func TestEmulatorQueueURLs(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		own := mustCreate(t, c, "orders.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		for form, u := range emulatorURLs(env, "orders.fifo") {
			body := "via " + form
			if _, err := c.Send(ctx, u, SendIn{Body: body, Group: "g"}); err != nil {
				t.Fatalf("%s: send through %s: %v", form, u, err)
			}
			if n := numAttr(t, c, u, "ApproximateNumberOfMessages"); n != 1 {
				t.Fatalf("%s: %d messages through %s, want 1", form, n, u)
			}
			msgs := mustReceive(t, c, own, 10)
			wantBodies(t, msgs, body)
			ok(t, c.ChangeVisibility(ctx, u, msgs[0].Handle, 30))
			ok(t, c.Delete(ctx, u, msgs[0].Handle))
			ok(t, c.Tag(ctx, u, map[string]string{"form": form}))
			tags, err := c.ListTags(ctx, own)
			if err != nil || tags["form"] != form {
				t.Fatalf("%s: tags of the queue after tagging through %s: %v, %v", form, u, tags, err)
			}
		}
		// A queue that does not exist is as missing in these forms.
		_, err := c.Send(ctx, env.URL+"/queue/no-such-queue", SendIn{Body: "x"})
		wantErr(t, err, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
	})
}

// TestEmulatorQueuePathQuery posts Query requests to a queue's URL in the
// other emulators' forms without a QueueUrl parameter, as clients of the
// Query protocol (Perl's Amazon::SQS::Simple, boto 2) address a queue.
func TestEmulatorQueuePathQuery(t *testing.T) {
	t.Parallel()
	env := Start(t)
	own := mustCreate(t, v2Client{env.V2}, "paths", nil)
	for form, u := range emulatorURLs(env, "paths") {
		resp, err := env.HTTP.PostForm(u, url.Values{"Action": {"SendMessage"}, "Version": {"2012-11-05"}, "MessageBody": {form}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "<MessageId>") {
			t.Fatalf("%s: SendMessage posted to %s: %d %s", form, u, resp.StatusCode, b)
		}
		// ListQueues is no action on a queue: refused there, as at /ACCOUNT/NAME.
		resp, err = env.HTTP.PostForm(u, url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: ListQueues posted to %s answered %d, want 400", form, u, resp.StatusCode)
		}
	}
	if n := numAttr(t, v2Client{env.V2}, own, "ApproximateNumberOfMessages"); n != 2 {
		t.Fatalf("the queue holds %d messages, want the 2 posted to its other URLs", n)
	}
}

// emulatorURLScript sends through boto3 to the queue URL given in argv[2],
// receives through argv[3], deletes, and prints "ok".
const emulatorURLScript = `
import sys
import boto3

sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
for q in sys.argv[2:]:
    sqs.send_message(QueueUrl=q, MessageBody="boto3 " + q)
    msgs = sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    assert [m["Body"] for m in msgs] == ["boto3 " + q], msgs
    sqs.delete_message(QueueUrl=q, ReceiptHandle=msgs[0]["ReceiptHandle"])
print("ok")
`

// TestEmulatorQueueURLsBoto3AndCLI runs boto3 and the AWS CLI against the
// other emulators' queue URLs.
func TestEmulatorQueueURLsBoto3AndCLI(t *testing.T) {
	t.Parallel()
	python := testenv.Boto3Python(t)
	aws, err := exec.LookPath("aws")
	if err != nil {
		testenv.ClientMissing(t, "the aws CLI is not installed")
	}
	env := Start(t)
	mustCreate(t, v2Client{env.V2}, "legacy", nil)
	forms := emulatorURLs(env, "legacy")
	procEnv := testenv.ClientEnv(t)

	runPython(t, python, emulatorURLScript, 60*time.Second, env.URL, forms["elasticmq"], forms["localstack"])

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for form, u := range forms {
		cmd := exec.CommandContext(ctx, aws, "--endpoint-url", env.URL, "--output", "json", "sqs", "send-message",
			"--queue-url", u, "--message-body", "cli "+form)
		cmd.Env = procEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aws sqs send-message --queue-url %s: %v\n%s", u, err, out)
		}
		var sent map[string]any
		if err := json.Unmarshal(out, &sent); err != nil || sent["MessageId"] == nil {
			t.Fatalf("aws sqs send-message --queue-url %s printed %s", u, out)
		}
	}
	if n := numAttr(t, v2Client{env.V2}, env.URL+"/"+Account+"/legacy", "ApproximateNumberOfMessages"); n != 2 {
		t.Fatalf("the queue holds %d messages, want the CLI's 2", n)
	}
}
