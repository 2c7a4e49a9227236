package server

import (
	"bufio"
	"encoding/json"
	"maps"
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
	if err == nil {
		var handled bool
		if handled, err = s.readElsewhere(w, r, nil, key); handled && err == nil {
			return
		}
	}
	if err == nil {
		err = s.authorizeOn(nil, caller, api.ActionReceiveMessage, key)
	}
	if err != nil {
		e := api.AsError(err)
		writeJSONError(w, e.Status, e.Code+": "+e.Message)
		return
	}
	var cur engine.ExportCursor
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for first := true; ; first = false {
		var page []engine.ListedMessage
		var done, found bool
		now := s.now().UnixNano()
		s.logOf(key).Read(func(e *engine.Engine) {
			page, done, found, err = e.ExportPage(key, now, &cur, exportPage, "")
			for i := range page {
				page[i].MessageAttributes = maps.Clone(page[i].MessageAttributes)
			}
		})
		switch {
		case !found && first:
			e := api.ErrQueueDoesNotExist()
			writeJSONError(w, e.Status, e.Code+": "+e.Message)
			return
		case !found:
			err = engine.ErrExportQueueGone
		}
		if err != nil {
			// The export is cut short; the client sees no final line.
			s.logger.Error("export failed", "queue", key.String(), "err", err)
			if first {
				writeJSONError(w, http.StatusInternalServerError, err.Error())
			}
			return
		}
		if first {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Header().Set("Cache-Control", "no-store")
		}
		for _, lm := range page {
			if err := enc.Encode(lm.Message); err != nil {
				return
			}
		}
		if done {
			// The last line says the export is whole, so that a client
			// can tell it from one cut short.
			_ = enc.Encode(map[string]bool{"ExportComplete": true})
			_ = bw.Flush()
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
		if r.Context().Err() != nil {
			return
		}
	}
}
