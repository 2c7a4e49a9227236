package server

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// durableCountingServer is a server on the durable (Raft) log, whose
// receive commands are counted.
func durableCountingServer(b *testing.B) (*Server, *countingRaft) {
	b.Helper()
	eng := engine.New(engine.Config{Region: DefaultRegion})
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := replog.OpenRaft(replog.RaftConfig{Dir: b.TempDir(), NodeID: "bench", Logger: lg}, eng)
	if err != nil {
		b.Fatal(err)
	}
	cl := &countingRaft{Log: l}
	srv, err := New(Config{Log: cl, Engine: eng, Logger: lg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv, cl
}

type countingRaft struct {
	replog.Log
	mu       sync.Mutex
	receives int
}

func (c *countingRaft) Apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	if _, ok := cmd.Request.(*api.ReceiveMessageRequest); ok {
		c.mu.Lock()
		c.receives++
		c.mu.Unlock()
	}
	return c.Log.Apply(ctx, cmd)
}

func (c *countingRaft) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.receives
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
	b.ReportMetric(float64(cl.count())/float64(b.N), "appends/op")
}

// BenchmarkWakeDurable sends one message at a time to a queue that 100
// long polls wait on, and reports how many receive commands each message
// cost the log: one when a message wakes one waiter.
func BenchmarkWakeDurable(b *testing.B) {
	const waiters = 100
	srv, cl := durableCountingServer(b)
	u := createQueueB(b, srv, "q")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{}, waiters)
	var wg sync.WaitGroup
	poll := func() {
		defer wg.Done()
		for ctx.Err() == nil {
			resp, err := srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
			if err == nil && len(resp.(*api.ReceiveMessageResult).Messages) > 0 {
				got <- struct{}{}
			}
		}
	}
	for range waiters {
		wg.Add(1)
		go poll()
	}
	for srv.longPollWaiters() < waiters {
		select {
		case <-b.Context().Done():
			return
		default:
		}
	}
	before := cl.count()
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
	b.ReportMetric(float64(cl.count()-before)/float64(n), "receive-appends/msg")
	cancel()
	wg.Wait()
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{}, waiters)
	var wg sync.WaitGroup
	poll := func() {
		defer wg.Done()
		for ctx.Err() == nil {
			resp, err := srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
			if err == nil && len(resp.(*api.ReceiveMessageResult).Messages) > 0 {
				got <- struct{}{}
			}
		}
	}
	for range waiters {
		wg.Add(1)
		go poll()
	}
	entries := make([]api.SendMessageBatchRequestEntry, waiters)
	for i := range entries {
		entries[i] = api.SendMessageBatchRequestEntry{Id: string(rune('a' + i)), MessageBody: "x"}
	}
	for b.Loop() {
		for srv.longPollWaiters() < waiters {
			select {
			case <-b.Context().Done():
				return
			default:
			}
		}
		if _, err := srv.Do(context.Background(), testAccount, &api.SendMessageBatchRequest{QueueUrl: u, Entries: entries}); err != nil {
			b.Fatal(err)
		}
		for range waiters {
			<-got
		}
	}
	cancel()
	wg.Wait()
}
