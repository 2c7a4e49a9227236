package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestReadmeWalkthrough follows the README's path for a newcomer with the
// real binary and real clients: fifoq serve --config fifoq.example.yaml,
// a message sent to a queue of the file with the AWS CLI, the message seen
// through the web console's API, /metrics counting it, and fifoq bench
// run against the same server with its verification passing.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	awsCLI, err := exec.LookPath("aws")
	if err != nil {
		testenv.ClientMissing(t, "the aws CLI is not installed")
	}
	t.Parallel()
	p, _, base := serveConfig(t, exampleFile(t), t.TempDir())
	wantLoaded(t, p, "3", "0", "0")

	// The README's AWS CLI step, with test credentials and no user config.
	dir := t.TempDir()
	cli := exec.Command(awsCLI, "--endpoint-url", base, "--output", "json", "sqs", "send-message",
		"--queue-url", base+"/000000000000/orders.fifo",
		"--message-body", `{"order":1}`, "--message-group-id", "customer-42")
	cli.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_PAGER=", "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1",
	}
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("aws sqs send-message: %v\n%s", err, out)
	}
	var sent struct{ MessageId string }
	if err := json.Unmarshal(out, &sent); err != nil || sent.MessageId == "" {
		t.Fatalf("aws sqs send-message printed %s (%v)", out, err)
	}

	// The console's page loads, and its API shows the message (peek).
	if page := httpGet(t, base+"/console/"); !strings.Contains(page, "<title>") {
		t.Fatalf("GET /console/ did not answer the console's page:\n%s", page)
	}
	var peek struct {
		Messages []struct {
			MessageID string `json:"messageId"`
			Body      string `json:"body"`
			GroupID   string `json:"groupId"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(httpGet(t, base+"/console/api/queues/orders.fifo/messages")), &peek); err != nil {
		t.Fatalf("console peek: %v", err)
	}
	if len(peek.Messages) != 1 || peek.Messages[0].MessageID != sent.MessageId ||
		peek.Messages[0].Body != `{"order":1}` || peek.Messages[0].GroupID != "customer-42" {
		t.Fatalf("the console shows %+v, want the message sent with the CLI (%s)", peek.Messages, sent.MessageId)
	}

	// /metrics counts it.
	if m := httpGet(t, base+"/metrics"); !strings.Contains(m, `fifoq_queue_messages_sent_total{account="000000000000",queue="orders.fifo",region="us-east-1"} 1`+"\n") {
		t.Errorf("/metrics does not count the message sent to orders.fifo:\n%s", grepLines(m, "orders.fifo"))
	}

	// The README's fifoq bench, shortened, against the same server.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bench := exec.CommandContext(ctx, binary, "bench", "--endpoint", base, "--duration", "2s",
		"--producers", "4", "--consumers", "2", "--groups", "8", "--batch", "10", "--json")
	bench.Env = cli.Env
	var stdout, stderr bytes.Buffer
	bench.Stdout, bench.Stderr = &stdout, &stderr
	if err := bench.Run(); err != nil {
		t.Fatalf("fifoq bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var res struct {
		Sent         int64 `json:"sent"`
		Verification struct {
			Acknowledged int  `json:"acknowledged"`
			Lost         int  `json:"lost"`
			Duplicates   int  `json:"duplicates"`
			OK           bool `json:"ok"`
		} `json:"verification"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("fifoq bench --json printed %q: %v", stdout.String(), err)
	}
	v := res.Verification
	if !v.OK || res.Sent == 0 || v.Acknowledged == 0 || v.Lost != 0 || v.Duplicates != 0 {
		t.Fatalf("fifoq bench: sent %d, verification %+v", res.Sent, v)
	}
	stopClean(t, p)
}

// httpGet returns the body of a GET that must answer 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := plainHTTP().Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var keep []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
