package bench

import (
	"context"
	"testing"
	"time"
)

func TestFitTrend(t *testing.T) {
	hours := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i) / 60
		}
		return xs
	}
	flat := make([]float64, 120)
	growing := make([]float64, 120)
	for i := range flat {
		flat[i] = 100 + float64(i%3)  // noise, no trend
		growing[i] = 100 + float64(i) // +60 per hour
	}
	if tr := fitTrend("server RSS bytes", tolOf(t, "server RSS bytes"), hours(120), flat); !tr.Flat || tr.SlopePerHour > 1 || tr.SlopePerHour < -1 {
		t.Errorf("flat series: %+v", tr)
	}
	tr := fitTrend("server RSS bytes", tolOf(t, "server RSS bytes"), hours(120), growing)
	if tr.Flat {
		t.Errorf("growing series judged flat: %+v", tr)
	}
	if tr.SlopePerHour < 59.9 || tr.SlopePerHour > 60.1 {
		t.Errorf("slope %.2f/h, want 60", tr.SlopePerHour)
	}
	// A few goroutines more is within the absolute allowance.
	g := []float64{20, 20, 20, 20, 25, 25, 25, 25}
	if tr := fitTrend("server goroutines", tolOf(t, "server goroutines"), hours(8), g); !tr.Flat {
		t.Errorf("goroutines +5 judged growing: %+v", tr)
	}
}

func TestSoakReportNeedsWindowsPastWarmup(t *testing.T) {
	var ws []Window
	for i := 1; i <= 10; i++ {
		rss := float64(100 << 20)
		ws = append(ws, Window{EndSeconds: float64(i * 60), ServerRSSBytes: &rss})
	}
	rep := soakReport(ws, 8*time.Minute)
	if len(rep.Trends) != 0 || len(rep.Notes) == 0 || rep.Flat() {
		t.Fatalf("2 windows past the warm-up gave a verdict: %+v", rep)
	}
	rep = soakReport(ws, time.Minute)
	if !rep.Flat() {
		t.Fatalf("constant series not flat: %+v", rep.Trends)
	}
	for i := range ws {
		ws[i].ClientHeapBytes = float64(i) * (100 << 20)
	}
	if rep := soakReport(ws, time.Minute); !rep.Flat() {
		t.Fatalf("the bench's own heap decided the verdict: %+v", rep.Trends)
	}
	grown := float64(300 << 20)
	ws[9].ServerRSSBytes, ws[8].ServerRSSBytes = &grown, &grown
	if rep := soakReport(ws, time.Minute); rep.Flat() {
		t.Fatalf("RSS tripled at the end, judged flat: %+v", rep.Trends)
	}
}

func TestPacerHoldsRate(t *testing.T) {
	p := newPacer(1000) // 1 ms per message
	began := time.Now()
	for i := 0; i < 5; i++ {
		p.wait(context.Background(), 10)
	}
	// Five batches of 10 at 1,000/s: the fifth may go 40 ms after the first.
	if took := time.Since(began); took < 40*time.Millisecond {
		t.Fatalf("5 batches of 10 at 1000/s went in %v", took)
	}
	if newPacer(0) != nil {
		t.Fatal("rate 0 should mean no pacer")
	}
	var none *pacer
	none.wait(context.Background(), 10) // no cap: returns at once
}

func TestLedgerBitsAcrossWords(t *testing.T) {
	l := newLedger(true)
	for seq := 0; seq < 200; seq++ {
		l.sent(msgKey{2, seq})
	}
	for seq := 0; seq < 200; seq++ {
		if seq != 130 {
			l.received(msgKey{2, seq}, "g")
		}
	}
	l.received(msgKey{2, 5}, "g") // a duplicate
	l.received(msgKey{1, 70}, "g")
	v := l.verify()
	if v.Acknowledged != 200 || v.Lost != 1 || v.Duplicates != 1 || v.Unacknowledged != 1 || l.outstanding() != 1 {
		t.Fatalf("verify = %+v, outstanding %d", v, l.outstanding())
	}
}

// tolOf returns the tolerance soakSeries gives the named series.
func tolOf(t *testing.T, name string) tolerance {
	t.Helper()
	for _, s := range soakSeries {
		if s.name == name {
			return s.tol
		}
	}
	t.Fatalf("no series %q", name)
	return tolerance{}
}
