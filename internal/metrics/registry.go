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
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.requests, r.duration,
	)
	return r
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
