package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
)

// isHelpFlag reports whether arg asks for help as a flag.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// isHelpWord reports whether arg asks for help in the place of a
// subcommand ("fifoq cluster help"), where the word help is taken too.
func isHelpWord(arg string) bool {
	return isHelpFlag(arg) || arg == "help"
}

// parseArgs parses args into fs, with parseInterspersed if interspersed
// (flags may follow the arguments), else fs.Parse. Help goes to stdout,
// where "fifoq CMD --help | less" reads it; a usage error to stderr, away
// from a command's output. stop tells that the command ends there, with
// exit: 0 after help, 2 after a usage error. fs's output is stderr after.
func parseArgs(fs *flag.FlagSet, args []string, interspersed bool, stdout, stderr io.Writer) (exit int, stop bool) {
	var out bytes.Buffer
	fs.SetOutput(&out)
	var err error
	if interspersed {
		err = parseInterspersed(fs, args)
	} else {
		err = fs.Parse(args)
	}
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		stdout.Write(out.Bytes())
		return 0, true
	case err != nil:
		stderr.Write(out.Bytes())
		return 2, true
	}
	return 0, false
}
