package main

import (
	"flag"
	"io"
	"sort"

	"github.com/fifoq/fifoq/internal/config"
)

// command is one subcommand of fifoq, as completion and the man page
// describe it.
type command struct {
	name    string
	args    string // the synopsis after the name, e.g. "[flags]"
	summary string
	// flags returns the command's flag set, from the same function the
	// command parses its arguments with; nil for a command without flags.
	flags func() *flag.FlagSet
	// fileFlags lists the flags whose value is a path, which the shells
	// complete with file names.
	fileFlags []string
	// words are the fixed words the command takes as arguments.
	words []string
	// settings tells that the command's flags are settings of the config
	// file and the environment too (config.Settings).
	settings bool
}

// serveFileFlags lists the flags of fifoq serve that take a path: the
// settings of kind Path, and the config file's own flag.
func serveFileFlags() []string {
	names := []string{config.ConfigFlag}
	for _, s := range config.Settings {
		if s.Kind == config.Path {
			names = append(names, s.Flag)
		}
	}
	return names
}

// settingOf returns the config file's setting that flag name of fifoq
// serve gives, if any.
func settingOf(name string) (config.Setting, bool) {
	for _, s := range config.Settings {
		if s.Flag == name {
			return s, true
		}
	}
	return config.Setting{}, false
}

// commands lists fifoq's subcommands in the order help shows them.
var commands = []command{
	{name: "serve", args: "[flags]", summary: "run the server",
		flags:     func() *flag.FlagSet { return serveFlagSet(&serveOptions{}, io.Discard) },
		fileFlags: serveFileFlags(), settings: true},
	{name: "bench", args: "[flags]", summary: "load-test an SQS endpoint and verify what it delivered",
		flags:     func() *flag.FlagSet { return benchFlagSet(&benchOptions{}, io.Discard) },
		fileFlags: []string{"data-dir"}},
	{name: "healthcheck", args: "[flags]", summary: "exit 0 if a server's readiness probe answers 200 (a container's HEALTHCHECK)",
		flags:     func() *flag.FlagSet { return healthcheckFlagSet(&healthcheckOptions{}, io.Discard) },
		fileFlags: []string{"ca-cert"}},
	{name: "cluster", args: "status|leader|add ID HOST:PORT|remove ID [flags]", summary: "show a cluster's members and leader, and change its membership, through any member",
		flags:     func() *flag.FlagSet { return clusterFlagSet(&clusterCmdOptions{}, io.Discard) },
		fileFlags: []string{"ca-cert"}, words: clusterSubcommands},
	{name: "cert", args: "ca|node|client [flags]", summary: "make a CA of your own, and certificates it signs for nodes (HTTPS, and mutual TLS between members) and clients",
		flags:     func() *flag.FlagSet { return certFlagSet(&certOptions{}, io.Discard) },
		fileFlags: []string{"out", "ca"}, words: certSubcommands},
	{name: "backup", args: "[flags] FILE", summary: "take a backup of a running server's whole state, while it serves",
		flags:     func() *flag.FlagSet { return backupFlagSet(&backupOptions{}, io.Discard) },
		fileFlags: []string{"ca-cert"}},
	{name: "restore", args: "--data-dir DIR [flags] FILE", summary: "make a new data dir from a backup",
		flags:     func() *flag.FlagSet { return restoreFlagSet(&restoreOptions{}, io.Discard) },
		fileFlags: []string{"data-dir"}},
	{name: "export", args: "[flags] QUEUE FILE", summary: "write every message of a queue to a file, one JSON object a line, without receiving any",
		flags:     func() *flag.FlagSet { return queueIOFlagSet(&queueIOOptions{}, true, io.Discard) },
		fileFlags: []string{"ca-cert"}},
	{name: "import", args: "[flags] QUEUE FILE", summary: "send the messages of an export to a queue, each group in its order",
		flags:     func() *flag.FlagSet { return queueIOFlagSet(&queueIOOptions{}, false, io.Discard) },
		fileFlags: []string{"ca-cert"}},
	{name: "config", args: "from-elasticmq FILE", summary: "print the queues of an ElasticMQ config file (HOCON) as fifoq's YAML config file",
		words: configSubcommands},
	{name: "version", summary: "print the version, the commit and the Go release of this build"},
	{name: "completion", args: "bash|zsh|fish", summary: "print a shell completion script", words: shells},
	{name: "man", summary: "print the manual page (roff)"},
	{name: "help", summary: "print the list of commands"},
}

// flagInfo is one flag as the generators print it.
type flagInfo struct {
	name, usage, def string
	isBool           bool
	isFile           bool
	valueName        string
}

// flagsOf lists the flags of c, sorted by name (as flag.PrintDefaults).
func flagsOf(c command) []flagInfo {
	if c.flags == nil {
		return nil
	}
	var out []flagInfo
	c.flags().VisitAll(func(f *flag.Flag) {
		valueName, usage := flag.UnquoteUsage(f)
		bf, isBool := f.Value.(interface{ IsBoolFlag() bool })
		fi := flagInfo{name: f.Name, usage: usage, def: f.DefValue, isBool: isBool && bf.IsBoolFlag(), valueName: valueName}
		for _, ff := range c.fileFlags {
			if ff == f.Name {
				fi.isFile = true
			}
		}
		out = append(out, fi)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
