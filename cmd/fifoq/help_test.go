package main

import (
	"strings"
	"testing"
)

// helpArgs lists every command and subcommand word fifoq takes, from the
// tables completion and the man page read, for the help tests.
func helpArgs() [][]string {
	var out [][]string
	for _, c := range commands {
		out = append(out, []string{c.name})
		for _, w := range c.words {
			out = append(out, []string{c.name, w})
		}
	}
	return out
}

// TestHelpOnStdout runs the built binary with --help, -h and -help after
// every command and subcommand: each prints its help ("Usage: ...") on
// standard output (so that `fifoq serve --help | less` shows it) and
// nothing on standard error, and exits 0. The commands that take subcommands take the word
// help too.
func TestHelpOnStdout(t *testing.T) {
	var cases [][]string
	for _, args := range helpArgs() {
		for _, h := range []string{"--help", "-h", "-help"} {
			cases = append(cases, append(append([]string{}, args...), h))
		}
	}
	cases = append(cases, []string{"cluster", "help"}, []string{"cert", "help"}, []string{"config", "help"}, []string{"completion", "help"})
	env := cleanEnv(t)
	for _, args := range cases {
		r := runBin(t, env, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage") || r.stderr != "" {
			t.Errorf("fifoq %s: exit %d, stdout %d bytes, stderr %d bytes (%q...); want exit 0, the help (Usage: ...) on stdout, nothing on stderr",
				strings.Join(args, " "), r.code, len(r.stdout), len(r.stderr), firstLine(r.stderr))
		}
	}
}

// TestUsageErrorsOnStderr: a usage error still prints the usage on
// standard error, nothing on standard output, and exits 2.
func TestUsageErrorsOnStderr(t *testing.T) {
	env := cleanEnv(t)
	for _, args := range [][]string{
		{"nope"}, {"serve", "--nope"}, {"serve", "extra"}, {"bench", "--nope"}, {"healthcheck", "extra"},
		{"cluster"}, {"cluster", "nope"}, {"cluster", "status", "extra"}, {"cluster", "add", "n4"}, {"cluster", "remove"},
		{"cluster", "status", "--nope"}, {"backup"}, {"backup", "--nope", "f"}, {"export", "q"}, {"import", "--nope", "q", "f"},
		{"cert"}, {"cert", "nope"}, {"cert", "node", "--name", "n1"}, {"cert", "ca", "--host", "h"}, {"cert", "client", "extra"},
		{"config"}, {"config", "nope"}, {"config", "from-elasticmq"}, {"completion"}, {"completion", "tcsh"},
		{"completion", "bash", "extra"}, {"man", "extra"}, {"version", "extra"},
	} {
		r := runBin(t, env, args...)
		if r.code != 2 || r.stdout != "" || strings.TrimSpace(r.stderr) == "" {
			t.Errorf("fifoq %s: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr alone",
				strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}
