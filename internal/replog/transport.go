package replog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The first byte a dialer writes on a connection to a node's Raft port says
// what the connection carries: Raft's own RPCs, or HTTP between nodes (a
// request a follower forwards to the leader, a status query). One port,
// one TLS setup, for all node-to-node traffic.
//
// A connection of kind muxRaftHello or muxHTTPHello then carries a hello
// each way before the kind's traffic (see identity.go and format.go): the
// dialer sends "ID INCARNATION EXPECTED FORMAT\n" (EXPECTED: the
// incarnation the membership records for the node it dials, or "-";
// FORMAT: the newest log entry format the dialer reads). When both read
// format minVersionClusterID, the acceptor first asks "cluster? ID\n" and
// the dialer answers "cluster ID\n", and two nodes of different clusters
// part there (cluster_id.go: "other-cluster REASON\n"). The acceptor
// answers "ok ID INCARNATION FORMAT\n", or "fenced-you REASON\n" when the
// dialer is not the incarnation the membership records for its id, or
// "fenced-me REASON\n" when it is not itself the incarnation the dialer
// expects, or "too-old REASON\n" when the dialer does not read the
// cluster's entry format. A hello without FORMAT is a fifoq's from before
// formats were said, which reads version 4.
//
// A refusal for incarnations is not always the refused node's fault: the
// acceptor's own state may be the stale one, a member back from a long
// stop or a joiner still catching up, whose records predate a member's
// replacement; refusing the replaced member's hellos would keep it from
// ever catching up, when that member leads. So before refusing for
// incarnations, the acceptor asks "applied? DETAIL\n", and the dialer
// answers "applied N SELF\n": N the index of the log entry its replicated
// state holds up to, SELF "self" if that state records the dialer's own
// incarnation, else "-". The side whose state is the further along, and
// records its own incarnation, is believed (peerMux.settle); only then is
// the verdict the answer above. A fifoq that does not know the question
// takes it for a refusal.
// muxRaft and muxHTTP, without a hello, are what a fifoq from before
// incarnations dials; they are still accepted, unchecked.
//
// muxSessionHello, always with a hello, is a connection that carries the
// Raft traffic of many groups (sessions.go): a fifoq that does not know it
// closes it, and is never dialed so as legacy.
const (
	muxRaft         byte = 'R'
	muxHTTP         byte = 'H'
	muxSession      byte = 'S'
	muxRaftHello    byte = 'r'
	muxHTTPHello    byte = 'h'
	muxSessionHello byte = 's'
)

// maxHello bounds a hello line: two ids of a node and incarnations, or a
// refusal's reason.
const maxHello = 1024

// sniffTimeout bounds how long an accepted connection may take to finish
// its TLS handshake and say what it carries.
const sniffTimeout = 10 * time.Second

// peerMux is the node's Raft port: it accepts connections (over mutual TLS
// when configured), reads the first byte and hands each connection to the
// Raft transport or to the node-to-node HTTP listener. It implements
// raft.StreamLayer for Raft's side.
type peerMux struct {
	network Network
	base    net.Listener
	tls     *tls.Config // nil: plain TCP
	advert  net.Addr
	raftLn  *subListener
	httpLn  *subListener
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	logger  *slog.Logger

	// conns are the connections accepted and handed on, and those
	// dialed, closed with the port so that no reader or writer of a
	// peer's connection outlives the node, and none waits on a peer that
	// is cut off while the node stops.
	conns *connSet

	// selfID and selfInc are this node's id and incarnation, sent in
	// every hello; checks, once the log runs, judges the hellos.
	selfID, selfInc string
	checks          atomic.Pointer[peerChecks]
	// admitted is the incarnation a join request added this node as
	// (Raft.Admitted), if one did: until its own log records it, a
	// member claiming another one for it is behind (recordsSelf).
	admitted atomic.Pointer[string]
	// legacy holds the addresses whose node answered a hello by closing
	// the connection: a fifoq from before incarnations, dialed without.
	legacy sync.Map

	// sessions carries the Raft traffic of many groups, one connection a
	// peer (sessions.go).
	sessions *peerSessions
}

// peerChecks is what the mux asks the log about the members it meets.
type peerChecks struct {
	// recorded returns the incarnation recorded for id ("" if none), and
	// whether id is a member.
	recorded func(id string) (string, bool)
	// expectedAt returns the incarnation recorded for the member at a
	// Raft address ("" if none).
	expectedAt func(addr string) string
	// memberAt returns the id of the member at a Raft address ("" if
	// none).
	memberAt func(addr string) string
	// learned is told of the incarnation and entry format a node said in
	// a hello.
	learned func(id, incarnation string, format byte)
	// fence stops this node, which is not the incarnation the cluster
	// knows for its id.
	fence func(detail string)
	// tooOld says why a node that reads entry formats up to format may
	// not take part ("" if it may).
	tooOld func(format byte) string
	// outdated stops this node, which does not read the cluster's entry
	// format.
	outdated func(detail string)
	// stateIndex is the index of the log entry that this node's
	// replicated state, whose records recorded reads, holds up to.
	stateIndex func() uint64
	// clusterID returns the id this node's state records for its
	// cluster, "" if none (cluster_id.go).
	clusterID func() string
}

// ownClusterID is what this node says of its cluster's id in a hello.
func (m *peerMux) ownClusterID() string {
	if c := m.checks.Load(); c != nil && c.clusterID != nil {
		if id := c.clusterID(); id != "" {
			return id
		}
	}
	return noClusterID
}

// asksClusterID reports whether a hello between this node and one that
// reads entry formats up to format carries the cluster ids.
func asksClusterID(format byte) bool {
	return format >= minVersionClusterID && maxEntryFormat >= minVersionClusterID
}

// validClusterID reports whether s may stand for a cluster id in a hello.
func validClusterID(s string) bool { return s == noClusterID || validIncarnation(s) }

// askClusterID asks the dialer on conn its cluster's id, saying this
// node's.
func (m *peerMux) askClusterID(conn net.Conn) (string, bool) {
	if _, err := io.WriteString(conn, "cluster? "+m.ownClusterID()+"\n"); err != nil {
		return "", false
	}
	line, err := readLine(conn)
	if err != nil {
		return "", false
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "cluster" || !validClusterID(f[1]) {
		return "", false
	}
	return f[1], true
}

// otherCluster returns why a dialer that said its cluster's id is theirs
// is not of this node's cluster, whose id is mine, or "" if it may be: a
// dialer whose state records no id yet may be only as a member
// (cluster_id.go).
func otherCluster(mine, theirs string, member bool) string {
	switch {
	case mine == noClusterID || theirs == mine:
		return ""
	case theirs == noClusterID && member:
		return ""
	case theirs == noClusterID:
		return fmt.Sprintf("it records no cluster id and is not a member of this node's cluster %s", mine)
	}
	return fmt.Sprintf("it is a node of cluster %s, and this node's cluster is %s", theirs, mine)
}

// helloFormat reads the format field of a hello, which a fifoq from before
// formats were said leaves out: it reads version 4.
func helloFormat(f []string, at int) (byte, bool) {
	if len(f) == at {
		return minVersionBinary, true
	}
	if len(f) != at+1 {
		return 0, false
	}
	n, err := strconv.Atoi(f[at])
	if err != nil || n < 1 || n > 255 {
		return 0, false
	}
	return byte(n), true
}

// newPeerMux listens on bind and starts accepting.
func newPeerMux(network Network, bind string, tlsConf *tls.Config, selfID, selfInc string, logger *slog.Logger) (*peerMux, error) {
	ln, err := network.Listen(bind)
	if err != nil {
		return nil, fmt.Errorf("listen on raft address %s: %w", bind, err)
	}
	advert := ln.Addr()
	if tcp, ok := advert.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %s: give the address other nodes reach this one by, not an unspecified one", bind)
	}
	m := &peerMux{network: network, base: ln, tls: tlsConf, advert: advert, closing: make(chan struct{}), conns: newConnSet(),
		selfID: selfID, selfInc: selfInc, logger: logger}
	m.raftLn = newSubListener(m, true)
	m.httpLn = newSubListener(m, false)
	m.sessions = newPeerSessions(m)
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// acceptLoop accepts the connections of other nodes until the port is
// closed, or until the listener fails: the node then no longer hears from
// the others (they see it gone), which the log says.
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
			m.logger.Error("the raft port stopped accepting connections: other nodes can no longer reach this one", "addr", m.advert, "err", err)
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
	peerID := ""
	switch kind[0] {
	case muxRaftHello, muxHTTPHello, muxSessionHello:
		id, ok := m.answerHello(conn)
		if !ok {
			conn.Close()
			return
		}
		peerID = id
		kind[0] -= 'a' - 'A' // the kind's traffic follows
	}
	_ = conn.SetDeadline(time.Time{})
	conn, ok := m.conns.add(conn)
	if !ok {
		return
	}
	switch kind[0] {
	case muxRaft:
		m.raftLn.deliver(conn)
	case muxHTTP:
		m.httpLn.deliver(conn)
	case muxSession:
		m.sessions.accepted(conn, peerID)
	default:
		conn.Close()
	}
}

// recordsSelf reports whether this node's own log, as applied here,
// records this node's incarnation as its id's, or a join request added
// this node as that incarnation and its state has not caught up to
// recording it (Raft.Admitted): what that state says of this node
// predates the join. A member that then claims another incarnation for it is
// behind: the node was removed and added anew, with a new data dir, and
// the member has not applied it yet. Its refusal stands, but does not
// stop this node. A node wiped and started again without a join has no
// such record, and is stopped.
func (m *peerMux) recordsSelf(c *peerChecks) bool {
	if admitted := m.admitted.Load(); admitted != nil && *admitted == m.selfInc {
		return true
	}
	return m.stateRecordsSelf(c)
}

// stateRecordsSelf reports whether this node's replicated state records
// its own incarnation as its id's.
func (m *peerMux) stateRecordsSelf(c *peerChecks) bool {
	rec, _ := c.recorded(m.selfID)
	return rec == m.selfInc
}

// settle asks the dialer on conn how far its replicated state is, when
// the hello found it or this node not to be the incarnation the other's
// state records (see the top of this file), and reports whether each
// mismatch is the believer's to ignore: meBehind, that the dialer's
// expectation of this node is older than this node's record of itself;
// youBehind, that this node's record of the dialer is older than the
// dialer's of itself. ok is false if the dialer did not answer (and both
// are then false).
func (m *peerMux) settle(conn net.Conn, c *peerChecks, detail string) (meBehind, youBehind, ok bool) {
	if _, err := io.WriteString(conn, "applied? "+detail+"\n"); err != nil {
		return false, false, false
	}
	line, err := readLine(conn)
	if err != nil {
		return false, false, false
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "applied" || (f[2] != "self" && f[2] != "-") {
		return false, false, false
	}
	theirs, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return false, false, false
	}
	mine := c.stateIndex()
	// Both states are prefixes of one log: the one further along holds
	// every record the other does, and newer ones.
	meBehind = mine > theirs && m.stateRecordsSelf(c)
	youBehind = theirs > mine && f[2] == "self"
	return meBehind, youBehind, true
}

// answerHello reads a dialer's hello from conn and answers it: whether
// the connection may go on, and the id the dialer said.
func (m *peerMux) answerHello(conn net.Conn) (id string, ok bool) {
	line, err := readLine(conn)
	if err != nil {
		return "", false
	}
	f := strings.Fields(line)
	format, ok := helloFormat(f, 3)
	if !ok || !validIncarnation(f[1]) {
		return "", false
	}
	id, inc, expected := f[0], f[1], f[2]
	// theirCluster is "" when not asked: a fifoq from before cluster ids.
	var theirCluster string
	if asksClusterID(format) {
		if theirCluster, ok = m.askClusterID(conn); !ok {
			return "", false
		}
	}
	c := m.checks.Load()
	var rec string
	var member bool
	if c != nil {
		rec, member = c.recorded(id)
	}
	myCluster := m.ownClusterID()
	if theirCluster != "" {
		if why := otherCluster(myCluster, theirCluster, member); why != "" {
			_, _ = io.WriteString(conn, "other-cluster "+why+"\n")
			return "", false
		}
	}
	// A state further along than this node's records the cluster's id
	// if this one does: a dialer that says none is not believed ahead.
	unproven := theirCluster == noClusterID && myCluster != noClusterID
	meStale := expected != "-" && expected != m.selfInc
	youStale := rec != "" && rec != inc
	meDetail := fmt.Sprintf("member %s expects incarnation %s of it, and its data dir is incarnation %s", id, expected, m.selfInc)
	youDetail := fmt.Sprintf("it presents incarnation %s, and the cluster records incarnation %s", inc, rec)
	if c != nil && (meStale || youStale) {
		detail := youDetail
		if meStale {
			detail = meDetail
		}
		// A dialer that does not answer (a fifoq from before the
		// question) gets the verdict as before.
		meBehind, youBehind, _ := m.settle(conn, c, detail)
		// Only a member's word is weighed: an unknown dialer is not
		// believed behind, whatever it says.
		meStale = meStale && !(meBehind && member)
		youStale = youStale && !(youBehind && !unproven)
	}
	if meStale {
		_, _ = io.WriteString(conn, "fenced-me "+meDetail+"\n")
		// Only a member's word stops this node, not any dialer's.
		if c != nil && member && !m.recordsSelf(c) {
			c.fence(meDetail)
		}
		return "", false
	}
	if c != nil {
		if youStale {
			_, _ = io.WriteString(conn, "fenced-you "+youDetail+"\n")
			return "", false
		}
		if why := c.tooOld(format); why != "" {
			_, _ = io.WriteString(conn, "too-old "+why+"\n")
			return "", false
		}
		if member && (rec == "" || rec == inc) {
			c.learned(id, inc, format)
		}
	}
	_, err = io.WriteString(conn, "ok "+m.selfID+" "+m.selfInc+" "+strconv.Itoa(int(maxEntryFormat))+"\n")
	return id, err == nil
}

// readLine reads a line of at most maxHello bytes, byte by byte, so that
// nothing after it is taken from the connection.
func readLine(conn net.Conn) (string, error) {
	var b []byte
	var c [1]byte
	for len(b) < maxHello {
		if _, err := io.ReadFull(conn, c[:]); err != nil {
			return "", err
		}
		if c[0] == '\n' {
			return string(b), nil
		}
		b = append(b, c[0])
	}
	return "", errors.New("hello too long")
}

// errFenced is a dial refused because the node dialed is not the
// incarnation the membership records.
var errFenced = errors.New("refused: not the incarnation the cluster records")

// ErrOtherCluster is a connection refused because the two nodes are of
// different clusters (cluster_id.go), and AddVoter's refusal of a node
// that answers as one.
var ErrOtherCluster = errors.New("refused: a node of another cluster")

// errTooOld is a connection refused because one side does not read the
// cluster's entry format (format.go).
var errTooOld = errors.New("refused: does not read the cluster's log entry format")

// dial opens a connection of the given kind to a node's Raft port, after
// a hello (see identity.go).
func (m *peerMux) dial(ctx context.Context, hostPort string, kind byte) (net.Conn, error) {
	expected := ""
	if c := m.checks.Load(); c != nil {
		expected = c.expectedAt(hostPort)
	}
	if _, old := m.legacy.Load(hostPort); old {
		return m.dialKind(ctx, hostPort, kind)
	}
	conn, err := m.dialKind(ctx, hostPort, kind+('a'-'A'))
	if err != nil {
		return nil, err
	}
	conn, _, err = m.hello(ctx, conn, hostPort, expected)
	if errors.Is(err, io.EOF) {
		// A fifoq from before incarnations closes a connection of a kind
		// it does not know: dial it as it expects from now on.
		m.legacy.Store(hostPort, true)
		return m.dialKind(ctx, hostPort, kind)
	}
	return conn, err
}

// hello says this node's hello on conn, a connection just dialed to
// hostPort, and judges the answer: conn and the id the node answered with
// if the connection may go on, else it is closed and the error says why
// (io.EOF: the node closed it without a word). expected is the
// incarnation the membership records for the node at hostPort, "" if
// none.
func (m *peerMux) hello(ctx context.Context, conn net.Conn, hostPort, expected string) (net.Conn, string, error) {
	if expected == "" {
		expected = "-"
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(sniffTimeout))
	}
	reply, err := func() (string, error) {
		if _, err := io.WriteString(conn, m.selfID+" "+m.selfInc+" "+expected+" "+strconv.Itoa(int(maxEntryFormat))+"\n"); err != nil {
			return "", err
		}
		return readLine(conn)
	}()
	if err != nil {
		conn.Close()
		return nil, "", err
	}
	verb, rest, _ := strings.Cut(reply, " ")
	asked := verb == "cluster?"
	if asked {
		reply, err = m.answerClusterID(conn, hostPort, rest)
		if err != nil {
			conn.Close()
			return nil, "", err
		}
		verb, rest, _ = strings.Cut(reply, " ")
	}
	vouched := false
	if verb == "applied?" {
		// The node found one of the two not to be the incarnation the
		// other's state records, and asks whose state to believe.
		reply, err = m.answerSettle(conn)
		if err != nil {
			conn.Close()
			return nil, "", err
		}
		verb, rest, _ = strings.Cut(reply, " ")
		vouched = true
	}
	_ = conn.SetDeadline(time.Time{})
	switch verb {
	case "ok":
		f := strings.Fields(rest)
		format, ok := helloFormat(f, 2)
		if !ok || asksClusterID(format) && !asked {
			// A node that reads the cluster ids and did not ask has
			// not checked that this node is of its cluster.
			conn.Close()
			return nil, "", fmt.Errorf("node %s answered a hello with %q", hostPort, reply)
		}
		// Once asked, the node says ok to an expectation of it that is not
		// its incarnation only if its state is further along than this
		// node's, and records it; and only the member this node meant to
		// reach is believed so.
		if expected != "-" && f[1] != expected && !(vouched && m.meant(hostPort, f[0])) {
			conn.Close()
			return nil, "", fmt.Errorf("%w: node %s at %s is incarnation %s, and the cluster records %s", errFenced, f[0], hostPort, f[1], expected)
		}
		if c := m.checks.Load(); c != nil {
			if why := c.tooOld(format); why != "" {
				conn.Close()
				return nil, "", fmt.Errorf("%w: node %s at %s: %s", errTooOld, f[0], hostPort, why)
			}
			c.learned(f[0], f[1], format)
		}
		return conn, f[0], nil
	case "fenced-you":
		conn.Close()
		if c := m.checks.Load(); c != nil && !m.recordsSelf(c) {
			c.fence(fmt.Sprintf("the member at %s refused it: %s", hostPort, rest))
		}
		return nil, "", fmt.Errorf("%w: node at %s refused this one: %s", errFenced, hostPort, rest)
	case "too-old":
		conn.Close()
		if c := m.checks.Load(); c != nil {
			c.outdated(fmt.Sprintf("the member at %s refused it: %s", hostPort, rest))
		}
		return nil, "", fmt.Errorf("%w: node at %s refused this one: %s", errTooOld, hostPort, rest)
	case "fenced-me":
		conn.Close()
		return nil, "", fmt.Errorf("%w: the node at %s is stale: %s", errFenced, hostPort, rest)
	case "other-cluster":
		conn.Close()
		return nil, "", fmt.Errorf("%w: node at %s refused this one: %s", ErrOtherCluster, hostPort, rest)
	}
	conn.Close()
	return nil, "", fmt.Errorf("node %s answered a hello with %q", hostPort, reply)
}

// answerClusterID answers an acceptor's question of this node's cluster
// id, whose own is theirs, and returns its next line; two different ids
// end the hello here.
func (m *peerMux) answerClusterID(conn net.Conn, hostPort, theirs string) (string, error) {
	mine := m.ownClusterID()
	if !validClusterID(theirs) {
		return "", fmt.Errorf("node %s asked its cluster id with %q", hostPort, theirs)
	}
	if theirs != noClusterID && mine != noClusterID && theirs != mine {
		return "", fmt.Errorf("%w: the node at %s is of cluster %s, and this node's is %s", ErrOtherCluster, hostPort, theirs, mine)
	}
	if _, err := io.WriteString(conn, "cluster "+mine+"\n"); err != nil {
		return "", err
	}
	line, err := readLine(conn)
	if err != nil {
		// Not io.EOF, which would take the node for a fifoq from before
		// hellos (dial): one that asked this is not.
		return "", fmt.Errorf("node %s closed the hello after asking its cluster id: %v", hostPort, err)
	}
	return line, nil
}

// meant reports whether id is the member this node's membership puts at
// hostPort.
func (m *peerMux) meant(hostPort, id string) bool {
	c := m.checks.Load()
	return c != nil && id != "" && c.memberAt(hostPort) == id
}

// answerSettle answers a node's "applied?" (see the top of this file)
// and returns its verdict.
func (m *peerMux) answerSettle(conn net.Conn) (string, error) {
	var index uint64
	self := "-"
	if c := m.checks.Load(); c != nil {
		index = c.stateIndex()
		if m.stateRecordsSelf(c) {
			self = "self"
		}
	}
	if _, err := io.WriteString(conn, "applied "+strconv.FormatUint(index, 10)+" "+self+"\n"); err != nil {
		return "", err
	}
	return readLine(conn)
}

// dialKind opens a connection to hostPort and says its kind.
func (m *peerMux) dialKind(ctx context.Context, hostPort string, kind byte) (net.Conn, error) {
	addr := hostPort
	// A dial to a node cut off waits out its timeout: the port's close
	// ends it at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	raw, err := m.network.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	conn, ok := m.conns.add(raw)
	if !ok {
		return nil, net.ErrClosed
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
		m.sessions.close()
		m.conns.closeAll()
	})
	m.wg.Wait()
	return nil
}

// connSet is a set of connections that can all be closed at once: a
// port's, or a group's streams.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{} // nil once closed
}

func newConnSet() *connSet { return &connSet{conns: map[net.Conn]struct{}{}} }

// add records c and returns it wrapped, so that it leaves the set when
// closed; once the set is closed, it closes c and returns false.
func (s *connSet) add(c net.Conn) (net.Conn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		c.Close()
		return nil, false
	}
	s.conns[c] = struct{}{}
	return &trackedConn{Conn: c, set: s}, true
}

// closeAll closes every connection of the set, and every one added from
// now on.
func (s *connSet) closeAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c := range conns {
		// A yamux stream's Close is a half close, which leaves its
		// reader waiting: the deadline wakes it.
		_ = c.SetDeadline(time.Now())
		c.Close()
	}
}

// trackedConn leaves its set when closed.
type trackedConn struct {
	net.Conn
	set *connSet
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.set.mu.Lock()
	if c.set.conns != nil {
		delete(c.set.conns, c.Conn)
	}
	c.set.mu.Unlock()
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
// presents cert and trusts the certificates ca signed for both TLS server
// and client authentication, and only those.
func NewPeerTLSConfig(cert tls.Certificate, ca *x509.CertPool) *tls.Config {
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("peer presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		// A member serves its peers and dials them: its certificate must
		// be good for both uses (one without extended key usages is good
		// for any), so that a certificate the cluster's CA signed for a
		// client or a server alone (fifoq cert client) makes no member.
		// Verify accepts a chain good for any one of the usages it is
		// given, hence a check for each.
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				Roots: ca, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{usage},
			})
			var usageErr x509.CertificateInvalidError
			switch {
			case errors.As(err, &usageErr) && usageErr.Reason == x509.IncompatibleUsage:
				return fmt.Errorf("peer certificate is not a member's: it is not valid for both TLS server and client authentication: %w", err)
			case err != nil:
				return fmt.Errorf("peer certificate not signed by the cluster CA: %w", err)
			}
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
