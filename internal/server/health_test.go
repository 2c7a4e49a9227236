package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// get GETs path from base and returns the status and body.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// raftServer returns a server over a Raft log in a new directory, and its
// handler served over HTTP. The caller shuts the server down.
func raftServer(t *testing.T, minFree int64) (*Server, *httptest.Server) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := replog.OpenRaft(replog.RaftConfig{Engine: engine.Config{Region: DefaultRegion}, Dir: t.TempDir(), Logger: logger, MinFreeBytes: minFree})
	if err != nil {
		t.Fatalf("OpenRaft: %v", err)
	}
	srv, err := New(Config{Logger: logger, Log: l, Raft: l})
	if err != nil {
		l.Close()
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return srv, ts
}

// TestReadiness checks /readyz (and /healthz beside it) through a server's
// life over a durable log: ready while it can write, not ready when the
// disk guard refuses writes, and not ready once Shutdown has begun, while
// /healthz stays 200 as long as HTTP is served.
func TestReadiness(t *testing.T) {
	tests := []struct {
		name     string
		minFree  int64
		ready    bool
		notReady string // what the 503 body says
	}{
		{"writable", -1, true, ""},
		{"disk guard refuses writes", 1 << 62, false, "disk is almost full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := raftServer(t, tc.minFree)
			code, body := get(t, ts.URL, "/readyz")
			if tc.ready && (code != http.StatusOK || body != "ok\n") {
				t.Errorf("/readyz = %d %q, want 200 ok", code, body)
			}
			if !tc.ready && (code != http.StatusServiceUnavailable || !strings.Contains(body, tc.notReady)) {
				t.Errorf("/readyz = %d %q, want 503 saying %q", code, body, tc.notReady)
			}
			if code, body := get(t, ts.URL, "/healthz"); code != http.StatusOK || body != "ok\n" {
				t.Errorf("/healthz = %d %q, want 200 ok", code, body)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if code, body := get(t, ts.URL, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
				t.Errorf("/readyz after Shutdown = %d %q, want 503 shutting down", code, body)
			}
			if code, _ := get(t, ts.URL, "/healthz"); code != http.StatusOK {
				t.Errorf("/healthz after Shutdown = %d, want 200 while HTTP is served", code)
			}
		})
	}
}

// TestProbesNeedNoSignature checks that with credentials configured the
// probes and /metrics still answer unsigned requests, while the API does
// not.
func TestProbesNeedNoSignature(t *testing.T) {
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Verifier: requireSignatures(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/_localstack/health"} {
		if code, body := get(t, ts.URL, path); code != http.StatusOK {
			t.Errorf("GET %s unsigned = %d %s, want 200", path, code, body)
		}
	}
	if code, _ := call(t, ts.URL, "ListQueues", `{}`); code != http.StatusForbidden {
		t.Errorf("unsigned ListQueues = %d, want 403", code)
	}
}

// TestLocalstackHealth checks LocalStack's health probe through a server's
// life over a durable log, as TestReadiness does /readyz: 200 in
// LocalStack's shape and spacing (harnesses grep for `"sqs": "running"`),
// with sqs "running" while the server can write, "error" while the disk
// guard refuses writes, "stopping" once Shutdown has begun; HEAD answers
// as GET does.
func TestLocalstackHealth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minFree int64
		state   string
	}{
		{"writable", -1, "running"},
		{"disk guard refuses writes", 1 << 62, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := raftServer(t, tc.minFree)
			want := func(state string) {
				t.Helper()
				resp, err := http.Get(ts.URL + "/_localstack/health")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				doc := `{"services": {"sqs": "` + state + `"}, "edition": "fifoq", "version": "dev"}`
				if resp.StatusCode != http.StatusOK || string(b) != doc || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("GET /_localstack/health = %d %s %q, want 200 application/json %s", resp.StatusCode, resp.Header.Get("Content-Type"), b, doc)
				}
				head, err := http.Head(ts.URL + "/_localstack/health")
				if err != nil {
					t.Fatal(err)
				}
				head.Body.Close()
				if head.StatusCode != http.StatusOK {
					t.Errorf("HEAD /_localstack/health = %d, want 200", head.StatusCode)
				}
			}
			want(tc.state)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			want("stopping")
		})
	}
}
