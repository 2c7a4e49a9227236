package auth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	signerv2 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	credsv2 "github.com/aws/aws-sdk-go-v2/credentials"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	signerv1 "github.com/aws/aws-sdk-go/aws/signer/v4"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/fifoq/fifoq/internal/testenv"
)

// The test key. The secret has the characters ('/', '+') that a careless
// encoding would mangle.
const (
	testKeyID   = "AKIAFIFOQTEST0001"
	testSecret  = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYFIFOQSECRET"
	testAccount = "123456789012"
	testRegion  = "eu-west-1"
)

// capturedRequest is a request as the server received it, with its body.
type capturedRequest struct {
	name string
	r    *http.Request
	body []byte
}

// clone returns a copy of the request that a test may change.
func (c capturedRequest) clone() (*http.Request, []byte) {
	return c.r.Clone(context.Background()), bytes.Clone(c.body)
}

// signedAt is the X-Amz-Date the client signed with.
func (c capturedRequest) signedAt(t *testing.T) time.Time {
	t.Helper()
	s := c.r.Header.Get("X-Amz-Date")
	if s == "" {
		s = c.r.URL.Query().Get("X-Amz-Date")
	}
	d, err := time.Parse(amzDateFormat, s)
	if err != nil {
		t.Fatalf("%s: X-Amz-Date %q: %v", c.name, s, err)
	}
	return d
}

// captureServer is an HTTP server that keeps every request it receives, as
// real clients sent it over the wire, and answers with an empty success.
type captureServer struct {
	*httptest.Server
	got chan capturedRequest
}

func newCaptureServer(t *testing.T) *captureServer {
	t.Helper()
	cs := &captureServer{got: make(chan capturedRequest, 16)}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cs.got <- capturedRequest{r: r.Clone(context.Background()), body: body}
		if r.Header.Get("X-Amz-Target") != "" {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			io.WriteString(w, "{}")
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<ListQueuesResponse><ListQueuesResult></ListQueuesResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ListQueuesResponse>`)
	}))
	t.Cleanup(cs.Close)
	return cs
}

// next returns the next captured request, named name.
func (cs *captureServer) next(t *testing.T, name string) capturedRequest {
	t.Helper()
	select {
	case c := <-cs.got:
		c.name = name
		return c
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no request reached the server", name)
		return capturedRequest{}
	}
}

// messageBody has what encodings disagree on: non-ASCII, XML and form
// metacharacters, '+', '/', '~' and spaces.
const messageBody = "héllo wörld ✓ <a href=\"x\">&amp;</a> 1+1=2 a/b~c %20"

// signV2 captures requests signed by aws-sdk-go-v2: its SQS client (AWS JSON
// 1.0) and a presigned GET from its SigV4 signer.
func signV2(t *testing.T, cs *captureServer) []capturedRequest {
	t.Helper()
	ctx := context.Background()
	client := sqsv2.NewFromConfig(awsv2.Config{
		Region:           testRegion,
		Credentials:      credsv2.NewStaticCredentialsProvider(testKeyID, testSecret, ""),
		RetryMaxAttempts: 1,
	}, func(o *sqsv2.Options) { o.BaseEndpoint = awsv2.String(cs.URL) })
	var out []capturedRequest

	queueURL := cs.URL + "/" + testAccount + "/orders.fifo"
	_, _ = client.SendMessage(ctx, &sqsv2.SendMessageInput{
		QueueUrl: &queueURL, MessageBody: awsv2.String(messageBody), MessageGroupId: awsv2.String("g"),
	}) // the empty answer does not satisfy the client; only the request matters
	out = append(out, cs.next(t, "v2 JSON SendMessage"))

	_, _ = client.ListQueues(ctx, &sqsv2.ListQueuesInput{QueueNamePrefix: awsv2.String("a b/c")})
	out = append(out, cs.next(t, "v2 JSON ListQueues"))

	req, err := http.NewRequest(http.MethodGet, cs.URL+"/"+testAccount+"/orders.fifo?Action=ReceiveMessage&Version=2012-11-05&X-Amz-Expires=300&Note=a%20b%2Bc%2Fd~e", nil)
	if err != nil {
		t.Fatal(err)
	}
	const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	signed, headers, err := signerv2.NewSigner().PresignHTTP(ctx, awsv2.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret},
		req, emptyHash, "sqs", testRegion, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, getURL(t, cs, "v2 presigned GET", signed, headers))
	return out
}

// signV1 captures requests signed by aws-sdk-go v1.44.300: its SQS client
// (AWS Query, form body) and its signer's header-signed and presigned GETs.
func signV1(t *testing.T, cs *captureServer) []capturedRequest {
	t.Helper()
	sess, err := session.NewSession(&awsv1.Config{
		Region:      awsv1.String(testRegion),
		Endpoint:    awsv1.String(cs.URL),
		Credentials: credsv1.NewStaticCredentials(testKeyID, testSecret, ""),
		MaxRetries:  awsv1.Int(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	client := sqsv1.New(sess)
	var out []capturedRequest

	queueURL := cs.URL + "/" + testAccount + "/orders.fifo"
	_, _ = client.SendMessage(&sqsv1.SendMessageInput{
		QueueUrl: &queueURL, MessageBody: awsv1.String(messageBody), MessageGroupId: awsv1.String("g"),
		MessageAttributes: map[string]*sqsv1.MessageAttributeValue{
			"k": {DataType: awsv1.String("String"), StringValue: awsv1.String("v w")},
		},
	})
	out = append(out, cs.next(t, "v1 Query SendMessage"))

	signer := signerv1.NewSigner(credsv1.NewStaticCredentials(testKeyID, testSecret, ""))
	target := cs.URL + "/" + testAccount + "/orders.fifo?Action=ReceiveMessage&Version=2012-11-05&Note=a%20b%2Bc%2Fd~e%E2%9C%93"

	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signer.Sign(req, nil, "sqs", testRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	out = append(out, do(t, cs, "v1 header-signed GET", req))

	req, err = http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signer.Presign(req, nil, "sqs", testRegion, 5*time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	out = append(out, do(t, cs, "v1 presigned GET", req))
	return out
}

// botocoreScript signs with botocore: a boto3 SQS client call (AWS JSON in
// current botocore) and a URL presigned by SigV4QueryAuth, which it prints.
const botocoreScript = `
import sys
import boto3
from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

endpoint, key, secret, region, body = sys.argv[1:6]
sqs = boto3.client("sqs", endpoint_url=endpoint, region_name=region,
                   aws_access_key_id=key, aws_secret_access_key=secret,
                   config=Config(retries={"total_max_attempts": 1}))
try:
    sqs.send_message(QueueUrl=endpoint + "/123456789012/orders.fifo",
                     MessageBody=body, MessageGroupId="g")
except Exception:
    pass  # the capture server's empty answer does not satisfy boto3

req = AWSRequest(method="GET", url=endpoint +
                 "/123456789012/orders.fifo?Action=ReceiveMessage&Version=2012-11-05&Note=a%20b%2Bc%2Fd~e")
SigV4QueryAuth(Credentials(key, secret), "sqs", region, expires=300).add_auth(req)
print(req.url)
`

// signBotocore captures requests signed by botocore, if python3 and boto3
// are installed.
func signBotocore(t *testing.T, cs *captureServer) []capturedRequest {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.ClientMissing(t, "python3 is not installed")
	}
	if err := exec.Command(python, "-c", "import boto3, botocore").Run(); err != nil {
		testenv.ClientMissing(t, "boto3/botocore is not installed")
	}
	script := filepath.Join(t.TempDir(), "sign.py")
	if err := os.WriteFile(script, []byte(botocoreScript), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script, cs.URL, testKeyID, testSecret, testRegion, messageBody)
	cmd.Env = isolatedAWSEnv()
	outBytes, err := cmd.Output()
	if err != nil {
		t.Fatalf("botocore script: %v", err)
	}
	var out []capturedRequest
	out = append(out, cs.next(t, "botocore JSON SendMessage"))
	presigned := strings.TrimSpace(string(outBytes))
	out = append(out, getURL(t, cs, "botocore presigned GET", presigned, nil))
	return out
}

// signCLI captures a request signed by the AWS CLI, if installed.
func signCLI(t *testing.T, cs *captureServer) []capturedRequest {
	t.Helper()
	aws, err := exec.LookPath("aws")
	if err != nil {
		testenv.ClientMissing(t, "the AWS CLI is not installed")
	}
	cmd := exec.Command(aws, "sqs", "list-queues", "--endpoint-url", cs.URL, "--region", testRegion, "--queue-name-prefix", "a b")
	cmd.Env = append(isolatedAWSEnv(), "AWS_ACCESS_KEY_ID="+testKeyID, "AWS_SECRET_ACCESS_KEY="+testSecret)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aws sqs list-queues: %v\n%s", err, out)
	}
	return []capturedRequest{cs.next(t, "AWS CLI ListQueues")}
}

// isolatedAWSEnv keeps the machine's AWS configuration out of the Python
// clients: no profile, no credentials, no retries.
func isolatedAWSEnv() []string {
	env := []string{"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_MAX_ATTEMPTS=1", "AWS_EC2_METADATA_DISABLED=true"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// getURL sends a GET of a presigned URL with the headers the signer asked for.
func getURL(t *testing.T, cs *captureServer, name, u string, headers http.Header) capturedRequest {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k, vs := range headers {
		if strings.EqualFold(k, "host") {
			continue
		}
		req.Header[k] = vs
	}
	return do(t, cs, name, req)
}

// do sends req to the capture server and returns it as received.
func do(t *testing.T, cs *captureServer, name string, req *http.Request) capturedRequest {
	t.Helper()
	resp, err := cs.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return cs.next(t, name)
}

// allSigned captures requests from every client available here.
func allSigned(t *testing.T) []capturedRequest {
	t.Helper()
	cs := newCaptureServer(t)
	out := append(signV2(t, cs), signV1(t, cs)...)
	t.Run("botocore", func(t *testing.T) { out = append(out, signBotocore(t, cs)...) })
	t.Run("cli", func(t *testing.T) { out = append(out, signCLI(t, cs)...) })
	return out
}
