package crashtest

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testbin"
	"github.com/fifoq/fifoq/internal/testenv"
)

// fifoqProc is one run of the fifoq binary whose output the test reads.
type fifoqProc struct {
	cmd  *exec.Cmd
	out  *testenv.SyncBuffer // stdout and stderr
	done chan struct{}
	err  error // the exit status, once done is closed
}

// launch starts the fifoq binary with args and an environment without any
// FIFOQ_ variable of the test's own, plus env. The process is stopped when
// the test ends if it still runs.
func launch(t *testing.T, env []string, args ...string) *fifoqProc {
	t.Helper()
	testbin.Track(t)
	return launchBinary(t, binary, env, args...)
}

// launchBinary is launch with another build of fifoq than binary (its
// caller tracks its sources).
func launchBinary(t *testing.T, bin string, env []string, args ...string) *fifoqProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FIFOQ_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &fifoqProc{cmd: cmd, out: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start fifoq: %v", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// exited waits up to d for the process to end and reports whether it did.
func (p *fifoqProc) exited(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// stop ends the process: SIGTERM, then SIGKILL if it has not stopped
// within 10 s.
func (p *fifoqProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if !p.exited(10 * time.Second) {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls probe until it succeeds, the process exits, or 20 s pass.
func (p *fifoqProc) waitReady(t *testing.T, probe func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := probe()
		if err == nil {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("fifoq exited (%v) before it answered; output:\n%s", p.err, p.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fifoq did not answer within 20 s: %v; output:\n%s", err, p.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitCode is the process's exit code, or -1 if it was killed by a signal.
func (p *fifoqProc) exitCode() int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}
