package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Soak runs are long runs at a fixed rate that watch the server for
// growth: every Config.ReportEvery the bench records one Window (what was
// sent and received in it, its send latency, and the server's memory,
// goroutines and open files from its /metrics), and at the end it fits a
// line through each series past the warm-up to say whether it grew.

// soakMetrics are the /metrics series a soak window reads.
var soakMetrics = []string{
	"process_resident_memory_bytes",
	"go_memstats_heap_inuse_bytes",
	"go_goroutines",
	"process_open_fds",
	"go_memstats_next_gc_bytes",
}

// Window is one reporting interval of a run with Config.ReportEvery.
type Window struct {
	// EndSeconds is the window's end, in seconds since the run began.
	EndSeconds float64 `json:"end_seconds"`
	// Sent and Received count the messages acknowledged and received in
	// the window; Backlog is the acknowledged messages not yet received
	// at its end.
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	Backlog  int   `json:"backlog"`
	// Errors counts failed requests in the window.
	Errors int64 `json:"errors"`
	// SendLatency is the window's send latency.
	SendLatency Percentiles `json:"send_latency_ms"`
	// The server's figures at the window's end (absent when /metrics could
	// not be read).
	ServerRSSBytes       *float64 `json:"server_rss_bytes,omitempty"`
	ServerHeapInuseBytes *float64 `json:"server_heap_inuse_bytes,omitempty"`
	ServerGoroutines     *float64 `json:"server_goroutines,omitempty"`
	ServerOpenFDs        *float64 `json:"server_open_fds,omitempty"`
	// ServerGCGoalBytes is the heap size at which the server's next
	// garbage collection starts (go_memstats_next_gc_bytes): proportional
	// to the heap that was live at the last collection, so it shows a leak
	// without the sawtooth of heap in use or the lag of RSS (which keeps
	// pages until the runtime returns them).
	ServerGCGoalBytes *float64 `json:"server_gc_goal_bytes,omitempty"`
	// ClientHeapBytes is the bench's own heap in use, to tell a growing
	// client from a growing server.
	ClientHeapBytes float64 `json:"client_heap_bytes"`
}

// Trend is how one series moved over the windows past the warm-up.
type Trend struct {
	// Series names the figure.
	Series string `json:"series"`
	// Windows is how many windows the trend is fitted over.
	Windows int `json:"windows"`
	// First and Last are the means of the first and last quarter of those
	// windows; Change is Last/First - 1.
	First  float64 `json:"first_quarter_mean"`
	Last   float64 `json:"last_quarter_mean"`
	Change float64 `json:"change"`
	// SlopePerHour is the least-squares slope, in the series' unit per hour.
	SlopePerHour float64 `json:"slope_per_hour"`
	// Flat is true when the last quarter's mean is within the series'
	// tolerance of the first's (see soakSeries).
	Flat bool `json:"flat"`
	// Informational trends describe the bench itself and do not decide
	// the verdict.
	Informational bool `json:"informational,omitempty"`
}

// SoakReport is what a run with Config.ReportEvery recorded.
type SoakReport struct {
	// WarmupSeconds is the time left out of the trends.
	WarmupSeconds float64 `json:"warmup_seconds"`
	// Windows are the reporting intervals, in order.
	Windows []Window `json:"windows"`
	// Trends are fitted past the warm-up, one per series.
	Trends []Trend `json:"trends,omitempty"`
	// Notes say why a trend is missing.
	Notes []string `json:"notes,omitempty"`
}

// Flat reports whether every trend that is not informational is flat. A
// report without trends (too short a run) is not flat: nothing was shown.
func (s *SoakReport) Flat() bool {
	if s == nil || len(s.Trends) == 0 {
		return false
	}
	for _, t := range s.Trends {
		if !t.Flat && !t.Informational {
			return false
		}
	}
	return true
}

// tolerance is how much a series may grow, from the first quarter of the
// windows past the warm-up to the last, and still count as flat: a
// relative share plus an absolute allowance.
type tolerance struct{ rel, abs float64 }

// soakSeries are the figures a soak fits trends to, each with its
// tolerance. Small counts get an absolute allowance (a handful of
// goroutines or files come and go with connections); send latency gets more
// room, since on a shared machine it moves with everything else running.
// The bench's own heap holds its latency samples, which fill up to a fixed
// bound over the first hours: it is shown, not judged.
var soakSeries = []struct {
	name          string
	get           func(Window) (float64, bool)
	tol           tolerance
	informational bool
}{
	{"server RSS bytes", func(w Window) (float64, bool) { return deref(w.ServerRSSBytes) }, tolerance{0.10, 0}, false},
	{"server heap in use", func(w Window) (float64, bool) { return deref(w.ServerHeapInuseBytes) }, tolerance{0.10, 0}, false},
	{"server goroutines", func(w Window) (float64, bool) { return deref(w.ServerGoroutines) }, tolerance{0.10, 10}, false},
	{"server open files", func(w Window) (float64, bool) { return deref(w.ServerOpenFDs) }, tolerance{0.10, 10}, false},
	{"server GC goal bytes", func(w Window) (float64, bool) { return deref(w.ServerGCGoalBytes) }, tolerance{0.10, 0}, false},
	{"send p99 ms", func(w Window) (float64, bool) { return w.SendLatency.P99, w.SendLatency.Count > 0 }, tolerance{0.50, 2}, false},
	{"client heap bytes", func(w Window) (float64, bool) { return w.ClientHeapBytes, true }, tolerance{0.25, 0}, true},
	{"backlog (acked, unread)", func(w Window) (float64, bool) { return float64(w.Backlog), true }, tolerance{0.50, 1000}, false},
}

// pacer holds producers to a total rate, in messages per second. A
// producer that falls behind (a slow server) is not allowed to catch up
// in a burst: the schedule restarts from now.
type pacer struct {
	mu   sync.Mutex
	next time.Time
	per  time.Duration // one message's share of a second
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{per: time.Duration(float64(time.Second) / rate)}
}

// wait blocks until n more messages may be sent, or ctx ends.
func (p *pacer) wait(ctx context.Context, n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(time.Duration(n) * p.per)
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// windowStats collects one window's send latencies; the reporter swaps it
// for a fresh one at each window's end.
type windowStats struct {
	mu  sync.Mutex
	lat *latencies
}

func (w *windowStats) add(d time.Duration) {
	w.mu.Lock()
	l := w.lat
	w.mu.Unlock()
	if l != nil {
		l.add(d)
	}
}

func (w *windowStats) swap() *latencies {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.lat
	w.lat = &latencies{}
	return old
}

// reportWindows records a Window every ReportEvery until done is closed,
// and returns them.
func (r *run) reportWindows(ctx context.Context, done <-chan struct{}, start time.Time, out chan<- []Window) {
	var windows []Window
	defer func() { out <- windows }()
	tick := time.NewTicker(r.cfg.ReportEvery)
	defer tick.Stop()
	var lastSent, lastRecv, lastErrs int64
	r.window.swap()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			lat := r.window.swap()
			s, rc := r.sent.Load(), r.received.Load()
			errs := r.sendErrs.Load() + r.recvErrs.Load()
			w := Window{
				EndSeconds:  now.Sub(start).Seconds(),
				Sent:        s - lastSent,
				Received:    rc - lastRecv,
				Errors:      errs - lastErrs,
				Backlog:     r.ledger.outstanding(),
				SendLatency: lat.summary(),
			}
			lastSent, lastRecv, lastErrs = s, rc, errs
			if r.cfg.MetricsURL != "" {
				if m, err := scrapeNames(ctx, r.cfg.MetricsURL, soakMetrics); err == nil {
					for i, dst := range []**float64{&w.ServerRSSBytes, &w.ServerHeapInuseBytes, &w.ServerGoroutines, &w.ServerOpenFDs, &w.ServerGCGoalBytes} {
						if v, ok := m[soakMetrics[i]]; ok {
							*dst = &v
						}
					}
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			w.ClientHeapBytes = float64(ms.HeapInuse)
			windows = append(windows, w)
			if r.cfg.Progress != nil {
				writeWindow(r.cfg.Progress, w)
			}
		}
	}
}

// writeWindowHeader and writeWindow print windows as a table.
func writeWindowHeader(w io.Writer) {
	fmt.Fprintf(w, "  %8s %9s %9s %9s %6s %8s %8s %9s %9s %9s %6s %6s %9s\n",
		"end s", "sent", "received", "backlog", "errs", "send p50", "send p99", "srv RSS", "srv heap", "GC goal", "gor", "fds", "cli heap")
}

func writeWindow(w io.Writer, win Window) {
	mb := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1fM", *v/(1<<20))
	}
	n := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f", *v)
	}
	fmt.Fprintf(w, "  %8.0f %9d %9d %9d %6d %8.2f %8.2f %9s %9s %9s %6s %6s %8.1fM\n",
		win.EndSeconds, win.Sent, win.Received, win.Backlog, win.Errors,
		win.SendLatency.P50, win.SendLatency.P99, mb(win.ServerRSSBytes), mb(win.ServerHeapInuseBytes), mb(win.ServerGCGoalBytes),
		n(win.ServerGoroutines), n(win.ServerOpenFDs), win.ClientHeapBytes/(1<<20))
}

// soakReport fits the trends of windows past warmup.
func soakReport(windows []Window, warmup time.Duration) *SoakReport {
	rep := &SoakReport{WarmupSeconds: warmup.Seconds(), Windows: windows}
	var past []Window
	for _, w := range windows {
		if w.EndSeconds > warmup.Seconds() {
			past = append(past, w)
		}
	}
	if len(past) < 4 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d windows past the warm-up: at least 4 are needed for a trend", len(past)))
		return rep
	}
	for _, s := range soakSeries {
		var xs, ys []float64
		for _, w := range past {
			if v, ok := s.get(w); ok {
				xs = append(xs, w.EndSeconds/3600)
				ys = append(ys, v)
			}
		}
		if len(ys) < 4 {
			rep.Notes = append(rep.Notes, s.name+": not measured in enough windows")
			continue
		}
		t := fitTrend(s.name, s.tol, xs, ys)
		t.Informational = s.informational
		rep.Trends = append(rep.Trends, t)
	}
	return rep
}

func deref(v *float64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

// fitTrend compares the first and last quarters of ys and fits a line
// through (xs, ys), xs in hours.
func fitTrend(name string, tol tolerance, xs, ys []float64) Trend {
	q := max(len(ys)/4, 1)
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	t := Trend{Series: name, Windows: len(ys), First: mean(ys[:q]), Last: mean(ys[len(ys)-q:])}
	if t.First != 0 {
		t.Change = t.Last/t.First - 1
	}
	mx, my := mean(xs), mean(ys)
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx > 0 {
		t.SlopePerHour = sxy / sxx
	}
	t.Flat = t.Last <= t.First*(1+tol.rel)+tol.abs
	return t
}

// writeText prints the trends.
func (s *SoakReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "  soak      %d windows; trends past the first %.0fs (first vs last quarter of the windows, least-squares slope)\n",
		len(s.Windows), s.WarmupSeconds)
	for _, t := range s.Trends {
		verdict := "flat"
		switch {
		case t.Informational && !t.Flat:
			verdict = "grew (the bench's own, not judged)"
		case !t.Flat:
			verdict = "GROWING"
		}
		unit, scale := "", 1.0
		if strings.HasSuffix(t.Series, "bytes") || strings.HasSuffix(t.Series, "in use") {
			unit, scale = " MiB", 1<<20
		}
		fmt.Fprintf(w, "    %-24s %10.1f -> %10.1f%s  (%+6.1f%%, slope %+.1f%s/h)  %s\n",
			t.Series, t.First/scale, t.Last/scale, unit, 100*t.Change, t.SlopePerHour/scale, unit, verdict)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
}
