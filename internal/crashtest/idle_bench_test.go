package crashtest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

var (
	idlePolls  = flag.Int("idle.polls", 1000, "long polls BenchmarkIdleLongPolls holds")
	idleQueues = flag.Int("idle.queues", 100, "empty queues the long polls are spread over")
	idleWindow = flag.Duration("idle.window", 30*time.Second, "how long BenchmarkIdleLongPolls measures the server's CPU")
)

// BenchmarkIdleLongPolls measures what idle long polls cost a real server
// process: it starts the fifoq binary (durable, and --in-memory), holds
// -idle.polls concurrent ReceiveMessage calls with WaitTimeSeconds=20 on
// -idle.queues empty queues (each poll is re-issued when it returns), and
// reports the server's CPU over -idle.window as a percentage of one core,
// from its utime+stime in /proc. It asserts nothing; the figure goes in
// docs/benchmarks.md.
//
//	go test ./internal/crashtest/ -run '^$' -bench IdleLongPolls -benchtime 1x
func BenchmarkIdleLongPolls(b *testing.B) {
	for _, mode := range []string{"durable", "in-memory"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				pct := measureIdlePolls(b, mode == "in-memory")
				b.ReportMetric(pct, "server-cpu-%")
			}
		})
	}
}

func measureIdlePolls(b *testing.B, inMemory bool) float64 {
	addr := testenv.FreeAddr(b)
	args := []string{"serve", "--listen", addr}
	if inMemory {
		args = append(args, "--in-memory")
	} else {
		args = append(args, "--data-dir", b.TempDir())
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := "http://" + addr
	tr := &http.Transport{MaxIdleConnsPerHost: *idlePolls + 10}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	defer tr.CloseIdleConnections()
	call := func(ctx context.Context, action, body string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %d %s", action, resp.StatusCode, out)
		}
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); call(context.Background(), "ListQueues", `{}`) != nil; {
		if time.Now().After(deadline) {
			b.Fatal("fifoq did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range *idleQueues {
		if err := call(context.Background(), "CreateQueue", fmt.Sprintf(`{"QueueName":"idle%d"}`, i)); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range *idlePolls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"QueueUrl":"%s/000000000000/idle%d","WaitTimeSeconds":20}`, base, i%*idleQueues)
			for ctx.Err() == nil {
				if err := call(ctx, "ReceiveMessage", body); err != nil && ctx.Err() == nil {
					b.Errorf("receive: %v", err)
					return
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	for waiters(base) < float64(*idlePolls) {
		if b.Failed() {
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let the start-up work settle
	before := cpuTicks(b, cmd.Process.Pid)
	began := time.Now()
	time.Sleep(*idleWindow)
	used := float64(cpuTicks(b, cmd.Process.Pid)-before) / clockTicks
	return 100 * used / time.Since(began).Seconds()
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every Linux platform Go supports).
const clockTicks = 100

// cpuTicks returns the process's user plus system time, in clock ticks.
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) may hold spaces: count from after it.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return utime + stime
}

// waiters reads fifoq_long_poll_waiters from /metrics, -1 if it cannot.
func waiters(base string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "fifoq_long_poll_waiters "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}
