package replog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The first byte a dialer writes on a connection to a node's Raft port says
// what the connection carries: Raft's own RPCs, or HTTP between nodes (a
// request a follower forwards to the leader, a status query). One port,
// one TLS setup, for all node-to-node traffic.
const (
	muxRaft byte = 'R'
	muxHTTP byte = 'H'
)

// sniffTimeout bounds how long an accepted connection may take to finish
// its TLS handshake and say what it carries.
const sniffTimeout = 10 * time.Second

// peerMux is the node's Raft port: it accepts connections (over mutual TLS
// when configured), reads the first byte and hands each connection to the
// Raft transport or to the node-to-node HTTP listener. It implements
// raft.StreamLayer for Raft's side.
type peerMux struct {
	base    net.Listener
	tls     *tls.Config // nil: plain TCP
	advert  net.Addr
	raftLn  *subListener
	httpLn  *subListener
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	// conns are the accepted connections handed on, closed with the port
	// so that no reader of a peer's connection outlives the node.
	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
}

// newPeerMux listens on bind and starts accepting.
func newPeerMux(bind string, tlsConf *tls.Config) (*peerMux, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen on raft address %s: %w", bind, err)
	}
	advert := ln.Addr()
	if tcp, ok := advert.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %s: give the address other nodes reach this one by, not an unspecified one", bind)
	}
	m := &peerMux{base: ln, tls: tlsConf, advert: advert, closing: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	m.raftLn = newSubListener(m, true)
	m.httpLn = newSubListener(m, false)
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

func (m *peerMux) acceptLoop() {
	defer m.wg.Done()
	for {
		conn, err := m.base.Accept()
		if err != nil {
			select {
			case <-m.closing:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return
		}
		go m.sniff(conn)
	}
}

// sniff finishes the TLS handshake, reads the connection's kind and hands
// it on; a connection that fails either is closed.
func (m *peerMux) sniff(conn net.Conn) {
	_ = conn.SetDeadline(time.Now().Add(sniffTimeout))
	if m.tls != nil {
		tc := tls.Server(conn, m.tls)
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return
		}
		conn = tc
	}
	var kind [1]byte
	if _, err := conn.Read(kind[:]); err != nil {
		conn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	if !m.track(conn) {
		conn.Close()
		return
	}
	conn = &trackedConn{Conn: conn, mux: m}
	switch kind[0] {
	case muxRaft:
		m.raftLn.deliver(conn)
	case muxHTTP:
		m.httpLn.deliver(conn)
	default:
		conn.Close()
	}
}

// dial opens a connection of the given kind to a node's Raft port.
func (m *peerMux) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if m.tls != nil {
		conf := m.tls.Clone()
		tc := tls.Client(conn, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS with node %s: %w", addr, err)
		}
		conn = tc
	}
	if _, err := conn.Write([]byte{kind}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Dial implements raft.StreamLayer.
func (m *peerMux) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return m.dial(ctx, string(address), muxRaft)
}

// Accept implements raft.StreamLayer.
func (m *peerMux) Accept() (net.Conn, error) { return m.raftLn.Accept() }

// Addr implements raft.StreamLayer: the address other nodes dial.
func (m *peerMux) Addr() net.Addr { return m.advert }

// Close implements raft.StreamLayer: Raft closes its transport, and with it
// the port, when it shuts down.
func (m *peerMux) Close() error {
	m.once.Do(func() {
		close(m.closing)
		m.base.Close()
		m.raftLn.Close()
		m.httpLn.Close()
		m.connsMu.Lock()
		for c := range m.conns {
			c.Close()
		}
		m.conns = nil
		m.connsMu.Unlock()
	})
	m.wg.Wait()
	return nil
}

// track records an accepted connection; false once the port is closed.
func (m *peerMux) track(c net.Conn) bool {
	m.connsMu.Lock()
	defer m.connsMu.Unlock()
	if m.conns == nil {
		return false
	}
	m.conns[c] = struct{}{}
	return true
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	mux *peerMux
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.mux.connsMu.Lock()
	if c.mux.conns != nil {
		delete(c.mux.conns, c.Conn)
	}
	c.mux.connsMu.Unlock()
	return c.Conn.Close()
}

// PeerAuthenticated reports whether conn, a connection the port's HTTP
// listener (PeerListener) accepted, came from a member that proved
// itself: over mutual TLS, with a certificate the cluster's CA signed.
// Without --raft-tls-* no connection is.
func PeerAuthenticated(conn net.Conn) bool {
	if tc, ok := conn.(*trackedConn); ok {
		conn = tc.Conn
	}
	tc, ok := conn.(*tls.Conn)
	return ok && len(tc.ConnectionState().PeerCertificates) > 0
}

// subListener is one kind of connection accepted by the mux.
type subListener struct {
	mux    *peerMux
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	// closesMux: Raft's side closes the port with it.
	closesMux bool
}

func newSubListener(m *peerMux, closesMux bool) *subListener {
	return &subListener{mux: m, conns: make(chan net.Conn), closed: make(chan struct{}), closesMux: closesMux}
}

func (s *subListener) deliver(conn net.Conn) {
	select {
	case s.conns <- conn:
	case <-s.closed:
		conn.Close()
	}
}

// Accept implements net.Listener.
func (s *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (s *subListener) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// Addr implements net.Listener.
func (s *subListener) Addr() net.Addr { return s.mux.advert }

// PeerTLS is the mutual TLS between nodes: every node presents a
// certificate signed by the cluster's CA and refuses a peer whose
// certificate that CA did not sign.
type PeerTLS struct {
	CertFile, KeyFile, CAFile string
}

// TLSConfig loads the files into a tls.Config that both serves and dials.
// The CA is the only trust anchor: a peer's certificate is verified against
// it, for either use, and host names are not checked (nodes are addressed
// by IP and port), so the CA must be the cluster's own.
func (p PeerTLS) TLSConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("raft TLS certificate: %w", err)
	}
	pemCA, err := os.ReadFile(p.CAFile)
	if err != nil {
		return nil, fmt.Errorf("raft TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return nil, fmt.Errorf("raft TLS CA %s: no PEM certificate in it", p.CAFile)
	}
	return NewPeerTLSConfig(cert, pool), nil
}

// NewPeerTLSConfig returns the mutual-TLS configuration of a node that
// presents cert and trusts the certificates ca signed, and only those.
func NewPeerTLSConfig(cert tls.Certificate, ca *x509.CertPool) *tls.Config {
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("peer presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots: ca, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		})
		if err != nil {
			return fmt.Errorf("peer certificate not signed by the cluster CA: %w", err)
		}
		return nil
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// The server side asks for a certificate; VerifyConnection checks
		// it (and, on the client side, the server's) against the CA.
		ClientAuth: tls.RequireAnyClientCert,
		// Host names are not what identifies a node: the CA is.
		InsecureSkipVerify: true,
		VerifyConnection:   verify,
	}
}
