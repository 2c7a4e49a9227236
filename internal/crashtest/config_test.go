package crashtest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// These tests run "fifoq serve --config" with the repository's example
// file, restart it with the same and with changed files, and check the
// queues through the SQS API with the AWS SDK.

// exampleFile is the repository's fifoq.example.yaml.
func exampleFile(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "fifoq.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// exampleQueues are the queues of the example file.
var exampleQueues = []string{"orders-dlq.fifo", "orders.fifo", "notifications"}

// configLoaded extracts the counts of the "config file loaded" log line.
var configLoaded = regexp.MustCompile(`msg="config file loaded" file=\S+ queues_created=(\d+) queues_updated=(\d+) queues_unchanged=(\d+)`)

// wantLoaded checks the log line of the config file's queues.
func wantLoaded(t *testing.T, p *fifoqProc, created, updated, unchanged string) {
	t.Helper()
	// The server logs the line before it serves, but the line reaches
	// p.out through a pipe copier that may still be behind when the
	// server first answers: wait for it a little.
	m := configLoaded.FindStringSubmatch(p.out.String())
	for deadline := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m = configLoaded.FindStringSubmatch(p.out.String())
	}
	if m == nil {
		t.Fatalf("no \"config file loaded\" line; output:\n%s", p.out)
	}
	if m[1] != created || m[2] != updated || m[3] != unchanged {
		t.Errorf("config file loaded: created %s updated %s unchanged %s, want %s %s %s", m[1], m[2], m[3], created, updated, unchanged)
	}
}

// queueState is every attribute and tag of each example queue.
type queueState map[string]map[string]string

func readState(t *testing.T, c *sqs.Client, base string) queueState {
	t.Helper()
	ctx := context.Background()
	st := queueState{}
	for _, name := range exampleQueues {
		url := base + "/000000000000/" + name
		attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("GetQueueAttributes %s: %v", name, err)
		}
		tags, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
		if err != nil {
			t.Fatalf("ListQueueTags %s: %v", name, err)
		}
		m := map[string]string{}
		for k, v := range attrs.Attributes {
			m[k] = v
		}
		for k, v := range tags.Tags {
			m["tag:"+k] = v
		}
		st[name] = m
	}
	return st
}

// serveConfig starts fifoq serve with a config file on a fresh port, by
// FIFOQ_LISTEN (over the file's listen:, as the precedence says), and
// waits until it answers.
func serveConfig(t *testing.T, config, dataDir string) (*fifoqProc, *sqs.Client, string) {
	t.Helper()
	addr := freeAddr(t)
	p := launch(t, []string{"FIFOQ_LISTEN=" + addr}, "serve", "--config", config, "--data-dir", dataDir)
	base := "http://" + addr
	p.waitReady(t, answers(plainHTTP(), base))
	return p, newClient(addr), base
}

// stopClean stops the server and checks that it exited 0.
func stopClean(t *testing.T, p *fifoqProc) {
	t.Helper()
	p.stop()
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0; output:\n%s", code, p.out)
	}
}

// nextSecond waits until the wall clock is in a later second than now, so
// that a queue modified after it would show another LastModifiedTimestamp.
func nextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
}

func TestConfigFileExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	ctx := context.Background()
	dataDir := t.TempDir()

	// First start: every queue is created as declared.
	p, c, base := serveConfig(t, exampleFile(t), dataDir)
	wantLoaded(t, p, "3", "0", "0")
	st := readState(t, c, base)
	for q, want := range map[string]map[string]string{
		"orders-dlq.fifo": {"FifoQueue": "true", "MessageRetentionPeriod": "1209600"},
		"orders.fifo": {"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30",
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq.fifo","maxReceiveCount":5}`,
			"tag:team":      "payments", "tag:env": "dev"},
		"notifications": {"DelaySeconds": "5", "ReceiveMessageWaitTimeSeconds": "20", "tag:team": "platform"},
	} {
		for k, v := range want {
			if st[q][k] != v {
				t.Errorf("%s %s = %q, want %q", q, k, st[q][k], v)
			}
		}
	}
	// The policy: account 111111111111 may send to orders.fifo, not receive.
	orders := base + "/000000000000/orders.fifo"
	partner := signedClient(base, plainHTTP(), "111111111111", "any")
	if _, err := partner.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(orders), MessageBody: aws.String("from a partner"), MessageGroupId: aws.String("g")}); err != nil {
		t.Errorf("partner SendMessage: %v", err)
	}
	_, err := partner.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(orders)})
	if code := apiCode(err); code != "AccessDenied" {
		t.Errorf("partner ReceiveMessage: %v, want AccessDenied", err)
	}
	stranger := signedClient(base, plainHTTP(), "222222222222", "any")
	_, err = stranger.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(orders), MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	if code := apiCode(err); code != "AccessDenied" {
		t.Errorf("another account's SendMessage: %v, want AccessDenied", err)
	}
	st = readState(t, c, base) // with the message sent
	stopClean(t, p)

	// A restart with the same file changes nothing.
	nextSecond()
	p, c, base = serveConfig(t, exampleFile(t), dataDir)
	wantLoaded(t, p, "0", "0", "3")
	if again := readState(t, c, base); !sameState(t, st, again) {
		t.Errorf("a restart with the same file changed the queues")
	}
	stopClean(t, p)

	// A restart with a changed attribute and tag converges, and touches
	// nothing else.
	nextSecond()
	example, err := os.ReadFile(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(example), "VisibilityTimeout: 30", "VisibilityTimeout: 45", 1)
	changed = strings.Replace(changed, "team: platform", "team: platform-ops", 1)
	changedFile := filepath.Join(t.TempDir(), "changed.yaml")
	if err := os.WriteFile(changedFile, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	p, c, base = serveConfig(t, changedFile, dataDir)
	wantLoaded(t, p, "0", "2", "1")
	after := readState(t, c, base)
	if after["orders.fifo"]["VisibilityTimeout"] != "45" || after["orders.fifo"]["LastModifiedTimestamp"] == st["orders.fifo"]["LastModifiedTimestamp"] {
		t.Errorf("orders.fifo after the change: VisibilityTimeout %s, LastModifiedTimestamp %s (was %s)",
			after["orders.fifo"]["VisibilityTimeout"], after["orders.fifo"]["LastModifiedTimestamp"], st["orders.fifo"]["LastModifiedTimestamp"])
	}
	if after["notifications"]["tag:team"] != "platform-ops" {
		t.Errorf("notifications tag team = %q, want platform-ops", after["notifications"]["tag:team"])
	}
	if !sameState(t, queueState{"orders-dlq.fifo": st["orders-dlq.fifo"]}, queueState{"orders-dlq.fifo": after["orders-dlq.fifo"]}) {
		t.Errorf("orders-dlq.fifo changed, though the file did not change it")
	}
	stopClean(t, p)
}

// sameState reports whether two states are equal, logging differences.
func sameState(t *testing.T, a, b queueState) bool {
	t.Helper()
	same := true
	for q, attrs := range a {
		for k, v := range attrs {
			if b[q][k] != v {
				t.Logf("%s %s: %q, then %q", q, k, v, b[q][k])
				same = false
			}
		}
		for k, v := range b[q] {
			if _, ok := attrs[k]; !ok {
				t.Logf("%s %s: unset, then %q", q, k, v)
				same = false
			}
		}
	}
	return same
}

// apiCode is the error code of an SQS API error, or "".
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestConfigFileBadEntry checks that a bad entry stops the server with a
// non-zero exit and the file and line on stderr: one the file shows by
// itself, and one only the running server can see.
func TestConfigFileBadEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"static", "queues:\n  - name: jobs\n    attributes:\n      VisibilityTimeout: 99999\n", ":4: queue jobs: InvalidAttributeValue"},
		{"unknown key", "listen: 127.0.0.1:0\nqueue:\n  - name: jobs\n", `:2: the config file: unknown key "queue"`},
		{"at start", "queues:\n  - name: jobs\n    dead_letter: {queue: not-there, max_receive_count: 3}\n", ":3: queue jobs: dead-letter queue not-there is not declared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(file, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			p := launch(t, nil, "serve", "--config", file, "--data-dir", t.TempDir(), "--listen", freeAddr(t))
			if !p.exited(20 * time.Second) {
				t.Fatalf("fifoq with a bad config file did not exit; output:\n%s", p.out)
			}
			if p.exitCode() == 0 {
				t.Errorf("fifoq with a bad config file exited 0; output:\n%s", p.out)
			}
			if !strings.Contains(p.out.String(), file+tt.want) {
				t.Errorf("output does not contain %q:\n%s", file+tt.want, p.out)
			}
		})
	}
}

// TestConfigFileSafeDefaults checks that the rule "no credentials and a
// listen address beyond loopback: refuse unless insecure" holds when the
// settings come from the file, and that the file's keys count as
// credentials.
func TestConfigFileSafeDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	listen, reach := anyAddr(t)
	dir := t.TempDir()
	open := filepath.Join(dir, "open.yaml")
	if err := os.WriteFile(open, []byte("listen: "+listen+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, nil, "serve", "--config", open, "--data-dir", t.TempDir())
	if !p.exited(10*time.Second) || p.exitCode() == 0 || !strings.Contains(p.out.String(), "refusing to listen") {
		t.Fatalf("listen beyond loopback from the file without credentials was not refused; output:\n%s", p.out)
	}

	const key, secret = "AKIAFIFOQCONFIG00001", "config-secret-0123456789"
	keyed := filepath.Join(dir, "keyed.yaml")
	yaml := "listen: " + listen + "\ncredentials:\n  keys:\n    - access_key_id: " + key + "\n      secret_access_key: ${FIFOQ_TEST_SECRET}\n"
	if err := os.WriteFile(keyed, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p = launch(t, []string{"FIFOQ_TEST_SECRET=" + secret}, "serve", "--config", keyed, "--data-dir", t.TempDir())
	base := "http://" + reach
	hc := plainHTTP()
	p.waitReady(t, answers(hc, base))
	if status, _, err := getStatus(hc, base); err != nil || status != http.StatusForbidden {
		t.Errorf("unsigned request to a server with the file's key: HTTP %d (%v), want 403", status, err)
	}
	if _, err := signedClient(base, hc, key, secret).ListQueues(context.Background(), &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("request signed with the file's key: %v", err)
	}
	if strings.Contains(p.out.String(), secret) {
		t.Errorf("the log shows the secret:\n%s", p.out)
	}
	stopClean(t, p)
}
