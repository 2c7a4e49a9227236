package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// QueueFigures are one queue's figures at the moment of a scrape: the
// metrics CloudWatch gives for an SQS queue.
type QueueFigures struct {
	// Region, Account and Name identify the queue: the same name in two
	// regions is two queues (Region is always spelled out here).
	Region, Account, Name string
	// Visible, NotVisible and Delayed are the queue's messages by state
	// (ApproximateNumberOfMessagesVisible, ...NotVisible, ...Delayed).
	Visible, NotVisible, Delayed int
	// OldestAge is the age of the oldest message in the queue
	// (ApproximateAgeOfOldestMessage), 0 when it is empty.
	OldestAge time.Duration
	// Sent, SentBytes, Received, Deleted and EmptyReceives are running
	// totals since the server started (NumberOfMessagesSent,
	// SentMessageSize, NumberOfMessagesReceived, NumberOfMessagesDeleted,
	// NumberOfEmptyReceives).
	Sent, SentBytes, Received, Deleted, EmptyReceives uint64
}

// ServerSource is how the metrics read the server's figures at scrape
// time.
type ServerSource struct {
	// Queues appends the figures of every existing queue to dst and
	// returns the extended slice. A deleted queue is not listed, so its
	// series disappear.
	Queues func(dst []QueueFigures) []QueueFigures
	// LongPollWaiters returns the number of receives waiting for messages.
	LongPollWaiters func() int
	// OutsideHeap, if not nil, returns the memory the engine holds
	// outside the Go heap (engine.OutsideHeapBytes).
	OutsideHeap func() int64
}

// WatchServer registers the queue and long-poll metrics, read from src at
// each scrape. It fails if a server is already watched.
func (r *Registry) WatchServer(src ServerSource) error {
	if src.Queues == nil || src.LongPollWaiters == nil {
		return fmt.Errorf("metrics: ServerSource needs both Queues and LongPollWaiters")
	}
	waiters := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "long_poll_waiters",
		Help:      "ReceiveMessage calls currently waiting for a message (long polls).",
	}, func() float64 { return float64(src.LongPollWaiters()) })
	if err := r.reg.Register(waiters); err != nil {
		return fmt.Errorf("register long-poll metric: %w", err)
	}
	if err := r.reg.Register(&queueCollector{queues: src.Queues}); err != nil {
		r.reg.Unregister(waiters)
		return fmt.Errorf("register queue metrics: %w", err)
	}
	if src.OutsideHeap != nil {
		outside := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "memory_outside_heap_bytes",
			Help:      "Memory the engine holds outside the Go heap, in mappings of its own: the queued messages' records, and the arrays of a snapshot being written. The go_* metrics do not count it; process_resident_memory_bytes does.",
		}, func() float64 { return float64(src.OutsideHeap()) })
		if err := r.reg.Register(outside); err != nil {
			return fmt.Errorf("register memory metric: %w", err)
		}
	}
	return nil
}

var queueLabels = []string{"queue", "account", "region"}

func queueDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "queue", name), help, queueLabels, nil)
}

// The queue metrics, each with the labels queue (the name), account and
// region.
var (
	descVisible = queueDesc("messages_visible",
		"Messages available for retrieval (ApproximateNumberOfMessagesVisible).")
	descNotVisible = queueDesc("messages_not_visible",
		"Messages in flight: received and neither deleted nor visible again (ApproximateNumberOfMessagesNotVisible).")
	descDelayed = queueDesc("messages_delayed",
		"Messages sent with a delay that has not run out (ApproximateNumberOfMessagesDelayed).")
	descOldestAge = queueDesc("oldest_message_age_seconds",
		"Age of the oldest message in the queue, 0 when it is empty (ApproximateAgeOfOldestMessage).")
	descSent = queueDesc("messages_sent_total",
		"Messages accepted by SendMessage and SendMessageBatch since the server started (NumberOfMessagesSent).")
	descSentBytes = queueDesc("sent_bytes_total",
		"Bytes of the messages sent since the server started, body plus message attributes (SentMessageSize).")
	descReceived = queueDesc("messages_received_total",
		"Messages returned by ReceiveMessage since the server started (NumberOfMessagesReceived).")
	descDeleted = queueDesc("messages_deleted_total",
		"Messages deleted by DeleteMessage and DeleteMessageBatch since the server started (NumberOfMessagesDeleted).")
	descEmptyReceives = queueDesc("empty_receives_total",
		"ReceiveMessage calls that returned no message since the server started (NumberOfEmptyReceives).")
)

// queueCollector reads every queue's figures at scrape time. Being a
// collector rather than a set of labelled gauges, it reports exactly the
// queues that exist: a deleted queue's series disappear with it.
type queueCollector struct {
	queues func(dst []QueueFigures) []QueueFigures
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVisible, descNotVisible, descDelayed, descOldestAge,
		descSent, descSentBytes, descReceived, descDeleted, descEmptyReceives} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues(nil) {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, q.Name, q.Account, q.Region)
		}
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), q.Name, q.Account, q.Region)
		}
		gauge(descVisible, float64(q.Visible))
		gauge(descNotVisible, float64(q.NotVisible))
		gauge(descDelayed, float64(q.Delayed))
		gauge(descOldestAge, q.OldestAge.Seconds())
		counter(descSent, q.Sent)
		counter(descSentBytes, q.SentBytes)
		counter(descReceived, q.Received)
		counter(descDeleted, q.Deleted)
		counter(descEmptyReceives, q.EmptyReceives)
	}
}
