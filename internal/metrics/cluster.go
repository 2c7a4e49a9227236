package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClusterFigures is one node's view of its cluster, read at scrape time.
type ClusterFigures struct {
	// Role is the node's Raft state: Leader, Follower, Candidate or
	// Shutdown.
	Role         string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// LastContact is when a follower last heard from the leader (zero on
	// the leader, or before any contact).
	LastContact time.Time
	// LeaderChanges counts the leaders this node has seen elected.
	LeaderChanges uint64
	// ClockOffsets is, by peer node id, how far the peer's wall clock was
	// ahead of this node's at the last measurement (negative: behind).
	ClockOffsets map[string]time.Duration
}

// clusterRoles are the values of the role label, each reported 0 or 1.
var clusterRoles = []string{"Leader", "Follower", "Candidate", "Shutdown"}

// clusterMetrics holds the forwarded-requests counter, registered on
// first use.
type clusterMetrics struct {
	once      sync.Once
	forwarded prometheus.Counter
}

// ObserveForward counts one API request this node forwarded to its
// cluster's leader.
func (r *Registry) ObserveForward() {
	r.cluster.once.Do(func() {
		r.cluster.forwarded = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "cluster", Name: "forwarded_requests_total",
			Help: "API requests this node forwarded to the cluster's leader.",
		})
		r.reg.MustRegister(r.cluster.forwarded)
	})
	r.cluster.forwarded.Inc()
}

// WatchCluster registers the cluster metrics, read from figures at every
// scrape. A server on a log without a cluster view does not call it.
func (r *Registry) WatchCluster(figures func() ClusterFigures) error {
	return r.reg.Register(&clusterCollector{figures: figures})
}

type clusterCollector struct {
	figures func() ClusterFigures
}

var (
	descRole = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "role"),
		"1 for this node's Raft role, 0 for the others.", []string{"role"}, nil)
	descTerm = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "term"),
		"This node's current Raft term.", nil, nil)
	descCommit = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "commit_index"),
		"The highest log index this node knows to be committed.", nil, nil)
	descApplied = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "applied_index"),
		"The highest log index this node has applied to its state.", nil, nil)
	descLag = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "apply_lag_entries"),
		"Committed log entries this node has yet to apply.", nil, nil)
	descContact = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "leader_last_contact_seconds"),
		"Seconds since this follower last heard from the leader; absent on the leader and before any contact.", nil, nil)
	descChanges = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "leader_changes_total"),
		"Leaders this node has seen elected since it started.", nil, nil)
	descClockOffset = prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "clock_offset_seconds"),
		"How far a peer's wall clock is ahead of this node's (negative: behind), beyond the measurement's uncertainty, at the last measurement.", []string{"peer"}, nil)
)

// Describe implements prometheus.Collector.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRole, descTerm, descCommit, descApplied, descLag, descContact, descChanges, descClockOffset} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.figures()
	for _, role := range clusterRoles {
		v := 0.0
		if role == f.Role {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descRole, prometheus.GaugeValue, v, role)
	}
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(f.Term))
	ch <- prometheus.MustNewConstMetric(descCommit, prometheus.GaugeValue, float64(f.CommitIndex))
	ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(f.AppliedIndex))
	lag := 0.0
	if f.CommitIndex > f.AppliedIndex {
		lag = float64(f.CommitIndex - f.AppliedIndex)
	}
	ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, lag)
	if !f.LastContact.IsZero() {
		ch <- prometheus.MustNewConstMetric(descContact, prometheus.GaugeValue, time.Since(f.LastContact).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(descChanges, prometheus.CounterValue, float64(f.LeaderChanges))
	for peer, off := range f.ClockOffsets {
		ch <- prometheus.MustNewConstMetric(descClockOffset, prometheus.GaugeValue, off.Seconds(), peer)
	}
}
