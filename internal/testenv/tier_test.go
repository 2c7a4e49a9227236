package testenv

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Skipf records a skip as Skip does (recorder is in testenv_test.go).
func (r *recorder) Skipf(format string, a ...any) {
	r.skip = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

// do calls f with r on a goroutine of its own, as run does.
func (r *recorder) do(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// TestLongSkipsOutsideTheSecondTier checks that a second-tier test skips,
// naming the command that runs it, unless FIFOQ_TESTS=all, and that a
// misspelt value fails rather than runs the first tier.
func TestLongSkipsOutsideTheSecondTier(t *testing.T) {
	t.Setenv(TestsVar, "")
	r := &recorder{TB: t}
	r.do(func(tb testing.TB) { Long(tb, "a memory cgroup") })
	want := "FIFOQ_TESTS=all go test -race -run '^TestLongSkipsOutsideTheSecondTier$' ./internal/testenv"
	if r.fatal != "" || !strings.Contains(r.skip, "a memory cgroup") || !strings.Contains(r.skip, want) {
		t.Errorf("first tier: fatal %q, skip %q; want a skip naming %q", r.fatal, r.skip, want)
	}

	t.Setenv(TestsVar, "all")
	r = &recorder{TB: t}
	ran := false
	r.do(func(tb testing.TB) { Long(tb, "a memory cgroup"); ran = true })
	if !ran || r.fatal != "" || r.skip != "" {
		t.Errorf("FIFOQ_TESTS=all: ran %v, fatal %q, skip %q; want the test run", ran, r.fatal, r.skip)
	}

	t.Setenv(TestsVar, "al")
	r = &recorder{TB: t}
	r.do(func(tb testing.TB) { Long(tb, "a memory cgroup") })
	if r.fatal == "" || r.skip != "" {
		t.Errorf("FIFOQ_TESTS=al: fatal %q, skip %q; want a failure", r.fatal, r.skip)
	}
}

// TestQuickUnlessFullOrSized checks that a test that scales runs small in
// the first tier, at full size in the second, and at the size a flag of
// its own asks for in either.
func TestQuickUnlessFullOrSized(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	const name = "testenv.size"
	fs.Int(name, 3, "a size flag")
	t.Setenv(TestsVar, "")
	if !quickIn(t, fs, []string{name}) {
		t.Error("first tier, no size flag given: not Quick")
	}
	t.Setenv(TestsVar, "all")
	if quickIn(t, fs, []string{name}) {
		t.Error("FIFOQ_TESTS=all: Quick")
	}
	t.Setenv(TestsVar, "")
	if err := fs.Set(name, "20"); err != nil {
		t.Fatal(err)
	}
	if quickIn(t, fs, []string{name}) {
		t.Errorf("first tier with -%s given: Quick", name)
	}
	if !quickIn(t, fs, []string{"another.flag"}) {
		t.Errorf("first tier with only -%s given: a test sized by another flag is not Quick", name)
	}
}
