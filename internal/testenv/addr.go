package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports handed out by FreeAddr come from blocks of blockSize ports between
// lowestPort and highestPort that lie outside the kernel's ephemeral range.
// A port is only known free when it is checked, and a test's server binds
// it later, often after other sockets were opened in between:
//
//   - an outgoing connection takes its local port from the ephemeral range,
//     so a port found by binding port 0 can be taken by any dial (a node
//     dialling a member that has not started yet) before that member binds
//     it; ports outside the range are never taken that way;
//   - `go test ./...` runs several test processes at once, so each process
//     takes whole blocks under an flock(2) that the kernel drops when the
//     process exits, and hands out only ports of its own blocks.
const (
	blockSize   = 64
	lowestPort  = 10000
	highestPort = 65535
)

// handedOut is this process's share of the port space: the blocks it holds
// and every address already returned, so that no two tests or nodes are
// ever given the same one.
var handedOut = struct {
	sync.Mutex
	blocks []int // first port of each block held, in the order taken
	next   int   // next port to try in the last block
	addrs  map[string]bool
	held   []*os.File // the block locks, open for the life of the process
}{addrs: map[string]bool{}}

// FreeAddr returns a loopback address ("127.0.0.1:port") that was free a
// moment ago, that no earlier call in this process returned, and whose port
// neither an outgoing connection nor another fifoq test process will take
// before the caller binds it (see blockSize).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 * blockSize {
		if len(handedOut.blocks) == 0 || handedOut.next == handedOut.blocks[len(handedOut.blocks)-1]+blockSize {
			first, err := takeBlock()
			if err != nil {
				tb.Fatal(err)
			}
			handedOut.blocks = append(handedOut.blocks, first)
			handedOut.next = first
		}
		port := handedOut.next
		handedOut.next++
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if handedOut.addrs[addr] {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use by something outside fifoq's tests
		}
		if err := ln.Close(); err != nil {
			tb.Fatal(err)
		}
		handedOut.addrs[addr] = true
		return addr
	}
	tb.Fatal("no free loopback port found in 100 blocks")
	return ""
}

// takeBlock locks a block of ports that no other process holds and that
// this one has not held before, starting at a random one so that processes
// starting together seldom contend, and returns its first port.
func takeBlock() (int, error) {
	starts := blockStarts()
	if len(starts) == 0 {
		return 0, fmt.Errorf("no block of %d ports between %d and %d outside the ephemeral range", blockSize, lowestPort, highestPort)
	}
	dir := filepath.Join(os.TempDir(), "fifoq-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	offset := rand.IntN(len(starts))
	for i := range starts {
		first := starts[(offset+i)%len(starts)]
		if slices.Contains(handedOut.blocks, first) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(first)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return 0, err
		}
		ok, err := lockExclusive(f)
		if err != nil || !ok {
			f.Close()
			if err != nil {
				return 0, err
			}
			continue
		}
		handedOut.held = append(handedOut.held, f)
		return first, nil
	}
	return 0, fmt.Errorf("every block of loopback ports is held by another process")
}

// blockStarts lists the first port of every block that lies wholly
// outside the ephemeral range.
func blockStarts() []int {
	lo, hi := ephemeralRange()
	var out []int
	for first := lowestPort; first+blockSize-1 <= highestPort; first += blockSize {
		last := first + blockSize - 1
		if last < lo || first > hi {
			out = append(out, first)
		}
	}
	return out
}

// ephemeralRange is the range of local ports the kernel gives outgoing
// connections and binds of port 0: Linux's ip_local_port_range, or the
// IANA range that other systems use.
func ephemeralRange() (lo, hi int) {
	lo, hi = 49152, 65535
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l > h {
		return lo, hi
	}
	return l, h
}
