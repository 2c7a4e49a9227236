package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoq/fifoq/internal/testenv"
)

// The abuse test runs fifoq beside abusive clients on 127.0.0.1 and
// checks that well-behaved clients keep being served.
const (
	abuseLoris      = 300             // slow-loris connections
	abuseIdle       = 2000            // idle keep-alive connections
	abuseProducers  = 4               // well-behaved FIFO producers
	abuseConsumers  = 4               // well-behaved FIFO consumers
	abuseBaseline   = 3 * time.Second // good clients alone
	abusePhase      = 8 * time.Second // good clients beside the abusers
	lorisInterval   = 500 * time.Millisecond
	lorisCloseLimit = 12 * time.Second // the server's ReadHeaderTimeout is 10 s
	oversizedBody   = 9 << 20          // over the server's 8 MiB request limit
	hugeHeader      = 70 << 10         // over the server's 64 KiB header limit
)

// abuseFigures names a file to write the run's figures to, as the Markdown
// that docs/benchmarks.md quotes.
var abuseFigures = flag.String("abuse.figures", "", "write the abuse test's figures as Markdown to this file")

// goodStats counts the well-behaved clients' requests of one phase.
type goodStats struct {
	mu        sync.Mutex
	ok, fails int
	firstErr  error
	sendLat   []time.Duration // SendMessage latencies
	allLat    []time.Duration // every request's latency
}

func (s *goodStats) record(d time.Duration, send bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.fails++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	s.ok++
	s.allLat = append(s.allLat, d)
	if send {
		s.sendLat = append(s.sendLat, d)
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// abuseLedger is what the good clients saw: acknowledged sends and
// deliveries, by body (each body is unique).
type abuseLedger struct {
	mu        sync.Mutex
	acked     map[string]bool
	delivered map[string]int
}

func TestAbusiveClients(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse test runs the real binary under load; skipped in -short mode")
	}
	testenv.Long(t, "thousands of abusive connections through fixed phases of load")
	need := uint64(abuseLoris + abuseIdle + 500)
	if !raiseNoFile(t, 2*need) { // the server process inherits the limit
		t.Skipf("RLIMIT_NOFILE cannot be raised to %d for %d connections", 2*need, abuseLoris+abuseIdle)
	}

	addr := freeAddr(t)
	p := launch(t, nil, "serve", "--listen", addr, "--data-dir", t.TempDir())
	base := "http://" + addr
	p.waitReady(t, answers(plainHTTP(), base))
	defer func() {
		if t.Failed() {
			t.Logf("server output tail:\n%s", tail(p.out.String(), 40))
		}
	}()

	goodTransport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 32}
	defer goodTransport.CloseIdleConnections()
	client := signedClient(base, &http.Client{Transport: goodTransport, Timeout: 15 * time.Second}, "test", "test")
	ctx := context.Background()
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("abuse.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30"}})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	queueURL := created.QueueUrl
	ledger := &abuseLedger{acked: map[string]bool{}, delivered: map[string]int{}}

	// The well-behaved clients run through both phases; stats switch to
	// the abuse phase's counters when it begins.
	baseline, abused := &goodStats{}, &goodStats{}
	var current atomic.Pointer[goodStats]
	current.Store(baseline)
	goodCtx, stopGood := context.WithCancel(ctx)
	var goodWG sync.WaitGroup
	startGoodProducers(ctx, goodCtx, &goodWG, client, queueURL, ledger, &current)
	startGoodConsumers(ctx, goodCtx, &goodWG, client, queueURL, ledger, &current)

	time.Sleep(abuseBaseline)

	// The abuse phase: abusers start, and the good clients' requests are
	// counted apart.
	current.Store(abused)
	abuseStart := time.Now()
	abuseCtx, stopAbuse := context.WithCancel(ctx)
	var abuseWG sync.WaitGroup
	loris := startLoris(t, abuseCtx, &abuseWG, addr)
	idle := openIdle(t, addr)
	defer idle.closeAll()
	oversized := startOversized(abuseCtx, &abuseWG, base)

	time.Sleep(abusePhase - time.Since(abuseStart))
	abuseElapsed := time.Since(abuseStart)
	stopGood()
	goodWG.Wait()
	stopAbuse()
	abuseWG.Wait()
	idleAlive := idle.alive()

	// The server must have dropped every slow-loris connection by its
	// header deadline; wait for the last ones meanwhile draining.
	drained := drainAbuse(t, client, queueURL, ledger)
	lorisOpen := loris.waitClosed(abuseStart.Add(lorisCloseLimit))

	lost, acked := ledger.lostMessages()

	// Figures.
	blRate := float64(baseline.ok) / abuseBaseline.Seconds()
	abRate := float64(abused.ok) / abuseElapsed.Seconds()
	t.Logf("baseline (%v): %d good requests, %.0f/s, send latency p50 %v p99 %v, all p50 %v p99 %v",
		abuseBaseline, baseline.ok, blRate, percentile(baseline.sendLat, .5), percentile(baseline.sendLat, .99), percentile(baseline.allLat, .5), percentile(baseline.allLat, .99))
	t.Logf("under abuse (%v): %d good requests, %.0f/s, send latency p50 %v p99 %v, all p50 %v p99 %v",
		abuseElapsed.Round(time.Millisecond), abused.ok, abRate, percentile(abused.sendLat, .5), percentile(abused.sendLat, .99), percentile(abused.allLat, .5), percentile(abused.allLat, .99))
	t.Logf("abusers: %d slow-loris (closed by the server: %d, median after %v, still open at %v: %d), %d/%d idle keep-alive connections opened, %d still open at the end",
		abuseLoris, loris.closedCount(), loris.medianClose(), lorisCloseLimit, lorisOpen, idle.opened, abuseIdle, idleAlive)
	t.Logf("oversized: %d bodies of 9 MiB (413: %d, closed: %d), %d chunked bodies of 9 MiB (413: %d, closed: %d), %d headers of 70 KiB (431: %d, closed: %d)",
		oversized.body.total(), oversized.body.status, oversized.body.closed, oversized.chunked.total(), oversized.chunked.status, oversized.chunked.closed,
		oversized.header.total(), oversized.header.status, oversized.header.closed)
	t.Logf("ledger: %d sends acknowledged, %d lost, drain took %d receives", acked, len(lost), drained)
	writeAbuseFigures(t, baseline, abused, blRate, abRate, abuseElapsed, loris, lorisOpen, idle, oversized, acked, len(lost))

	checkAbuseRun(t, baseline, abused, idle, lorisOpen, oversized, lost, acked)
}

// startGoodProducers starts the well-behaved producers, abuseProducers of
// them, each sending single messages with bodies of its own to the FIFO
// queue at queueURL (eight groups) until goodCtx is done. Each request is
// recorded in the stats current points to when it starts, and each
// acknowledged send in ledger; wg counts the producers.
func startGoodProducers(ctx, goodCtx context.Context, wg *sync.WaitGroup, client *sqs.Client, queueURL *string, ledger *abuseLedger, current *atomic.Pointer[goodStats]) {
	for i := 0; i < abuseProducers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; goodCtx.Err() == nil; seq++ {
				body := fmt.Sprintf("p%d-%d", i, seq)
				st := current.Load()
				began := time.Now()
				_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queueURL, MessageBody: aws.String(body), MessageGroupId: aws.String(fmt.Sprintf("g%d", seq%8))})
				st.record(time.Since(began), true, err)
				if err == nil {
					ledger.mu.Lock()
					ledger.acked[body] = true
					ledger.mu.Unlock()
				}
			}
		}()
	}
}

// startGoodConsumers starts the well-behaved consumers, abuseConsumers of
// them, each receiving up to 10 messages with a 1 s long poll and deleting
// each until goodCtx is done. Each request is recorded in the stats
// current points to when it starts, and each delivery in ledger; wg counts
// the consumers.
func startGoodConsumers(ctx, goodCtx context.Context, wg *sync.WaitGroup, client *sqs.Client, queueURL *string, ledger *abuseLedger, current *atomic.Pointer[goodStats]) {
	for i := 0; i < abuseConsumers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for goodCtx.Err() == nil {
				st := current.Load()
				began := time.Now()
				out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				st.record(time.Since(began), false, err)
				if err != nil {
					continue
				}
				for _, m := range out.Messages {
					ledger.mu.Lock()
					ledger.delivered[aws.ToString(m.Body)]++
					ledger.mu.Unlock()
					began := time.Now()
					_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: queueURL, ReceiptHandle: m.ReceiptHandle})
					st.record(time.Since(began), false, err)
				}
			}
		}()
	}
}

// checkAbuseRun checks what TestAbusiveClients measured: every request of
// the well-behaved clients served in both phases, every idle connection
// opened, every slow-loris one closed by the server in time, every
// oversized request refused or cut off, and every acknowledged message
// delivered.
func checkAbuseRun(t *testing.T, baseline, abused *goodStats, idle *idleSet, lorisOpen int, oversized *oversizedSet, lost []string, acked int) {
	t.Helper()
	for name, st := range map[string]*goodStats{"baseline": baseline, "abuse": abused} {
		if st.fails > 0 {
			t.Errorf("%s: %d of the well-behaved clients' requests failed; first: %v", name, st.fails, st.firstErr)
		}
		if st.ok == 0 {
			t.Errorf("%s: the well-behaved clients made no request at all", name)
		}
	}
	if idle.opened < abuseIdle {
		t.Errorf("only %d of %d idle keep-alive connections could be opened: %v", idle.opened, abuseIdle, idle.firstErr)
	}
	if lorisOpen > 0 {
		t.Errorf("%d of %d slow-loris connections were still open %v after they started (ReadHeaderTimeout is 10 s)", lorisOpen, abuseLoris, lorisCloseLimit)
	}
	for _, o := range []*oversizedCount{&oversized.body, &oversized.chunked, &oversized.header} {
		if o.wrong > 0 {
			t.Errorf("%s: %d answers were neither %d nor a closed connection; first: %s", o.name, o.wrong, o.want, o.firstWrong)
		}
		if o.total() == 0 {
			t.Errorf("%s: no request was made", o.name)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged messages were never delivered, e.g. %q", len(lost), lost[:min(len(lost), 10)])
	}
	if acked == 0 {
		t.Error("no send was acknowledged: the test exercised nothing")
	}
}

// lostMessages returns the acknowledged bodies never delivered, sorted,
// and the number acknowledged.
func (l *abuseLedger) lostMessages() (lost []string, acked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for body := range l.acked {
		if l.delivered[body] == 0 {
			lost = append(lost, body)
		}
	}
	slices.Sort(lost)
	return lost, len(l.acked)
}

// raiseNoFile raises the soft RLIMIT_NOFILE to at least n (up to the hard
// limit) and reports whether the limit is now at least n.
func raiseNoFile(t *testing.T, n uint64) bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Logf("getrlimit: %v", err)
		return false
	}
	if lim.Cur >= n {
		return true
	}
	want := min(n, lim.Max)
	if want > lim.Cur {
		lim.Cur = want
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Logf("setrlimit: %v", err)
		}
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur >= n
}

// lorisSet is the slow-loris connections: each sends a request line and
// then one header byte every lorisInterval, never finishing its headers.
type lorisSet struct {
	mu      sync.Mutex
	started time.Time
	closed  []time.Duration // how long after the start the server closed each
	done    chan struct{}   // closed when every connection is closed
	n       int
}

func startLoris(t *testing.T, ctx context.Context, wg *sync.WaitGroup, addr string) *lorisSet {
	t.Helper()
	l := &lorisSet{started: time.Now(), done: make(chan struct{})}
	var conns []net.Conn
	for i := 0; i < abuseLoris; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("slow-loris connection %d: %v", i, err)
		}
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: "+addr+"\r\nX-Slow: "); err != nil {
			t.Fatalf("slow-loris connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	l.n = len(conns)
	var open sync.WaitGroup
	for _, c := range conns {
		open.Add(1)
		go func() {
			defer open.Done()
			// The server answers nothing until it gives up; a read that
			// ends is the server closing the connection.
			_, _ = io.Copy(io.Discard, c)
			l.mu.Lock()
			l.closed = append(l.closed, time.Since(l.started))
			l.mu.Unlock()
			c.Close()
		}()
	}
	go func() { open.Wait(); close(l.done) }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(lorisInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, c := range conns {
				_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				_, _ = c.Write([]byte("a"))
			}
		}
	}()
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return l
}

// waitClosed waits until every connection is closed or deadline passes,
// and returns how many are still open.
func (l *lorisSet) waitClosed(deadline time.Time) int {
	select {
	case <-l.done:
	case <-time.After(time.Until(deadline)):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n - len(l.closed)
}

func (l *lorisSet) closedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.closed)
}

func (l *lorisSet) medianClose() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.closed, .5).Round(10 * time.Millisecond)
}

// idleSet is the idle keep-alive connections: each made one request and
// then stays open, sending nothing.
type idleSet struct {
	mu       sync.Mutex
	conns    []net.Conn
	opened   int
	firstErr error
}

func openIdle(t *testing.T, addr string) *idleSet {
	t.Helper()
	s := &idleSet{}
	req := "GET /?Action=ListQueues&Version=2012-11-05 HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				c, err := openOneIdle(addr, req)
				s.mu.Lock()
				if err != nil {
					if s.firstErr == nil {
						s.firstErr = err
					}
				} else {
					s.conns = append(s.conns, c)
					s.opened++
				}
				s.mu.Unlock()
			}
		}()
	}
	for i := 0; i < abuseIdle; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	return s
}

func openOneIdle(addr, req string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		c.Close()
		return nil, fmt.Errorf("idle connection's request: HTTP %d, close %v", resp.StatusCode, resp.Close)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// alive counts the idle connections the server has not closed: a read
// with a short deadline that times out means the connection is open.
func (s *idleSet) alive() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	buf := make([]byte, 1)
	for _, c := range s.conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		_, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			n++
		}
	}
	return n
}

func (s *idleSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// oversizedCount counts the answers to one kind of oversized request.
type oversizedCount struct {
	mu                    sync.Mutex
	name                  string
	want                  int // the status wanted
	status, closed, wrong int
	firstWrong            string
}

func (o *oversizedCount) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status + o.closed + o.wrong
}

func (o *oversizedCount) record(resp *http.Response, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil:
		o.closed++
	case resp.StatusCode == o.want:
		o.status++
	default:
		o.wrong++
		if o.firstWrong == "" {
			o.firstWrong = resp.Status
		}
	}
}

// oversizedSet counts the answers to the three kinds of oversized request.
type oversizedSet struct {
	body, chunked, header oversizedCount
}

// startOversized runs clients that send request bodies of 9 MiB, with a
// Content-Length and chunked, and headers of 70 KiB, each in a loop.
func startOversized(ctx context.Context, wg *sync.WaitGroup, base string) *oversizedSet {
	o := &oversizedSet{
		body:    oversizedCount{name: "9 MiB body", want: http.StatusRequestEntityTooLarge},
		chunked: oversizedCount{name: "9 MiB chunked body", want: http.StatusRequestEntityTooLarge},
		header:  oversizedCount{name: "70 KiB header", want: http.StatusRequestHeaderFieldsTooLarge},
	}
	payload := bytes.Repeat([]byte("x"), oversizedBody)
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: nil}}
	loop := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				f()
			}
		}()
	}
	do := func(c *oversizedCount, req *http.Request) {
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if ctx.Err() != nil && err != nil {
			return // stopped mid-request: not an answer of the server
		}
		c.record(resp, err)
	}
	form := "Action=SendMessage&Version=2012-11-05&QueueUrl=/000000000000/abuse.fifo&MessageBody="
	loop(func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/", io.MultiReader(strings.NewReader(form), bytes.NewReader(payload)))
		req.ContentLength = int64(len(form) + len(payload))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		do(&o.body, req)
	})
	loop(func() {
		// A reader of unknown length makes the transport send chunks.
		body := io.MultiReader(strings.NewReader(form), io.LimitReader(bytes.NewReader(payload), int64(len(payload))))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/", body)
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		do(&o.chunked, req)
	})
	big := strings.Repeat("h", hugeHeader)
	loop(func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/?Action=ListQueues&Version=2012-11-05", nil)
		req.Header.Set("X-Huge", big)
		do(&o.header, req)
	})
	return o
}

// drainAbuse receives and deletes until the queue is empty, recording
// deliveries, and returns the number of receives it took.
func drainAbuse(t *testing.T, client *sqs.Client, queueURL *string, ledger *abuseLedger) int {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	receives := 0
	for {
		if time.Now().After(deadline) {
			t.Fatal("the queue did not drain within 30 s")
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		receives++
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if len(out.Messages) == 0 {
			attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queueURL, AttributeNames: []types.QueueAttributeName{"All"}})
			if err != nil {
				t.Fatalf("drain: %v", err)
			}
			visible, inFlight := attrs.Attributes["ApproximateNumberOfMessages"], attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]
			if visible == "0" && inFlight == "0" {
				return receives
			}
			if visible == "0" {
				// The good clients delete everything they receive before
				// they stop, so nothing should be left in flight.
				t.Errorf("drain: %s messages left in flight after the clients stopped", inFlight)
				return receives
			}
			continue
		}
		for _, m := range out.Messages {
			ledger.mu.Lock()
			ledger.delivered[aws.ToString(m.Body)]++
			ledger.mu.Unlock()
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: queueURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("drain delete: %v", err)
			}
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// writeAbuseFigures writes the figures and the method as a markdown
// section for docs/benchmarks.md.
func writeAbuseFigures(t *testing.T, bl, ab *goodStats, blRate, abRate float64, abuseElapsed time.Duration,
	loris *lorisSet, lorisOpen int, idle *idleSet, o *oversizedSet, acked, lost int) {
	var b strings.Builder
	fmt.Fprintf(&b, "## Abusive clients beside well-behaved ones\n\n")
	fmt.Fprintf(&b, "Measured by `go test ./internal/crashtest -run TestAbusiveClients -v` on %s (%d CPUs), %s.\n\n", hostDesc(), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "Method: the real `fifoq serve` binary (durable, default flags) on 127.0.0.1. %d producers send single "+
		"messages to one FIFO queue (8 message groups, content-based deduplication) and %d consumers receive (up to 10, "+
		"1 s long poll) and delete each message, all through aws-sdk-go-v2, one request at a time each. They run %v alone "+
		"(baseline), then %v beside: %d slow-loris connections (a request line, then one header byte every %v), %d idle "+
		"keep-alive connections (one request each, then silence), and one client each looping on a 9 MiB body with a "+
		"Content-Length, a 9 MiB chunked body, and a 70 KiB header. Every request of the well-behaved clients must "+
		"succeed, and after the run every acknowledged message must be delivered.\n\n",
		abuseProducers, abuseConsumers, abuseBaseline, abuseElapsed.Round(100*time.Millisecond), abuseLoris, lorisInterval, abuseIdle)
	fmt.Fprintf(&b, "| phase | good requests | requests/s | failed | SendMessage p50 | SendMessage p99 | all p50 | all p99 |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		st   *goodStats
		rate float64
	}{{"baseline", bl, blRate}, {"under abuse", ab, abRate}} {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %d | %v | %v | %v | %v |\n", row.name, row.st.ok, row.rate, row.st.fails,
			ms(percentile(row.st.sendLat, .5)), ms(percentile(row.st.sendLat, .99)), ms(percentile(row.st.allLat, .5)), ms(percentile(row.st.allLat, .99)))
	}
	fmt.Fprintf(&b, "\n- Slow-loris: %d of %d connections closed by the server (median %v after they began; ReadHeaderTimeout 10 s); %d still open after %v.\n",
		loris.closedCount(), abuseLoris, loris.medianClose(), lorisOpen, lorisCloseLimit)
	fmt.Fprintf(&b, "- Idle keep-alive: %d of %d connections opened and held through the run.\n", idle.opened, abuseIdle)
	for _, c := range []*oversizedCount{&o.body, &o.chunked, &o.header} {
		fmt.Fprintf(&b, "- %s: %d requests; %d answered %d, %d cut off by the server, %d answered otherwise.\n", c.name, c.total(), c.status, c.want, c.closed, c.wrong)
	}
	fmt.Fprintf(&b, "- Ledger: %d sends acknowledged, %d of them never delivered.\n", acked, lost)
	if *abuseFigures == "" {
		return
	}
	if err := os.WriteFile(*abuseFigures, []byte(b.String()), 0o644); err != nil {
		t.Errorf("write %s: %v", *abuseFigures, err)
	}
}

// hostDesc names the machine's CPU model, from /proc/cpuinfo where there is one.
func hostDesc() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return runtime.GOOS + "/" + runtime.GOARCH + ", " + strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}
