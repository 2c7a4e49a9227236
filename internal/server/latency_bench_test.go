package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// BenchmarkHTTPReceiveLatency times ReceiveMessage (one message) through
// the HTTP server (AWS JSON protocol, loopback), each request on its own,
// and reports the median and 99th percentile, with a FIFO queue holding
// one message and with 1,000,000 messages in one group and in 10,000
// groups, on the in-memory log and on the durable one (each receive a
// group commit with its fsync). Each message is deleted (untimed) after
// its receive. The backlog is built in the engine directly, outside the
// timer and outside the log (the benchmark never restarts).
//
//	go test ./internal/server/ -run '^$' -bench 'HTTPReceiveLatency/memory' -benchtime 20000x
//	go test ./internal/server/ -run '^$' -bench 'HTTPReceiveLatency/durable' -benchtime 5000x
//
// -latency.backlog sets the size of the large backlogs (10,000,000 for
// the larger target: several GB of heap).
func BenchmarkHTTPReceiveLatency(b *testing.B) {
	for _, durable := range []bool{false, true} {
		mode := "memory"
		if durable {
			mode = "durable"
		}
		b.Run(mode, func(b *testing.B) { benchHTTPReceiveLatency(b, durable) })
	}
}

// latencyBacklog is the size of BenchmarkHTTPReceiveLatency's large backlogs.
var latencyBacklog = flag.Int("latency.backlog", 1_000_000, "BenchmarkHTTPReceiveLatency: messages in the large backlogs")

func benchHTTPReceiveLatency(b *testing.B, durable bool) {
	n := *latencyBacklog
	cases := []struct {
		name            string
		groups, backlog int
	}{
		{"groups=1/backlog=1", 1, 1},
		{"groups=1/backlog=" + strconv.Itoa(n), 1, n},
		{"groups=10000/backlog=" + strconv.Itoa(n), 10_000, n},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			lg := slog.New(slog.NewTextHandler(io.Discard, nil))
			var log replog.Log = replog.NewMemory(engine.Config{Region: DefaultRegion})
			if durable {
				l, err := replog.OpenRaft(replog.RaftConfig{Engine: engine.Config{Region: DefaultRegion}, Dir: b.TempDir(), Logger: lg})
				if err != nil {
					b.Fatal(err)
				}
				log = l
			}
			srv, err := New(Config{Log: log, Logger: lg})
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			defer srv.Shutdown(context.Background())
			mustDoB(b, srv, &api.CreateQueueRequest{QueueName: "q.fifo", Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "60"}})
			q := api.QueueKey{Account: testAccount, Name: "q.fifo"}
			sent := 0
			// fill sends n messages through the log, ten to a command.
			fill := func(n int) {
				for n > 0 {
					req := &api.SendMessageBatchRequest{QueueUrl: q.Path()}
					var ids []string
					for range min(n, 10) {
						sent++
						id := "m" + strconv.Itoa(sent)
						ids = append(ids, id)
						req.Entries = append(req.Entries, api.SendMessageBatchRequestEntry{Id: id, MessageBody: "benchmark message body",
							MessageGroupId: "g" + strconv.Itoa(sent%tc.groups), MessageDeduplicationId: id})
					}
					n -= len(ids)
					if _, err := log.Apply(context.Background(), &engine.Command{Time: time.Now().UnixNano(), Caller: testAccount, Queue: q,
						MessageIDs: ids, Request: req}); err != nil {
						b.Fatal(err)
					}
				}
			}
			fill(tc.backlog)
			url := ts.URL + q.Path()
			client := ts.Client()
			post := func(action, body string) []byte {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/x-amz-json-1.0")
				req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d %s", action, resp.StatusCode, out)
				}
				return out
			}
			recvBody := `{"QueueUrl":"` + url + `","MaxNumberOfMessages":1}`
			samples := make([]time.Duration, 0, b.N)
			remaining := tc.backlog
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if remaining <= tc.backlog/2 {
					b.StopTimer()
					fill(tc.backlog - remaining)
					remaining = tc.backlog
					b.StartTimer()
				}
				start := time.Now()
				out := post("ReceiveMessage", recvBody)
				samples = append(samples, time.Since(start))
				b.StopTimer()
				var res struct {
					Messages []struct{ ReceiptHandle string }
				}
				if err := json.Unmarshal(out, &res); err != nil || len(res.Messages) != 1 {
					b.Fatalf("receive answered %s", out)
				}
				post("DeleteMessage", `{"QueueUrl":"`+url+`","ReceiptHandle":"`+res.Messages[0].ReceiptHandle+`"}`)
				remaining--
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "recv-p50-ns")
			b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), "recv-p99-ns")
		})
	}
}

func mustDoB(b *testing.B, srv *Server, req api.Request) {
	b.Helper()
	if _, err := srv.Do(context.Background(), testAccount, req); err != nil {
		b.Fatalf("%s: %v", req.Action(), err)
	}
}
