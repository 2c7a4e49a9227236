package server

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// durableCountingServer is a server on the durable (Raft) log, whose
// commands are counted.
func durableCountingServer(b *testing.B) (*Server, *countingLog) {
	b.Helper()
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := replog.OpenRaft(replog.RaftConfig{Engine: engine.Config{Region: DefaultRegion}, Dir: b.TempDir(), NodeID: "bench", Logger: lg})
	if err != nil {
		b.Fatal(err)
	}
	cl := newCountingLog(l)
	srv, err := New(Config{Log: cl, Logger: lg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv, cl
}

// startLongPolls starts n goroutines that long-poll queue u until the
// benchmark ends, each sending on got for every receive that returned
// messages, and waits until all n are waiting.
func startLongPolls(b *testing.B, srv *Server, u string, n int) (got <-chan struct{}) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{}, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
				if err == nil && len(resp.(*api.ReceiveMessageResult).Messages) > 0 {
					ch <- struct{}{}
				}
			}
		}()
	}
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	waitForPolls(b, srv, n)
	return ch
}

// waitForPolls waits until n receives are waiting on srv.
func waitForPolls(b *testing.B, srv *Server, n int) {
	for srv.longPollWaiters() < n {
		if b.Context().Err() != nil {
			return
		}
		runtime.Gosched()
	}
}

// BenchmarkEmptyShortPollDurable is a short poll of an empty queue on the
// durable log: with nothing to take, it should cost a read, not an fsync.
func BenchmarkEmptyShortPollDurable(b *testing.B) {
	srv, cl := durableCountingServer(b)
	u := createQueueB(b, srv, "q")
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cl.count(api.ActionReceiveMessage))/float64(b.N), "appends/op")
}

// BenchmarkWakeDurable sends one message at a time to a queue that 100
// long polls wait on, and reports how many receive commands each message
// cost the log: one when a message wakes one waiter.
func BenchmarkWakeDurable(b *testing.B) {
	const waiters = 100
	srv, cl := durableCountingServer(b)
	u := createQueueB(b, srv, "q")
	got := startLongPolls(b, srv, u, waiters)
	before := cl.count(api.ActionReceiveMessage)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if _, err := srv.Do(context.Background(), testAccount, &api.SendMessageRequest{QueueUrl: u, MessageBody: "x"}); err != nil {
			b.Fatal(err)
		}
		<-got
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64(cl.count(api.ActionReceiveMessage)-before)/float64(n), "receive-appends/msg")
}

func createQueueB(b *testing.B, srv *Server, name string) string {
	b.Helper()
	if _, err := srv.Do(context.Background(), testAccount, &api.CreateQueueRequest{QueueName: name}); err != nil {
		b.Fatal(err)
	}
	return queueURL(name)
}

// BenchmarkBurstDurable sends a batch of 10 messages to a queue that 10
// long polls (one message each) wait on, until every poll has its message:
// the polls should take them at once, sharing group commits, not one after
// another.
func BenchmarkBurstDurable(b *testing.B) {
	const waiters = 10
	srv, _ := durableCountingServer(b)
	u := createQueueB(b, srv, "q")
	got := startLongPolls(b, srv, u, waiters)
	entries := make([]api.SendMessageBatchRequestEntry, waiters)
	for i := range entries {
		entries[i] = api.SendMessageBatchRequestEntry{Id: string(rune('a' + i)), MessageBody: "x"}
	}
	for b.Loop() {
		waitForPolls(b, srv, waiters)
		if _, err := srv.Do(context.Background(), testAccount, &api.SendMessageBatchRequest{QueueUrl: u, Entries: entries}); err != nil {
			b.Fatal(err)
		}
		for range waiters {
			<-got
		}
	}
}
