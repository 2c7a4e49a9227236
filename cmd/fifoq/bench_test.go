package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/bench"
	"github.com/fifoq/fifoq/internal/server"
)

// startServer serves an in-memory fifoq on a loopback port for the test.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// TestBenchCeiling runs "fifoq bench --ceiling" through the command's own
// path against a fifoq server and checks that the report gives both runs,
// the ratio and the CPU figures, in text and in JSON.
func TestBenchCeiling(t *testing.T) {
	endpoint := startServer(t)
	args := []string{"--ceiling", "--endpoint", endpoint, "--duration", "700ms", "--producers", "2", "--consumers", "2",
		"--groups", "4", "--batch", "10", "--quiet", "--drain-timeout", "10s"}

	var stdout, stderr bytes.Buffer
	if code := benchCmd(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	text := stdout.String()
	t.Log(text)
	for _, want := range []string{"== ceiling:", "== target: " + endpoint, "of the client's ceiling", "cpu cores client", "server ", "result    OK"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q", want)
		}
	}

	stdout.Reset()
	stderr.Reset()
	if code := benchCmd(append(args, "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("--json: exit %d\nstderr:\n%s", code, stderr.String())
	}
	var c bench.Comparison
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if c.Ceiling == nil || c.Target == nil {
		t.Fatalf("--json lacks a phase: %s", stdout.String())
	}
	if c.Ceiling.Sent == 0 || c.Target.Sent == 0 || c.SendFraction <= 0 || c.ReceiveFraction <= 0 {
		t.Fatalf("ceiling sent %d, target sent %d, fractions %g %g", c.Ceiling.Sent, c.Target.Sent, c.SendFraction, c.ReceiveFraction)
	}
	if c.Ceiling.Resources.ClientCPUSeconds == nil || c.Target.Resources.ClientCPUSeconds == nil {
		t.Error("a phase lacks the client's CPU")
	}
	// The in-process server's /metrics reports this process's CPU.
	if c.Target.Resources.ServerCPUSeconds == nil {
		t.Errorf("the target phase lacks the server's CPU: notes %v", c.Target.Resources.Notes)
	}
	if c.Ceiling.Resources.ServerCPUSeconds != nil {
		t.Error("the ceiling phase reports a server CPU: it has no server")
	}
}
