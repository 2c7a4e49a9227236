package crashtest

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/testenv"
)

// TestCrashRecoveryWithBodyCompaction runs the crash test with bodies of
// 8,000 bytes kept in body files of 64 KiB, and a memory budget small
// enough that the log is snapshotted every 6.4 MB: the server is killed
// while it moves live bodies out of mostly dead files and takes snapshots
// that refer to the files, and each restart must find every body it
// refers to. The history check is TestCrashRecovery's (historycheck's
// properties and every body received the one sent).
func TestCrashRecoveryWithBodyCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs the real binary; skipped in -short mode")
	}
	testenv.Long(t, "five kills, half a minute; TestCrashRecovery is the first tier's crash test")
	var mu sync.Mutex
	var moved, snapshotted float64
	runs := 0
	scrape := func(addr string) {
		m := scrapeMetrics(t, addr)
		mu.Lock()
		defer mu.Unlock()
		runs++
		if runs == *kills+3 {
			// The queue is drained: the files a snapshot taken before the
			// drain refers to come back with the next one, which the
			// server takes for the space within 10 s, quiet as it is.
			deadline := time.Now().Add(30 * time.Second)
			for m["fifoq_body_store_files"] > 2 && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				m = scrapeMetrics(t, addr)
			}
			t.Logf("body store with the queue drained: %.0f files, %.0f bytes, %.0f live", m["fifoq_body_store_files"], m["fifoq_body_store_bytes"], m["fifoq_body_store_live_bytes"])
		}
		moved += m["fifoq_body_store_moved_bytes_total"]
		if _, ok := m["fifoq_log_snapshot_age_seconds"]; ok {
			snapshotted++
		}
	}
	h, s, dataDir := runCrashesObserved(t, *kills+2, 8000, scrape, "--body-file-size", "64KiB", "--max-memory", "64MiB")
	t.Logf("history: %s; body bytes moved by compaction: %.0f; runs with a snapshot: %.0f", h.summary(), moved, snapshotted)
	r := h.check()
	t.Logf("linearizability: %d groups checked, %d unchecked (porcupine timed out)", r.Groups, r.Unchecked)
	if len(r.Problems) > 0 {
		t.Errorf("history check failed (seed %d):\n  %s", s, strings.Join(r.Problems, "\n  "))
	}
	if h.sent() == 0 {
		t.Error("no send was acknowledged: the test exercised nothing")
	}
	if moved == 0 {
		t.Error("no body was moved by compaction: the test did not exercise it")
	}
	if snaps, _ := filepath.Glob(filepath.Join(dataDir, "snapshots", "*", "state.bin")); len(snaps) == 0 || snapshotted == 0 {
		t.Errorf("%d snapshots on disk, %.0f runs with one: the test did not exercise snapshots that refer to body files", len(snaps), snapshotted)
	}
	if files, _ := filepath.Glob(filepath.Join(dataDir, "bodies", "*.body")); len(files) > 2 {
		t.Errorf("%d body files left with the queue drained", len(files))
	}
}

// scrapeMetrics reads the server's /metrics as a map from series (name
// and labels) to value.
func scrapeMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Logf("scrape /metrics: %v", err)
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
