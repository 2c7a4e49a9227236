package server

import (
	"context"
	"encoding/json"
	clockpkg "github.com/fifoq/fifoq/internal/clock"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// testClock is real time plus an offset a test moves forward.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// approxMessages reads ApproximateNumberOfMessages over the API.
func approxMessages(t *testing.T, base, queueURL string) string {
	t.Helper()
	code, body := call(t, base, "GetQueueAttributes", `{"QueueUrl":"`+queueURL+`","AttributeNames":["ApproximateNumberOfMessages"]}`)
	if code != 200 {
		t.Fatalf("GetQueueAttributes: %d %s", code, body)
	}
	var out struct{ Attributes map[string]string }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("GetQueueAttributes answer %s: %v", body, err)
	}
	return out.Attributes["ApproximateNumberOfMessages"]
}

// TestHousekeepingRemovesExpiredMessages: on a running server, messages
// past the retention period of a queue no request names are removed from
// memory by the server's own housekeeping, through the log, once the
// clock has passed their retention; and a server with nothing due writes
// nothing to the log. Both logs: in memory and durable.
func TestHousekeepingRemovesExpiredMessages(t *testing.T) {
	for _, durable := range []bool{false, true} {
		name := "memory"
		if durable {
			name = "raft"
		}
		t.Run(name, func(t *testing.T) {
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			var inner replog.Log = replog.NewMemory(engine.Config{Region: DefaultRegion})
			if durable {
				l, err := replog.OpenRaft(replog.RaftConfig{Engine: engine.Config{Region: DefaultRegion}, Dir: t.TempDir(), Logger: logger})
				if err != nil {
					t.Fatalf("OpenRaft: %v", err)
				}
				inner = l
			}
			log := newCountingLog(inner)
			clock := &testClock{}
			srv, err := New(Config{Logger: logger, Log: log, Clock: clockpkg.WithNow(clock.Now)})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
				if err := <-served; err != nil {
					t.Errorf("Serve: %v", err)
				}
			}()
			base := "http://" + ln.Addr().String()
			key := api.QueueKey{Account: DefaultAccount, Name: "idle"}
			url := base + "/" + DefaultAccount + "/idle"
			if code, body := call(t, base, "CreateQueue", `{"QueueName":"idle","Attributes":{"MessageRetentionPeriod":"60"}}`); code != 200 {
				t.Fatalf("CreateQueue: %d %s", code, body)
			}
			for range 5 {
				if code, body := call(t, base, "SendMessage", `{"QueueUrl":"`+url+`","MessageBody":"old"}`); code != 200 {
					t.Fatalf("SendMessage: %d %s", code, body)
				}
			}
			stored := func() (n int) {
				srv.log.Read(func(e *engine.Engine) { n, _ = e.StoredMessages(key) })
				return n
			}
			if n, approx := stored(), approxMessages(t, base, url); n != 5 || approx != "5" {
				t.Fatalf("before: %d stored, ApproximateNumberOfMessages %s, want 5 and 5", n, approx)
			}

			// Past the retention period, nothing but the server's own
			// housekeeping touches the queue.
			clock.Advance(61 * time.Second)
			deadline := time.Now().Add(20 * time.Second)
			for stored() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the expired messages are still stored (%d) 20 s after their retention ran out", stored())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if approx := approxMessages(t, base, url); approx != "0" {
				t.Fatalf("ApproximateNumberOfMessages = %s after the expiry, want 0", approx)
			}
			if log.count(engine.ActionHousekeep) == 0 {
				t.Fatal("the messages went without a housekeeping command through the log")
			}

			// Nothing is due any more: a step writes nothing.
			before := log.count(engine.ActionHousekeep)
			applied, more, err := srv.keeper.step()
			if applied || more || err != nil {
				t.Fatalf("housekeeping with nothing due: applied %v, more %v, err %v", applied, more, err)
			}
			if n := log.count(engine.ActionHousekeep); n != before {
				t.Fatalf("%d housekeeping commands with nothing due", n-before)
			}
		})
	}
}
