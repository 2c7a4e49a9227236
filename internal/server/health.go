package server

import (
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
