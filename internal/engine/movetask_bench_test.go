package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// BenchmarkMoveTaskTick times one TickRequest, every 100 ms of fake time,
// while a message move task (system-optimised rate) drains a dead-letter
// queue of 100,000 messages, beside 10,000 other queues of 10 messages
// each that nobody touches. (Before ticks carried Moves, every tick also
// applied time to every queue.)
//
//	go test ./internal/engine/ -run '^$' -bench MoveTaskTick -benchtime 200x
func BenchmarkMoveTaskTick(b *testing.B) {
	h := newHarness(&testing.T{})
	for i := range 10_000 {
		q := h.createQueue(fmt.Sprintf("idle%d", i), nil)
		for range 10 {
			h.send(q, &api.SendMessageRequest{MessageBody: "idle"})
		}
	}
	dlq := h.createQueue("dlq", nil)
	h.createQueue("src", map[string]string{api.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN(testRegion))})
	dest := h.createQueue("dest", nil)
	for range 100_000 {
		h.send(dlq, &api.SendMessageRequest{MessageBody: "dead"})
	}
	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: dest.ARN(testRegion)})
	b.ResetTimer()
	for range b.N {
		h.advance(100 * time.Millisecond)
		if _, err := h.raw(api.QueueKey{}, &TickRequest{Moves: DefaultTickMoves}); err != nil {
			b.Fatal(err)
		}
	}
}
