package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// hungLog is a log that, once hung, never answers a command by itself, as
// a durable log whose disk write never returns: a command waits until its
// request's context ends or the log is closed, and Close answers every
// waiting command ServiceUnavailable and reports that it gave up, as
// replog.Raft does past its close timeout.
type hungLog struct {
	replog.Log
	mu      sync.Mutex
	hung    bool
	closed  chan struct{}
	once    sync.Once
	waiting map[api.Action]int
}

func newHungLog(l replog.Log) *hungLog {
	return &hungLog{Log: l, closed: make(chan struct{}), waiting: map[api.Action]int{}}
}

func (l *hungLog) hang() { l.mu.Lock(); l.hung = true; l.mu.Unlock() }

func (l *hungLog) Apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	l.mu.Lock()
	hung := l.hung
	if hung {
		l.waiting[cmd.Request.Action()]++
	}
	l.mu.Unlock()
	if !hung {
		return l.Log.Apply(ctx, cmd)
	}
	select {
	case <-ctx.Done():
		return nil, api.ErrInternalFailure("The request ended before its outcome was known.")
	case <-l.closed:
		return nil, api.ErrServiceUnavailable("The command log stopped before this request's outcome was known.")
	}
}

func (l *hungLog) waitingFor(a api.Action) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting[a]
}

func (l *hungLog) Close() error {
	l.once.Do(func() { close(l.closed) })
	return replog.ErrCloseTimeout
}

// TestShutdownWithHungLog hangs the log under a client's SendMessage and
// a running move task's tick: Shutdown still returns (with the log's
// error), the client is answered ServiceUnavailable, and the move-task
// driver's goroutine ends (the package's leak check).
func TestShutdownWithHungLog(t *testing.T) {
	log := newHungLog(replog.NewMemory(engine.Config{Region: DefaultRegion}))
	srv, err := New(Config{Log: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A dead-letter queue holding messages, and a slow task moving them
	// back, so that the driver ticks throughout the test.
	dlq := createQueue(t, srv, "dlq", nil)
	dlqArn := api.QueueKey{Account: testAccount, Name: "dlq"}.ARN(DefaultRegion)
	src := createQueue(t, srv, "src", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqArn + `","maxReceiveCount":"1"}`})
	for i := 0; i < 3; i++ {
		mustDo(t, srv, &api.SendMessageRequest{QueueUrl: src, MessageBody: "m"})
	}
	for i := 0; i < 2; i++ {
		mustDo(t, srv, &api.ReceiveMessageRequest{QueueUrl: src, MaxNumberOfMessages: intp(10), VisibilityTimeout: intp(0)})
	}
	attrs := mustDo(t, srv, &api.GetQueueAttributesRequest{QueueUrl: dlq, AttributeNames: []string{"ApproximateNumberOfMessages"}}).(*api.GetQueueAttributesResult)
	if attrs.Attributes["ApproximateNumberOfMessages"] != "3" {
		t.Fatalf("dead-letter queue holds %v; want 3 messages", attrs.Attributes)
	}
	mustDo(t, srv, &api.StartMessageMoveTaskRequest{SourceArn: dlqArn, MaxNumberOfMessagesPerSecond: intp(1)})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	log.hang()
	type answer struct {
		code int
		body string
	}
	answered := make(chan answer, 1)
	go func() {
		code, body := call(t, base, "SendMessage", `{"QueueUrl":"`+base+src+`","MessageBody":"x"}`)
		answered <- answer{code, body}
	}()
	waitFor(t, "the send and a move-task tick to wait on the log", func() bool {
		return log.waitingFor(api.ActionSendMessage) == 1 && log.waitingFor(engine.ActionTick) >= 1
	})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	select {
	case err := <-shut:
		if err == nil {
			t.Fatal("Shutdown with a hung log returned nil")
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, replog.ErrCloseTimeout) {
			t.Fatalf("Shutdown returned %v; want the wait's deadline or the log's close timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Shutdown hung on a hung log")
	}
	select {
	case a := <-answered:
		if a.code != 503 || !strings.Contains(a.body, "ServiceUnavailable") {
			t.Fatalf("the waiting send was answered %d %s; want 503 ServiceUnavailable", a.code, a.body)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting send was never answered")
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestShutdownWhileServeStarts shuts a server down while the goroutine
// that called Serve may still be starting its background work (the
// move-task driver, the housekeeper), as a process stopped at once after
// it started does. The background work must either start before Shutdown
// waits for it or not at all: starting it during the wait is a WaitGroup
// misuse that the race detector reports (it did, in the cluster test
// TestSkewedClockNeverLeads), and starting it after would leak it (the
// package's leak check).
func TestShutdownWhileServeStarts(t *testing.T) {
	for range 200 {
		srv, err := New(Config{Log: replog.NewMemory(engine.Config{Region: DefaultRegion}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-served; err != nil {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
		ln.Close()
	}
}
