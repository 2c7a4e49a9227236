package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
)

// caBundleEnv names the PEM file of CA certificates that the AWS CLI and
// SDKs trust in place of the system's; the client commands default to it,
// so that one setting serves them and the SDKs alike.
const caBundleEnv = "AWS_CA_BUNDLE"

// defineCACert defines --ca-cert on fs, the flag of every command that
// connects to a server (backup, export, import, cluster, healthcheck).
func defineCACert(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "ca-cert", "", "the PEM `FILE` of the CA certificates that an https endpoint's certificate must chain to, in place of the system's (for a private CA or a self-signed certificate); default: the file named by "+caBundleEnv+" if set")
}

// clientTLS is the TLS configuration of a client command: the CA
// certificates of caFile (or of the file AWS_CA_BUNDLE names) as its only
// roots, as AWS_CA_BUNDLE means for the AWS tools; nil, the system's
// roots, when neither names a file.
func clientTLS(caFile string) (*tls.Config, error) {
	from := "--ca-cert"
	if caFile == "" {
		caFile, from = os.Getenv(caBundleEnv), caBundleEnv
	}
	if caFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", from, caFile)
	}
	return &tls.Config{RootCAs: pool}, nil
}

// httpClient is the client a command makes its plain HTTP requests with:
// trusting caFile's certificates as clientTLS says.
func httpClient(caFile string) (*http.Client, error) {
	tc, err := clientTLS(caFile)
	if err != nil || tc == nil {
		return http.DefaultClient, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tc
	return &http.Client{Transport: t}, nil
}

// explainTLS adds to an error of a certificate no trusted CA signed the
// way to trust it: the error alone names neither --ca-cert nor
// AWS_CA_BUNDLE, and a new user would not guess them.
func explainTLS(err error) error {
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return fmt.Errorf("%w (for a private CA or a self-signed certificate, give its PEM file with --ca-cert FILE or %s)", err, caBundleEnv)
	}
	return err
}
