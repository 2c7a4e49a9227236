package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File modes of what fifoq cert writes. A key is its holder's alone. A
// certificate is public (a node shows its own to every peer and client,
// and ca.pem is handed to every client), so others may read it: a client
// running as another user can then trust ca.pem where it lies.
const (
	certFileMode fs.FileMode = 0o644
	keyFileMode  fs.FileMode = 0o600
)

// backdate is how long before now a certificate starts to be valid, so
// that a machine whose clock is a little behind the one that made it does
// not refuse it as not yet valid.
const backdate = time.Hour

// certFile is one file a subcommand of fifoq cert writes.
type certFile struct {
	path string
	mode fs.FileMode
	data []byte
}

// makeCA makes the CA of "fifoq cert ca": a self-signed certificate that
// may sign certificates and CRLs, but no CA below it (path length 0).
func makeCA(o certOptions, stdout io.Writer) error {
	certPath, keyPath := filepath.Join(o.out, "ca.pem"), filepath.Join(o.out, "ca-key.pem")
	kept, err := existing(o, certPath, keyPath)
	if err != nil {
		return err
	}
	if kept {
		ca, _, err := loadCA(o.out)
		if err != nil {
			return fmt.Errorf("--if-missing: %w", err)
		}
		if ca.Subject.CommonName != o.name {
			return notAsAsked(certPath, fmt.Sprintf("its name is %q, not %q", ca.Subject.CommonName, o.name))
		}
		fmt.Fprintf(stdout, "kept %s and %s (--if-missing): CA %q, expires %s\n", certPath, keyPath, o.name, ca.NotAfter.Format(time.DateOnly))
		return nil
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	notBefore, notAfter := validity(o.days)
	tmpl := &x509.Certificate{
		// SerialNumber nil: crypto/x509 draws a random one, as RFC 5280 says.
		Subject:               pkix.Name{CommonName: o.name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		// It signs nodes and clients only: verifiers refuse any CA below
		// it, so nothing it signed can sign certificates in its turn.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if err := writeFiles(o, []certFile{{keyPath, keyFileMode, keyPEM}, {certPath, certFileMode, certPEM(der)}}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s: CA %q, expires %s; keep %s secret, and off the servers\n", certPath, keyPath, o.name, notAfter.Format(time.DateOnly), keyPath)
	return nil
}

// makeLeaf makes the certificate of "fifoq cert node" or "fifoq cert
// client" (kind), signed by the CA in o.ca.
func makeLeaf(kind string, o certOptions, stdout, stderr io.Writer) error {
	ca, caKey, err := loadCA(o.ca)
	if err != nil {
		return err
	}
	certPath, keyPath := filepath.Join(o.out, o.name+".pem"), filepath.Join(o.out, o.name+"-key.pem")
	kept, err := existing(o, certPath, keyPath)
	if err != nil {
		return err
	}
	if kept {
		if err := checkLeaf(kind, o, ca, certPath, keyPath); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "kept %s and %s (--if-missing)\n", certPath, keyPath)
		return nil
	}
	notBefore, notAfter := validity(o.days)
	if notAfter.After(ca.NotAfter) {
		return fmt.Errorf("the CA in %s expires on %s, before the %d days asked would end: give --days %d or less, or make a new CA",
			o.ca, ca.NotAfter.Format(time.DateOnly), o.days, max(0, int(time.Until(ca.NotAfter).Hours()/24)))
	}
	if kind == "node" && o.days > defaultLeafDays {
		fmt.Fprintf(stderr, "fifoq cert node: warning: macOS and iOS refuse a TLS server certificate valid for more than %d days\n", defaultLeafDays)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: o.name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		// An ECDSA key signs the handshake; it enciphers no keys.
		KeyUsage: x509.KeyUsageDigitalSignature,
		// A node both serves (its API, and the peer port) and dials its
		// peers, which ask for its certificate: it needs both uses.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if kind == "client" {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, h := range o.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeFiles(o, []certFile{{keyPath, keyFileMode, keyPEM}, {certPath, certFileMode, certPEM(der)}}); err != nil {
		return err
	}
	hosts := ""
	if kind == "node" {
		hosts = " for " + strings.Join(o.hosts, ", ")
	}
	fmt.Fprintf(stdout, "wrote %s and %s: %s %q%s, signed by %q, expires %s\n",
		certPath, keyPath, kind, o.name, hosts, ca.Subject.CommonName, notAfter.Format(time.DateOnly))
	return nil
}

// newKey returns a new ECDSA P-256 key and its PEM (PKCS #8, which
// OpenSSL, Go and the servers and proxies in front of fifoq all read).
func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// certPEM is a certificate's DER in PEM.
func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// validity is the span of a certificate of days days made now.
func validity(days int) (notBefore, notAfter time.Time) {
	now := time.Now().UTC().Truncate(time.Second)
	return now.Add(-backdate), now.AddDate(0, 0, days)
}

// loadCA reads the CA of dir: ca.pem and ca-key.pem, which must be a pair,
// a CA allowed to sign certificates, and not expired. Any key Go reads
// will do, so a CA made with OpenSSL signs as well as fifoq's own.
func loadCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no CA in %s (%v): make one with fifoq cert ca --out %s", dir, err, dir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the CA in %s: %s and %s: %w", dir, certPath, keyPath, err)
	}
	ca := pair.Leaf
	signer, ok := pair.PrivateKey.(crypto.Signer)
	switch {
	case !ok:
		return nil, nil, fmt.Errorf("%s: a key of type %T cannot sign", keyPath, pair.PrivateKey)
	case !ca.IsCA || (ca.KeyUsage != 0 && ca.KeyUsage&x509.KeyUsageCertSign == 0):
		return nil, nil, fmt.Errorf("%s is not a CA certificate (it may not sign certificates)", certPath)
	case time.Now().After(ca.NotAfter):
		return nil, nil, fmt.Errorf("the CA %s expired on %s: make a new one, and new certificates with it", certPath, ca.NotAfter.Format(time.DateOnly))
	}
	return ca, signer, nil
}

// existing tells whether paths exist already, as o says to treat them: an
// existing file is refused without --overwrite or --if-missing; with
// --if-missing, kept is true when all exist (the caller then checks them),
// and an error when only some do.
func existing(o certOptions, paths ...string) (kept bool, err error) {
	var there, missing []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			there = append(there, p)
		} else if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, p)
		} else {
			return false, err
		}
	}
	switch {
	case len(there) == 0 || o.overwrite:
		return false, nil
	case !o.ifMissing:
		return false, fmt.Errorf("%s exists: give --overwrite to replace it; nothing was written", there[0])
	case len(missing) > 0:
		return false, fmt.Errorf("%s exists but %s does not: remove %s, or give --overwrite to make both anew", there[0], missing[0], there[0])
	}
	return true, nil
}

// checkLeaf checks, for --if-missing, that the certificate and key that
// exist are what makeLeaf would make: a pair, signed by ca for kind's
// uses, valid now, with o's name and (for a node) exactly o's hosts.
func checkLeaf(kind string, o certOptions, ca *x509.Certificate, certPath, keyPath string) error {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return fmt.Errorf("--if-missing: %s and %s: %w", certPath, keyPath, err)
	}
	leaf := pair.Leaf
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	uses := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if kind == "node" {
		uses = append(uses, x509.ExtKeyUsageServerAuth)
	}
	// One use at a time: Verify accepts a chain good for any of those
	// listed, and a node's must be good for each.
	for _, use := range uses {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
			return notAsAsked(certPath, "the CA in "+o.ca+" does not vouch for it: "+err.Error())
		}
	}
	if leaf.Subject.CommonName != o.name {
		return notAsAsked(certPath, fmt.Sprintf("its name is %q", leaf.Subject.CommonName))
	}
	if kind != "node" {
		return nil
	}
	var have, want []string
	for _, ip := range leaf.IPAddresses {
		have = append(have, ip.String())
	}
	have = append(have, leaf.DNSNames...)
	for _, h := range o.hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		want = append(want, h)
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(slices.Compact(have), slices.Compact(want)) {
		return notAsAsked(certPath, "its hosts are "+strings.Join(have, ","))
	}
	return nil
}

// notAsAsked is the error of --if-missing finding a file that is not what
// the command would make.
func notAsAsked(path, why string) error {
	return fmt.Errorf("--if-missing: %s exists but is not what was asked (%s): remove it, or give --overwrite to make it anew", path, why)
}

// writeFiles writes files into o.out (made if missing). Without
// --overwrite each is created exclusively, so that not even a file made
// since existing looked is replaced; if one fails, those written before
// it are removed. With --overwrite each is written beside its place and
// renamed over it: a reader never sees half a key, and a replaced file
// takes the new mode instead of keeping a looser old one.
func writeFiles(o certOptions, files []certFile) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var written []string
	for _, f := range files {
		err := writeFile(f, o.overwrite)
		if err != nil {
			// What this run created goes; what it replaced cannot come back.
			for _, p := range written {
				if !o.overwrite {
					os.Remove(p)
				}
			}
			return err
		}
		written = append(written, f.path)
	}
	return nil
}

// writeFile writes one file, as writeFiles says.
func writeFile(f certFile, replace bool) error {
	path := f.path
	if replace {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		path = filepath.Join(filepath.Dir(f.path), "."+filepath.Base(f.path)+"."+hex.EncodeToString(b[:]))
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: give --overwrite to replace it", path)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(f.data)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && replace {
		err = os.Rename(path, f.path)
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
