package engine

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// The benchmarks drive the engine directly with ready-made commands, as
// the server does after validation, so they measure the state machine
// alone. Each command advances a fake clock by 1 µs.
//
//	go test ./internal/engine/ -run '^$' -bench . -benchmem

// benchQueue is an engine with one FIFO queue and a fake clock.
type benchQueue struct {
	e       *Engine
	q       api.QueueKey
	now     int64
	sent    int
	entropy uint64
	ids     [1]string
}

func newBenchQueue(b *testing.B) *benchQueue {
	bq := &benchQueue{e: New(Config{Region: testRegion}), q: api.QueueKey{Account: testAccount, Name: "bench.fifo"}, now: t0}
	bq.apply(b, &api.CreateQueueRequest{QueueName: bq.q.Name, Attributes: map[string]string{api.AttrFifoQueue: "true", api.AttrVisibilityTimeout: "60"}})
	return bq
}

func (bq *benchQueue) apply(b *testing.B, req api.Request) api.Response {
	bq.now += int64(time.Microsecond)
	bq.entropy++
	cmd := Command{Time: bq.now, Caller: testAccount, Queue: bq.q, Request: req, Entropy: bq.entropy}
	if _, ok := req.(*api.SendMessageRequest); ok {
		bq.sent++
		bq.ids[0] = "m" + strconv.Itoa(bq.sent)
		cmd.MessageIDs = bq.ids[:]
	}
	resp, err := bq.e.Apply(&cmd)
	if err != nil {
		b.Fatalf("%s: %v", req.Action(), err)
	}
	return resp
}

// fill sends n messages spread round-robin over groups.
func (bq *benchQueue) fill(b *testing.B, n, groups int) {
	for i := 0; i < n; i++ {
		bq.apply(b, &api.SendMessageRequest{QueueUrl: bq.q.Path(), MessageBody: "benchmark message body",
			MessageGroupId: "g" + strconv.Itoa(bq.sent%groups), MessageDeduplicationId: "d" + strconv.Itoa(bq.sent)})
	}
}

func BenchmarkFIFOSend(b *testing.B) {
	for _, groups := range []int{1, 1000} {
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			bq := newBenchQueue(b)
			names := make([]string, groups)
			for i := range names {
				names[i] = "g" + strconv.Itoa(i)
			}
			req := &api.SendMessageRequest{QueueUrl: bq.q.Path(), MessageBody: "benchmark message body"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i > 0 && i%200_000 == 0 {
					// Keep memory bounded: drop the stored messages (the
					// deduplication records stay, as they would).
					b.StopTimer()
					bq.now += int64(api.PurgeInterval)
					bq.apply(b, &api.PurgeQueueRequest{QueueUrl: bq.q.Path()})
					b.StartTimer()
				}
				req.MessageGroupId = names[i%groups]
				req.MessageDeduplicationId = strconv.Itoa(i)
				bq.apply(b, req)
			}
		})
	}
}

// BenchmarkFIFOReceiveDelete receives one message and deletes it per
// operation, the way a consumer drains a FIFO queue, with the backlog kept
// between backlog/2 and backlog messages. Besides ns/op for the pair it
// reports the time of the receive and of the delete on their own.
func BenchmarkFIFOReceiveDelete(b *testing.B) {
	cases := []struct {
		name            string
		groups, backlog int
	}{
		{"groups=1/backlog=1000", 1, 1000},
		{"groups=1000/backlog=10000", 1000, 10_000},
		{"groups=1/backlog=1000000", 1, 1_000_000},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			bq := benchSetup(b, tc.groups, tc.backlog)
			max := 1
			recv := &api.ReceiveMessageRequest{QueueUrl: bq.q.Path(), MaxNumberOfMessages: &max}
			del := &api.DeleteMessageRequest{QueueUrl: bq.q.Path()}
			var recvTime, delTime time.Duration
			remaining := tc.backlog
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if remaining <= tc.backlog/2 {
					b.StopTimer()
					bq.fill(b, tc.backlog-remaining, tc.groups)
					remaining = tc.backlog
					b.StartTimer()
				}
				start := time.Now()
				msgs := bq.apply(b, recv).(*api.ReceiveMessageResult).Messages
				mid := time.Now()
				if len(msgs) != 1 {
					b.Fatalf("received %d messages", len(msgs))
				}
				del.ReceiptHandle = msgs[0].ReceiptHandle
				bq.apply(b, del)
				recvTime += mid.Sub(start)
				delTime += time.Since(mid)
				remaining--
			}
			b.ReportMetric(float64(recvTime.Nanoseconds())/float64(b.N), "recv-ns/op")
			b.ReportMetric(float64(delTime.Nanoseconds())/float64(b.N), "del-ns/op")
			benchKeep(tc.groups, tc.backlog, bq, remaining)
		})
	}
}

// The large backlogs are expensive to build; the benchmark framework runs
// each benchmark several times, so the queue is kept between runs.
var benchCache struct {
	sync.Mutex
	queues map[[2]int]*benchQueue
	left   map[[2]int]int
}

func benchSetup(b *testing.B, groups, backlog int) *benchQueue {
	benchCache.Lock()
	defer benchCache.Unlock()
	key := [2]int{groups, backlog}
	if bq := benchCache.queues[key]; bq != nil {
		bq.fill(b, backlog-benchCache.left[key], groups)
		return bq
	}
	bq := newBenchQueue(b)
	bq.fill(b, backlog, groups)
	return bq
}

func benchKeep(groups, backlog int, bq *benchQueue, remaining int) {
	if backlog < 100_000 {
		return
	}
	benchCache.Lock()
	defer benchCache.Unlock()
	if benchCache.queues == nil {
		benchCache.queues, benchCache.left = map[[2]int]*benchQueue{}, map[[2]int]int{}
	}
	key := [2]int{groups, backlog}
	benchCache.queues[key], benchCache.left[key] = bq, remaining
}
