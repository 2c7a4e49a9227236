package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
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

	"github.com/fifoq/fifoq/internal/testenv"
)

// The tests below run the client commands (backup, export, import,
// cluster) as a user runs them: the built binary, in an environment of
// its own, against a server that is the built binary too.

// The key the servers of these tests are given (FIFOQ_ACCESS_KEY_ID: an
// admin key of the server's account).
const clientTestKey, clientTestSecret = "AKIDCLIENTTEST", "client-test-secret"

// binRun is one finished run of the fifoq binary.
type binRun struct {
	code           int
	stdout, stderr string
}

// cleanEnv is an environment without any variable of the test's own
// (FIFOQ_*, AWS_*, SSL_CERT_FILE), so that only env decides how the
// binary signs and what it trusts; HOME is a new empty directory, so
// there is no shared AWS config either.
func cleanEnv(t *testing.T, env ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
}

// runBin runs the built fifoq with args in env (see cleanEnv).
func runBin(t *testing.T, env []string, args ...string) binRun {
	t.Helper()
	fifoq, _ := builtBinaries(t)
	cmd := exec.Command(fifoq, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run fifoq %v: %v", args, err)
	}
	return binRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// wantOK fails t unless r exited 0.
func (r binRun) wantOK(t *testing.T, what string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
	}
}

// startServeBin runs the built fifoq serve with args and env on a free
// loopback port, with credentials (clientTestKey) and a data dir of its
// own, waits until its readiness probe answers through client, and
// returns its address; it is stopped with SIGTERM when the test ends.
func startServeBin(t *testing.T, scheme string, client *http.Client, args ...string) string {
	t.Helper()
	fifoq, _ := builtBinaries(t)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(fifoq, append([]string{"serve", "--listen", addr, "--data-dir", t.TempDir()}, args...)...)
	cmd.Env = cleanEnv(t, "FIFOQ_ACCESS_KEY_ID="+clientTestKey, "FIFOQ_SECRET_ACCESS_KEY="+clientTestSecret)
	var logs testenv.SyncBuffer
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
	for tries := 0; ; tries++ {
		resp, err := client.Get(scheme + "://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("fifoq serve exited (%v) before it was ready:\n%s", err, logs.String())
		default:
		}
		if tries == 600 {
			t.Fatalf("fifoq serve was not ready after 600 tries: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sqsFor is an SDK client of the server at endpoint, signing with the
// servers' key, over httpClient.
func sqsFor(endpoint string, httpClient *http.Client) *sqs.Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), HTTPClient: httpClient,
		Credentials: credentials.NewStaticCredentialsProvider(clientTestKey, clientTestSecret, "")})
}

// fillQueue creates the queue name at c and sends it n messages.
func fillQueue(t *testing.T, c *sqs.Client, name string, n int) string {
	t.Helper()
	ctx := context.Background()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	return aws.ToString(q.QueueUrl)
}

// queueLen is the number of visible messages of the queue at url.
func queueLen(t *testing.T, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	return n
}

// TestImportSignsWithFifoqKeys runs fifoq export and then fifoq import
// into another queue against a server with credentials, each with the
// server's key in FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY and no
// AWS_ variable, as their help says they sign: both must succeed.
func TestImportSignsWithFifoqKeys(t *testing.T) {
	addr := startServeBin(t, "http", http.DefaultClient)
	endpoint := "http://" + addr
	c := sqsFor(endpoint, nil)
	fillQueue(t, c, "src", 5)
	dst := fillQueue(t, c, "dst", 0)

	env := cleanEnv(t, "FIFOQ_ENDPOINT="+endpoint, "FIFOQ_ACCESS_KEY_ID="+clientTestKey, "FIFOQ_SECRET_ACCESS_KEY="+clientTestSecret)
	file := filepath.Join(t.TempDir(), "src.jsonl")
	runBin(t, env, "export", "src", file).wantOK(t, "fifoq export")
	runBin(t, env, "import", "dst", file).wantOK(t, "fifoq import with FIFOQ_ACCESS_KEY_ID")
	if n := queueLen(t, c, dst); n != 5 {
		t.Fatalf("after the import, dst holds %d messages, want 5", n)
	}
}

// testPKI is a CA and a certificate it signed for 127.0.0.1, as files.
type testPKI struct {
	caFile, certFile, keyFile string
	pool                      *x509.CertPool
}

// newTestPKI makes a CA and a server certificate for 127.0.0.1 signed by
// it, in dir.
func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fifoq test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server-key.pem"),
		pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	for file, block := range map[string]*pem.Block{p.caFile: {Type: "CERTIFICATE", Bytes: caDER},
		p.certFile: {Type: "CERTIFICATE", Bytes: der}, p.keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestClientsTrustCACert serves HTTPS with a certificate of a private CA
// and runs fifoq backup, export, import, cluster status and healthcheck
// against it: with --ca-cert, then with AWS_CA_BUNDLE, each succeeds;
// with neither, each fails with a certificate error on one line (exit 1).
func TestClientsTrustCACert(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool}}}
	addr := startServeBin(t, "https", trusting, "--tls-cert", pki.certFile, "--tls-key", pki.keyFile)
	endpoint := "https://" + addr
	c := sqsFor(endpoint, trusting)
	fillQueue(t, c, "src", 3)
	dst := fillQueue(t, c, "dst", 0)

	base := []string{"FIFOQ_ENDPOINT=" + endpoint, "FIFOQ_ACCESS_KEY_ID=" + clientTestKey, "FIFOQ_SECRET_ACCESS_KEY=" + clientTestSecret}
	commands := func(extra ...string) [][]string {
		return [][]string{
			append([]string{"backup", filepath.Join(t.TempDir(), "b.backup")}, extra...),
			append([]string{"export", "src", filepath.Join(dir, "src.jsonl")}, extra...),
			append([]string{"import", "dst", filepath.Join(dir, "src.jsonl")}, extra...),
			append([]string{"cluster", "status"}, extra...),
			append([]string{"healthcheck", "--url", endpoint + "/readyz"}, extra...),
		}
	}
	for _, args := range commands("--ca-cert", pki.caFile) {
		runBin(t, cleanEnv(t, base...), args...).wantOK(t, "fifoq "+strings.Join(args, " "))
	}
	for _, args := range commands() {
		runBin(t, cleanEnv(t, append(base, "AWS_CA_BUNDLE="+pki.caFile)...), args...).wantOK(t, "AWS_CA_BUNDLE fifoq "+strings.Join(args, " "))
	}
	if n := queueLen(t, c, dst); n != 6 {
		t.Fatalf("after two imports of 3 messages, dst holds %d, want 6", n)
	}
	for _, args := range commands() {
		r := runBin(t, cleanEnv(t, base...), args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 1 || len(lines) != 1 || !strings.Contains(r.stderr, "certificate") {
			t.Errorf("fifoq %s without --ca-cert: exit %d, stderr %q; want exit 1 and one line about the certificate", strings.Join(args, " "), r.code, r.stderr)
		} else {
			t.Logf("fifoq %s without --ca-cert: %s", args[0], lines[0])
		}
	}
}

// TestServeInsecureLogSaysSo starts fifoq serve without credentials on
// every address with --insecure: its start-up line must not say that it
// takes requests from loopback only.
func TestServeInsecureLogSaysSo(t *testing.T) {
	fifoq, _ := builtBinaries(t)
	cmd := exec.Command(fifoq, "serve", "--in-memory", "--insecure", "--listen", "0.0.0.0:"+strconv.Itoa(freePort(t)))
	cmd.Env = cleanEnv(t)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	var log []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log = append(log, sc.Text())
		if !strings.Contains(sc.Text(), "fifoq started") {
			continue
		}
		if line := sc.Text(); strings.Contains(line, "loopback only") || !strings.Contains(line, "--insecure") {
			t.Fatalf("the start-up line of a server with --insecure on 0.0.0.0:\n%s\nwant it to say that unsigned requests are accepted from any address (--insecure)", line)
		}
		return
	}
	t.Fatalf("fifoq serve exited without its start-up line:\n%s", strings.Join(log, "\n"))
}
