package check

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tlsSecret makes a CA and a certificate it signs for hosts, and returns
// them as a kubernetes.io/tls Secret holds them (tls.crt, tls.key,
// ca.crt). It uses fifoq cert, as docs/operations.md tells an operator
// to; a fifoq without that command gets them from crypto/x509 instead.
func tlsSecret(t *testing.T, caName string, hosts []string) map[string][]byte {
	t.Helper()
	if out, err := exec.Command(fifoqPath(t), "cert", "--help").CombinedOutput(); err == nil && strings.Contains(string(out), "fifoq cert node") {
		return certsByFifoq(t, caName, hosts)
	}
	t.Logf("this fifoq has no cert command: the certificates come from crypto/x509")
	return certsByGo(t, caName, hosts)
}

// certsByFifoq runs fifoq cert ca and fifoq cert node.
func certsByFifoq(t *testing.T, caName string, hosts []string) map[string][]byte {
	dir := t.TempDir()
	run := func(args ...string) {
		if out, err := exec.Command(fifoqPath(t), args...).CombinedOutput(); err != nil {
			t.Fatalf("fifoq %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("cert", "ca", "--out", dir, "--name", caName)
	run("cert", "node", "--name", "fifoq", "--host", strings.Join(hosts, ","), "--ca", dir, "--out", dir)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return map[string][]byte{"tls.crt": read("fifoq.pem"), "tls.key": read("fifoq-key.pem"), "ca.crt": read("ca.pem")}
}

// certsByGo makes the same with crypto/x509: ECDSA P-256, a day long.
func certsByGo(t *testing.T, caName string, hosts []string) map[string][]byte {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: caName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "fifoq"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
}
