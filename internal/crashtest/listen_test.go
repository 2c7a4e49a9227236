package crashtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/bench"
)

// These tests check how "fifoq serve" guards its network exposure: it
// will not listen beyond loopback without credentials unless told it is
// insecure, it enforces the credentials it is given, it serves TLS, and
// two servers cannot share one data directory.

// anyAddr returns 0.0.0.0:PORT with a port that was free a moment ago, and
// the loopback address of the same port, by which the test reaches it.
func anyAddr(t *testing.T) (listen, reach string) {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return "0.0.0.0:" + port, "127.0.0.1:" + port
}

// getStatus GETs an unsigned ListQueues and returns the status and the
// Query error code, if any.
func getStatus(hc *http.Client, base string) (int, string, error) {
	resp, err := hc.Get(base + "/?Action=ListQueues&Version=2012-11-05")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var e struct {
		Error struct{ Code string }
	}
	_ = xml.Unmarshal(body, &e)
	return resp.StatusCode, e.Error.Code, nil
}

// answers is a readiness probe: the server answers HTTP at base.
func answers(hc *http.Client, base string) func() error {
	return func() error {
		_, _, err := getStatus(hc, base)
		return err
	}
}

// signedClient is an SQS client (AWS JSON) of base that signs with key.
func signedClient(base string, hc *http.Client, key, secret string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(key, secret, ""),
		BaseEndpoint:     aws.String(base),
		RetryMaxAttempts: 1,
		HTTPClient:       bench.OwnRequestBodies(hc),
	})
}

func plainHTTP() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
}

func TestListenBeyondLoopbackRefusedWithoutCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	listen, reach := anyAddr(t)
	dataDir := t.TempDir()
	p := launch(t, nil, "serve", "--listen", listen, "--data-dir", dataDir)
	if !p.exited(5 * time.Second) {
		if _, _, err := getStatus(plainHTTP(), "http://"+reach); err == nil {
			t.Fatalf("fifoq without credentials serves on %s; output:\n%s", listen, p.out)
		}
		t.Fatalf("fifoq without credentials on %s did not exit within 5 s; output:\n%s", listen, p.out)
	}
	if p.exitCode() == 0 {
		t.Fatalf("fifoq refused to start but exited 0; output:\n%s", p.out)
	}
	out := p.out.String()
	for _, want := range []string{"--credentials", "FIFOQ_ACCESS_KEY_ID", "--insecure"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not mention %s; output:\n%s", want, out)
		}
	}
	// It refused before touching the data dir.
	if entries, _ := os.ReadDir(dataDir); len(entries) > 0 {
		t.Errorf("the refused start wrote %d entries into the data dir", len(entries))
	}
}

func TestListenBeyondLoopbackInsecure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	listen, reach := anyAddr(t)
	p := launch(t, nil, "serve", "--listen", listen, "--data-dir", t.TempDir(), "--insecure")
	hc := plainHTTP()
	p.waitReady(t, answers(hc, "http://"+reach))
	status, code, err := getStatus(hc, "http://"+reach)
	if err != nil || status != http.StatusOK {
		t.Fatalf("--insecure server: unsigned ListQueues got HTTP %d %s (%v), want 200", status, code, err)
	}
	out := p.out.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "insecure") {
		t.Errorf("--insecure on %s logged no warning; output:\n%s", listen, out)
	}
	p.stop()
	if code := p.exitCode(); code != 0 {
		t.Errorf("SIGTERM: exit code %d, want 0; output:\n%s", code, p.out)
	}
}

func TestListenBeyondLoopbackWithEnvCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	const key, secret = "AKIAFIFOQLISTENTEST1", "listen-test-secret/0123456789abcdefghij"
	listen, reach := anyAddr(t)
	p := launch(t, []string{"FIFOQ_ACCESS_KEY_ID=" + key, "FIFOQ_SECRET_ACCESS_KEY=" + secret},
		"serve", "--listen", listen, "--data-dir", t.TempDir())
	hc := plainHTTP()
	base := "http://" + reach
	p.waitReady(t, answers(hc, base))
	if strings.Contains(p.out.String(), secret) {
		t.Errorf("the server's output shows the secret access key:\n%s", p.out)
	}

	status, code, err := getStatus(hc, base)
	if err != nil || status != http.StatusForbidden || code != "MissingAuthenticationToken" {
		t.Fatalf("unsigned ListQueues: HTTP %d %q (%v), want 403 MissingAuthenticationToken", status, code, err)
	}

	ctx := context.Background()
	good := signedClient(base, hc, key, secret)
	created, err := good.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("signed")})
	if err != nil {
		t.Fatalf("CreateQueue signed with the configured key: %v", err)
	}
	if _, err := good.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatalf("SendMessage signed with the configured key: %v", err)
	}
	out, err := good.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "hello" {
		t.Fatalf("ReceiveMessage signed with the configured key: %v, %d messages", err, len(out.Messages))
	}

	for _, bad := range []struct {
		name, key, secret, code string
	}{
		{"wrong secret", key, secret + "x", "SignatureDoesNotMatch"},
		{"unknown key", "AKIAFIFOQLISTENOTHER", secret, "InvalidClientTokenId"},
	} {
		_, err := signedClient(base, hc, bad.key, bad.secret).ListQueues(ctx, &sqs.ListQueuesInput{})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != bad.code {
			t.Errorf("%s: got %v, want %s", bad.name, err, bad.code)
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and localhost
// and its key into dir, and returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fifoq test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestListenTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	addr := freeAddr(t)
	p := launch(t, nil, "serve", "--listen", addr, "--data-dir", t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addr
	p.waitReady(t, answers(hc, base))

	ctx := context.Background()
	c := signedClient(base, hc, "test", "test")
	created, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("over-tls")})
	if err != nil {
		t.Fatalf("CreateQueue over TLS: %v", err)
	}
	if u := aws.ToString(created.QueueUrl); !strings.HasPrefix(u, "https://") {
		t.Errorf("queue URL over TLS is %q, want an https:// URL", u)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("secret")}); err != nil {
		t.Fatalf("SendMessage over TLS: %v", err)
	}

	// The port speaks TLS only.
	if status, _, err := getStatus(plainHTTP(), "http://"+addr); err == nil && status == http.StatusOK {
		t.Errorf("plain HTTP to the TLS port answered 200")
	}
	// A client that does not trust the certificate refuses the connection.
	untrusting := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	if _, _, err := getStatus(untrusting, base); err == nil {
		t.Errorf("a client without the certificate in its pool connected: the server is not serving the given certificate")
	}
}

func TestDataDirLockedAgainstSecondServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	t.Parallel()
	dataDir := t.TempDir()
	first, second := freeAddr(t), freeAddr(t)
	p1 := launch(t, nil, "serve", "--listen", first, "--data-dir", dataDir)
	hc := plainHTTP()
	p1.waitReady(t, answers(hc, "http://"+first))
	ctx := context.Background()
	c1 := signedClient("http://"+first, hc, "test", "test")
	created, err := c1.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("owned")})
	if err != nil {
		t.Fatal(err)
	}

	p2 := launch(t, nil, "serve", "--listen", second, "--data-dir", dataDir)
	if !p2.exited(15 * time.Second) {
		status, _, err := getStatus(hc, "http://"+second)
		p2.stop()
		t.Fatalf("a second fifoq on the data dir of a running one did not exit within 15 s (it answers HTTP %d, %v): "+
			"two servers would write one log; output:\n%s", status, err, p2.out)
	}
	if p2.exitCode() == 0 {
		t.Errorf("the second fifoq exited 0, want a failure; output:\n%s", p2.out)
	}
	out := strings.ToLower(p2.out.String())
	if !strings.Contains(out, "lock") && !strings.Contains(out, "in use") && !strings.Contains(out, "another") {
		t.Errorf("the second fifoq's refusal does not say the data dir is locked or in use; output:\n%s", p2.out)
	}
	// The first server is unharmed.
	if _, err := c1.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("still here")}); err != nil {
		t.Fatalf("the first server after the second's attempt: %v; output:\n%s", err, p1.out)
	}
}
