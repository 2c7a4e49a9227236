package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LogObserver measures the durable command log. It satisfies
// replog.Observer; pass it as replog.RaftConfig.Observer of a node's first
// group, and Group(N) as that of its shard N. The histograms and counters
// take every group's entries; the body store's gauges are the sums over
// the groups, and the snapshot age that of the group whose last snapshot
// is oldest (the one an alert on snapshots is about).
type LogObserver struct {
	commit      prometheus.Histogram
	batch       prometheus.Histogram
	segments    *prometheus.CounterVec
	refused     *prometheus.CounterVec // the registry's fifoq_writes_refused_total
	bodyFiles   prometheus.Gauge
	bodyBytes   prometheus.Gauge
	bodyLive    prometheus.Gauge
	bodiesMoved prometheus.Counter

	mu     sync.Mutex
	groups map[uint32]*groupFigures
}

// groupFigures are the last figures one group's log reported.
type groupFigures struct {
	files        int
	bytes, live  int64
	lastSnapshot time.Time // zero if none yet
}

// LogObserver returns the observer of the command log, registering the log
// metrics the first time it is called. A server on an in-memory log does
// not call it, and so has no log metrics.
func (r *Registry) LogObserver() *LogObserver {
	r.logOnce.Do(func() {
		o := &LogObserver{
			refused: r.refused,
			groups:  map[uint32]*groupFigures{},
			commit: prometheus.NewHistogram(prometheus.HistogramOpts{
				Namespace: namespace,
				Subsystem: "log",
				Name:      "commit_duration_seconds",
				Help:      "Time to commit one log entry (one group commit): from handing it to Raft until it is fsynced and applied.",
				Buckets:   []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
			}),
			batch: prometheus.NewHistogram(prometheus.HistogramOpts{
				Namespace: namespace,
				Subsystem: "log",
				Name:      "commands_per_entry",
				Help:      "Commands carried by one log entry: how many requests one group commit (one fsync) served.",
				Buckets:   prometheus.ExponentialBuckets(1, 2, 11), // 1 to 1024
			}),
			segments: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace,
				Subsystem: "log",
				Name:      "segments_created_total",
				Help:      "Segment files the log created: from a spare written ahead with zeros (from=\"spare\"), or allocated because no spare was ready (from=\"allocated\"), zeroed in place once a sixteenth of it is written; until then its commits cost the disk more.",
			}, []string{"from"}),
		}
		bodyGauge := func(name, help string) prometheus.Gauge {
			return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "body_store", Name: name, Help: help})
		}
		o.bodyFiles = bodyGauge("files", "Files of the body store, where the durable log keeps message bodies.")
		o.bodyBytes = bodyGauge("bytes", "Bytes of the body store's files: live bodies, and those of deleted messages not yet given back.")
		o.bodyLive = bodyGauge("live_bytes", "Bytes of the bodies in the body store that messages still refer to.")
		o.bodiesMoved = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "body_store", Name: "moved_bytes_total",
			Help: "Bytes of live bodies moved out of mostly dead files of the body store (compaction), so that the files could be removed.",
		})
		r.reg.MustRegister(o.bodyFiles, o.bodyBytes, o.bodyLive, o.bodiesMoved)
		// Both series exist from the start, so that a rate of either reads 0, not absent.
		o.segments.WithLabelValues("spare")
		o.segments.WithLabelValues("allocated")
		snapshotAge := prometheus.NewDesc(prometheus.BuildFQName(namespace, "log", "snapshot_age_seconds"),
			"Seconds since the last snapshot of the state was written or restored at start (of the group whose last one is oldest, on a node with shards); absent until there is one.", nil, nil)
		r.reg.MustRegister(o.commit, o.batch, o.segments, &snapshotAgeCollector{desc: snapshotAge, oldest: o.oldestSnapshot})
		r.log = o
	})
	return r.log
}

// GroupCommitted implements replog.Observer.
func (o *LogObserver) GroupCommitted(commands int, took time.Duration) {
	o.batch.Observe(float64(commands))
	o.commit.Observe(took.Seconds())
}

// SnapshotDone implements replog.Observer, for the first group.
func (o *LogObserver) SnapshotDone(at time.Time) { o.snapshotDone(0, at) }

func (o *LogObserver) snapshotDone(group uint32, at time.Time) {
	o.mu.Lock()
	o.group(group).lastSnapshot = at
	o.mu.Unlock()
}

// group returns a group's figures, made on first use; o.mu is held.
func (o *LogObserver) group(id uint32) *groupFigures {
	g, ok := o.groups[id]
	if !ok {
		g = &groupFigures{}
		o.groups[id] = g
	}
	return g
}

// oldestSnapshot returns the time of the oldest of the groups' last
// snapshots, and false if no group has taken or restored one yet.
func (o *LogObserver) oldestSnapshot() (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var oldest time.Time
	for _, g := range o.groups {
		if !g.lastSnapshot.IsZero() && (oldest.IsZero() || g.lastSnapshot.Before(oldest)) {
			oldest = g.lastSnapshot
		}
	}
	return oldest, !oldest.IsZero()
}

// SegmentCreated implements replog.Observer.
func (o *LogObserver) SegmentCreated(fromSpare bool) {
	from := "allocated"
	if fromSpare {
		from = "spare"
	}
	o.segments.WithLabelValues(from).Inc()
}

// DiskFull implements replog.Observer.
func (o *LogObserver) DiskFull(refused int) {
	o.refused.WithLabelValues(RefusedDisk).Add(float64(refused))
}

// BodyStore implements replog.Observer, for the first group.
func (o *LogObserver) BodyStore(files int, bytes, live int64) { o.bodyStore(0, files, bytes, live) }

func (o *LogObserver) bodyStore(group uint32, files int, bytes, live int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.group(group)
	g.files, g.bytes, g.live = files, bytes, live
	o.setBodyGauges()
}

// setBodyGauges sets the body store's gauges to the groups' sums; o.mu
// is held.
func (o *LogObserver) setBodyGauges() {
	var files int
	var bytes, live int64
	for _, g := range o.groups {
		files += g.files
		bytes += g.bytes
		live += g.live
	}
	o.bodyFiles.Set(float64(files))
	o.bodyBytes.Set(float64(bytes))
	o.bodyLive.Set(float64(live))
}

// Group returns the observer of shard id's log on this node (id 0 is the
// first group, o itself).
func (o *LogObserver) Group(id uint32) *GroupObserver { return &GroupObserver{o: o, id: id} }

// ForgetGroup drops shard id's figures from the sums, once its replica on
// this node is closed.
func (o *LogObserver) ForgetGroup(id uint32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.groups, id)
	o.setBodyGauges()
}

// GroupObserver is the observer of one shard's log (LogObserver.Group). It
// satisfies replog.Observer.
type GroupObserver struct {
	o  *LogObserver
	id uint32
}

// GroupCommitted implements replog.Observer.
func (g *GroupObserver) GroupCommitted(commands int, took time.Duration) {
	g.o.GroupCommitted(commands, took)
}

// SnapshotDone implements replog.Observer.
func (g *GroupObserver) SnapshotDone(at time.Time) { g.o.snapshotDone(g.id, at) }

// SegmentCreated implements replog.Observer.
func (g *GroupObserver) SegmentCreated(fromSpare bool) { g.o.SegmentCreated(fromSpare) }

// DiskFull implements replog.Observer.
func (g *GroupObserver) DiskFull(refused int) { g.o.DiskFull(refused) }

// BodyStore implements replog.Observer.
func (g *GroupObserver) BodyStore(files int, bytes, live int64) {
	g.o.bodyStore(g.id, files, bytes, live)
}

// BodiesMoved implements replog.Observer.
func (g *GroupObserver) BodiesMoved(bytes int64) { g.o.BodiesMoved(bytes) }

// BodiesMoved implements replog.Observer.
func (o *LogObserver) BodiesMoved(bytes int64) {
	o.bodiesMoved.Add(float64(bytes))
}

// snapshotAgeCollector reports the age of the last snapshot at scrape
// time, and nothing before the first one: an age from some other moment
// would look like a snapshot that never happened.
type snapshotAgeCollector struct {
	desc   *prometheus.Desc
	oldest func() (time.Time, bool)
}

// Describe implements prometheus.Collector.
func (c *snapshotAgeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *snapshotAgeCollector) Collect(ch chan<- prometheus.Metric) {
	at, ok := c.oldest()
	if !ok {
		return
	}
	age := time.Since(at).Seconds()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, max(age, 0))
}
