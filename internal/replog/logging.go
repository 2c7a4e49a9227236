package replog

import (
	"io"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Raft's and raft-wal's messages go to the log's slog logger.

// newHCLogger returns the logger Raft and raft-wal are given: theirs is
// hclog, which logs at DEBUG by default; only warnings and errors are
// passed on, to the log's own slog logger.
func newHCLogger(l *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "raft",
		Level:  hclog.Warn,
		Output: slogWriter{l},
	})
}

// slogWriter sends hclog's lines to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := string(trimNewline(p))
	// A cluster of one elects itself on every start, after the heartbeat
	// timeout: routine, not worth a warning.
	if strings.Contains(line, "heartbeat timeout reached, starting election") {
		w.l.Debug(line, "component", "raft")
		return len(p), nil
	}
	w.l.Warn(line, "component", "raft")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

var _ io.Writer = slogWriter{}
