package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/metrics"
)

// requestRecord is what serveAPI learns about a request as it goes, for
// its metrics and its log line. It keeps the decoded request only to name
// its queue in the log line: bodies, signatures and credentials are never
// logged.
type requestRecord struct {
	id     string
	began  time.Time
	action api.Action  // "" until decoded
	scope  api.Scope   // the authenticated caller and region; zero if verification failed
	req    api.Request // the decoded request, nil until decoded
	status int
	err    *api.Error // the error answered, nil on success
	// forwarded: the request was answered by another node, which
	// metered it.
	forwarded bool
}

// finishRequest meters an answered request and, with LogRequests, logs it
// in one line.
func (s *Server) finishRequest(rec *requestRecord) {
	if rec.forwarded {
		return
	}
	took := time.Since(rec.began)
	outcome := metrics.OutcomeOK
	switch {
	case rec.err != nil:
		outcome = rec.err.Code
	case rec.status >= 400:
		// The answer was written as an error without passing through
		// fail: only an encoding failure does that.
		outcome = "InternalFailure"
	}
	action := string(rec.action)
	if action == "" {
		action = metrics.UnknownAction
	}
	s.metrics.ObserveRequest(action, outcome, took)
	if !s.cfg.LogRequests {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", rec.id),
		slog.String("action", action),
		slog.String("account", rec.scope.Account),
		// Only a logged request pays for finding its queue.
		slog.String("queue", s.queueNameOf(rec.req, rec.scope)),
		slog.Int("status", rec.status),
	}
	if outcome != metrics.OutcomeOK {
		attrs = append(attrs, slog.String("error", outcome))
	}
	attrs = append(attrs, slog.Duration("duration", took))
	s.logger.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// queueNameOf returns the queue a request acts on as ACCOUNT/NAME (or
// REGION/ACCOUNT/NAME outside the server's region), or "" if it names
// none. The request is not validated yet, so a name longer than any valid
// one is left out rather than copied into the log.
func (s *Server) queueNameOf(req api.Request, in api.Scope) string {
	if req == nil {
		return ""
	}
	k := api.QueueKey{Region: in.Region, Account: in.Account}
	switch r := req.(type) {
	case *api.CreateQueueRequest:
		k.Name = r.QueueName
	case *api.GetQueueUrlRequest:
		k.Name = r.QueueName
		if r.QueueOwnerAWSAccountId != "" {
			k.Account = r.QueueOwnerAWSAccountId
		}
	default:
		u, ok := api.QueueURLOf(req)
		if !ok {
			return ""
		}
		var err error
		if k, err = s.resolve(u, in); err != nil {
			return ""
		}
	}
	if k.Name == "" || len(k.Name) > api.MaxQueueNameLength || !api.IsAccountID(k.Account) {
		return ""
	}
	return k.String()
}

// statusWriter remembers the status code of the response written through
// it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader implements http.ResponseWriter.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		setDate(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		setDate(w.Header())
	}
	return w.ResponseWriter.Write(p)
}

// setDate gives a response the Date header net/http would give it, from a
// value formatted once a second rather than once a response (formatting it
// was 2% of a busy server's CPU).
func setDate(h http.Header) {
	if _, set := h["Date"]; set {
		return
	}
	now := time.Now()
	sec := now.Unix()
	d := lastDate.Load()
	if d == nil || d.sec != sec {
		d = &httpDate{sec: sec, value: []string{now.UTC().Format(http.TimeFormat)}}
		lastDate.Store(d)
	}
	// Shared by every response of the second: net/http only reads it,
	// and its length and capacity of one make an Add copy it.
	h["Date"] = d.value[:1:1]
}

// httpDate is a Date header's value and the second it stands for.
type httpDate struct {
	sec   int64
	value []string
}

// lastDate is the Date header of the current second.
var lastDate atomic.Pointer[httpDate]

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
