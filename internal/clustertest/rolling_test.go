package clustertest

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestRollingRestart restarts every member in turn with SIGTERM, as an
// operator upgrading a cluster does, each once the one before is back and
// ready, while a client sends a FIFO message every 10 ms through another
// member. Every acknowledged send must be received afterwards, in order,
// once (a send whose outcome was unknown is retried with its
// deduplication id). It logs the longest gap between two acknowledged
// sends, for docs/benchmarks.md: a stopping leader hands its leadership
// over, so the gap is not an election timeout.
func TestRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	q := c.createQueue("rolling.fifo", map[string]string{"FifoQueue": "true"})
	ctx := context.Background()

	var mu sync.Mutex
	via := c.nodes[0] // the member the client sends through
	stop := make(chan struct{})
	var acked []int
	var longest time.Duration
	var longestAt int
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := time.Now()
		for i := 0; ; i++ {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				nd := via
				mu.Unlock()
				_, err := newClient(nd.httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q),
					MessageBody: aws.String(strconv.Itoa(i)), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(i))})
				if err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			now := time.Now()
			mu.Lock()
			acked = append(acked, i)
			if gap := now.Sub(last); gap > longest {
				longest, longestAt = gap, i
			}
			mu.Unlock()
			last = now
			time.Sleep(10 * time.Millisecond)
		}
	}()

	time.Sleep(time.Second)
	for k, nd := range c.nodes {
		// Send through a member that stays up.
		mu.Lock()
		via = c.nodes[(k+1)%len(c.nodes)]
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		c.sigterm(nd)
		c.restart(nd)
		waitReady(t, nd)
		time.Sleep(time.Second)
	}
	close(stop)
	<-done

	got := drainNumbered(t, c.nodes[0], q)
	// The client sends message i+1 only once i is acknowledged, so what is
	// received must be exactly 0..n-1 in order, n being the acknowledged
	// count or one more (the last send's outcome may be unknown).
	for k, n := range got {
		if n != k {
			t.Fatalf("received %v: want 0, 1, 2, ... in order, once each (at %d)", got, k)
		}
	}
	if len(got) < len(acked) || len(got) > len(acked)+1 {
		t.Fatalf("received %d messages; %d were acknowledged", len(got), len(acked))
	}
	t.Logf("rolling SIGTERM restart of 3 members: %d sends acknowledged; longest gap between two %v (before message %d)",
		len(acked), longest.Round(time.Millisecond), longestAt)
}

// sigterm stops a node with SIGTERM and waits for it to exit.
func (c *cluster) sigterm(nd *node) {
	c.t.Helper()
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s did not exit within 30 s of SIGTERM", nd.id)
	}
}

// waitReady waits until a node's /readyz answers 200.
func waitReady(t *testing.T, nd *node) {
	t.Helper()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := hc.Get("http://" + nd.httpAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s was not ready within 30 s of its restart", nd.id)
}
