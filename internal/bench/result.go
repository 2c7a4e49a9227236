package bench

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// Result is what a bench run measured and verified.
type Result struct {
	Endpoint     string       `json:"queue_url"`
	FIFO         bool         `json:"fifo"`
	Producers    int          `json:"producers"`
	Consumers    int          `json:"consumers"`
	Groups       int          `json:"groups"`
	Batch        int          `json:"batch"`
	BodySize     int          `json:"body_size"`
	SendSeconds  float64      `json:"send_seconds"`
	TotalSeconds float64      `json:"total_seconds"`
	Sent         int64        `json:"sent"`
	Received     int64        `json:"received"`
	SendRate     float64      `json:"send_per_second"`
	ReceiveRate  float64      `json:"receive_per_second"`
	SendErrors   int64        `json:"send_errors"`
	RecvErrors   int64        `json:"receive_errors"`
	FirstError   string       `json:"first_error,omitempty"`
	SendLatency  Percentiles  `json:"send_latency_ms"`
	RecvLatency  Percentiles  `json:"receive_latency_ms"`
	EndToEnd     Percentiles  `json:"end_to_end_latency_ms"`
	Verification Verification `json:"verification"`
	Resources    Resources    `json:"resources"`
	// Soak is the windows and trends of a run with Config.ReportEvery.
	Soak *SoakReport `json:"soak,omitempty"`
}

// OK reports whether the run verified and had no errors.
// A soak whose trends show growth is not OK either; one too short to
// show a trend is judged on its verification alone.
func (r *Result) OK() bool {
	if r.Soak != nil && len(r.Soak.Trends) > 0 && !r.Soak.Flat() {
		return false
	}
	return r.Verification.OK && r.SendErrors == 0 && r.RecvErrors == 0
}

// Percentiles summarises latencies, in milliseconds.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// WriteText writes the result for a person to read.
func (r *Result) WriteText(w io.Writer) {
	kind := "standard"
	if r.FIFO {
		kind = "FIFO"
	}
	fmt.Fprintf(w, "\nfifoq bench: %s queue, %d producers, %d consumers, %d groups, batch %d, %d-byte bodies\n",
		kind, r.Producers, r.Consumers, r.Groups, r.Batch, r.BodySize)
	fmt.Fprintf(w, "  sent      %10d msgs in %6.2fs  %10.0f msgs/s\n", r.Sent, r.SendSeconds, r.SendRate)
	fmt.Fprintf(w, "  received  %10d msgs in %6.2fs  %10.0f msgs/s\n", r.Received, r.TotalSeconds, r.ReceiveRate)
	fmt.Fprintf(w, "  errors    send %d, receive/delete %d\n", r.SendErrors, r.RecvErrors)
	if r.FirstError != "" {
		fmt.Fprintf(w, "  first error: %s\n", r.FirstError)
	}
	fmt.Fprintf(w, "  latency (ms)      p50      p90      p99      max\n")
	for _, l := range []struct {
		name string
		p    Percentiles
	}{{"send", r.SendLatency}, {"receive", r.RecvLatency}, {"end-to-end", r.EndToEnd}} {
		fmt.Fprintf(w, "    %-11s %8.2f %8.2f %8.2f %8.2f\n", l.name, l.p.P50, l.p.P90, l.p.P99, l.p.Max)
	}
	r.Resources.writeText(w, r.TotalSeconds, r.Sent)
	if r.Soak != nil {
		r.Soak.writeText(w)
	}
	v := r.Verification
	fmt.Fprintf(w, "  verify    acknowledged %d, lost %d, duplicates %d, out of order %d, unacknowledged but delivered %d\n",
		v.Acknowledged, v.Lost, v.Duplicates, v.OrderViolations, v.Unacknowledged)
	if r.OK() {
		fmt.Fprintf(w, "  result    OK\n")
	} else {
		fmt.Fprintf(w, "  result    FAILED\n")
		for _, p := range v.Problems {
			fmt.Fprintf(w, "    - %s\n", p)
		}
	}
}

// latencies collects durations for percentiles. Past maxSamples it keeps
// every n-th sample, so memory stays bounded on long runs.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration
	seen    int
}

const maxSamples = 1 << 20

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	if len(l.samples) < maxSamples {
		l.samples = append(l.samples, d)
		return
	}
	// Reservoir-free thinning: replace a slot chosen by the sample count,
	// which spreads replacements evenly without a random source.
	l.samples[l.seen%maxSamples] = d
}

func (l *latencies) summary() Percentiles {
	l.mu.Lock()
	s := append([]time.Duration(nil), l.samples...)
	l.mu.Unlock()
	if len(s) == 0 {
		return Percentiles{}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		i := int(q * float64(len(s)-1))
		return float64(s[i]) / float64(time.Millisecond)
	}
	return Percentiles{Count: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: float64(s[len(s)-1]) / float64(time.Millisecond)}
}
