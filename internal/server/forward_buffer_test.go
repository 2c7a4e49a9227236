package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// writeCountingConn counts the writes made on a connection.
type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// dialCounting is the part of a RaftLog the forwarder dials through; its
// connections count their writes.
type dialCounting struct {
	RaftLog
	writes atomic.Int64
}

func (d *dialCounting) NodeID() string { return "n2" }

func (d *dialCounting) DialPeer(ctx context.Context, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return writeCountingConn{Conn: c, writes: &d.writes}, nil
}

// TestForwardedBatchIsOneWrite checks that a follower sends a forwarded
// SendMessageBatch of ten 1-KiB messages, with the headers of a signed
// request, to its leader in one write: with net/http's 4 KiB buffer it
// took two or more, each a system call and, on loopback, the leader's
// receiving of it too (docs/benchmarks.md, "System calls a message").
func TestForwardedBatchIsOneWrite(t *testing.T) {
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer leader.Close()
	type entry struct{ Id, MessageBody, MessageGroupId, MessageDeduplicationId string }
	var entries []entry
	for i := range 10 {
		entries = append(entries, entry{fmt.Sprint(i), strings.Repeat("b", 1024), "g", fmt.Sprint("d", i)})
	}
	body, err := json.Marshal(map[string]any{"QueueUrl": "http://127.0.0.1:9324/000000000000/q.fifo", "Entries": entries})
	if err != nil {
		t.Fatal(err)
	}
	client := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", nil)
	client.Header.Set("Content-Type", "application/x-amz-json-1.0")
	client.Header.Set("X-Amz-Target", "AmazonSQS.SendMessageBatch")
	client.Header.Set("X-Amz-Date", "20261207T220000Z")
	client.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261207/us-east-1/sqs/aws4_request, "+
		"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature="+strings.Repeat("0", 64))
	client.Header.Set("User-Agent", "aws-sdk-go-v2/1.30.0 os/linux lang/go#1.24 md/GOOS#linux md/GOARCH#amd64 api/sqs#1.34.0")

	log := &dialCounting{}
	s := &Server{cluster: log, fwd: newForwarder(log)}
	defer s.fwd.close()
	out, err := s.forwardedRequest(context.Background(), client, body, strings.TrimPrefix(leader.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := doForwarded(context.Background(), s.fwd.client, out)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the leader answered %d", resp.StatusCode)
	}
	if n := log.writes.Load(); n != 1 {
		t.Fatalf("the forwarded batch (%d bytes of body) went to the leader in %d writes, want 1", len(body), n)
	}
}
