package testenv

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records how a test was ended, and ends
// only its own goroutine (as Fatalf and Skip end a test's), not the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, a ...any) {
	r.fatal = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

func (r *recorder) Skip(a ...any) {
	r.skip = fmt.Sprint(a...)
	runtime.Goexit()
}

// run calls ClientMissing with r on a goroutine of its own.
func (r *recorder) run(why string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ClientMissing(r, why)
	}()
	<-done
}

// TestClientMissing checks that a missing client fails the test where
// CI asks for every client, and skips it elsewhere.
func TestClientMissing(t *testing.T) {
	t.Setenv(RequireClientsVar, "1")
	r := &recorder{TB: t}
	r.run("the aws CLI is not installed")
	if r.fatal == "" || r.skip != "" {
		t.Fatalf("with %s set: fatal %q, skip %q; want a failure", RequireClientsVar, r.fatal, r.skip)
	}

	t.Setenv(RequireClientsVar, "")
	r = &recorder{TB: t}
	r.run("the aws CLI is not installed")
	if r.fatal != "" || r.skip != "the aws CLI is not installed" {
		t.Fatalf("with %s unset: fatal %q, skip %q; want a skip saying why", RequireClientsVar, r.fatal, r.skip)
	}
}

// TestFreeAddrNeverRepeats asks for more addresses than a test ever needs
// and checks that no address comes twice, even though the kernel is free
// to hand a just-closed port out again.
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr := FreeAddr(t)
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}
