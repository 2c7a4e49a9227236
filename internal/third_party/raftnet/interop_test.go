package raftnet

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// This file is fifoq's, not upstream's: it checks that the patched
// transport, with buffers far smaller than its messages, speaks
// upstream's protocol byte for byte, both ways, so that a member running
// it and one running hashicorp/raft's NetworkTransport replicate to each
// other (a rolling upgrade has both in one cluster).

// tcpLayer is a raft.StreamLayer over loopback TCP.
type tcpLayer struct{ net.Listener }

func (l tcpLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

func listen(t *testing.T) tcpLayer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return tcpLayer{ln}
}

// transport is what the tests need of either kind.
type transport interface {
	raft.Transport
	raft.WithPreVote
	Close() error
}

var quiet = hclog.NewNullLogger()

func patched(t *testing.T, size int) transport {
	t.Helper()
	tr := NewNetworkTransportWithConfig(&NetworkTransportConfig{Stream: listen(t), MaxPool: 2, Timeout: 5 * time.Second,
		Logger: quiet, SendBufferSize: size, ReceiveBufferSize: size})
	t.Cleanup(func() { tr.Close() })
	return tr
}

func upstream(t *testing.T) transport {
	t.Helper()
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: listen(t), MaxPool: 2, Timeout: 5 * time.Second, Logger: quiet})
	t.Cleanup(func() { tr.Close() })
	return tr
}

var (
	_ raft.WithClose   = (*NetworkTransport)(nil)
	_ raft.WithPreVote = (*NetworkTransport)(nil)
)

// serve answers every RPC server consumes, each with a response made of
// what it was sent, so that the caller sees its request arrived whole:
// an append answers the sum of its entries' lengths as LastLog, a vote
// its term, a snapshot the SHA-256 of the bytes streamed after it.
func serve(t *testing.T, server transport) {
	answer := func(rpc raft.RPC) {
		switch req := rpc.Command.(type) {
		case *raft.AppendEntriesRequest:
			n := uint64(0)
			for _, e := range req.Entries {
				n += uint64(len(e.Data))
			}
			rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: n, Success: true}, nil)
		case *raft.RequestVoteRequest:
			rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
		case *raft.RequestPreVoteRequest:
			rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: true}, nil)
		case *raft.TimeoutNowRequest:
			rpc.Respond(&raft.TimeoutNowResponse{}, nil)
		case *raft.InstallSnapshotRequest:
			h := sha256.New()
			n, err := io.CopyN(h, rpc.Reader, req.Size)
			if err != nil || n != req.Size {
				rpc.Respond(nil, err)
				return
			}
			rpc.Respond(&raft.InstallSnapshotResponse{Term: req.Term, Success: bytes.Equal(h.Sum(nil), req.Configuration)}, nil)
		}
	}
	server.SetHeartbeatHandler(answer)
	go func() {
		for rpc := range server.Consumer() {
			answer(rpc)
		}
	}()
}

// exercise sends every kind of RPC from client to server, each larger
// than a small buffer, and checks what comes back.
func exercise(t *testing.T, client, server transport) {
	t.Helper()
	serve(t, server)
	target := server.LocalAddr()
	id := raft.ServerID("server")
	entries := func(sizes ...int) ([]*raft.Log, uint64) {
		var out []*raft.Log
		var total uint64
		for i, n := range sizes {
			out = append(out, &raft.Log{Index: uint64(i + 1), Term: 3, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, n)})
			total += uint64(n)
		}
		return out, total
	}
	// A heartbeat (the fast path), then appends of entries small and large.
	var resp raft.AppendEntriesResponse
	if err := client.AppendEntries(id, target, &raft.AppendEntriesRequest{Term: 7, RPCHeader: raft.RPCHeader{Addr: []byte("leader")}}, &resp); err != nil || resp.Term != 7 {
		t.Fatalf("heartbeat: %v, %+v", err, resp)
	}
	for _, sizes := range [][]int{{10}, {100 << 10, 3, 300 << 10}, {2 << 20}} {
		es, total := entries(sizes...)
		if err := client.AppendEntries(id, target, &raft.AppendEntriesRequest{Term: 7, Entries: es}, &resp); err != nil || resp.LastLog != total || !resp.Success {
			t.Fatalf("append of %v bytes: %v, answered %+v (want LastLog %d)", sizes, err, resp, total)
		}
	}
	// The pipeline, several appends in flight.
	pipe, err := client.AppendEntriesPipeline(id, target)
	if err != nil {
		t.Fatal(err)
	}
	// The pipeline holds few in flight: the answers are taken as the
	// appends go, as Raft's replication takes them.
	want := make([]uint64, 6)
	sent := make(chan error, 1)
	go func() {
		for i := range want {
			es, total := entries(1+i*50_000, 7)
			want[i] = total
			if _, err := pipe.AppendEntries(&raft.AppendEntriesRequest{Term: uint64(10 + i), Entries: es}, &raft.AppendEntriesResponse{}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for i := range want {
		select {
		case f := <-pipe.Consumer():
			if err := f.Error(); err != nil || f.Response().LastLog != want[i] || f.Response().Term != uint64(10+i) {
				t.Fatalf("pipelined append %d: %v, answered %+v (want LastLog %d)", i, err, f.Response(), want[i])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("pipelined append %d not answered", i)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	// Votes and the leadership transfer.
	var vote raft.RequestVoteResponse
	if err := client.RequestVote(id, target, &raft.RequestVoteRequest{Term: 9}, &vote); err != nil || !vote.Granted || vote.Term != 9 {
		t.Fatalf("vote: %v, %+v", err, vote)
	}
	var pre raft.RequestPreVoteResponse
	if err := client.RequestPreVote(id, target, &raft.RequestPreVoteRequest{Term: 11}, &pre); err != nil || !pre.Granted || pre.Term != 11 {
		t.Fatalf("pre-vote: %v, %+v", err, pre)
	}
	if err := client.TimeoutNow(id, target, &raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{}); err != nil {
		t.Fatalf("timeout now: %v", err)
	}
	// A snapshot of 3 MiB streamed after its request.
	snap := bytes.Repeat([]byte("snapshot"), 3<<20/8)
	sum := sha256.Sum256(snap)
	var installed raft.InstallSnapshotResponse
	if err := client.InstallSnapshot(id, target, &raft.InstallSnapshotRequest{Term: 12, Size: int64(len(snap)), Configuration: sum[:]},
		&installed, bytes.NewReader(snap)); err != nil || !installed.Success {
		t.Fatalf("install snapshot: %v, %+v", err, installed)
	}
}

func TestPatchedToUpstream(t *testing.T) { exercise(t, patched(t, 512), upstream(t)) }

func TestUpstreamToPatched(t *testing.T) { exercise(t, upstream(t), patched(t, 512)) }

func TestPatchedToPatched(t *testing.T) { exercise(t, patched(t, 4096), patched(t, 4096)) }

// TestDefaultBuffersAreUpstreams checks that a transport configured with
// no sizes keeps upstream's.
func TestDefaultBuffersAreUpstreams(t *testing.T) {
	tr := NewNetworkTransportWithConfig(&NetworkTransportConfig{Stream: listen(t), Logger: quiet})
	defer tr.Close()
	if tr.sendBufferSize != connSendBufferSize || tr.receiveBufferSize != connReceiveBufferSize {
		t.Fatalf("buffers %d and %d, want upstream's %d and %d", tr.sendBufferSize, tr.receiveBufferSize, connSendBufferSize, connReceiveBufferSize)
	}
	exercise(t, tr, upstream(t))
}
