package replog

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"
)

// A node that runs many Raft groups (shards, docs/cluster.md) talks to each
// peer over one connection: a yamux session on a connection of kind
// muxSessionHello, whose hello (identity, incarnation, entry format) is
// checked once, as for any connection to the Raft port, and on which each
// group's transport opens a stream for each of its own connections. A
// stream begins with the number of its group, 4 bytes big-endian (or
// beatStream, for the shards' heartbeats coalesced: beats.go). Either
// node of a pair may open streams on a session, whoever dialed it; a node
// dials a peer only when it has no session with it. Two nodes that dial
// each other at the same moment both keep the session dialed by the node
// of the lower id (which both know from the hellos) and close the other,
// so that a pair ends with one connection. A dialer also says the boot
// of its process, a random number: a session from a peer that has
// restarted replaces the one from before, which may not yet be seen dead.
//
// Each group keeps hashicorp/raft's own NetworkTransport over the stream
// layer GroupLayer gives, so nothing of Raft's protocol changes.

// sessionStreamTimeout bounds how long an accepted stream may take to say
// its group.
const sessionStreamTimeout = 10 * time.Second

// peerSessions holds a node's sessions with its peers and the groups whose
// streams they carry.
type peerSessions struct {
	mux  *peerMux
	conf *yamux.Config

	boot string // this process's, said with every session it dials

	mu     sync.Mutex
	peers  map[string]peerSession  // by the peer's Raft address
	groups map[uint32]*subListener // the streams accepted for each group
	all    map[*yamux.Session]struct{}
	closed bool
	wg     sync.WaitGroup

	// beats coalesces the shards' heartbeats to each peer (beats.go);
	// nil (under mu) in tests of a node without, as before it was built.
	beats *beatHub
}

func newPeerSessions(m *peerMux) *peerSessions {
	conf := yamux.DefaultConfig()
	conf.LogOutput = io.Discard
	// A peer that stops answering is given up on within seconds, as
	// Raft's own timeouts expect of a connection.
	conf.KeepAliveInterval = 5 * time.Second
	conf.ConnectionWriteTimeout = 5 * time.Second
	conf.StreamOpenTimeout = 10 * time.Second
	var boot [8]byte
	_, _ = rand.Read(boot[:]) // never fails (crypto/rand)
	s := &peerSessions{mux: m, conf: conf, boot: hex.EncodeToString(boot[:]), peers: map[string]peerSession{},
		groups: map[uint32]*subListener{}, all: map[*yamux.Session]struct{}{}}
	s.beats = newBeatHub(s)
	return s
}

// peerSession is the session streams to a peer are opened on.
type peerSession struct {
	sess *yamux.Session
	// dialer is the id of the node that dialed it: of two sessions of a
	// pair, the one the lower id dialed is kept. boot is the dialer's
	// process's.
	dialer, boot string
}

// GroupLayer returns the stream layer of Raft group id, for its
// NetworkTransport: its connections are streams of the node's sessions.
// Closing it ends the group's streams, not the node's port.
func (m *peerMux) GroupLayer(id uint32) (raft.StreamLayer, error) {
	s := m.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the raft port is closed")
	}
	if _, ok := s.groups[id]; ok {
		return nil, fmt.Errorf("raft group %d already has a stream layer", id)
	}
	ln := newSubListener(m, false)
	s.groups[id] = ln
	return &groupLayer{s: s, id: id, ln: ln, streams: newConnSet()}, nil
}

// groupLayer is one group's raft.StreamLayer over the node's sessions.
type groupLayer struct {
	s  *peerSessions
	id uint32
	ln *subListener
	// streams are the group's streams, dialed and accepted: closed with
	// the layer, so that none of the group's RPCs waits on a peer that
	// is cut off while the group stops.
	streams *connSet
}

// Dial implements raft.StreamLayer: a stream of a session with the node at
// address, dialed if there is none, that says it is this group's.
func (g *groupLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		// A session dialed to a node cut off waits out its timeout: the
		// layer's close ends it at once.
		select {
		case <-g.ln.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	for attempt := 0; ; attempt++ {
		sess, err := g.s.session(ctx, string(address))
		if err != nil {
			return nil, err
		}
		st, err := openTagged(sess, g.id, timeout)
		if err == nil {
			conn, ok := g.streams.add(st)
			if !ok {
				return nil, net.ErrClosed
			}
			return conn, nil
		}
		// The session died under us (the peer restarted, the network
		// dropped it): forget it, and dial once more.
		g.s.forget(string(address), sess)
		if attempt == 1 {
			return nil, fmt.Errorf("open a stream to node %s: %w", address, err)
		}
	}
}

// openTagged opens a stream on sess that says tag first (a group's number,
// or beatStream), within timeout; on an error the stream is closed, and
// the session is likely dead.
func openTagged(sess *yamux.Session, tag uint32, timeout time.Duration) (*yamux.Stream, error) {
	st, err := sess.OpenStream()
	if err != nil {
		return nil, err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], tag)
	_ = st.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := st.Write(hdr[:]); err != nil {
		st.Close()
		return nil, err
	}
	_ = st.SetWriteDeadline(time.Time{})
	return st, nil
}

// Accept implements raft.StreamLayer.
func (g *groupLayer) Accept() (net.Conn, error) {
	for {
		st, err := g.ln.Accept()
		if err != nil {
			return nil, err
		}
		if conn, ok := g.streams.add(st); ok {
			return conn, nil
		}
	}
}

// Addr implements raft.StreamLayer: the node's Raft port.
func (g *groupLayer) Addr() net.Addr { return g.s.mux.advert }

// Close implements raft.StreamLayer: the group's transport is closed, and
// streams for it are refused from now on.
func (g *groupLayer) Close() error {
	g.s.mu.Lock()
	if g.s.groups[g.id] == g.ln {
		delete(g.s.groups, g.id)
	}
	g.s.mu.Unlock()
	err := g.ln.Close()
	g.streams.closeAll()
	return err
}

// session returns this node's session with the peer at addr, dialing one
// (and saying this node's hello and Raft address) if there is none.
func (s *peerSessions) session(ctx context.Context, addr string) (*yamux.Session, error) {
	s.mu.Lock()
	if cur := s.peers[addr]; cur.sess != nil && !cur.sess.IsClosed() {
		s.mu.Unlock()
		return cur.sess, nil
	}
	s.mu.Unlock()
	m := s.mux
	expected := ""
	if c := m.checks.Load(); c != nil {
		expected = c.expectedAt(addr)
	}
	conn, err := m.dialKind(ctx, addr, muxSessionHello)
	if err != nil {
		return nil, err
	}
	conn, _, err = m.hello(ctx, conn, addr, expected)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("node %s closed a connection for many groups: it runs a fifoq without them", addr)
		}
		return nil, err
	}
	if _, err := io.WriteString(conn, m.advert.String()+" "+s.boot+"\n"); err != nil {
		conn.Close()
		return nil, err
	}
	sess, err := yamux.Client(&frameConn{Conn: conn}, s.conf)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s.adopt(addr, peerSession{sess: sess, dialer: m.selfID, boot: s.boot}, true)
}

// accepted serves a session the peer peerID dialed: conn has passed its
// hello, and next says the peer's Raft address and boot.
func (s *peerSessions) accepted(conn net.Conn, peerID string) {
	_ = conn.SetReadDeadline(time.Now().Add(sniffTimeout))
	line, err := readLine(conn)
	_ = conn.SetReadDeadline(time.Time{})
	f := strings.Fields(line)
	if err != nil || len(f) != 2 {
		conn.Close()
		return
	}
	sess, err := yamux.Server(&frameConn{Conn: conn}, s.conf)
	if err != nil {
		conn.Close()
		return
	}
	if _, err := s.adopt(f[0], peerSession{sess: sess, dialer: peerID, boot: f[1]}, false); err != nil {
		sess.Close()
	}
}

// adopt records ps, a session with the peer at addr that this node dialed
// (dialed) or accepted, and serves the streams the peer opens on it; it
// returns the session to open streams on. If the node has a live session
// with the peer already, one of the two is closed:
//
//   - of one dialed by each node, the one the higher id dialed, so that
//     both nodes keep the same;
//   - of two the peer dialed, the older if the peer restarted since (its
//     boot differs), else the newer, as the peer itself keeps the older;
//   - of two this node dialed, the newer (a goroutine dialed it that found
//     none).
func (s *peerSessions) adopt(addr string, ps peerSession, dialed bool) (*yamux.Session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ps.sess.Close()
		return nil, errors.New("the raft port is closed")
	}
	cur := s.peers[addr]
	var drop *yamux.Session
	switch {
	case cur.sess == nil || cur.sess.IsClosed():
		s.peers[addr] = ps
	case cur.dialer != ps.dialer && ps.dialer < cur.dialer,
		cur.dialer == ps.dialer && !dialed && cur.boot != ps.boot:
		s.peers[addr] = ps
		drop = cur.sess
	default:
		s.mu.Unlock()
		ps.sess.Close()
		return cur.sess, nil
	}
	sess := ps.sess
	s.all[sess] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	if drop != nil {
		drop.Close()
	}
	go s.serve(addr, sess)
	return sess, nil
}

// serve hands the streams the peer opens on sess to their groups until
// the session ends.
func (s *peerSessions) serve(addr string, sess *yamux.Session) {
	defer s.wg.Done()
	defer func() {
		s.forget(addr, sess)
		s.mu.Lock()
		delete(s.all, sess)
		s.mu.Unlock()
	}()
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		go s.route(st)
	}
}

// route reads the group a stream is for and hands it to the group's
// transport, or closes it if the node has no such group.
func (s *peerSessions) route(st *yamux.Stream) {
	var hdr [4]byte
	_ = st.SetReadDeadline(time.Now().Add(sessionStreamTimeout))
	if _, err := io.ReadFull(st, hdr[:]); err != nil {
		st.Close()
		return
	}
	_ = st.SetReadDeadline(time.Time{})
	group := binary.BigEndian.Uint32(hdr[:])
	s.mu.Lock()
	ln, beats := s.groups[group], s.beats
	s.mu.Unlock()
	if group == beatStream && beats != nil {
		beats.serve(st)
		return
	}
	if ln == nil {
		st.Close()
		return
	}
	ln.deliver(st)
}

// forget drops sess as the session with addr, if it is, and closes it.
func (s *peerSessions) forget(addr string, sess *yamux.Session) {
	s.mu.Lock()
	if s.peers[addr].sess == sess {
		delete(s.peers, addr)
	}
	s.mu.Unlock()
	sess.Close()
}

// close ends every session and waits for their goroutines. The port's
// Close calls it.
func (s *peerSessions) close() {
	s.mu.Lock()
	beats := s.beats
	s.mu.Unlock()
	if beats != nil {
		beats.close()
	}
	s.mu.Lock()
	s.closed = true
	var all []*yamux.Session
	for sess := range s.all {
		all = append(all, sess)
	}
	groups := s.groups
	s.groups = map[uint32]*subListener{}
	s.mu.Unlock()
	for _, sess := range all {
		sess.Close()
	}
	for _, ln := range groups {
		ln.Close()
	}
	s.wg.Wait()
}

// registered returns the session streams to the peer at addr are opened
// on, or nil, for tests.
func (s *peerSessions) registered(addr string) *yamux.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers[addr].sess
}

// connections returns how many sessions the node holds, for tests.
func (s *peerSessions) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}
