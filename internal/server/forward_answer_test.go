package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestForwardedAnswerArrivesWholeOrNotAtAll covers a forward's answer
// once the leader has begun it. A forwarded request gives up when its
// leader changes (watchForwardTarget), which also cut off the body of an
// answer already under way; and the answer's status was relayed before
// its body, without its length, so a body cut off reached the client as a
// complete 200 with part of its JSON ("unexpected end of JSON input" in
// fifoq bench's lean client on a plain FIFO queue over six nodes, 30
// receives in one run: messages taken, their groups locked until the
// visibility timeout, and the client not told to retry).
func TestForwardedAnswerArrivesWholeOrNotAtAll(t *testing.T) {
	const body = `{"Messages":[{"Body":"m","MessageId":"1"}]}`
	t.Run("the leader changes after it answered", func(t *testing.T) {
		headers, release := make(chan struct{}), make(chan struct{})
		leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			close(headers)
			<-release
			_, _ = io.WriteString(w, body)
		}))
		defer leader.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-headers
			time.Sleep(50 * time.Millisecond) // the status has reached the forwarder
			cancel()                          // as watchForwardTarget does on a new leader
			close(release)
		}()
		out, _ := http.NewRequest(http.MethodPost, leader.URL, nil)
		resp, data, err := doForwarded(ctx, leader.Client(), out)
		if err != nil {
			t.Fatalf("the forward failed although its leader answered: %v", err)
		}
		if string(data) != body || resp.StatusCode != http.StatusOK {
			t.Fatalf("relayed %d %q, want the leader's whole answer %q", resp.StatusCode, data, body)
		}
	})
	t.Run("the leader's answer is cut off", func(t *testing.T) {
		leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 100\r\n\r\n" + body[:12])
			_ = buf.Flush()
			conn.Close() // the leader dies mid-answer
		}))
		defer leader.Close()
		out, _ := http.NewRequest(http.MethodPost, leader.URL, nil)
		resp, data, err := doForwarded(context.Background(), leader.Client(), out)
		if err == nil {
			t.Fatalf("a forward whose answer was cut off returned %d %q, want an error before anything is relayed", resp.StatusCode, data)
		}
	})
}
