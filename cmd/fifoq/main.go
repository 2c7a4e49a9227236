// Command fifoq is a message queue server that speaks the Amazon SQS API.
//
//	fifoq serve [flags]         run the server
//	fifoq bench [flags]         load-test an SQS endpoint and verify what it delivered
//	fifoq healthcheck [flags]   ask a server's readiness probe (a container's HEALTHCHECK)
//	fifoq cluster CMD ...        show and change a cluster's membership (status, leader, add, remove)
//	fifoq cert ca|node|client   make a CA, and certificates it signs for nodes and clients
//	fifoq config from-elasticmq FILE  print an ElasticMQ config's queues as fifoq's config file
//	fifoq version               print the version, commit and Go release
//	fifoq completion SHELL      print a bash, zsh or fish completion script
//	fifoq man                   print the manual page
//
// Run "fifoq serve --help" for the server's flags.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the process's exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "healthcheck":
		return healthcheckCmd(args[1:], stdout, stderr)
	case "completion":
		return completionCmd(args[1:], stdout, stderr)
	case "man":
		return manCmd(args[1:], stdout, stderr)
	case "cluster":
		return clusterCmd(args[1:], stdout, stderr)
	case "cert":
		return certCmd(args[1:], stdout, stderr)
	case "backup":
		return backupCmd(args[1:], stdout, stderr)
	case "restore":
		return restoreCmd(args[1:], stdout, stderr)
	case "export":
		return exportCmd(args[1:], stdout, stderr)
	case "import":
		return importCmd(args[1:], stdout, stderr)
	case "config":
		return configCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "fifoq: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
}

// usage lists the commands, from the same table as completion and the
// man page.
func usage(w io.Writer) {
	fmt.Fprint(w, "fifoq is a message queue server that speaks the Amazon SQS API.\n\nUsage:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-30s %s\n", strings.TrimSpace("fifoq "+c.name+" "+c.args), c.summary)
	}
	fmt.Fprint(w, "\nRun \"fifoq COMMAND --help\" for a command's flags.\n")
}
