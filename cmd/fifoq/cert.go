package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// certSubcommands are the words "fifoq cert" takes first.
var certSubcommands = []string{"ca", "node", "client"}

// Default lifetimes, in days. A CA outlives the certificates it signs, and
// is made again rarely: ten years. A node's or client's certificate gets
// 825 days, the longest macOS and iOS accept for a TLS server certificate
// (Apple's rule since 2019, which a private CA is held to as well): a
// longer one works between fifoq's nodes, but Safari, and any program that
// checks certificates through Apple's TLS stack, refuse it.
const (
	defaultCADays   = 3650
	defaultLeafDays = 825
)

// defaultCAName is the common name of a CA made without --name.
const defaultCAName = "fifoq CA"

// certOptions are the flags of "fifoq cert".
type certOptions struct {
	out, ca, name        string
	hosts                []string
	days                 int
	overwrite, ifMissing bool
}

// certFlagSet defines the flags of "fifoq cert" on o: the one definition
// that parsing, shell completion and the man page all read. Its flags are
// those of all three subcommands; certCmd refuses one given to a
// subcommand it does not apply to (certFlagsFor).
func certFlagSet(o *certOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq cert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "out", ".", "the `DIR` to write the files in (made if missing)")
	fs.StringVar(&o.ca, "ca", ".", "node, client: the `DIR` of the signing CA's ca.pem and ca-key.pem")
	fs.StringVar(&o.name, "name", "", "the common `NAME`: of the CA (default \""+defaultCAName+"\"); of a node or a client (required), whose files it names too: NAME.pem, NAME-key.pem")
	fs.Func("host", "node: the names and IP addresses clients and peers reach the node by, comma-separated (`HOST,...`); required, may be repeated", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				o.hosts = append(o.hosts, h)
			}
		}
		return nil
	})
	// A Func rather than an Int: its default depends on the subcommand,
	// and a flag default of 0 would say otherwise in the man page.
	fs.Func("days", fmt.Sprintf("the lifetime, `N` days (default %d for ca, %d for node and client)", defaultCADays, defaultLeafDays), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 36500 {
			return fmt.Errorf("want a number of days from 1 to 36500")
		}
		o.days = n
		return nil
	})
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace files that exist (without it, an existing file stops the command before it writes anything)")
	fs.BoolVar(&o.ifMissing, "if-missing", false, "if the files exist already and are what the command would make (same CA, name and hosts, not expired), keep them and exit 0: for scripts and one-shot containers run again")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  fifoq cert ca [--out DIR] [--name CN]
      a CA of your own: DIR/ca.pem (its certificate, for --raft-tls-ca and
      clients' --ca-cert) and DIR/ca-key.pem (its key: keep it away from the nodes)
  fifoq cert node --name NAME --host HOST,... [--ca DIR] [--out DIR]
      a node's certificate, signed by the CA in --ca, for --tls-cert/--tls-key
      and --raft-tls-cert/--raft-tls-key: DIR/NAME.pem and DIR/NAME-key.pem
  fifoq cert client --name NAME [--ca DIR] [--out DIR]
      a client's certificate (client authentication only), for a client that
      must present one: DIR/NAME.pem and DIR/NAME-key.pem

Keys are ECDSA P-256, in PEM (PKCS #8), written with mode 0600; certificates
with mode 0644. A file that exists is never replaced without --overwrite.
A client's certificate makes no member: nodes admit as a peer only a
certificate of their --raft-tls-ca good for both server and client use.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// certFlagsFor lists the flags each subcommand takes; the others are
// refused rather than silently ignored.
var certFlagsFor = map[string][]string{
	"ca":     {"out", "name", "days", "overwrite", "if-missing"},
	"node":   {"out", "ca", "name", "host", "days", "overwrite", "if-missing"},
	"client": {"out", "ca", "name", "days", "overwrite", "if-missing"},
}

// certCmd runs "fifoq cert ca|node|client".
func certCmd(args []string, stdout, stderr io.Writer) int {
	var o certOptions
	fs := certFlagSet(&o, stderr)
	// Flags may come before or after the subcommand.
	if exit, stop := parseArgs(fs, args, true, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	sub := fs.Arg(0)
	if isHelpWord(sub) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fifoq cert: "+format+" (fifoq cert --help)\n", a...)
		return 2
	}
	allowed, ok := certFlagsFor[sub]
	if !ok {
		return usageErr("unknown subcommand %q: ca, node or client", sub)
	}
	if fs.NArg() > 1 {
		return usageErr("%s takes no arguments, only flags: %q", sub, fs.Arg(1))
	}
	var stray string
	fs.Visit(func(f *flag.Flag) {
		if stray == "" && !slices.Contains(allowed, f.Name) {
			stray = f.Name
		}
	})
	if stray != "" {
		return usageErr("--%s is not a flag of fifoq cert %s", stray, sub)
	}
	if msg := o.check(sub); msg != "" {
		return usageErr("%s", msg)
	}
	var err error
	switch sub {
	case "ca":
		err = makeCA(o, stdout)
	default:
		err = makeLeaf(sub, o, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fifoq cert %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// certNamePattern is what a node's or client's --name may be: it becomes
// the names of files, so no path separators, and no leading dot or dash.
var certNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// dnsNamePattern is a DNS name a certificate may carry: labels of letters,
// digits, '-' and '_' (container names have them), optionally under a
// leading wildcard label.
var dnsNamePattern = regexp.MustCompile(`^(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$`)

// check returns what is wrong with o for subcommand sub ("" if nothing),
// and fills in the defaults that depend on sub.
func (o *certOptions) check(sub string) string {
	if o.overwrite && o.ifMissing {
		return "--overwrite and --if-missing contradict each other: give one"
	}
	if o.days == 0 {
		o.days = defaultLeafDays
		if sub == "ca" {
			o.days = defaultCADays
		}
	}
	if o.out == "" {
		return "--out: want a directory"
	}
	if sub == "ca" {
		if o.name == "" {
			o.name = defaultCAName
		}
		if len(o.name) > 64 {
			return "--name: a common name has at most 64 characters"
		}
		return ""
	}
	switch {
	case o.name == "":
		return "fifoq cert " + sub + " needs --name NAME"
	case !certNamePattern.MatchString(o.name):
		return fmt.Sprintf("--name %q: want up to 64 letters, digits, '.', '-' or '_', starting with a letter or digit (it names the files)", o.name)
	case o.name == "ca" || o.name == "ca-key":
		// NAME.pem or NAME-key.pem would be the CA's own files.
		return "--name " + o.name + " would be written over the CA's own files: choose another name"
	case o.ca == "":
		return "--ca: want the CA's directory"
	}
	if sub != "node" {
		return ""
	}
	if len(o.hosts) == 0 {
		return "fifoq cert node needs --host HOST,...: the names and addresses the node is reached by"
	}
	for i, h := range o.hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		o.hosts[i] = h
		if net.ParseIP(h) == nil && !dnsNamePattern.MatchString(h) {
			return fmt.Sprintf("--host %q: want a DNS name or an IP address, without a port or scheme", h)
		}
	}
	return ""
}
