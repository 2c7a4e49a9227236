package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/fifoq/fifoq/internal/memguard"
)

// readier is a command log that can tell whether it takes writes now;
// replog.Raft is one. A log without the method is always ready.
type readier interface {
	Ready() error
}

// serveHealth answers the liveness probe: the process serves HTTP.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	writePlain(w, http.StatusOK, "ok\n")
}

// serveReady answers the readiness probe: 200 while the server can apply
// writes, 503 with the reason while it cannot (shutting down, the log
// closed, not the leader, the disk almost full).
//
// A server at its memory budget stays ready, and says so in the body: it
// refuses sends, but its consumers must still reach it to drain the
// backlog; a probe that took it out of a load balancer would keep it at
// its budget for good.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if err := s.ready(); err != "" {
		writePlain(w, http.StatusServiceUnavailable, "not ready: "+err+"\n")
		return
	}
	if g := s.cfg.Memory; g != nil && g.Refusing() {
		writePlain(w, http.StatusOK, fmt.Sprintf("ok, but sends are refused: the server is at its memory budget (%s needed of %s); receives and deletes go on\n",
			memguard.HumanSize(g.Live()), memguard.HumanSize(g.Budget())))
		return
	}
	writePlain(w, http.StatusOK, "ok\n")
}

// serveLocalstackHealth answers LocalStack's health probe,
// /_localstack/health, which harnesses written for LocalStack poll before
// they start (waiting for services.sqs to be "running" or "available").
// It answers in LocalStack's shape, byte for byte as LocalStack's Python
// writes it ("key": "value", with the spaces), because some of those
// harnesses grep the text rather than parse it:
//
//	{"services": {"sqs": "running"}, "edition": "fifoq", "version": "..."}
//
// As LocalStack does, it answers 200 whatever the state and lets the
// state say it: "running" while the server can apply writes (when /readyz
// is 200), "stopping" once it shuts down, "error" while it cannot take
// writes for another reason (/readyz says which). So a harness that waits
// for "running" waits for what /readyz waits for, and one that only
// checks the status code proceeds as it would with LocalStack. HEAD gets
// the same status and headers (net/http sends no body).
func (s *Server) serveLocalstackHealth(w http.ResponseWriter, r *http.Request) {
	state := "running"
	select {
	case <-s.done:
		state = "stopping"
	default:
		if s.ready() != "" {
			state = "error"
		}
	}
	version := s.cfg.Version
	if version == "" {
		version = "dev"
	}
	v, _ := json.Marshal(version)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, `{"services": {"sqs": "%s"}, "edition": "fifoq", "version": %s}`, state, v)
}

// ready returns why the server cannot take writes now, or "" if it can.
func (s *Server) ready() string {
	select {
	case <-s.done:
		return "shutting down"
	default:
	}
	if l, ok := s.log.(readier); ok {
		if err := l.Ready(); err != nil {
			return err.Error()
		}
	}
	return ""
}

// writePlain writes a short plain-text answer that no cache keeps.
func writePlain(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
