// Command fifoq is a message queue server that speaks the Amazon SQS API.
//
//	fifoq serve [flags]    run the server
//	fifoq bench [flags]    load-test an SQS endpoint and verify what it delivered
//	fifoq cluster ...      show and change a cluster's membership
//	fifoq version          print the version
//
// Run "fifoq serve --help" for the server's flags.
package main

import (
	"fmt"
	"io"
	"os"
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
	case "cluster":
		return clusterCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "--help", "-help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "fifoq: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `fifoq is a message queue server that speaks the Amazon SQS API.

Usage:
  fifoq serve [flags]   run the server (see "fifoq serve --help")
  fifoq bench [flags]   load-test an SQS endpoint and verify what it delivered
  fifoq cluster CMD     status, leader, add, remove (see "fifoq cluster --help")
  fifoq version         print the version
`)
}
