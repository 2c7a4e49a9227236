package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// runSmokeScript runs one real client's smoke script (testdata/<dir>/<script>)
// with bin against a fresh server, from the script's own folder so that a
// Node script finds its node_modules, and fails unless the script's last
// line of standard output is "ok".
func runSmokeScript(t *testing.T, bin, dir, script string) {
	t.Helper()
	env := Start(t)
	abs, err := filepath.Abs(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, script, env.URL)
	cmd.Dir = abs
	cmd.Env = testenv.ClientEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || lines[len(lines)-1] != "ok" {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), filepath.Join(dir, script), err, out, stderr.String())
	}
}

// nodeClient finds node and the npm packages of testdata/<dir>, which CI
// installs with `npm ci --prefix internal/integration/testdata/<dir>`.
func nodeClient(t *testing.T, dir string, pkgs ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.ClientMissing(t, "node is not installed")
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join("testdata", dir, "node_modules", pkg, "package.json")); err != nil {
			testenv.ClientMissing(t, "the npm package "+pkg+" is not installed (npm ci --prefix internal/integration/testdata/"+dir+")")
		}
	}
	return node
}

// TestJSSDKv3 drives a FIFO queue through the AWS SDK for JavaScript v3
// (@aws-sdk/client-sqs, AWS JSON 1.0) and through sqs-producer and
// sqs-consumer, the npm libraries built on it: see testdata/js-sdk-v3.
func TestJSSDKv3(t *testing.T) {
	t.Parallel()
	node := nodeClient(t, "js-sdk-v3", "@aws-sdk/client-sqs", "sqs-producer", "sqs-consumer")
	runSmokeScript(t, node, "js-sdk-v3", "smoke.js")
}

// TestJSSDKv2 drives a FIFO queue through the AWS SDK for JavaScript v2
// (the aws-sdk npm package, whose SQS model speaks AWS JSON 1.0 and which
// reports errors by their Query code): see testdata/js-sdk-v2.
func TestJSSDKv2(t *testing.T) {
	t.Parallel()
	node := nodeClient(t, "js-sdk-v2", "aws-sdk")
	runSmokeScript(t, node, "js-sdk-v2", "smoke.js")
}

// TestDebianBoto3 drives a FIFO queue through Debian's python3-boto3, run
// by Debian's own /usr/bin/python3: bookworm's botocore (1.29) is older
// than SQS's move to AWS JSON, so this boto3 speaks AWS Query, unlike the
// pip-installed boto3 of TestBoto3. See testdata/debian-boto3.
func TestDebianBoto3(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import boto3").Run(); err != nil {
		testenv.ClientMissing(t, "Debian's python3-boto3 is not installed")
	}
	runSmokeScript(t, python, "debian-boto3", "smoke.py")
}

// TestPHPAsyncAWS drives a FIFO queue through AsyncAws SQS, Debian's
// php-async-aws-sqs (1.7, AWS Query): see testdata/php-async-aws.
func TestPHPAsyncAWS(t *testing.T) {
	t.Parallel()
	php, err := exec.LookPath("php")
	if err != nil {
		testenv.ClientMissing(t, "php is not installed")
	}
	if _, err := os.Stat("/usr/share/php/AsyncAws/Sqs/SqsClient.php"); err != nil {
		testenv.ClientMissing(t, "Debian's php-async-aws-sqs is not installed")
	}
	runSmokeScript(t, php, "php-async-aws", "smoke.php")
}

// TestRubyAWSSDKv1 drives a standard queue through Debian's ruby-aws-sdk,
// the AWS SDK for Ruby v1 (AWS Query). It predates FIFO queues (it refuses
// MessageGroupId before sending), so it cannot drive a FIFO queue; see
// testdata/ruby-aws-sdk-v1.
func TestRubyAWSSDKv1(t *testing.T) {
	t.Parallel()
	ruby, err := exec.LookPath("ruby")
	if err != nil {
		testenv.ClientMissing(t, "ruby is not installed")
	}
	if err := exec.Command(ruby, "-e", `require "aws-sdk"; AWS::SQS`).Run(); err != nil {
		testenv.ClientMissing(t, "Debian's ruby-aws-sdk is not installed")
	}
	runSmokeScript(t, ruby, "ruby-aws-sdk-v1", "smoke.rb")
}

// TestBoto2 drives a FIFO queue through boto 2, Debian's python3-boto
// (2.49, AWS Query, queue actions posted to the queue's path). It predates
// FIFO queues, so the FIFO-only parameters go through boto's generic Query
// request method: see testdata/boto2.
func TestBoto2(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import boto.sqs").Run(); err != nil {
		testenv.ClientMissing(t, "Debian's python3-boto is not installed")
	}
	runSmokeScript(t, python, "boto2", "smoke.py")
}

// TestKombu drives a FIFO queue through kombu's SQS transport (Debian's
// python3-kombu, 5.2, the transport Celery uses): sends through Debian's
// boto3, receives on kombu's event loop through its own asynchronous Query
// client, requeues (ChangeMessageVisibility to 0) and acks (DeleteMessage).
// See testdata/kombu.
func TestKombu(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kombu.transport.SQS, pycurl").Run(); err != nil {
		testenv.ClientMissing(t, "Debian's python3-kombu (with python3-pycurl and python3-boto3) is not installed")
	}
	runSmokeScript(t, python, "kombu", "smoke.py")
}
