package testenv

import (
	"net"
	"sync"
	"testing"
)

// handedOut holds every loopback address FreeAddr has returned in this
// process, so that no two tests or nodes are ever given the same one.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// FreeAddr returns a loopback address ("127.0.0.1:port") that was free a
// moment ago and that no earlier call in this process returned. The port is
// found by binding port 0 and closing the listener, so the kernel may give
// the same port to the next bind: without the record of what was handed
// out, a three-node cluster could be configured with one address twice
// (Raft refuses such a configuration as a duplicate address).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			tb.Fatal(err)
		}
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	tb.Fatal("no loopback port left that was not handed out already")
	return ""
}
