package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// The tests below run fifoq cert as a user does, the built binary, and
// check what it wrote with OpenSSL, with Go's parser, and in real TLS
// handshakes: fifoq serve's HTTPS with a node's certificate, and a server
// demanding a client's certificate.

// certSet is what TestCert… make: a CA, a node's and a client's
// certificate, each in a directory of its own.
type certSet struct {
	caDir, nodeDir, clientDir string
}

func (s certSet) caCert() string     { return filepath.Join(s.caDir, "ca.pem") }
func (s certSet) nodeCert() string   { return filepath.Join(s.nodeDir, "n1.pem") }
func (s certSet) nodeKey() string    { return filepath.Join(s.nodeDir, "n1-key.pem") }
func (s certSet) clientCert() string { return filepath.Join(s.clientDir, "app.pem") }
func (s certSet) clientKey() string  { return filepath.Join(s.clientDir, "app-key.pem") }

// makeCerts runs fifoq cert ca, node (for localhost and 127.0.0.1) and
// client into fresh directories.
func makeCerts(t *testing.T) certSet {
	t.Helper()
	dir := t.TempDir()
	s := certSet{filepath.Join(dir, "ca"), filepath.Join(dir, "nodes"), filepath.Join(dir, "clients")}
	env := cleanEnv(t)
	runBin(t, env, "cert", "ca", "--out", s.caDir).wantOK(t, "fifoq cert ca")
	runBin(t, env, "cert", "node", "--ca", s.caDir, "--name", "n1", "--host", "localhost,127.0.0.1", "--out", s.nodeDir).wantOK(t, "fifoq cert node")
	runBin(t, env, "cert", "client", "--ca", s.caDir, "--name", "app", "--out", s.clientDir).wantOK(t, "fifoq cert client")
	return s
}

// readCert parses the one PEM certificate of path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("%s: want one PEM CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// checkKeyPair checks that keyPath is a PKCS #8 ECDSA P-256 key and the
// key of the certificate c.
func checkKeyPair(t *testing.T, c *x509.Certificate, keyPath string) {
	t.Helper()
	data, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("%s: want a PEM PRIVATE KEY (PKCS #8) block", keyPath)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", keyPath, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		t.Fatalf("%s: a %T, want an ECDSA P-256 key", keyPath, key)
	}
	if !ec.PublicKey.Equal(c.PublicKey) {
		t.Fatalf("%s is not the key of the certificate %q", keyPath, c.Subject.CommonName)
	}
}

// umask is this process's file mode creation mask (the binary inherits
// it), from /proc; 022 where it cannot be read.
func umask(t *testing.T) os.FileMode {
	data, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(n)
				}
			}
		}
	}
	return 0o022
}

// wantMode fails t unless path's permissions are mode less the umask.
func wantMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := mode &^ umask(t); fi.Mode().Perm() != want {
		t.Errorf("%s has mode %#o, want %#o", path, fi.Mode().Perm(), want)
	}
}

// TestCertMakesWhatOpenSSLAccepts runs fifoq cert ca, node and client,
// then checks the files: OpenSSL verifies the node's certificate against
// ca.pem for a TLS server and a TLS client, the client's for a client
// only; and the certificates say what fifoq cert's help says: the CA flag,
// key usages, names and addresses, lifetimes, keys and file modes.
func TestCertMakesWhatOpenSSLAccepts(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		testenv.ClientMissing(t, "openssl is not installed")
	}
	s := makeCerts(t)
	verify := func(purpose, path string) error {
		out, err := exec.Command(openssl, "verify", "-CAfile", s.caCert(), "-purpose", purpose, path).CombinedOutput()
		if err == nil && !strings.Contains(string(out), ": OK") {
			t.Fatalf("openssl verify -purpose %s %s: %s", purpose, path, out)
		}
		return err
	}
	for _, c := range []struct{ purpose, path string }{
		{"sslserver", s.nodeCert()}, {"sslclient", s.nodeCert()}, {"sslclient", s.clientCert()},
	} {
		if err := verify(c.purpose, c.path); err != nil {
			t.Errorf("openssl verify -CAfile ca.pem -purpose %s %s: %v", c.purpose, c.path, err)
		}
	}
	if err := verify("sslserver", s.clientCert()); err == nil {
		t.Errorf("openssl accepts the client's certificate for a TLS server")
	}

	ca, node, client := readCert(t, s.caCert()), readCert(t, s.nodeCert()), readCert(t, s.clientCert())
	day := 24 * time.Hour
	if !ca.IsCA || !ca.BasicConstraintsValid || !ca.MaxPathLenZero || ca.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign ||
		ca.Subject.CommonName != "fifoq CA" || ca.CheckSignatureFrom(ca) != nil {
		t.Errorf("ca.pem: CA %v, path length 0 %v, key usage %b, CN %q: want a self-signed CA that signs certificates and CRLs, named \"fifoq CA\"",
			ca.IsCA, ca.MaxPathLenZero, ca.KeyUsage, ca.Subject.CommonName)
	}
	if life := ca.NotAfter.Sub(time.Now()); life < 3649*day || life > 3650*day {
		t.Errorf("ca.pem ends in %v, want 3650 days", life)
	}
	for _, c := range []struct {
		cert *x509.Certificate
		path string
		uses []x509.ExtKeyUsage
	}{
		{node, s.nodeCert(), []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{client, s.clientCert(), []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		if c.cert.IsCA || c.cert.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(c.cert.ExtKeyUsage, c.uses) || c.cert.CheckSignatureFrom(ca) != nil {
			t.Errorf("%s: CA %v, key usage %b, extended %v: want a certificate signed by ca.pem, for signatures, with the uses %v",
				c.path, c.cert.IsCA, c.cert.KeyUsage, c.cert.ExtKeyUsage, c.uses)
		}
		if life := c.cert.NotAfter.Sub(time.Now()); life < 824*day || life > 825*day {
			t.Errorf("%s ends in %v, want 825 days", c.path, life)
		}
		if c.cert.NotBefore.After(time.Now().Add(-30 * time.Minute)) {
			t.Errorf("%s is valid from %v: want it backdated, for clocks a little behind", c.path, c.cert.NotBefore)
		}
	}
	if node.Subject.CommonName != "n1" || !slices.Equal(node.DNSNames, []string{"localhost"}) ||
		len(node.IPAddresses) != 1 || !node.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("n1.pem: CN %q, DNS %v, IP %v: want n1, [localhost], [127.0.0.1]", node.Subject.CommonName, node.DNSNames, node.IPAddresses)
	}
	if client.Subject.CommonName != "app" || len(client.DNSNames)+len(client.IPAddresses) != 0 {
		t.Errorf("app.pem: CN %q, DNS %v, IP %v: want app and no names", client.Subject.CommonName, client.DNSNames, client.IPAddresses)
	}
	serials := map[string]bool{}
	for _, c := range []*x509.Certificate{ca, node, client} {
		if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() < 64 || serials[c.SerialNumber.String()] {
			t.Errorf("%q: serial %v, want a random positive one of its own", c.Subject.CommonName, c.SerialNumber)
		}
		serials[c.SerialNumber.String()] = true
	}
	checkKeyPair(t, ca, filepath.Join(s.caDir, "ca-key.pem"))
	checkKeyPair(t, node, s.nodeKey())
	checkKeyPair(t, client, s.clientKey())
	for _, p := range []string{filepath.Join(s.caDir, "ca-key.pem"), s.nodeKey(), s.clientKey()} {
		wantMode(t, p, 0o600)
	}
	for _, p := range []string{s.caCert(), s.nodeCert(), s.clientCert()} {
		wantMode(t, p, 0o644)
	}
}

// TestCertNeverOverwritesUnasked: a file that exists stops fifoq cert
// with exit 1 and one line naming the file and --overwrite, before it
// writes anything; --overwrite replaces the files (with the right modes);
// --if-missing keeps them when they are what was asked, and refuses them
// when not.
func TestCertNeverOverwritesUnasked(t *testing.T) {
	s := makeCerts(t)
	env := cleanEnv(t)
	before, _ := os.ReadFile(s.caCert())
	refused := func(r binRun, what, file string) {
		t.Helper()
		if r.code != 1 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, file) || !strings.Contains(r.stderr, "--overwrite") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line naming %s and --overwrite", what, r.code, r.stdout, r.stderr, file)
		}
	}
	refused(runBin(t, env, "cert", "ca", "--out", s.caDir), "fifoq cert ca again", s.caCert())
	if after, _ := os.ReadFile(s.caCert()); !bytes.Equal(before, after) {
		t.Fatal("ca.pem changed after fifoq cert ca refused to overwrite it")
	}

	// Only the certificate is there: refused, and no key is written.
	lone := filepath.Join(s.nodeDir, "n2.pem")
	if err := os.WriteFile(lone, []byte("not mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(runBin(t, env, "cert", "node", "--ca", s.caDir, "--name", "n2", "--host", "localhost", "--out", s.nodeDir), "fifoq cert node over a file", lone)
	if _, err := os.Stat(filepath.Join(s.nodeDir, "n2-key.pem")); err == nil {
		t.Error("fifoq cert node refused, yet wrote n2-key.pem")
	}
	if data, _ := os.ReadFile(lone); string(data) != "not mine\n" {
		t.Error("fifoq cert node refused, yet changed n2.pem")
	}

	// --if-missing keeps what is as asked, and refuses what is not.
	node := readCert(t, s.nodeCert())
	runBin(t, env, "cert", "node", "--ca", s.caDir, "--name", "n1", "--host", "127.0.0.1,localhost", "--out", s.nodeDir, "--if-missing").wantOK(t, "--if-missing")
	if !readCert(t, s.nodeCert()).Equal(node) {
		t.Error("fifoq cert node --if-missing replaced a certificate that was as asked")
	}
	if r := runBin(t, env, "cert", "node", "--ca", s.caDir, "--name", "n1", "--host", "other", "--out", s.nodeDir, "--if-missing"); r.code != 1 || !strings.Contains(r.stderr, "hosts") {
		t.Errorf("--if-missing over a certificate for other hosts: exit %d, %q; want exit 1 naming its hosts", r.code, r.stderr)
	}

	// --overwrite replaces, and a key made readable by others is 0600 again.
	if err := os.Chmod(s.nodeKey(), 0o666); err != nil {
		t.Fatal(err)
	}
	runBin(t, env, "cert", "node", "--ca", s.caDir, "--name", "n1", "--host", "localhost", "--out", s.nodeDir, "--overwrite").wantOK(t, "--overwrite")
	if readCert(t, s.nodeCert()).Equal(node) {
		t.Error("fifoq cert node --overwrite left the old certificate")
	}
	checkKeyPair(t, readCert(t, s.nodeCert()), s.nodeKey())
	wantMode(t, s.nodeKey(), 0o600)

	// A usage error: exit 2, the line on stderr.
	if r := runBin(t, env, "cert", "node", "--ca", s.caDir, "--name", "n3", "--out", s.nodeDir); r.code != 2 || !strings.Contains(r.stderr, "--host") {
		t.Errorf("fifoq cert node without --host: exit %d, %q; want exit 2 asking for --host", r.code, r.stderr)
	}
}

// TestCertServesHTTPSAndAuthenticatesClients runs fifoq serve --tls-cert
// --tls-key with the node's certificate: a client that trusts ca.pem
// alone reaches it by address and by name, one that does not trust it is
// refused. A TLS server that demands a certificate signed by ca.pem then
// admits the client's certificate.
func TestCertServesHTTPSAndAuthenticatesClients(t *testing.T) {
	s := makeCerts(t)
	caPEM, err := os.ReadFile(s.caCert())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	addr := startServeBin(t, "https", trusting, "--tls-cert", s.nodeCert(), "--tls-key", s.nodeKey())
	_, port, _ := net.SplitHostPort(addr)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := trusting.Get("https://" + net.JoinHostPort(host, port) + "/readyz")
		if err != nil {
			t.Fatalf("GET https://%s:%s/readyz trusting ca.pem: %v", host, port, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "n1" {
			t.Errorf("https://%s: %d, want 200 over TLS from n1's certificate", host, resp.StatusCode)
		}
	}
	other := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	if _, err := other.Get("https://" + addr + "/readyz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client that does not trust ca.pem: %v, want a certificate error", err)
	}

	// A server that demands a client certificate signed by ca.pem.
	serverPair, err := tls.LoadX509KeyPair(s.nodeCert(), s.nodeKey())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte("ok"))
				}
			}()
		}
	}()
	clientPair, err := tls.LoadX509KeyPair(s.clientCert(), s.clientKey())
	if err != nil {
		t.Fatal(err)
	}
	// In TLS 1.3 the server judges the client's certificate after the
	// client's handshake is done: the verdict is the first read, "ok" or
	// an alert.
	dial := func(certs []tls.Certificate) (string, error) {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, Certificates: certs})
		if err != nil {
			return "", err
		}
		defer c.Close()
		b, err := io.ReadAll(c)
		return string(b), err
	}
	if got, err := dial([]tls.Certificate{clientPair}); got != "ok" || err != nil {
		t.Errorf("mutual TLS with the client's certificate: %q, %v; want ok", got, err)
	}
	if got, _ := dial(nil); got == "ok" {
		t.Error("a server that demands a client certificate admitted a client with none")
	}
}
