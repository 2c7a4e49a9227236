package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeServer is a ServerSource whose figures the test sets.
type fakeServer struct {
	mu      sync.Mutex
	queues  []QueueFigures
	waiters int
}

func (f *fakeServer) source() ServerSource {
	return ServerSource{
		Queues: func(dst []QueueFigures) []QueueFigures {
			f.mu.Lock()
			defer f.mu.Unlock()
			return append(dst, f.queues...)
		},
		LongPollWaiters: func() int {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.waiters
		},
		OutsideHeap: func() int64 { return 12345 },
	}
}

// fetch scrapes the registry over HTTP and returns the raw text.
func fetch(t *testing.T, r *Registry) string {
	t.Helper()
	ts := httptest.NewServer(r.Handler(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// parse parses the text format.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return fams
}

// labeled returns the series of name whose label has the value, or nil.
func labeled(fams map[string]*dto.MetricFamily, name, label, value string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == label && l.GetValue() == value {
				return m
			}
		}
	}
	return nil
}

// series returns the metric of family name with the given queue label,
// or, for queue "", its first series.
func series(fams map[string]*dto.MetricFamily, name, queue string) *dto.Metric {
	if queue == "" {
		if ms := fams[name].GetMetric(); len(ms) > 0 {
			return ms[0]
		}
		return nil
	}
	return labeled(fams, name, "queue", queue)
}

func TestQueueMetrics(t *testing.T) {
	r := New()
	src := &fakeServer{waiters: 3, queues: []QueueFigures{
		{Region: "us-east-1", Account: "000000000000", Name: "a.fifo", Visible: 1, NotVisible: 2, Delayed: 3, OldestAge: 1500 * time.Millisecond,
			Sent: 4, SentBytes: 5, Received: 6, Deleted: 7, EmptyReceives: 8},
		{Region: "us-east-1", Account: "111111111111", Name: "b"},
		// The same name in another region is another queue.
		{Region: "eu-west-1", Account: "111111111111", Name: "b"},
	}}
	if err := r.WatchServer(src.source()); err != nil {
		t.Fatalf("WatchServer: %v", err)
	}
	if err := r.WatchServer(src.source()); err == nil {
		t.Errorf("a second WatchServer on one registry succeeded")
	}
	fams := parse(t, fetch(t, r))
	for _, c := range []struct {
		name string
		want float64
	}{
		{"fifoq_queue_messages_visible", 1},
		{"fifoq_queue_messages_not_visible", 2},
		{"fifoq_queue_messages_delayed", 3},
		{"fifoq_queue_oldest_message_age_seconds", 1.5},
		{"fifoq_queue_messages_sent_total", 4},
		{"fifoq_queue_sent_bytes_total", 5},
		{"fifoq_queue_messages_received_total", 6},
		{"fifoq_queue_messages_deleted_total", 7},
		{"fifoq_queue_empty_receives_total", 8},
	} {
		m := series(fams, c.name, "a.fifo")
		if m == nil {
			t.Errorf("%s{queue=a.fifo} missing", c.name)
			continue
		}
		got := m.GetGauge().GetValue()
		if strings.HasSuffix(c.name, "_total") {
			got = m.GetCounter().GetValue()
		}
		if got != c.want {
			t.Errorf("%s{queue=a.fifo} = %v, want %v", c.name, got, c.want)
		}
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if len(labels) != 3 || labels["account"] != "000000000000" || labels["region"] != "us-east-1" {
			t.Errorf("%s labels = %v, want queue, account and region", c.name, labels)
		}
	}
	if m := series(fams, "fifoq_long_poll_waiters", ""); m.GetGauge().GetValue() != 3 {
		t.Errorf("fifoq_long_poll_waiters = %v, want 3", m)
	}
	if m := series(fams, "fifoq_memory_outside_heap_bytes", ""); m.GetGauge().GetValue() != 12345 {
		t.Errorf("fifoq_memory_outside_heap_bytes = %v, want 12345", m)
	}

	// A queue that is gone from the source is gone from the metrics.
	src.mu.Lock()
	src.queues = src.queues[:1]
	src.mu.Unlock()
	fams = parse(t, fetch(t, r))
	if series(fams, "fifoq_queue_messages_visible", "b") != nil {
		t.Errorf("a queue no longer listed still has series")
	}
}

func TestRequestMetrics(t *testing.T) {
	r := New()
	r.ObserveRequest("SendMessage", OutcomeOK, 3*time.Millisecond)
	r.ObserveRequest("SendMessage", OutcomeOK, 5*time.Millisecond)
	r.ObserveRequest("SendMessage", "QueueDoesNotExist", time.Millisecond)
	r.ObserveRequest("", "InvalidAction", time.Millisecond)
	fams := parse(t, fetch(t, r))
	counts := map[string]float64{}
	for _, m := range fams["fifoq_requests_total"].Metric {
		var action, outcome string
		for _, l := range m.Label {
			switch l.GetName() {
			case "action":
				action = l.GetValue()
			case "outcome":
				outcome = l.GetValue()
			}
		}
		counts[action+"/"+outcome] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"SendMessage/ok": 2, "SendMessage/QueueDoesNotExist": 1, "unknown/InvalidAction": 1}
	if len(counts) != len(want) {
		t.Errorf("request counters %v, want %v", counts, want)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("requests %s = %v, want %v", k, counts[k], v)
		}
	}
	for _, m := range fams["fifoq_request_duration_seconds"].Metric {
		if m.Label[0].GetValue() != "SendMessage" {
			continue
		}
		if h := m.GetHistogram(); h.GetSampleCount() != 3 || h.GetSampleSum() < 0.0089 || h.GetSampleSum() > 0.0091 {
			t.Errorf("SendMessage latency: %d samples, sum %v; want 3 and 0.009", h.GetSampleCount(), h.GetSampleSum())
		}
	}
}

func TestLogMetrics(t *testing.T) {
	r := New()
	if text := fetch(t, r); strings.Contains(text, "fifoq_log_") {
		t.Fatalf("log metrics served before a log observer exists")
	}
	o := r.LogObserver()
	if r.LogObserver() != o {
		t.Fatalf("LogObserver returned a second observer")
	}
	o.GroupCommitted(3, 2*time.Millisecond)
	o.GroupCommitted(5, 4*time.Millisecond)
	fams := parse(t, fetch(t, r))
	batch := series(fams, "fifoq_log_commands_per_entry", "").GetHistogram()
	if batch.GetSampleCount() != 2 || batch.GetSampleSum() != 8 {
		t.Errorf("commands per entry: %d entries, %v commands; want 2 and 8", batch.GetSampleCount(), batch.GetSampleSum())
	}
	if c := series(fams, "fifoq_log_commit_duration_seconds", "").GetHistogram().GetSampleCount(); c != 2 {
		t.Errorf("commit latency samples = %d, want 2", c)
	}
	if _, found := fams["fifoq_log_snapshot_age_seconds"]; found {
		t.Errorf("snapshot age served before any snapshot")
	}
	if v := labeled(fams, "fifoq_log_segments_created_total", "from", "spare").GetCounter().GetValue(); v != 0 {
		t.Errorf("segments from spares before any: %v", v)
	}
	o.SegmentCreated(false)
	o.SegmentCreated(true)
	o.SegmentCreated(true)
	fams = parse(t, fetch(t, r))
	if v := labeled(fams, "fifoq_log_segments_created_total", "from", "spare").GetCounter().GetValue(); v != 2 {
		t.Errorf("segments from spares = %v, want 2", v)
	}
	if v := labeled(fams, "fifoq_log_segments_created_total", "from", "allocated").GetCounter().GetValue(); v != 1 {
		t.Errorf("segments allocated = %v, want 1", v)
	}

	o.SnapshotDone(time.Now().Add(-time.Minute))
	age := series(parse(t, fetch(t, r)), "fifoq_log_snapshot_age_seconds", "").GetGauge().GetValue()
	if age < 60 || age > 120 {
		t.Errorf("snapshot age = %v, want about 60", age)
	}
}

// TestLogMetricsOfShards reports the body stores and snapshots of a
// node's first group and two shards: the body store's gauges are their
// sums, the snapshot age the oldest group's, and a shard whose replica
// closed drops out of both.
func TestLogMetricsOfShards(t *testing.T) {
	r := New()
	o := r.LogObserver()
	s1, s2 := o.Group(1), o.Group(2)
	o.BodyStore(1, 100, 50)
	s1.BodyStore(2, 1000, 500)
	s2.BodyStore(3, 10000, 5000)
	s1.BodyStore(2, 2000, 700) // a shard's later report replaces its own
	now := time.Now()
	o.SnapshotDone(now.Add(-time.Minute))
	s1.SnapshotDone(now.Add(-10 * time.Minute))
	s2.SnapshotDone(now)
	gauge := func(name string) float64 { return series(parse(t, fetch(t, r)), name, "").GetGauge().GetValue() }
	if f, b, l := gauge("fifoq_body_store_files"), gauge("fifoq_body_store_bytes"), gauge("fifoq_body_store_live_bytes"); f != 6 || b != 12100 || l != 5750 {
		t.Errorf("body store of three groups: %v files, %v bytes, %v live; want their sums 6, 12100, 5750", f, b, l)
	}
	if age := gauge("fifoq_log_snapshot_age_seconds"); age < 600 || age > 660 {
		t.Errorf("snapshot age = %v, want the oldest group's, about 600", age)
	}
	o.ForgetGroup(1)
	if b := gauge("fifoq_body_store_bytes"); b != 10100 {
		t.Errorf("body store bytes after shard 1 closed = %v, want 10100", b)
	}
	if age := gauge("fifoq_log_snapshot_age_seconds"); age < 60 || age > 120 {
		t.Errorf("snapshot age after shard 1 closed = %v, want about 60", age)
	}
}

// TestShardMetrics serves one series per group a node holds.
func TestShardMetrics(t *testing.T) {
	r := New()
	figures := []ShardFigures{{Shard: 0, Role: "Follower", CommitIndex: 9, AppliedIndex: 7, Queues: 1}, {Shard: 3, Role: "Leader", Term: 4, Queues: 5, LeaderChanges: 2}}
	if err := r.WatchShards(func() []ShardFigures { return figures }); err != nil {
		t.Fatal(err)
	}
	fams := parse(t, fetch(t, r))
	at := func(name, shard string) *dto.Metric { return labeled(fams, name, "shard", shard) }
	lead := 0.0
	for _, m := range fams["fifoq_shard_role"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["role"] == "Leader" {
			lead += m.GetGauge().GetValue()
			if labels["shard"] == "3" && m.GetGauge().GetValue() != 1 {
				t.Errorf("shard 3's leader series is %v, want 1", m.GetGauge().GetValue())
			}
		}
	}
	switch {
	case lead != 1:
		t.Errorf("the node leads %v groups by fifoq_shard_role, want 1", lead)
	case at("fifoq_shard_apply_lag_entries", "0").GetGauge().GetValue() != 2:
		t.Errorf("shard 0's apply lag: %v, want 2", at("fifoq_shard_apply_lag_entries", "0"))
	case at("fifoq_shard_queues", "3").GetGauge().GetValue() != 5 || at("fifoq_shard_term", "3").GetGauge().GetValue() != 4:
		t.Errorf("shard 3's queues and term: %v, %v", at("fifoq_shard_queues", "3"), at("fifoq_shard_term", "3"))
	case at("fifoq_shard_leader_changes_total", "3").GetCounter().GetValue() != 2:
		t.Errorf("shard 3's leader changes: %v", at("fifoq_shard_leader_changes_total", "3"))
	}
}

// TestMetricNamesFollowConventions runs Prometheus's own linter over every
// fifoq metric: units in names, _total on counters, help text.
func TestMetricNamesFollowConventions(t *testing.T) {
	r := New()
	src := &fakeServer{queues: []QueueFigures{{Account: "000000000000", Name: "q"}}}
	if err := r.WatchServer(src.source()); err != nil {
		t.Fatal(err)
	}
	o := r.LogObserver()
	o.GroupCommitted(1, time.Millisecond)
	o.SnapshotDone(time.Now())
	r.ObserveRequest("ListQueues", OutcomeOK, time.Millisecond)
	if err := r.WatchShards(func() []ShardFigures { return []ShardFigures{{Shard: 1, Role: "Leader"}} }); err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(strings.NewReader(fetch(t, r))).Lint()
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "fifoq_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}
