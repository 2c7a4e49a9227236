package replog

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// startBeatCluster starts 3 session nodes of groups groups each, built as
// opts[i] says (coalesce by default), and stops them when t ends.
func startBeatCluster(t *testing.T, groups int, opts ...sessionNodeOpts) []*sessionNode {
	t.Helper()
	nodes := make([]*sessionNode, 3)
	addrs := freeAddrs(t, len(nodes))
	servers := sessionMembers(addrs)
	for i := range nodes {
		o := sessionNodeOpts{coalesce: true}
		if i < len(opts) {
			o = opts[i]
		}
		nodes[i] = startSessionNodeWith(t, fmt.Sprintf("node-%d", i+1), addrs[i], groups, servers, o)
	}
	t.Cleanup(func() {
		// The hubs first: a heartbeat a failed test left gathering would
		// hold its Raft's shutdown.
		for _, n := range nodes {
			if h := n.mux.sessions.beats; h != nil {
				h.close()
			}
		}
		for _, n := range nodes {
			n.stop()
		}
	})
	return nodes
}

// beatsSent returns the heartbeats and frames the nodes' hubs sent.
func beatsSent(nodes []*sessionNode) (beats, frames uint64) {
	for _, n := range nodes {
		if h := n.mux.sessions.beats; h != nil {
			beats += h.beats.Load()
			frames += h.frames.Load()
		}
	}
	return beats, frames
}

// TestHeartbeatsCoalescedPerPeer: 16 groups on 3 nodes whose heartbeats go
// through their nodes' hubs elect, commit, and keep committing, their
// heartbeats carried several to a frame.
func TestHeartbeatsCoalescedPerPeer(t *testing.T) {
	const groups = 16
	nodes := startBeatCluster(t, groups)
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))
	b0, f0 := beatsSent(nodes)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, f := beatsSent(nodes)
		if b-b0 >= 200 {
			t.Logf("%d heartbeats in %d frames", b-b0, f-f0)
			if f-f0 >= b-b0 {
				t.Fatalf("%d heartbeats took %d frames: none were coalesced", b-b0, f-f0)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d heartbeats went through the hubs in 30 s", b-b0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))
}

// TestCoalescedHeartbeatsFallBackToAPeerWithout: a node without the hub
// (a fifoq from before it, in a rolling upgrade) closes the stream of
// coalesced heartbeats; its peers' heartbeats then reach it one by one
// over each group's own transport, and every group elects and commits,
// whichever node leads it.
func TestCoalescedHeartbeatsFallBackToAPeerWithout(t *testing.T) {
	const groups = 8
	nodes := startBeatCluster(t, groups, sessionNodeOpts{coalesce: true}, sessionNodeOpts{coalesce: true}, sessionNodeOpts{noHub: true})
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))
	// A group led by the first or second node heartbeats the third.
	led := false
	for g := range groups {
		led = led || nodes[0].rafts[g].State() == raft.Leader || nodes[1].rafts[g].State() == raft.Leader
	}
	if !led {
		t.Skip("the node without the hub leads every group: nothing to fall back")
	}
	old := string(nodes[2].mux.advert.String())
	deadline := time.Now().Add(10 * time.Second)
	for {
		off := false
		for _, n := range nodes[:2] {
			n.mux.sessions.beats.mu.Lock()
			if l := n.mux.sessions.beats.links[old]; l != nil {
				l.mu.Lock()
				off = off || time.Now().Before(l.offUntil)
				l.mu.Unlock()
			}
			n.mux.sessions.beats.mu.Unlock()
		}
		if off {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no link to the node without the hub went off")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Past a fallback or two, the groups still commit.
	time.Sleep(beatFallback + time.Second)
	applyOnLeaders(t, nodes, groups, time.Now().Add(30*time.Second))
	for g := range groups {
		leaders := 0
		for _, n := range nodes {
			if n.rafts[g].State() == raft.Leader {
				leaders++
			}
		}
		if leaders != 1 {
			t.Fatalf("group %d has %d leaders", g, leaders)
		}
	}
}

// TestGatheredHeartbeatsGoAtOnceWhenRushedOrUrgent: with a hub that
// gathers for an hour, an urgent heartbeat (a leadership check's) is
// answered at once, and one gathering is sent as soon as a leadership
// check rushes the links (verifying): a check never waits out a gather,
// nor the heartbeat its group's loop is blocked on.
func TestGatheredHeartbeatsGoAtOnceWhenRushedOrUrgent(t *testing.T) {
	addrs := freeAddrs(t, 2)
	var muxes []*peerMux
	for i, addr := range addrs {
		m, err := newPeerMux(tcpNetwork{}, addr, nil, fmt.Sprintf("node-%d", i+1), fmt.Sprintf("%032x", i+1), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		muxes = append(muxes, m)
	}
	from, to := muxes[0].sessions.beats, muxes[1].sessions.beats
	from.gather = time.Hour
	_, inner := raft.NewInmemTransport("")
	follower := to.wrap(7, inner, nil)
	follower.SetHeartbeatHandler(func(rpc raft.RPC) {
		rpc.Respond(&raft.AppendEntriesResponse{Term: rpc.Command.(*raft.AppendEntriesRequest).Term, Success: true}, nil)
	})
	_, leaderInner := raft.NewInmemTransport("")
	leader := from.wrap(7, leaderInner, nil)
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("node-1"), Addr: []byte(addrs[0])}, Term: 5}
	within := func(what string, urgent bool, before func()) {
		t.Helper()
		done := make(chan error, 1)
		var resp raft.AppendEntriesResponse
		go func() { done <- from.beat(addrs[1], 7, req, &resp, urgent) }()
		if before != nil {
			before()
		}
		select {
		case err := <-done:
			if err != nil || !resp.Success || resp.Term != 5 {
				t.Fatalf("%s: %v, %+v", what, err, resp)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: not answered in 20 s", what)
		}
	}
	within("an urgent heartbeat", true, nil)
	from.mu.Lock()
	link := from.links[addrs[1]] // made by the heartbeat above
	from.mu.Unlock()
	waiting := func() int {
		link.mu.Lock()
		defer link.mu.Unlock()
		return len(link.waiting)
	}
	// An urgent heartbeat's wake can reach the link's loop after it has
	// sent the heartbeat; such a late wake must not send the next
	// gathering early (a leadership check would otherwise find nothing
	// waiting to rush, and the gathering would go out before it is due).
	select {
	case link.rush <- struct{}{}:
	default:
	}
	within("a gathered heartbeat, rushed by a leadership check", false, func() {
		deadline := time.Now().Add(20 * time.Second)
		for waiting() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the heartbeat never waited on the link")
			}
			time.Sleep(time.Millisecond)
		}
		// It waits out the gather, however long a wake from before it
		// had been left.
		time.Sleep(200 * time.Millisecond)
		if waiting() != 1 {
			t.Fatal("a gathered heartbeat went out before its gather ended, and before any check rushed it")
		}
		leader.verifying()()
	})
}

// TestBeatFramesRoundTrip: frames of heartbeats and of answers decode to
// what was encoded.
func TestBeatFramesRoundTrip(t *testing.T) {
	reqs := []*raft.AppendEntriesRequest{
		{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("n1"), Addr: []byte("10.0.0.1:9325")}, Term: 7, Leader: []byte("10.0.0.1:9325")},
		{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, Addr: []byte("a")}, Term: 1 << 40},
	}
	var batch []*beat
	for i, r := range reqs {
		batch = append(batch, &beat{group: uint32(i*1000 + 1), req: r})
	}
	frame := encodeBeats(batch)
	p, err := readBeatFrame(bufio.NewReader(bytes.NewReader(frame)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeBeats(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if b.group != batch[i].group || !reflect.DeepEqual(b.req, reqs[i]) {
			t.Fatalf("heartbeat %d: %d %+v, want %d %+v", i, b.group, b.req, batch[i].group, reqs[i])
		}
	}
	answers := []beatAnswer{
		{resp: raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("n2"), Addr: []byte("x")}, Term: 7, LastLog: 99, Success: true}},
		{err: "no replica of group 1001 here"},
		{resp: raft.AppendEntriesResponse{Term: 9, NoRetryBackoff: true}},
	}
	p, err = readBeatFrame(bufio.NewReader(bytes.NewReader(encodeBeatAnswers(answers))))
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeBeatAnswers(p, len(answers))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, answers) {
		t.Fatalf("answers %+v, want %+v", back, answers)
	}
	if _, err := decodeBeatAnswers(p, 2); err == nil {
		t.Fatal("three answers taken for two heartbeats")
	}
}

// FuzzBeatFrames: no payload makes the frame decoders panic, and what
// decodes encodes back to the same payload.
func FuzzBeatFrames(f *testing.F) {
	f.Add(encodeBeats([]*beat{{group: 3, req: &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("n1"), Addr: []byte("a:1")}, Term: 2}}})[4:])
	f.Add(encodeBeatAnswers([]beatAnswer{{err: "x"}, {resp: raft.AppendEntriesResponse{Term: 1, Success: true}}})[4:])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, p []byte) {
		if beats, err := decodeBeats(p); err == nil {
			var batch []*beat
			for _, b := range beats {
				batch = append(batch, &beat{group: b.group, req: b.req})
			}
			if again := encodeBeats(batch)[4:]; !bytes.Equal(again, p) && !sameBeats(again, beats) {
				t.Fatalf("heartbeats %x decoded and encoded again to %x", p, again)
			}
		}
		for want := range 3 {
			if answers, err := decodeBeatAnswers(p, want); err == nil {
				if again, err := decodeBeatAnswers(encodeBeatAnswers(answers)[4:], want); err != nil || !reflect.DeepEqual(again, answers) {
					t.Fatalf("answers %x: %+v, again %+v (%v)", p, answers, again, err)
				}
			}
		}
	})
}

// sameBeats reports whether payload p decodes to beats: a payload may
// spell a number in more bytes than the encoder does.
func sameBeats(p []byte, beats []beatIn) bool {
	again, err := decodeBeats(p)
	return err == nil && reflect.DeepEqual(again, beats)
}
