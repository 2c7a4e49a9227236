package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// ExportPath is where a server answers GET ?QueueUrl=URL with every
// message of the queue, one JSON object a line, without receiving any
// (for `fifoq export`): each as a receive of every attribute would
// render it (body, message attributes, system attributes: group and
// deduplication ids, sent timestamp, receive count, ...), without a
// receipt handle. The request is signed like an SQS request, and needs
// the right to receive from the queue.
const ExportPath = "/admin/export"

// exportPage is the number of messages read under one hold of the log's
// read lock: the lock is let go between pages, so that an export of a
// long queue never holds writes back for long.
const exportPage = 500

// serveExport streams a queue's messages.
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	caller, err := s.verifier.Verify(r, nil)
	if err != nil {
		e := api.AsError(err)
		writeJSONError(w, e.Status, e.Code+": "+e.Message)
		return
	}
	// An export takes as long as its queue's size does: the server's
	// write timeout, made for API answers, would cut it.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	key, err := s.resolve(r.URL.Query().Get("QueueUrl"), s.scopeOf(r, caller))
	if err != nil {
		e := api.AsError(err)
		writeJSONError(w, e.Status, e.Code+": "+e.Message)
		return
	}
	if fromPeer(r) && r.Header.Get(hdrReadPart) != "" {
		s.answerPartRead(w, r, caller, key, true)
		return
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	started := false
	// Each partition of a split queue in turn (read_parts.go): a message
	// group lives in one, so each group's messages keep their order.
	err = s.readParts(r.Context(), key, partRead{r: r, caller: caller, export: true, emit: func(_ uint32, lm engine.ListedMessage) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Header().Set("Cache-Control", "no-store")
		}
		return enc.Encode(lm.Message)
	}})
	if err != nil {
		if !started {
			e := api.AsError(err)
			writeJSONError(w, e.Status, e.Code+": "+e.Message)
			return
		}
		// The export is cut short; the client sees no final line.
		s.logger.Error("export failed", "queue", key.String(), "err", err)
		_ = bw.Flush()
		return
	}
	if !started {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Cache-Control", "no-store")
	}
	// The last line says the export is whole, so that a client can tell
	// it from one cut short.
	_ = enc.Encode(map[string]bool{"ExportComplete": true})
	_ = bw.Flush()
}
