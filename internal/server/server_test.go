package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// call sends one AWS JSON request and returns the status and body.
func call(t *testing.T, base, action, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", action, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestShutdownAnswersLongPolls checks graceful shutdown: a receive waiting
// for up to 20 s is answered at once with no messages and status 200, and
// Shutdown returns without waiting out the poll.
func TestShutdownAnswersLongPolls(t *testing.T) {
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	if code, body := call(t, base, "CreateQueue", `{"QueueName":"q"}`); code != 200 {
		t.Fatalf("CreateQueue: %d %s", code, body)
	}

	type answer struct {
		code int
		body string
		took time.Duration
	}
	answered := make(chan answer, 1)
	go func() {
		began := time.Now()
		code, body := call(t, base, "ReceiveMessage", `{"QueueUrl":"`+base+`/000000000000/q","WaitTimeSeconds":20}`)
		answered <- answer{code, body, time.Since(began)}
	}()
	// Shut down once the poll waits: before, its request could meet a
	// closed listener instead.
	for deadline := time.Now().Add(10 * time.Second); srv.longPollWaiters() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long poll did not start waiting")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case a := <-answered:
		if a.code != 200 || strings.Contains(a.body, "Messages") {
			t.Fatalf("long poll answered %d %s, want 200 with no messages", a.code, a.body)
		}
		if a.took > 10*time.Second {
			t.Fatalf("long poll took %v: it waited out its wait time instead of being answered at shutdown", a.took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was not answered after Shutdown")
	}
}
