package replog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"
)

// Heartbeats coalesced per pair of nodes.
//
// What an idle shard replica costs is its heartbeats (docs/benchmarks.md,
// "What an idle shard costs"): hashicorp/raft's leader heartbeats each
// follower on a timer of its own, every tenth of the heartbeat timeout or
// so, and each heartbeat is a round trip of its own: encoded, a yamux
// frame and a system call each way, four goroutines woken. A node holds
// many shards, and between two nodes their heartbeats are many small
// round trips to the same place. CockroachDB coalesces the heartbeats of
// every range between two nodes into one message a tick; hashicorp/raft's
// heartbeat loop cannot be changed, but its transport can.
//
// A shard's transport (beatTransport) hands each heartbeat to its node's
// beatHub instead of sending it alone. The hub keeps, for each peer, a
// beatLink: the first heartbeat to wait on an idle link starts a gather of
// beatGather, and all that are waiting then go in one frame on one stream
// of the pair's session (the stream header beatStream, where a group's
// streams say their group). The peer's hub hands each heartbeat of the
// frame to its group's Raft, through the heartbeat handler hashicorp/raft
// gives its transport (the fast path NetworkTransport uses too), and
// answers them all in one frame. Nothing of Raft changes: every heartbeat
// reaches its follower's Raft, and every answer its leader's, only later
// by up to beatGather, which is small against the shortest heartbeat
// timeout a shard uses (docs/cluster.md, "Idle shards"). A heartbeat a
// leadership check is waiting on (ReadBarrier's VerifyLeader) goes at once.
//
// A link that fails (the peer runs a fifoq without coalesced heartbeats
// and closes the stream, the session dies, the peer stops answering) sends
// what was waiting one by one over the group's own transport, and the
// shards' heartbeats to that peer go so for beatFallback before the link is
// tried again: a rolling upgrade, and any fault of the link, cost the
// heartbeats their coalescing, not their delivery.

// beatStream is the header of the stream that carries a pair's coalesced
// heartbeats, in place of a group's number; no group has it.
const beatStream = math.MaxUint32

// beatGather is how long a link that had nothing waiting gathers
// heartbeats before it sends them (beatHub.gather, which tests set).
const beatGather = 20 * time.Millisecond

// coalesceBeats turns the coalescing on; off, every heartbeat goes over
// its group's own transport. A variable for the benchmark that measures
// what it saves (BenchmarkIdleShards -idle.coalesce=false).
var coalesceBeats = true

// beatFallback is how long a peer whose link failed gets its heartbeats
// one by one, over each group's transport.
const beatFallback = 10 * time.Second

// beatTimeout bounds a frame's round trip.
const beatTimeout = 5 * time.Second

// maxBeatFrame bounds the frames a node reads: a heartbeat is a few dozen
// bytes, and a frame holds one for each shard the pair shares.
const maxBeatFrame = 4 << 20

// beatInner is what beatTransport wraps: a group's own transport.
type beatInner interface {
	raft.Transport
	raft.WithClose
	raft.WithPreVote
}

// beatTransport is a shard's Raft transport: its own (beatInner) for
// everything but heartbeats, which go through the node's beatHub.
type beatTransport struct {
	beatInner
	hub   *beatHub
	group uint32
	// observe is told of every answered AppendEntries, as the inner
	// transport tells it of those it carries (raftnet's OnAppendEntries).
	observe func(raft.ServerID, *raft.AppendEntriesRequest, *raft.AppendEntriesResponse)
	// handler is the heartbeat handler Raft gave the transport.
	handler atomic.Pointer[func(raft.RPC)]
	// urgent counts the leadership checks waiting on this group's
	// heartbeats (ReadBarrier): they are sent without a gather.
	urgent atomic.Int32
}

// wrap returns group's transport over inner, its heartbeats coalesced by
// the hub, and registers it to be handed the heartbeats peers send it.
func (h *beatHub) wrap(group uint32, inner beatInner, observe func(raft.ServerID, *raft.AppendEntriesRequest, *raft.AppendEntriesResponse)) *beatTransport {
	t := &beatTransport{beatInner: inner, hub: h, group: group, observe: observe}
	h.mu.Lock()
	h.groups[group] = t
	h.mu.Unlock()
	return t
}

// SetHeartbeatHandler implements raft.Transport.
func (t *beatTransport) SetHeartbeatHandler(fn func(raft.RPC)) {
	if fn == nil {
		t.handler.Store(nil)
	} else {
		t.handler.Store(&fn)
	}
	t.beatInner.SetHeartbeatHandler(fn)
}

// AppendEntries implements raft.Transport: a heartbeat goes through the
// hub, anything else (and a heartbeat the hub could not deliver) over the
// group's own transport.
func (t *beatTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if coalesceBeats && isHeartbeat(args) {
		if err := t.hub.beat(string(target), t.group, args, resp, t.urgent.Load() > 0); err == nil {
			if t.observe != nil {
				t.observe(id, args, resp)
			}
			return nil
		}
	}
	return t.beatInner.AppendEntries(id, target, args, resp)
}

// Close implements raft.WithClose: the group takes no more heartbeats
// from peers, and its own transport closes.
func (t *beatTransport) Close() error {
	t.hub.mu.Lock()
	if t.hub.groups[t.group] == t {
		delete(t.hub.groups, t.group)
	}
	t.hub.mu.Unlock()
	return t.beatInner.Close()
}

// verifying marks a leadership check under way on the group, for as long
// as the returned function is not called: its heartbeats are sent at
// once, and so is what the links hold now (a heartbeat of the group may
// be waiting there, its loop blocked on it, which the check waits for).
func (t *beatTransport) verifying() func() {
	t.urgent.Add(1)
	t.hub.rushAll()
	return func() { t.urgent.Add(-1) }
}

// isHeartbeat reports whether args is what hashicorp/raft's heartbeat
// loop sends (the shape its NetworkTransport also tells heartbeats by):
// a term and a leader, and nothing of the log.
func isHeartbeat(args *raft.AppendEntriesRequest) bool {
	return args.Term != 0 && (len(args.Addr) != 0 || len(args.Leader) != 0) &&
		args.PrevLogEntry == 0 && args.PrevLogTerm == 0 && len(args.Entries) == 0 && args.LeaderCommitIndex == 0
}

// beatHub is a node's coalescer of heartbeats: its links to peers and the
// groups it hands peers' heartbeats to.
type beatHub struct {
	s *peerSessions
	// gather is beatGather but in tests, which set it before the node's
	// groups start.
	gather time.Duration

	mu     sync.Mutex
	groups map[uint32]*beatTransport
	links  map[string]*beatLink // by the peer's Raft address
	closed bool
	quit   chan struct{}
	wg     sync.WaitGroup

	// frames and beats count the frames the links sent and the
	// heartbeats in them, for the tests and benchmarks.
	frames, beats atomic.Uint64
}

func newBeatHub(s *peerSessions) *beatHub {
	return &beatHub{s: s, gather: beatGather, groups: map[uint32]*beatTransport{}, links: map[string]*beatLink{}, quit: make(chan struct{})}
}

// beat is one heartbeat waiting on a link for its answer. The link hands
// the answer over on done, never into the caller's response: a caller
// that gave up waiting (the hub closing) sends its heartbeat itself.
type beat struct {
	group uint32
	req   *raft.AppendEntriesRequest
	done  chan beatResult
}

// beatResult is what a link hands a heartbeat's caller: the follower's
// response, or why there is none.
type beatResult struct {
	resp raft.AppendEntriesResponse
	err  error
}

// errBeatFallback says a link is not carrying heartbeats now: the caller
// sends its heartbeat over the group's own transport.
var errBeatFallback = errors.New("coalesced heartbeats to this peer are off for now")

// beat sends one heartbeat of group to the peer at addr through its link,
// and fills resp with the follower's answer; it returns errBeatFallback,
// or the link's error, when the caller is to send it itself.
func (h *beatHub) beat(addr string, group uint32, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, urgent bool) error {
	l, err := h.link(addr)
	if err != nil {
		return err
	}
	b := &beat{group: group, req: req, done: make(chan beatResult, 1)}
	if err := l.enqueue(b, urgent); err != nil {
		return err
	}
	select {
	case r := <-b.done:
		if r.err == nil {
			*resp = r.resp
		}
		return r.err
	case <-h.quit:
		return errBeatFallback
	}
}

// link returns the link to addr, started if there is none.
func (h *beatHub) link(addr string) (*beatLink, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errBeatFallback
	}
	l := h.links[addr]
	if l == nil {
		l = &beatLink{hub: h, addr: addr, kick: make(chan struct{}, 1), rush: make(chan struct{}, 1)}
		h.links[addr] = l
		h.wg.Add(1)
		go l.run()
	}
	return l, nil
}

// rushAll has every link send what it holds without waiting out its
// gather.
func (h *beatHub) rushAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.links {
		l.mu.Lock()
		if len(l.waiting) > 0 {
			l.urgent = true
		}
		l.mu.Unlock()
		l.wake()
	}
}

// close stops the links and fails what waits on them over to the groups'
// own transports. The port's close calls it.
func (h *beatHub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.quit)
	h.mu.Unlock()
	h.wg.Wait()
}

// beatLink carries the heartbeats of every shard from this node to one
// peer.
type beatLink struct {
	hub  *beatHub
	addr string

	mu      sync.Mutex
	waiting []*beat
	// first is when the oldest of waiting came: the gather ends
	// beatGather after it.
	first time.Time
	// urgent says what waits goes at once: an urgent heartbeat waits, or
	// a leadership check rushed the link.
	urgent   bool
	offUntil time.Time // the link failed: heartbeats go one by one till then
	// kick says a heartbeat came; rush wakes a gather to look at urgent
	// again. Either may be a wake left from before, which is why run
	// decides by the fields above and not by which channel woke it.
	kick chan struct{}
	rush chan struct{}

	// Only run's goroutine touches the stream.
	stream *yamux.Stream
	reader *bufio.Reader
}

// enqueue adds b to what the link sends next, or refuses it while the
// link is off.
func (l *beatLink) enqueue(b *beat, urgent bool) error {
	l.mu.Lock()
	if time.Now().Before(l.offUntil) {
		l.mu.Unlock()
		return errBeatFallback
	}
	if len(l.waiting) == 0 {
		l.first = time.Now()
	}
	l.waiting = append(l.waiting, b)
	l.urgent = l.urgent || urgent
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	if urgent {
		l.wake()
	}
	return nil
}

// wake has a gather under way look at whether it is to end now.
func (l *beatLink) wake() {
	select {
	case l.rush <- struct{}{}:
	default:
	}
}

// run sends the link's frames: once the oldest heartbeat waiting has
// waited beatGather (at once if one is urgent), it sends whatever waits
// as one frame and hands each heartbeat its answer.
func (l *beatLink) run() {
	defer l.hub.wg.Done()
	defer l.closeStream()
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	for {
		select {
		case <-l.kick:
		case <-l.hub.quit:
			l.failWaiting(errBeatFallback)
			return
		}
		for {
			l.mu.Lock()
			urgent, wait := l.urgent, time.Until(l.first.Add(l.hub.gather))
			l.mu.Unlock()
			if urgent || wait <= 0 {
				break
			}
			gather.Reset(wait)
			select {
			case <-gather.C:
			case <-l.rush:
			case <-l.hub.quit:
				l.failWaiting(errBeatFallback)
				return
			}
			gather.Stop()
		}
		l.mu.Lock()
		batch := l.waiting
		l.waiting, l.urgent = nil, false
		l.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if err := l.exchange(batch); err != nil {
			l.closeStream()
			l.mu.Lock()
			l.offUntil = time.Now().Add(beatFallback)
			l.mu.Unlock()
			for _, b := range batch {
				b.done <- beatResult{err: err}
			}
			l.failWaiting(errBeatFallback)
			l.hub.s.mux.logger.Debug("replog: coalesced heartbeats to a peer failed; sending them one by one for a while", "peer", l.addr, "err", err)
		}
	}
}

// failWaiting answers everything waiting with err.
func (l *beatLink) failWaiting(err error) {
	l.mu.Lock()
	batch := l.waiting
	l.waiting, l.urgent = nil, false
	l.mu.Unlock()
	for _, b := range batch {
		b.done <- beatResult{err: err}
	}
}

// exchange sends batch as one frame and reads the answers into each
// heartbeat, answering each; an error is the frame's, and answers none.
func (l *beatLink) exchange(batch []*beat) error {
	if l.stream == nil {
		if err := l.openStream(); err != nil {
			return err
		}
	}
	_ = l.stream.SetDeadline(time.Now().Add(beatTimeout))
	if _, err := l.stream.Write(encodeBeats(batch)); err != nil {
		return err
	}
	frame, err := readBeatFrame(l.reader)
	if err != nil {
		return err
	}
	answers, err := decodeBeatAnswers(frame, len(batch))
	if err != nil {
		return err
	}
	l.hub.frames.Add(1)
	l.hub.beats.Add(uint64(len(batch)))
	for i, b := range batch {
		if answers[i].err != "" {
			b.done <- beatResult{err: fmt.Errorf("follower: %s", answers[i].err)}
			continue
		}
		b.done <- beatResult{resp: answers[i].resp}
	}
	return nil
}

// openStream opens the link's stream on the pair's session.
func (l *beatLink) openStream() error {
	ctx, cancel := context.WithTimeout(context.Background(), beatTimeout)
	defer cancel()
	go func() {
		select {
		case <-l.hub.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	sess, err := l.hub.s.session(ctx, l.addr)
	if err != nil {
		return err
	}
	st, err := openTagged(sess, beatStream, beatTimeout)
	if err != nil {
		l.hub.s.forget(l.addr, sess)
		return err
	}
	l.stream, l.reader = st, bufio.NewReader(st)
	return nil
}

func (l *beatLink) closeStream() {
	if l.stream != nil {
		l.stream.Close()
		l.stream, l.reader = nil, nil
	}
}

// serve answers the frames of heartbeats a peer sends on st, until the
// stream ends.
func (h *beatHub) serve(st net.Conn) {
	defer st.Close()
	r := bufio.NewReader(st)
	for {
		// A link with nothing to send for this long is of a peer gone:
		// it opens a stream again when it has.
		_ = st.SetReadDeadline(time.Now().Add(10 * time.Minute))
		frame, err := readBeatFrame(r)
		if err != nil {
			return
		}
		beats, err := decodeBeats(frame)
		if err != nil {
			return
		}
		answers := make([]beatAnswer, len(beats))
		for i, b := range beats {
			answers[i] = h.deliver(b.group, b.req)
		}
		_ = st.SetWriteDeadline(time.Now().Add(beatTimeout))
		if _, err := st.Write(encodeBeatAnswers(answers)); err != nil {
			return
		}
	}
}

// beatAnswer is a follower's answer to one heartbeat of a frame: its
// Raft's response, or why it has none.
type beatAnswer struct {
	resp raft.AppendEntriesResponse
	err  string
}

// deliver hands one heartbeat to its group's Raft and returns its answer.
func (h *beatHub) deliver(group uint32, req *raft.AppendEntriesRequest) beatAnswer {
	h.mu.Lock()
	t := h.groups[group]
	h.mu.Unlock()
	if t == nil {
		return beatAnswer{err: fmt.Sprintf("no replica of group %d here", group)}
	}
	fn := t.handler.Load()
	if fn == nil {
		return beatAnswer{err: fmt.Sprintf("group %d is not taking heartbeats", group)}
	}
	// Raft's heartbeat handler answers before it returns, or not at all
	// (once it is shut down): nothing is waited for.
	ch := make(chan raft.RPCResponse, 1)
	(*fn)(raft.RPC{Command: req, RespChan: ch})
	select {
	case out := <-ch:
		if out.Error != nil {
			return beatAnswer{err: out.Error.Error()}
		}
		resp, ok := out.Response.(*raft.AppendEntriesResponse)
		if !ok {
			return beatAnswer{err: "no answer to the heartbeat"}
		}
		return beatAnswer{resp: *resp}
	default:
		return beatAnswer{err: fmt.Sprintf("group %d did not answer", group)}
	}
}
