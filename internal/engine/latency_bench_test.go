package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// BenchmarkFIFOReceiveLatency times each receive of one message on its own
// and reports the median and the 99th percentile, with a queue that holds
// one message (the baseline: as near empty as a receive that takes a
// message can be) and with a backlog of 1,000,000 in one group and in
// 10,000 groups. Each received message is deleted, untimed, and the
// backlog refilled, untimed, when half gone. Run with a fixed count so
// that refills stay rare:
//
//	go test ./internal/engine/ -run '^$' -bench FIFOReceiveLatency -benchtime 200000x
func BenchmarkFIFOReceiveLatency(b *testing.B) {
	cases := []struct {
		name            string
		groups, backlog int
	}{
		{"groups=1/backlog=1", 1, 1},
		{"groups=1/backlog=1000000", 1, 1_000_000},
		{"groups=10000/backlog=1000000", 10_000, 1_000_000},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			bq := benchSetup(b, tc.groups, tc.backlog)
			one := 1
			recv := &api.ReceiveMessageRequest{QueueUrl: bq.q.Path(), MaxNumberOfMessages: &one}
			del := &api.DeleteMessageRequest{QueueUrl: bq.q.Path()}
			samples := make([]time.Duration, 0, b.N)
			remaining := tc.backlog
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
				samples = append(samples, time.Since(start))
				if len(msgs) != 1 {
					b.Fatalf("received %d messages", len(msgs))
				}
				b.StopTimer()
				del.ReceiptHandle = msgs[0].ReceiptHandle
				bq.apply(b, del)
				remaining--
				b.StartTimer()
			}
			b.StopTimer()
			reportPercentiles(b, samples, "recv")
			benchKeep(tc.groups, tc.backlog, bq, remaining)
		})
	}
}

// reportPercentiles reports the median and the 99th percentile of samples
// as name-p50-ns and name-p99-ns.
func reportPercentiles(b *testing.B, samples []time.Duration, name string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), name+"-p50-ns")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), name+"-p99-ns")
}
