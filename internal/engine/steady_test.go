package engine

import (
	"flag"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

var flagSteadyMinutes = flag.Int("engine.steady", 0, "minutes of simulated steady FIFO traffic (1,000 msgs/s) TestSteadyStateHeap runs; 0 skips it")

// TestSteadyStateHeap drives one FIFO queue with a steady load for a long
// stretch of simulated time — 1,000 messages/s sent in batches of 10,
// received with attempt ids and deleted, housekeeping every second, as a
// server at half its rate does — and checks that the engine's live heap
// stops growing once every record it keeps for a while (deduplication
// records and receive attempts, 5 minutes each) has reached its window:
// from the 10-minute mark on, and over the last third of the run, the heap
// must stay within 5 % of its value at the start of the span. The clock is
// the command's, so two simulated hours take about a minute:
//
//	go test ./internal/engine -run TestSteadyStateHeap -engine.steady=120 -v
func TestSteadyStateHeap(t *testing.T) {
	if *flagSteadyMinutes <= 0 {
		t.Skip("a measurement: run with -engine.steady=MINUTES (e.g. 120)")
	}
	if *flagSteadyMinutes < 30 {
		t.Fatalf("-engine.steady=%d: run at least 30, three times the 10 minutes the heap may take to level off", *flagSteadyMinutes)
	}
	h := newHarness(t)
	h.e.SetAvailableHook(func(api.QueueKey) {}) // the harness's own log of wake-ups would grow
	q := h.fifoQueue("steady.fifo", map[string]string{"VisibilityTimeout": "60"})
	body := strings.Repeat("x", 200)
	const tick = 10 * time.Millisecond // one batch of 10 per tick: 1,000 msgs/s
	steps := *flagSteadyMinutes * int(time.Minute/tick)
	sample := int(5 * time.Minute / tick)
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var atTwoThirds, peakAfter uint64
	var atTen, peakAfterTen uint64
	seq, batch := 0, 10
	for step := 1; step <= steps; step++ {
		entries := make([]api.SendMessageBatchRequestEntry, 10)
		for i := range entries {
			seq++
			entries[i] = api.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), MessageBody: body,
				MessageGroupId: "g" + strconv.Itoa(seq%16), MessageGroupIdSet: true,
				MessageDeduplicationId: strconv.Itoa(seq), MessageDeduplicationIdSet: true}
		}
		if r := h.must(q, &api.SendMessageBatchRequest{QueueUrl: q.Path(), Entries: entries}).(*api.SendMessageBatchResult); len(r.Failed) > 0 {
			t.Fatalf("send: %+v", r.Failed[0])
		}
		res := h.must(q, &api.ReceiveMessageRequest{QueueUrl: q.Path(), MaxNumberOfMessages: &batch, ReceiveRequestAttemptId: strconv.Itoa(step)}).(*api.ReceiveMessageResult)
		if len(res.Messages) != 10 {
			t.Fatalf("step %d: received %d messages, want the 10 just sent", step, len(res.Messages))
		}
		del := make([]api.DeleteMessageBatchRequestEntry, len(res.Messages))
		for i, m := range res.Messages {
			del[i] = api.DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle}
		}
		if r := h.must(q, &api.DeleteMessageBatchRequest{QueueUrl: q.Path(), Entries: del}).(*api.DeleteMessageBatchResult); len(r.Failed) > 0 {
			t.Fatalf("delete: %+v", r.Failed[0])
		}
		h.advance(tick)
		if step%100 == 0 {
			if _, err := h.raw(q, &HousekeepRequest{Limit: DefaultHousekeepLimit}); err != nil {
				t.Fatalf("housekeeping: %v", err)
			}
		}
		if step%sample == 0 {
			n := live()
			minute := step * int(tick) / int(time.Minute)
			t.Logf("simulated %4d min: live heap %6.1f MiB", minute, float64(n)/(1<<20))
			switch {
			case minute >= 10 && atTen == 0:
				atTen = n
			case atTen != 0:
				peakAfterTen = max(peakAfterTen, n)
			}
			switch {
			case step >= steps*2/3 && atTwoThirds == 0:
				atTwoThirds = n
			case atTwoThirds != 0:
				peakAfter = max(peakAfter, n)
			}
		}
	}
	if atTwoThirds == 0 || peakAfter == 0 || atTen == 0 || peakAfterTen == 0 {
		t.Fatal("too few samples")
	}
	if float64(peakAfterTen) > 1.05*float64(atTen) {
		t.Errorf("live heap grew after the 10-minute mark: %.1f MiB at 10 minutes, up to %.1f MiB after",
			float64(atTen)/(1<<20), float64(peakAfterTen)/(1<<20))
	}
	if float64(peakAfter) > 1.05*float64(atTwoThirds) {
		t.Fatalf("live heap grew over the last third: %.1f MiB at two thirds, up to %.1f MiB after",
			float64(atTwoThirds)/(1<<20), float64(peakAfter)/(1<<20))
	}
}
