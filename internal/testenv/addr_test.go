package testenv

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestFreeAddrAvoidsEphemeralPorts: an address handed out is never one an
// outgoing connection could take its local port from, so a node that dials
// a member before that member has bound its address cannot steal it.
func TestFreeAddrAvoidsEphemeralPorts(t *testing.T) {
	lo, hi := ephemeralRange()
	for range 300 {
		addr := FreeAddr(t)
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port >= lo && port <= hi {
			t.Fatalf("FreeAddr returned %s, inside the ephemeral range %d-%d", addr, lo, hi)
		}
	}
}

// childVar makes the test binary, run by TestFreeAddrIsOwnedByOneProcess,
// print addresses and hold them until its stdin closes.
const childVar = "FIFOQ_TESTENV_ADDR_CHILD"

// TestFreeAddrIsOwnedByOneProcess: two test processes running at once (as
// `go test ./...` runs packages) are never given the same address.
func TestFreeAddrIsOwnedByOneProcess(t *testing.T) {
	const n = 300
	if os.Getenv(childVar) != "" {
		for range n {
			os.Stdout.WriteString(FreeAddr(t) + "\n")
		}
		bufio.NewReader(os.Stdin).ReadByte() // hold the blocks until the parent is done
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFreeAddrIsOwnedByOneProcess$")
	cmd.Env = append(os.Environ(), childVar+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	child := map[string]bool{}
	lines := bufio.NewScanner(stdout)
	for len(child) < n && lines.Scan() {
		child[lines.Text()] = true
	}
	if len(child) < n {
		t.Fatalf("the child process printed %d addresses, want %d", len(child), n)
	}
	for range n {
		if addr := FreeAddr(t); child[addr] {
			t.Fatalf("both processes were given %s", addr)
		}
	}
}
