package replog

import (
	"io"
	"log/slog"
	"strings"
)

// Raft's and raft-wal's messages go to the log's slog logger.

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
