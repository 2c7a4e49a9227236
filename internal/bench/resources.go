package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Resources is what a run cost, measured from outside the load: the
// bench's own CPU, and where the bench can see them, the server's CPU and
// log commits and the data disk's flushes. A figure the bench could not
// measure is absent (nil), never zero.
type Resources struct {
	// ClientCPUSeconds is the CPU time (user + system, getrusage) of the
	// bench process over the run. Against the built-in ceiling endpoint it
	// includes the endpoint's own, which runs in the same process.
	ClientCPUSeconds *float64 `json:"client_cpu_seconds,omitempty"`
	// ServerCPUSeconds is the growth of the server's
	// process_cpu_seconds_total (its /metrics) over the run: all the
	// server's CPU, whoever else it served meanwhile.
	ServerCPUSeconds *float64 `json:"server_cpu_seconds,omitempty"`
	// LogEntries is the number of log entries the server committed over
	// the run (fifoq_log_commit_duration_seconds_count): each is one group
	// commit, at most one fsync of the log. Absent on an in-memory server.
	LogEntries *float64 `json:"log_entries,omitempty"`
	// LogCommands is the number of commands those entries carried.
	LogCommands *float64 `json:"log_commands,omitempty"`
	// DiskDevice names the block device holding the data dir (--data-dir).
	DiskDevice string `json:"disk_device,omitempty"`
	// DiskFlushes is the number of flush requests the device completed
	// over the run (/proc/diskstats): the fsyncs that reached the disk,
	// from every process on the machine.
	DiskFlushes *float64 `json:"disk_flushes,omitempty"`
	// DiskWrites is the number of write requests the device completed.
	DiskWrites *float64 `json:"disk_writes,omitempty"`
	// Notes says why a figure is absent.
	Notes []string `json:"notes,omitempty"`
}

// sample is one reading of the counters Resources is the difference of.
type sample struct {
	cpu                float64
	cpuOK              bool
	server             map[string]float64 // metric name -> value; nil if not scraped
	disk               diskCounters
	diskOK             bool
	serverErr, diskErr error
	diskDevice         string
}

// diskCounters are one device's cumulative counters.
type diskCounters struct {
	writes, flushes float64
	flushesOK       bool
}

// serverMetrics are the /metrics series the bench reads.
var serverMetrics = []string{
	"process_cpu_seconds_total",
	"fifoq_log_commit_duration_seconds_count",
	"fifoq_log_commands_per_entry_sum",
}

func (r *run) takeSample(ctx context.Context) sample {
	var s sample
	s.cpu, s.cpuOK = processCPU()
	if r.cfg.MetricsURL != "" {
		s.server, s.serverErr = scrape(ctx, r.cfg.MetricsURL)
	}
	if r.cfg.DataDir != "" {
		s.diskDevice, s.disk, s.diskErr = readDisk(r.cfg.DataDir)
		s.diskOK = s.diskErr == nil
	}
	return s
}

// resources is what happened between samples a and b.
func (r *run) resources(a, b sample) Resources {
	var res Resources
	diff := func(x, y float64) *float64 { d := y - x; return &d }
	if a.cpuOK && b.cpuOK {
		res.ClientCPUSeconds = diff(a.cpu, b.cpu)
	} else {
		res.Notes = append(res.Notes, "client CPU: getrusage is not available on this system")
	}
	if r.cfg.MetricsURL != "" {
		switch {
		case a.serverErr != nil || b.serverErr != nil:
			res.Notes = append(res.Notes, fmt.Sprintf("server figures: %v", firstErr(a.serverErr, b.serverErr)))
		default:
			for i, dst := range []**float64{&res.ServerCPUSeconds, &res.LogEntries, &res.LogCommands} {
				x, okA := a.server[serverMetrics[i]]
				y, okB := b.server[serverMetrics[i]]
				if okA && okB {
					*dst = diff(x, y)
				}
			}
			if res.ServerCPUSeconds == nil {
				res.Notes = append(res.Notes, "server CPU: "+r.cfg.MetricsURL+" has no process_cpu_seconds_total")
			}
			if res.LogEntries == nil {
				res.Notes = append(res.Notes, "log commits: the server has no log metrics (an in-memory server, or not fifoq)")
			}
		}
	}
	if r.cfg.DataDir != "" {
		if a.diskOK && b.diskOK {
			res.DiskDevice = b.diskDevice
			res.DiskWrites = diff(a.disk.writes, b.disk.writes)
			if a.disk.flushesOK && b.disk.flushesOK {
				res.DiskFlushes = diff(a.disk.flushes, b.disk.flushes)
			} else {
				res.Notes = append(res.Notes, "disk flushes: this kernel's /proc/diskstats does not count them")
			}
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("disk figures: %v", firstErr(a.diskErr, b.diskErr)))
		}
	}
	return res
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// scrape reads the serverMetrics series from a Prometheus text endpoint.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	return scrapeNames(ctx, url, serverMetrics)
}

// scrapeNames reads the named series from a Prometheus text endpoint.
// Only unlabelled series are read: the ones wanted have no labels.
func scrapeNames(ctx context.Context, url string, names []string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body, names)
}

func parseMetrics(r io.Reader, names []string) (map[string]float64, error) {
	want := map[string]bool{}
	for _, m := range names {
		want[m] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		value, _, _ = strings.Cut(strings.TrimSpace(value), " ") // drop a timestamp
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// writeText writes the figures there are, as rates over seconds (the
// whole run, drain included, which is when they were measured) and per
// message sent.
func (res *Resources) writeText(w io.Writer, seconds float64, sent int64) {
	perSec := func(v float64) float64 {
		if seconds <= 0 {
			return 0
		}
		return v / seconds
	}
	perMsg := func(cpu float64) string {
		if sent <= 0 {
			return ""
		}
		return fmt.Sprintf(", %.1f µs/msg", cpu/float64(sent)*1e6)
	}
	if res.ClientCPUSeconds != nil || res.ServerCPUSeconds != nil {
		fmt.Fprintf(w, "  cpu      ")
		if c := res.ClientCPUSeconds; c != nil {
			fmt.Fprintf(w, " client %.2f cores (%.2fs%s)", perSec(*c), *c, perMsg(*c))
		}
		if c := res.ServerCPUSeconds; c != nil {
			fmt.Fprintf(w, "  server %.2f cores (%.2fs%s)", perSec(*c), *c, perMsg(*c))
		}
		fmt.Fprintln(w)
	}
	if e := res.LogEntries; e != nil {
		fmt.Fprintf(w, "  log       %.0f entries committed (%.0f/s, each at most one fsync)", *e, perSec(*e))
		if c := res.LogCommands; c != nil && *e > 0 {
			fmt.Fprintf(w, ", %.1f commands per entry", *c / *e)
		}
		fmt.Fprintln(w)
	}
	if f := res.DiskFlushes; f != nil {
		fmt.Fprintf(w, "  disk      %s: %.0f flushes (%.0f/s), %.0f writes (%.0f/s), whole machine\n",
			res.DiskDevice, *f, perSec(*f), *res.DiskWrites, perSec(*res.DiskWrites))
	} else if d := res.DiskWrites; d != nil {
		fmt.Fprintf(w, "  disk      %s: %.0f writes (%.0f/s), whole machine\n", res.DiskDevice, *d, perSec(*d))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "  note      %s\n", n)
	}
}
