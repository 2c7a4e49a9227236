// Package metrics is fifoq's Prometheus instrumentation: the metric
// definitions, the collectors that read queue figures at scrape time, and
// the /metrics handler. It keeps its own registry, never the global
// default, so that several servers in one process (as in tests) do not
// share or clash over metrics.
//
// It knows nothing of the server or the log: the server hands it functions
// that read the figures (WatchServer) and reports each request
// (ObserveRequest); the Raft log reports through the Observer returned by
// LogObserver, which satisfies replog.Observer.
package metrics

import (
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every fifoq metric.
const namespace = "fifoq"

// Registry holds fifoq's metrics and serves them.
type Registry struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  *prometheus.CounterVec
	moves    *prometheus.CounterVec

	logOnce sync.Once
	log     *LogObserver

	cluster clusterMetrics
}

// New returns a Registry with the request metrics and the Go runtime and
// process collectors registered. Queue and log metrics are added by
// WatchServer and LogObserver.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	r.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "requests_total",
		Help:      "SQS API requests answered, by action and outcome (ok, or the error code). Requests that failed before their action was known have action \"unknown\".",
	}, []string{"action", "outcome"})
	r.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "request_duration_seconds",
		Help:      "Time to answer an SQS API request, by action, from its arrival to its answer; a long poll's wait is included.",
		Buckets:   requestBuckets,
	}, []string{"action"})
	r.moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "queue_moves_total",
		Help:      "Moves of a queue between shards this node drove to their end, as the first group's leader: moved, or abandoned (the queue stayed where it was).",
	}, []string{"result"})
	r.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "writes_refused_total",
		Help:      "Writes refused with a retryable 503 to protect the server: sends and queue creations while the process is at its memory budget (reason=\"memory\"), any write while the data dir's disk is almost full (reason=\"disk\").",
	}, []string{"reason"})
	// Both series exist from the start, so that a rate of either reads 0, not absent.
	r.refused.WithLabelValues(RefusedMemory)
	r.refused.WithLabelValues(RefusedDisk)
	r.moves.WithLabelValues(MoveMoved)
	r.moves.WithLabelValues(MoveAbandoned)
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.requests, r.duration, r.refused, r.moves,
	)
	return r
}

// The results of fifoq_queue_moves_total.
const (
	// MoveMoved: the queue is in its new shard.
	MoveMoved = "moved"
	// MoveAbandoned: the move was given up; the queue stayed.
	MoveAbandoned = "abandoned"
)

// QueueMoved counts a move of a queue between shards that this node drove
// to its end, with its result (MoveMoved or MoveAbandoned).
func (r *Registry) QueueMoved(result string) {
	r.moves.WithLabelValues(result).Inc()
}

// The reasons of fifoq_writes_refused_total.
const (
	// RefusedMemory: the process is at its memory budget.
	RefusedMemory = "memory"
	// RefusedDisk: the data dir's disk is almost full.
	RefusedDisk = "disk"
)

// WritesRefused counts n writes refused for the given reason
// (RefusedMemory or RefusedDisk).
func (r *Registry) WritesRefused(reason string, n int) {
	r.refused.WithLabelValues(reason).Add(float64(n))
}

// MemorySource reads the memory guard's figures at scrape time.
type MemorySource struct {
	// Budget is the memory budget, in bytes.
	Budget int64
	// Live returns the memory the process needed at the guard's last
	// measurement, in bytes.
	Live func() int64
	// Refusing reports whether sends are refused for memory now.
	Refusing func() bool
}

// WatchMemory registers the memory budget's metrics. A server without a
// budget does not call it, and so has none of them.
func (r *Registry) WatchMemory(src MemorySource) error {
	budget := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "memory_budget_bytes",
		Help:      "The server's memory budget (--max-memory, or its cgroup's limit): sends are refused as the memory it needs nears it.",
	}, func() float64 { return float64(src.Budget) })
	live := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "memory_live_bytes",
		Help:      "Memory the server needed at the memory guard's last measurement: the heap found live by the last garbage collection, the Go runtime's memory beside the heap, and the memory the engine holds outside the heap.",
	}, func() float64 { return float64(src.Live()) })
	refusing := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "memory_refusing_sends",
		Help:      "1 while sends are refused because the server is at its memory budget, else 0.",
	}, func() float64 {
		if src.Refusing() {
			return 1
		}
		return 0
	})
	for _, c := range []prometheus.Collector{budget, live, refusing} {
		if err := r.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// requestBuckets span a fast read (sub-millisecond) to the longest long
// poll (20 s) and a slow client beyond it.
var requestBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30}

// Handler returns the HTTP handler that serves the metrics in the
// Prometheus text format (or OpenMetrics, when the scraper asks for it).
// Errors while collecting are logged to logger and the metrics that could
// be collected are served.
func (r *Registry) Handler(logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}
