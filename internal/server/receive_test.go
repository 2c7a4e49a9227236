package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// countingLog is a log that counts the commands appended to it, by action.
type countingLog struct {
	replog.Log
	mu      sync.Mutex
	applied map[api.Action]int
}

// newCountingLog counts the commands appended to l.
func newCountingLog(l replog.Log) *countingLog {
	return &countingLog{Log: l, applied: map[api.Action]int{}}
}

func (l *countingLog) Apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	l.mu.Lock()
	l.applied[cmd.Request.Action()]++
	l.mu.Unlock()
	return l.Log.Apply(ctx, cmd)
}

func (l *countingLog) count(a api.Action) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied[a]
}

func newCountingServer(t *testing.T) (*Server, *countingLog) {
	t.Helper()
	log := newCountingLog(replog.NewMemory(engine.Config{Region: DefaultRegion}))
	srv, err := New(Config{Log: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return srv, log
}

const testAccount = DefaultAccount

func queueURL(name string) string { return "/" + testAccount + "/" + name }

func mustDo(t *testing.T, srv *Server, req api.Request) api.Response {
	t.Helper()
	resp, err := srv.Do(context.Background(), testAccount, req)
	if err != nil {
		t.Fatalf("%s: %v", req.Action(), err)
	}
	return resp
}

func createQueue(t *testing.T, srv *Server, name string, attrs map[string]string) string {
	t.Helper()
	mustDo(t, srv, &api.CreateQueueRequest{QueueName: name, Attributes: attrs})
	return queueURL(name)
}

func intp(n int) *int { return &n }

// TestEmptyReceiveWritesNothing checks that a receive that finds nothing,
// on an empty queue or one that does not exist, appends nothing to the
// log, and that one that takes a message, or retries a FIFO attempt that
// did, goes through it.
func TestEmptyReceiveWritesNothing(t *testing.T) {
	srv, log := newCountingServer(t)
	std := createQueue(t, srv, "std", nil)
	fifo := createQueue(t, srv, "f.fifo", map[string]string{api.AttrFifoQueue: "true", api.AttrContentBasedDeduplication: "true"})

	for range 10 {
		res := mustDo(t, srv, &api.ReceiveMessageRequest{QueueUrl: std}).(*api.ReceiveMessageResult)
		if len(res.Messages) != 0 {
			t.Fatalf("empty queue gave %d messages", len(res.Messages))
		}
		mustDo(t, srv, &api.ReceiveMessageRequest{QueueUrl: fifo, ReceiveRequestAttemptId: "a1"})
	}
	_, err := srv.Do(context.Background(), testAccount, &api.ReceiveMessageRequest{QueueUrl: queueURL("nosuch"), WaitTimeSeconds: intp(5)})
	if e := api.AsError(err); e == nil || e.Code != api.ErrQueueDoesNotExist().Code {
		t.Fatalf("receive from a missing queue: %v, want QueueDoesNotExist", err)
	}
	if n := log.count(api.ActionReceiveMessage); n != 0 {
		t.Fatalf("empty receives appended %d commands to the log, want 0", n)
	}

	mustDo(t, srv, &api.SendMessageRequest{QueueUrl: fifo, MessageBody: "x", MessageGroupId: "g"})
	first := mustDo(t, srv, &api.ReceiveMessageRequest{QueueUrl: fifo, ReceiveRequestAttemptId: "a1"}).(*api.ReceiveMessageResult)
	if len(first.Messages) != 1 {
		t.Fatalf("got %d messages, want 1", len(first.Messages))
	}
	// The message is in flight, so the queue has nothing to take; the
	// retry must still answer it again, from the log's record.
	retry := mustDo(t, srv, &api.ReceiveMessageRequest{QueueUrl: fifo, ReceiveRequestAttemptId: "a1"}).(*api.ReceiveMessageResult)
	if len(retry.Messages) != 1 || retry.Messages[0].ReceiptHandle != first.Messages[0].ReceiptHandle {
		t.Fatalf("retried attempt answered %+v, want the first answer %+v", retry.Messages, first.Messages)
	}
	if n := log.count(api.ActionReceiveMessage); n != 2 {
		t.Fatalf("receives appended %d commands, want 2 (a take and a retry)", n)
	}
	// Another attempt id finds nothing: no append.
	mustDo(t, srv, &api.ReceiveMessageRequest{QueueUrl: fifo, ReceiveRequestAttemptId: "a2"})
	if n := log.count(api.ActionReceiveMessage); n != 2 {
		t.Fatalf("receives appended %d commands, want 2", n)
	}
}

// waitFor polls cond until it holds; the test's own timeout bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-time.After(time.Millisecond):
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// waiting returns the number of waiters of q not yet woken.
func (n *notifier) waiting(q api.QueueKey) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if wq := n.queues[q]; wq != nil {
		return wq.waiting.Len()
	}
	return 0
}

// TestOneMessageWakesOneWaiter checks that a message arriving at a queue
// with several long polls waiting sends one of them to the log, not all,
// and that the others still get the messages that come after, one each.
func TestOneMessageWakesOneWaiter(t *testing.T) {
	srv, log := newCountingServer(t)
	u := createQueue(t, srv, "q", nil)
	key := api.QueueKey{Account: testAccount, Name: "q"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const n = 5
	got := make(chan string, n)
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			res := resp.(*api.ReceiveMessageResult)
			if len(res.Messages) != 1 {
				got <- fmt.Sprintf("%d messages", len(res.Messages))
				return
			}
			got <- res.Messages[0].Body
		}()
	}
	waitFor(t, "the polls to wait", func() bool { return srv.notifier.waiting(key) == n })

	seen := map[string]bool{}
	for i := range n {
		body := fmt.Sprint("m", i)
		mustDo(t, srv, &api.SendMessageRequest{QueueUrl: u, MessageBody: body})
		if b := <-got; b != body {
			t.Fatalf("a poll got %q, want %q", b, body)
		}
		seen[body] = true
		// The woken poll has gone; the others are back waiting, having
		// never been to the log.
		waitFor(t, "the other polls to wait", func() bool { return srv.notifier.waiting(key) == n-1-i })
		if r := log.count(api.ActionReceiveMessage); r != i+1 {
			t.Fatalf("after %d messages, %d receives went through the log, want %d", i+1, r, i+1)
		}
	}
	done.Wait()
	if srv.notifier.size() != 0 {
		t.Fatalf("notifier keeps %d queues after every poll left", srv.notifier.size())
	}
}

// TestBurstReachesWaiters checks that a batch of messages sent at once,
// which wakes one waiter, still reaches as many waiters as it has
// messages, each passing the wake-up on.
func TestBurstReachesWaiters(t *testing.T) {
	srv, _ := newCountingServer(t)
	u := createQueue(t, srv, "q", nil)
	key := api.QueueKey{Account: testAccount, Name: "q"}
	const n = 4
	got := make(chan int, n)
	for range n {
		go func() {
			resp, err := srv.Do(context.Background(), testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
			if err != nil {
				got <- -1
				return
			}
			got <- len(resp.(*api.ReceiveMessageResult).Messages)
		}()
	}
	waitFor(t, "the polls to wait", func() bool { return srv.notifier.waiting(key) == n })
	var entries []api.SendMessageBatchRequestEntry
	for i := range n {
		entries = append(entries, api.SendMessageBatchRequestEntry{Id: fmt.Sprint(i), MessageBody: "b"})
	}
	mustDo(t, srv, &api.SendMessageBatchRequest{QueueUrl: u, Entries: entries})
	for range n {
		if k := <-got; k != 1 {
			t.Fatalf("a poll got %d messages, want 1", k)
		}
	}
	waitFor(t, "the notifier to forget the queue", func() bool { return srv.notifier.size() == 0 })
}

// TestLongPollLeavesNoEntry checks that long polls on names that are not
// queues, and long polls that time out or whose client goes away, leave
// nothing in the notifier.
func TestLongPollLeavesNoEntry(t *testing.T) {
	srv, _ := newCountingServer(t)
	for i := range 1000 {
		_, err := srv.Do(context.Background(), testAccount, &api.ReceiveMessageRequest{QueueUrl: queueURL(fmt.Sprint("nosuch", i)), WaitTimeSeconds: intp(20)})
		if err == nil {
			t.Fatal("a receive from a missing queue succeeded")
		}
	}
	if k := srv.notifier.size(); k != 0 {
		t.Fatalf("polls of missing queues left %d notifier entries", k)
	}

	const n = 50
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	for i := range n {
		u := createQueue(t, srv, fmt.Sprint("q", i), nil)
		done.Add(1)
		go func() {
			defer done.Done()
			srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
		}()
	}
	waitFor(t, "the polls to wait", func() bool { return srv.notifier.size() == n })
	// A queue deleted under its waiters sends them away.
	mustDo(t, srv, &api.DeleteQueueRequest{QueueUrl: queueURL("q0")})
	waitFor(t, "the deleted queue's entry to go", func() bool { return srv.notifier.size() == n-1 })
	cancel()
	done.Wait()
	if k := srv.notifier.size(); k != 0 {
		t.Fatalf("polls that ended left %d notifier entries", k)
	}
	if k := srv.longPollWaiters(); k != 0 {
		t.Fatalf("%d poll slots still held", k)
	}
}

// TestNotifier checks the notifier alone: one wake-up per signal, oldest
// waiter first; a wake-up left unused goes on; entries go with their last
// waiter; the queue's timer wakes one waiter.
func TestNotifier(t *testing.T) {
	n := newNotifier()
	q := api.QueueKey{Account: testAccount, Name: "q"}
	woken := func(w *waiter) bool {
		select {
		case <-w.ch:
			return true
		default:
			return false
		}
	}

	n.signal(q) // no waiters: nothing to keep
	n.broadcast(q)
	if n.size() != 0 {
		t.Fatal("a signal without waiters made an entry")
	}

	a, b, c := n.join(q), n.join(q), n.join(q)
	n.signal(q)
	if !woken(a) || woken(b) || woken(c) {
		t.Fatal("a signal did not wake the oldest waiter alone")
	}
	n.rejoin(a) // back at the end: b, c, a
	n.signal(q)
	// b leaves without using its wake-up: it goes to c.
	n.leave(b)
	if !woken(c) || woken(a) {
		t.Fatal("an unused wake-up was not passed on")
	}
	n.leave(c)
	n.broadcast(q)
	if !woken(a) {
		t.Fatal("broadcast did not wake every waiter")
	}
	n.leave(a)
	if n.size() != 0 {
		t.Fatalf("%d entries left after the last waiter left", n.size())
	}

	// The queue's timer wakes one waiter.
	d, e := n.join(q), n.join(q)
	n.wakeAt(q, time.Now().Add(time.Hour))
	n.wakeAt(q, time.Now().Add(time.Millisecond)) // the earlier request holds
	select {
	case <-d.ch:
	case <-t.Context().Done():
		t.Fatal("the timer woke no one")
	}
	if woken(e) {
		t.Fatal("the timer woke more than one waiter")
	}
	n.leave(d)
	n.leave(e)
	if n.size() != 0 {
		t.Fatal("entry left after the last waiter left")
	}
}

// TestCountersOfDeletedQueuesGo checks that the counters a long poll brings
// back for the queue deleted under it are swept out by later deletions.
func TestCountersOfDeletedQueuesGo(t *testing.T) {
	srv, _ := newCountingServer(t)
	u := createQueue(t, srv, "gone", nil)
	key := api.QueueKey{Account: testAccount, Name: "gone"}
	answered := make(chan error, 1)
	go func() {
		_, err := srv.Do(context.Background(), testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
		answered <- err
	}()
	waitFor(t, "the poll to wait", func() bool { return srv.notifier.waiting(key) == 1 })
	mustDo(t, srv, &api.DeleteQueueRequest{QueueUrl: u})
	if err := <-answered; err != nil {
		t.Fatalf("the poll of a deleted queue: %v", err)
	}
	// Whether the poll's count lands before or after the deletion's own
	// record depends on scheduling. A count that lands after it is what the
	// sweep is for, so make sure one did: a send applied before the
	// deletion and counted after it.
	srv.stats.record(key, &api.SendMessageRequest{QueueUrl: u, MessageBody: "late"}, &api.SendMessageResult{})
	if _, ok := srv.stats.queues.Load(key); !ok {
		t.Fatal("a count after the deletion made no counters; the test no longer tests the sweep")
	}
	for i := range pruneEvery - 1 {
		v := createQueue(t, srv, fmt.Sprint("other", i), nil)
		mustDo(t, srv, &api.DeleteQueueRequest{QueueUrl: v})
	}
	n := 0
	srv.stats.queues.Range(func(k, _ any) bool { n++; return true })
	if n != 0 {
		t.Fatalf("counters of %d deleted queues kept", n)
	}
}

// timerAt returns when q's timer fires, zero when it is not set.
func (n *notifier) timerAt(q api.QueueKey) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	if wq := n.queues[q]; wq != nil {
		return wq.timerAt
	}
	return time.Time{}
}

// TestDelayedMessagesKeepTheTimer checks that a waiter woken by the queue's
// timer, which takes its message and leaves, sets the timer again for the
// next delayed message, since the other waiters sleep until their deadlines.
func TestDelayedMessagesKeepTheTimer(t *testing.T) {
	srv, _ := newCountingServer(t)
	u := createQueue(t, srv, "q", nil)
	key := api.QueueKey{Account: testAccount, Name: "q"}
	mustDo(t, srv, &api.SendMessageRequest{QueueUrl: u, MessageBody: "soon", DelaySeconds: intp(1)})
	mustDo(t, srv, &api.SendMessageRequest{QueueUrl: u, MessageBody: "later", DelaySeconds: intp(600)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 2)
	var done sync.WaitGroup
	for range 2 {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := srv.Do(ctx, testAccount, &api.ReceiveMessageRequest{QueueUrl: u, WaitTimeSeconds: intp(20)})
			if err == nil && len(resp.(*api.ReceiveMessageResult).Messages) == 1 {
				got <- resp.(*api.ReceiveMessageResult).Messages[0].Body
			}
		}()
	}
	waitFor(t, "the polls to wait", func() bool { return srv.notifier.waiting(key) == 2 })
	if b := <-got; b != "soon" {
		t.Fatalf("got %q, want soon", b)
	}
	// The poll that took "soon" has returned; the other waits, and the
	// queue's timer is set again: for "soon" coming back at the end of its
	// 30 s visibility timeout.
	waitFor(t, "the other poll to wait", func() bool { return srv.notifier.waiting(key) == 1 })
	at := srv.notifier.timerAt(key)
	if at.IsZero() {
		t.Fatal("the queue's timer was not set again for the next message to come back")
	}
	if d := time.Until(at); d < 10*time.Second {
		t.Fatalf("the timer fires in %v, want about 30 s", d)
	}
	cancel()
	done.Wait()
}
