package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// debianCACerts is the --ca-certs value that builds the image's bundle
// from Debian's ca-certificates package.
const debianCACerts = "debian"

// caBundle is the image's /etc/ssl/certs/ca-certificates.crt and where it
// came from.
type caBundle struct {
	pem    []byte
	source string // for the image's history: which package, or which file
}

// readCABundle makes the image's CA bundle. With "debian" it is the
// certificates the build machine's ca-certificates package ships
// (/usr/share/ca-certificates/*, Mozilla's roots), concatenated in name
// order: the machine's own /etc/ssl/certs/ca-certificates.crt would also
// carry any CA added locally (/usr/local/share/ca-certificates: a
// company's or a sandbox's intercepting proxy), which must not end up
// trusted by every user of the image. Anything else is a PEM bundle
// taken as it is.
func readCABundle(spec string) (*caBundle, error) {
	if spec != debianCACerts {
		data, err := os.ReadFile(spec)
		if err != nil {
			return nil, err
		}
		n, err := countCerts(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		return &caBundle{pem: data, source: fmt.Sprintf("%d CA certificates from %s", n, spec)}, nil
	}
	version, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "ca-certificates").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query ca-certificates (install Debian's ca-certificates, or give --ca-certs FILE): %w", err)
	}
	list, err := exec.Command("dpkg-query", "-L", "ca-certificates").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query -L ca-certificates: %w", err)
	}
	var names []string
	for _, name := range strings.Split(string(list), "\n") {
		if strings.HasPrefix(name, "/usr/share/ca-certificates/") && strings.HasSuffix(name, ".crt") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		buf.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			buf.WriteByte('\n')
		}
	}
	n, err := countCerts(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("Debian's ca-certificates: %w", err)
	}
	if n != len(names) {
		return nil, fmt.Errorf("Debian's ca-certificates: %d files held %d certificates", len(names), n)
	}
	return &caBundle{pem: buf.Bytes(), source: fmt.Sprintf("%d CA certificates of Debian's ca-certificates %s", n, version)}, nil
}

// countCerts checks that data is PEM certificates only, and counts them.
func countCerts(data []byte) (int, error) {
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return 0, fmt.Errorf("text after certificate %d is not PEM", n)
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return 0, fmt.Errorf("a PEM block of type %s", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return 0, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("no certificates")
	}
	return n, nil
}
