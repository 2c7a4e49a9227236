package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/testenv"
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
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	c := newCluster(t, 3, nil, nil)
	q := c.createQueue("rolling.fifo", map[string]string{"FifoQueue": "true"})
	s := startSender(t, q, c.nodes[0])

	time.Sleep(time.Second)
	for k, nd := range c.nodes {
		// Send through a member that stays up.
		s.sendVia(c.nodes[(k+1)%len(c.nodes)])
		time.Sleep(200 * time.Millisecond)
		c.sigterm(nd)
		c.restart(nd)
		waitReady(t, nd)
		time.Sleep(time.Second)
	}
	acked, longest, longestAt := s.stop()
	checkSent(t, c.nodes[0], q, acked)
	t.Logf("rolling SIGTERM restart of 3 members: %d sends acknowledged; longest gap between two %v (before message %d)",
		acked, longest.Round(time.Millisecond), longestAt)
}

// TestRollingUpgrade upgrades a cluster one member at a time while a
// client sends, as docs/operations.md tells an operator to. The older
// version is a stand-in: the fifoq_faults build told to read and write
// log entry formats up to 4 only (FIFOQ_TEST_MAX_ENTRY_FORMAT), as the
// fifoq before format 5 did; the newer is the same build without the cap.
// While any member runs the older version the cluster must keep writing
// format 4 (a format-5 entry would stop the older members' state
// machines) and record nothing that needs format 5 (members'
// incarnations), and refuse, retryably, a queue in another region (format
// 6); once every member reads the newest format it must write it, and
// take the queue. Every member runs with --shards 3: no shard may exist
// while a member cannot read the shard map (format 7), and the three must
// run beside the first group once every member can. An older binary put back afterwards must
// stay out, saying why, and the cluster go on. Every acknowledged send
// is received, in order, once.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; skipped in -short mode")
	}
	testenv.Long(t, "a rolling upgrade across log entry formats; TestRollingRestart is the first tier's rolling restart")
	t.Parallel()
	bin := faultyBinary(t)
	older := []string{olderFormat}
	c := newClusterWith(t, 3, func(i int, nd *node) { nd.bin, nd.env, nd.args = bin, older, []string{"--shards", "3"} })
	q := c.createQueue("upgrade.fifo", map[string]string{"FifoQueue": "true"})
	s := startSender(t, q, c.nodes[0])
	time.Sleep(time.Second)
	expectFormats(t, c, 4, 5*time.Second)

	for k, nd := range c.nodes {
		s.sendVia(c.nodes[(k+1)%len(c.nodes)])
		time.Sleep(200 * time.Millisecond)
		c.sigterm(nd)
		nd.env = nil
		c.restart(nd)
		waitReady(t, nd)
		if k < len(c.nodes)-1 {
			// The upgraded member leads the older ones, and has time to
			// raise the format if it wrongly would: it looks every second.
			c.makeLead(nd, s)
			time.Sleep(2 * time.Second)
			expectFormats(t, c, 4, 0)
			// An entry an older member cannot read stops its state
			// machine: it would not be ready.
			for _, x := range c.nodes {
				if !ready(x) {
					t.Fatalf("%s is not ready while %s (upgraded) leads; its log ends:\n%s", x.id, nd.id, x.tail(10))
				}
			}
			if st := clusterStatus(c.nodes[(k+1)%len(c.nodes)]); strings.Contains(st, `"incarnation"`) {
				t.Fatalf("an incarnation was recorded (a format-5 command) while a member reads format 4 only: %s", st)
			}
			if _, err := createInRegion(nd, "eu-west-1", "far"); !isServiceUnavailable(err) {
				t.Fatalf("a queue in another region, while a member reads format 4 only: %v; want ServiceUnavailable", err)
			}
			for _, x := range c.nodes {
				if st := shardsOf(x); st == nil || len(st.Shards) != 1 {
					t.Fatalf("%s runs shards %+v while a member cannot read the shard map; want the first group alone", x.id, st)
				}
			}
		}
	}
	expectFormats(t, c, newestFormat, 15*time.Second)
	waitShards(t, c, 4)
	if u, err := createInRegion(c.leader(), "eu-west-1", "far"); err != nil || !strings.Contains(u, "/queue/eu-west-1/") {
		t.Fatalf("a queue in another region once every member is upgraded: %s, %v", u, err)
	}

	// The older binary put back on a member's data dir stays out.
	back := c.nodes[2]
	s.sendVia(c.nodes[0])
	c.sigterm(back)
	back.env = older
	c.start(back, "")
	select {
	case <-back.done:
		if code := back.cmd.ProcessState.ExitCode(); code == 0 {
			t.Errorf("the older member exited 0; want non-zero")
		}
	case <-time.After(30 * time.Second):
		if ready(back) {
			t.Fatalf("a member that reads format 4 only is ready in a cluster that writes format %d; its log ends:\n%s", newestFormat, back.tail(10))
		}
		c.kill(back)
	}
	if log := back.tail(30); !strings.Contains(log, "older than its cluster") {
		t.Errorf("the older member's log does not say why it stays out; it ends:\n%s", log)
	}
	time.Sleep(time.Second)
	back.env = nil
	c.restart(back)
	waitReady(t, back)
	expectFormats(t, c, newestFormat, 10*time.Second)

	acked, longest, _ := s.stop()
	checkSent(t, c.nodes[0], q, acked)
	t.Logf("rolling upgrade of 3 members from format 4 to %d: %d sends acknowledged; longest gap between two %v",
		newestFormat, acked, longest.Round(time.Millisecond))
}

// newestFormat is the newest log entry format of the fifoq under test
// (replog's entryFormatVersion): 14, the cluster's id asked at a hello.
const newestFormat = 14

// createInRegion creates a standard queue through nd with a client that
// signs for region, and returns its URL.
func createInRegion(nd *node, region, name string) (string, error) {
	client := sqs.New(newClient(nd.httpAddr, 5*time.Second).Options(), func(o *sqs.Options) { o.Region = region })
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

// isServiceUnavailable reports whether err is SQS's retryable
// ServiceUnavailable.
func isServiceUnavailable(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ServiceUnavailable"
}

// makeLead restarts the leader with SIGTERM, as it is, until nd leads;
// the sender sends through nd meanwhile.
func (c *cluster) makeLead(nd *node, s *sender) {
	c.t.Helper()
	s.sendVia(nd)
	for range 10 {
		l := c.leader()
		if l == nd {
			return
		}
		c.sigterm(l)
		c.restart(l)
		waitReady(c.t, l)
	}
	c.t.Fatalf("%s did not come to lead in 10 restarts of the leader", nd.id)
}

// expectFormats waits up to wait (0: checks once) until every node says,
// in GET /cluster/node, that it writes log entry format want.
func expectFormats(t *testing.T, c *cluster, want int, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var off []string
		for _, nd := range c.nodes {
			if got := entryFormat(nd); got != want {
				off = append(off, nd.id+" writes "+strconv.Itoa(got))
			}
		}
		if len(off) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want every member writing log entry format %d; %s", want, strings.Join(off, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// entryFormat is the log entry format a node says it writes, or -1.
func entryFormat(nd *node) int {
	st, ok := nodeStatus(nd)
	if !ok {
		return -1
	}
	return st.EntryFormat
}

// nodeStatus is what a node says of itself in GET /cluster/node.
func nodeStatus(nd *node) (st struct {
	EntryFormat int `json:"entry_format"`
}, ok bool) {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + nd.httpAddr + "/cluster/node")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return st, false
	}
	return st, true
}

// sender sends FIFO messages 0, 1, 2, ... to one group, each once the one
// before is acknowledged and 10 ms after it, through a member the test
// may change; a send whose outcome is unknown is retried with the same
// deduplication id.
type sender struct {
	mu        sync.Mutex
	via       *node
	acked     int
	longest   time.Duration
	longestAt int
	quit      chan struct{}
	done      chan struct{}
}

// startSender starts sending to queue q through via.
func startSender(t *testing.T, q string, via *node) *sender {
	s := &sender{via: via, quit: make(chan struct{}), done: make(chan struct{})}
	ctx := context.Background()
	go func() {
		defer close(s.done)
		last := time.Now()
		for i := 0; ; i++ {
			for {
				select {
				case <-s.quit:
					return
				default:
				}
				s.mu.Lock()
				nd := s.via
				s.mu.Unlock()
				_, err := newClient(nd.httpAddr, 5*time.Second).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q),
					MessageBody: aws.String(strconv.Itoa(i)), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(strconv.Itoa(i))})
				if err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			now := time.Now()
			s.mu.Lock()
			s.acked++
			if gap := now.Sub(last); gap > s.longest {
				s.longest, s.longestAt = gap, i
			}
			s.mu.Unlock()
			last = now
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return s
}

// sendVia makes the sender send through nd from now on.
func (s *sender) sendVia(nd *node) {
	s.mu.Lock()
	s.via = nd
	s.mu.Unlock()
}

// stop stops the sender and returns how many sends were acknowledged and
// the longest gap between two acknowledgements, before message at.
func (s *sender) stop() (acked int, longest time.Duration, at int) {
	close(s.quit)
	<-s.done
	return s.acked, s.longest, s.longestAt
}

// checkSent drains q through nd and checks that it held exactly what a
// sender sent: 0..n-1 in order, once each, n being the acknowledged count
// or one more (the last send's outcome may be unknown).
func checkSent(t *testing.T, nd *node, q string, acked int) {
	t.Helper()
	got := drainNumbered(t, nd, q)
	for k, n := range got {
		if n != k {
			t.Fatalf("received %v: want 0, 1, 2, ... in order, once each (at %d)", got, k)
		}
	}
	if len(got) < acked || len(got) > acked+1 {
		t.Fatalf("received %d messages; %d were acknowledged", len(got), acked)
	}
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
