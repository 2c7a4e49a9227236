package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthcheckOptions are the flags of "fifoq healthcheck".
type healthcheckOptions struct {
	url        string
	timeout    time.Duration
	skipVerify bool
	caCert     string
}

// healthcheckFlagSet defines the flags of "fifoq healthcheck" on o.
func healthcheckFlagSet(o *healthcheckOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:9324/readyz", "the server's readiness probe")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	fs.BoolVar(&o.skipVerify, "tls-skip-verify", false, "accept any certificate of an https URL (a self-signed one on the same host)")
	defineCACert(fs, &o.caCert)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fifoq healthcheck [flags]

Asks a server's readiness probe (/readyz) whether it takes writes, and
exits 0 if it answers 200, 1 otherwise. The container image runs it as
its HEALTHCHECK, since the image holds no other program.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// healthcheckCmd runs "fifoq healthcheck".
func healthcheckCmd(args []string, stdout, stderr io.Writer) int {
	var o healthcheckOptions
	fs := healthcheckFlagSet(&o, stderr)
	if exit, stop := parseArgs(fs, args, false, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fifoq healthcheck: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DisableKeepAlives = true
	tc, err := clientTLS(o.caCert)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq healthcheck: %v\n", err)
		return 1
	}
	switch {
	case o.skipVerify:
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	case tc != nil:
		transport.TLSClientConfig = tc
	}
	client := &http.Client{Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq healthcheck: %v\n", err)
		return 2
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq healthcheck: %v\n", explainTLS(err))
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "fifoq healthcheck: %s: %s %s\n", o.url, resp.Status, msg)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s\n", o.url, msg)
	return 0
}
