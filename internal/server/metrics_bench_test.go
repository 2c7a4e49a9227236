package server

import (
	"context"
	"fmt"
	clockpkg "github.com/fifoq/fifoq/internal/clock"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// BenchmarkScrape measures a /metrics scrape of a server with 1,000 queues
// of 1,000 messages each, and the part of it that holds the log's read
// lock (which stops writes), in three states no request has touched since:
// every message visible; every message received and its visibility
// timeout run out; every message past the retention period. The server's
// housekeeping has run (drain), as it would have on a running server.
// Figures: docs/benchmarks.md.
func BenchmarkScrape(b *testing.B) {
	for _, state := range []string{"visible", "visibility-expired", "retention-expired"} {
		b.Run(state, func(b *testing.B) {
			s := scrapeServer(b, 1000, 1000, state)
			drain(b, s)
			h := s.Handler()
			b.Run("scrape", func(b *testing.B) {
				for range b.N {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
					if rec.Code != 200 {
						b.Fatalf("scrape: %d", rec.Code)
					}
					io.Discard.Write(rec.Body.Bytes())
				}
			})
			b.Run("locked", func(b *testing.B) {
				for range b.N {
					s.queueFigures(nil)
				}
			})
		})
	}
}

// drain applies the housekeeping a running server would have applied.
func drain(b *testing.B, s *Server) {
	for {
		applied, more, err := s.keeper.step()
		if err != nil {
			b.Fatal(err)
		}
		if !applied || !more {
			return
		}
	}
}

// scrapeServer returns an in-memory server holding queues of msgs messages
// each in the given state, its clock moved past what ran out.
func scrapeServer(b *testing.B, queues, msgs int, state string) *Server {
	b.Helper()
	clock := &testClock{}
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clockpkg.WithNow(clock.Now)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	do := func(q api.QueueKey, req api.Request) api.Response {
		resp, err := s.apply(ctx, &engine.Command{Time: clock.Now().UnixNano(), Caller: DefaultAccount, Queue: q, Request: req, Entropy: newEntropy()})
		if err != nil {
			b.Fatalf("%s: %v", req.Action(), err)
		}
		return resp
	}
	for i := range queues {
		name := fmt.Sprintf("q%04d", i)
		q := api.QueueKey{Account: DefaultAccount, Name: name}
		do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: name, Attributes: map[string]string{api.AttrMessageRetentionPeriod: "60"}})
		for j := 0; j < msgs; j += 10 {
			req := &api.SendMessageBatchRequest{QueueUrl: q.Path()}
			for k := range min(10, msgs-j) {
				req.Entries = append(req.Entries, api.SendMessageBatchRequestEntry{Id: strconv.Itoa(k), MessageBody: "0123456789abcdef0123456789abcdef"})
			}
			do(q, req)
		}
		if state == "visibility-expired" {
			for j := 0; j < msgs; j += 10 {
				n, vis := 10, 5
				do(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &n, VisibilityTimeout: &vis})
			}
		}
	}
	switch state {
	case "visibility-expired":
		clock.Advance(10 * time.Second)
	case "retention-expired":
		clock.Advance(2 * time.Minute)
	}
	return s
}
