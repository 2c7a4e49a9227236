package replog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// BenchmarkDurableSend measures acknowledged SendMessage commands per
// second through the durable log at rising concurrency, and how many
// commands one log entry (one fsync) carried. With group commit the rate
// rises with concurrency past the disk's fsync rate:
//
//	go test ./internal/replog -run '^$' -bench DurableSend -benchtime 20000x
func BenchmarkDurableSend(b *testing.B) {
	for _, conc := range []int{1, 8, 64, 256} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			dir := b.TempDir()
			l, err := OpenRaft(RaftConfig{Dir: dir, Engine: testEngine})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			c := newClock()
			if _, err := l.Apply(context.Background(), &engine.Command{Time: c.next(), Caller: testQueue.Account,
				Request: &api.CreateQueueRequest{QueueName: testQueue.Name, Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}}}); err != nil {
				b.Fatal(err)
			}
			body := fmt.Sprintf("%0200d", 0)
			first := l.raft.LastIndex()
			var next atomic.Int64
			cpu0 := processCPU()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < conc; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						now := c.next()
						_, err := l.Apply(context.Background(), &engine.Command{Time: now, Caller: testQueue.Account, Queue: testQueue, Entropy: uint64(now),
							Request:    &api.SendMessageRequest{QueueUrl: testQueue.Path(), MessageBody: body, MessageGroupId: fmt.Sprint(i % 64), MessageDeduplicationId: fmt.Sprint(i)},
							MessageIDs: []string{fmt.Sprint(i)}})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			cpu := processCPU() - cpu0
			entries := l.raft.LastIndex() - first
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
			b.ReportMetric(float64(b.N)/float64(entries), "cmds/entry")
			// CPU per command moves far less than the rate on a shared
			// machine, where the rate mostly measures the scheduler.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/cmd")
		})
	}
}
