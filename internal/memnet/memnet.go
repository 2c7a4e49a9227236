// Package memnet is a network of nodes in one process, for tests that run
// a cluster's members as in-process nodes and break the network between
// them: it delays what passes, partitions pairs of nodes and resets
// connections, as a real network does to real TCP.
//
// A Network holds the nodes' listeners by address; a node's Endpoint
// listens at its own address and dials the others' (it is the Network of
// replog.ClusterConfig). A connection is a pair of in-memory byte streams
// that behave as TCP's do where the nodes can tell:
//
//   - a write never blocks and never fails while the connection is up:
//     its bytes are queued for the other end, as a socket's send buffer
//     takes them;
//   - the other end reads them, in order, once the network's latency has
//     passed, and only while the two nodes are not partitioned: across a
//     partition the bytes wait (TCP retransmits) and are read when it
//     heals, or the reader's deadline passes first;
//   - a dial across a partition waits, as a SYN that gets no answer, until
//     the partition heals or the dial's context ends; a dial to an address
//     where nothing listens is refused at once;
//   - a reset ends the connection at both ends at once, with an error and
//     without the bytes still queued, as a RST does.
//
// What the network does not model: bandwidth, and a send buffer that
// fills (a writer across a long partition queues without bound; tests
// partition for seconds).
package memnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"time"
)

// Network is the in-memory network of one test's nodes. Its zero value is
// not usable: make one with New.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*listener
	conns     map[*end]struct{}
	cut       map[link]bool
	down      map[string]bool
	rng       *rand.Rand
	// minDelay and maxDelay bound the latency of each write.
	minDelay, maxDelay time.Duration
	// changed is fired at every change of the partitions, for dials that
	// wait across one.
	changed *signal
}

// link is an unordered pair of node addresses.
type link struct{ a, b string }

func linkOf(a, b string) link {
	if a > b {
		a, b = b, a
	}
	return link{a, b}
}

// New returns an empty network without latency, whose random choices
// (latency, which connection a reset takes) are drawn from seed.
func New(seed int64) *Network {
	return &Network{listeners: map[string]*listener{}, conns: map[*end]struct{}{}, cut: map[link]bool{}, down: map[string]bool{},
		rng: rand.New(rand.NewSource(seed)), changed: newSignal()}
}

// Endpoint is one node's place in a Network: it listens at the node's
// address and dials from it.
type Endpoint struct {
	net  *Network
	addr string
}

// Node returns the endpoint of the node whose address is addr.
func (n *Network) Node(addr string) *Endpoint { return &Endpoint{net: n, addr: addr} }

// Listen listens at addr, which must be the endpoint's own: a node
// listens only where the others reach it.
func (e *Endpoint) Listen(addr string) (net.Listener, error) {
	if addr != e.addr {
		return nil, fmt.Errorf("memnet: node %s cannot listen at %s", e.addr, addr)
	}
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, taken := n.listeners[addr]; taken {
		return nil, fmt.Errorf("memnet: listen %s: address already in use", addr)
	}
	l := &listener{net: n, addr: addr, accept: make(chan *end), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// errRefused is a dial's answer where nothing listens.
var errRefused = errors.New("connection refused")

// Dial opens a connection from the endpoint's node to the node listening
// at addr.
func (e *Endpoint) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n := e.net
	for {
		n.mu.Lock()
		if !n.cut[linkOf(e.addr, addr)] {
			break
		}
		changed := n.changed.wait()
		n.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, &net.OpError{Op: "dial", Net: "memnet", Addr: addrOf(addr), Err: ctx.Err()}
		case <-changed:
		}
	}
	l := n.listeners[addr]
	if n.down[e.addr] || n.down[addr] {
		l = nil
	}
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "memnet", Addr: addrOf(addr), Err: errRefused}
	}
	a2b, b2a := newStream(), newStream()
	client := &end{net: n, local: e.addr, remote: addr, in: b2a, out: a2b, wake: newSignal()}
	server := &end{net: n, local: addr, remote: e.addr, in: a2b, out: b2a, wake: newSignal()}
	client.peer, server.peer = server, client
	a2b.reader, b2a.reader = server, client
	n.mu.Lock()
	n.conns[client], n.conns[server] = struct{}{}, struct{}{}
	n.mu.Unlock()
	select {
	case l.accept <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.reset()
	if ctx.Err() != nil {
		return nil, &net.OpError{Op: "dial", Net: "memnet", Addr: addrOf(addr), Err: ctx.Err()}
	}
	return nil, &net.OpError{Op: "dial", Net: "memnet", Addr: addrOf(addr), Err: errRefused}
}

// SetLatency makes every write take between min and max to reach the
// other end (0, 0: at once). Bytes keep their order.
func (n *Network) SetLatency(min, max time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.minDelay, n.maxDelay = min, max
}

// Partition cuts a from b, both ways, until Heal: what either writes to
// the other waits, and dials between them wait.
func (n *Network) Partition(a, b string) {
	n.mu.Lock()
	n.cut[linkOf(a, b)] = true
	n.mu.Unlock()
	n.wakeAll()
}

// Isolate cuts addr from every other node that listens or has listened
// in the network.
func (n *Network) Isolate(addr string, others []string) {
	n.mu.Lock()
	for _, o := range others {
		if o != addr {
			n.cut[linkOf(addr, o)] = true
		}
	}
	n.mu.Unlock()
	n.wakeAll()
}

// Heal ends every partition: what waited is read, in order.
func (n *Network) Heal() {
	n.mu.Lock()
	clear(n.cut)
	n.mu.Unlock()
	n.wakeAll()
}

// Cut reports whether a and b are partitioned.
func (n *Network) Cut(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[linkOf(a, b)]
}

// ResetOne resets one connection, chosen at random, and reports whether
// there was one to reset.
func (n *Network) ResetOne() bool {
	n.mu.Lock()
	var chosen *end
	seen := 0
	for e := range n.conns {
		seen++
		if n.rng.Intn(seen) == 0 {
			chosen = e
		}
	}
	n.mu.Unlock()
	if chosen == nil {
		return false
	}
	chosen.reset()
	return true
}

// ResetNode resets every connection of the node at addr, as its crash
// does: the other nodes see each one fail at once.
func (n *Network) ResetNode(addr string) {
	n.mu.Lock()
	var ends []*end
	for e := range n.conns {
		if e.local == addr {
			ends = append(ends, e)
		}
	}
	n.mu.Unlock()
	for _, e := range ends {
		e.reset()
	}
}

// Down takes the node at addr off the network, as its crash does: every
// connection of it resets, and dials from it or to it are refused at
// once, until Up. (A crashed node's own goroutines, which a test stops
// after, then fail fast rather than wait on a dial.)
func (n *Network) Down(addr string) {
	n.mu.Lock()
	n.down[addr] = true
	n.mu.Unlock()
	n.ResetNode(addr)
}

// Up puts the node at addr back on the network.
func (n *Network) Up(addr string) {
	n.mu.Lock()
	delete(n.down, addr)
	n.mu.Unlock()
}

// Conns is the number of open connections in the network.
func (n *Network) Conns() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.conns) / 2
}

// wakeAll wakes every waiting reader and dialer to look at the
// partitions again.
func (n *Network) wakeAll() {
	n.changed.fire()
	n.mu.Lock()
	ends := make([]*end, 0, len(n.conns))
	for e := range n.conns {
		ends = append(ends, e)
	}
	n.mu.Unlock()
	for _, e := range ends {
		e.wake.fire()
	}
}

// deliverAt returns when a write made now reaches the other end.
func (n *Network) deliverAt(now time.Time) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.minDelay
	if n.maxDelay > n.minDelay {
		d += time.Duration(n.rng.Int63n(int64(n.maxDelay - n.minDelay)))
	}
	return now.Add(d)
}

func (n *Network) forget(e *end) {
	n.mu.Lock()
	delete(n.conns, e)
	n.mu.Unlock()
}

// listener is a node's listening address.
type listener struct {
	net    *Network
	addr   string
	accept chan *end
	done   chan struct{}
	once   sync.Once
}

// Accept implements net.Listener.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "memnet", Addr: addrOf(l.addr), Err: net.ErrClosed}
	}
}

// Close implements net.Listener: the address is free to listen at again.
func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.net.mu.Lock()
		if l.net.listeners[l.addr] == l {
			delete(l.net.listeners, l.addr)
		}
		l.net.mu.Unlock()
	})
	return nil
}

// Addr implements net.Listener.
func (l *listener) Addr() net.Addr { return addrOf(l.addr) }

// addrOf is a node's address as a net.Addr.
type addrOf string

func (a addrOf) Network() string { return "memnet" }
func (a addrOf) String() string  { return string(a) }

// signal wakes every goroutine waiting on it when fired.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}
