package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fifoq/fifoq/internal/config/elasticmq"
)

// configSubcommands are the words "fifoq config" takes first.
var configSubcommands = []string{"from-elasticmq"}

// configFlagSet defines the (flagless) flag set of "fifoq config", for
// its usage text and -h.
func configFlagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  fifoq config from-elasticmq FILE   print the queues of an ElasticMQ config file as fifoq's config

from-elasticmq reads ElasticMQ's HOCON configuration (FILE, or "-" for
standard input) and writes to standard output a fifoq config file whose
queues: section declares the queues of its queues { ... } block, with their
visibility timeout, delay, receive wait, FIFO and content-based
deduplication settings, dead-letter queues and tags:

  fifoq config from-elasticmq elasticmq.conf > fifoq.yaml
  fifoq serve --config fifoq.yaml

What cannot be converted (copyTo, moveTo, settings it does not know) is
left out with a warning on standard error, and a comment in the output;
what fifoq would refuse (a value out of SQS's range, a dead-letter queue
of the other type, an include of another file) stops it with the line at
fault, and nothing is written.
`)
	}
	return fs
}

// configCmd runs "fifoq config SUBCOMMAND".
func configCmd(args []string, stdout, stderr io.Writer) int {
	fs := configFlagSet(stderr)
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	sub := args[0]
	switch {
	case isHelpWord(sub):
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	case sub == "from-elasticmq":
	default:
		fmt.Fprintf(stderr, "fifoq config: unknown subcommand %q\n\n", sub)
		fs.Usage()
		return 2
	}
	if exit, stop := parseArgs(fs, args[1:], true, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "Usage: fifoq config from-elasticmq FILE (\"-\": standard input)")
		return 2
	}
	return fromElasticMQ(fs.Arg(0), stdout, stderr)
}

// fromElasticMQ converts the ElasticMQ file at path ("-": standard input)
// and writes fifoq's config to stdout, warnings to stderr.
func fromElasticMQ(path string, stdout, stderr io.Writer) int {
	name := path
	var src []byte
	var err error
	if path == "-" {
		name = "standard input"
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fifoq config from-elasticmq: %v\n", err)
		return 1
	}
	res, err := elasticmq.Convert(name, src)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq config from-elasticmq: %v\n", err)
		return 1
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "fifoq config from-elasticmq: warning: %s\n", w)
	}
	if _, err := stdout.Write(res.YAML); err != nil {
		fmt.Fprintf(stderr, "fifoq config from-elasticmq: %v\n", err)
		return 1
	}
	return 0
}
