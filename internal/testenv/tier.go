package testenv

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestsVar chooses how much of the suite runs. Unset, `go test -race
// ./...` runs the first tier, which a contributor's laptop finishes in
// minutes: every test, but the long fault tests skip and the tests that
// scale (kill counts, random seeds) run small. Set to "all", it runs the
// second tier too: the long fault tests, and every test at its full size.
// .ci/run runs both, so that CI tests no less than the full suite.
const TestsVar = "FIFOQ_TESTS"

// Full reports whether the whole suite runs (FIFOQ_TESTS=all). Any other
// value fails the test: a misspelt value must not quietly run the first
// tier where the second was asked for.
func Full(tb testing.TB) bool {
	tb.Helper()
	// Read in the test, not once at start: go test records the variables a
	// test reads, and reruns a cached package when one of them changes.
	switch v := os.Getenv(TestsVar); v {
	case "":
		return false
	case "all":
		return true
	default:
		tb.Fatalf("%s=%q: the one value it takes is \"all\" (the second tier too); unset, the first tier runs", TestsVar, v)
		return false
	}
}

// Long marks a second-tier test: minutes long, or a fault that takes the
// machine's resources (memory cgroups, network namespaces, long kill
// runs). It skips the test unless Full, saying why it is long and the
// command that runs it.
func Long(tb testing.TB, why string) {
	tb.Helper()
	if !Full(tb) {
		tb.Skipf("second tier (%s); run it with %s=all go test -race -run '^%s$' %s", why, TestsVar, tb.Name(), packageArg())
	}
}

// Quick reports whether a test that scales runs at its first-tier size:
// the second tier is not asked for, and none of the named flags (the
// test's own size flags, such as crash.kills) was given on the command
// line. A flag given asks for that size, in either tier, as before the
// tiers.
func Quick(tb testing.TB, flags ...string) bool {
	tb.Helper()
	return quickIn(tb, flag.CommandLine, flags)
}

// quickIn is Quick with the flags given in fs.
func quickIn(tb testing.TB, fs *flag.FlagSet, flags []string) bool {
	tb.Helper()
	if Full(tb) {
		return false
	}
	given := false
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(flags, f.Name) {
			given = true
		}
	})
	return !given
}

// packageArg is the test's package as go test takes it from the module's
// root ("./internal/crashtest"), or "." if the root is not found: go test
// runs a test in its package's directory.
func packageArg() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for root := dir; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, dir)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "."
		}
		root = parent
	}
}
