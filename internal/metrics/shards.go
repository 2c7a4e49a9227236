package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// ShardFigures is one group's figures on this node, read at scrape time:
// the first group (Shard 0) or a shard this node holds a replica of.
type ShardFigures struct {
	Shard uint32
	// Role is this node's Raft role in the group: Leader, Follower,
	// Candidate or Shutdown.
	Role          string
	Term          uint64
	CommitIndex   uint64
	AppliedIndex  uint64
	LeaderChanges uint64
	// Queues is how many queues the group holds.
	Queues int
}

var (
	descShardRole = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "role"),
		"1 for this node's Raft role in the group, 0 for the others, for every group it holds a replica of (shard 0: the first group).", []string{"shard", "role"}, nil)
	descShardTerm = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "term"),
		"This node's current Raft term in the group.", []string{"shard"}, nil)
	descShardCommit = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "commit_index"),
		"The highest index of the group's log this node knows to be committed.", []string{"shard"}, nil)
	descShardApplied = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "applied_index"),
		"The highest index of the group's log this node's replica has applied.", []string{"shard"}, nil)
	descShardLag = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "apply_lag_entries"),
		"Committed entries of the group this node's replica has yet to apply.", []string{"shard"}, nil)
	descShardChanges = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "leader_changes_total"),
		"Leaders of the group this node has seen elected since its replica opened.", []string{"shard"}, nil)
	descShardQueues = prometheus.NewDesc(prometheus.BuildFQName(namespace, "shard", "queues"),
		"Queues the group holds.", []string{"shard"}, nil)
)

// WatchShards registers the per-group metrics of a cluster member with
// shards, read from figures at every scrape: one series per group this
// node holds a replica of, so that a group's replicas can be compared
// across nodes and its leader found.
func (r *Registry) WatchShards(figures func() []ShardFigures) error {
	return r.reg.Register(&shardsCollector{figures: figures})
}

type shardsCollector struct {
	figures func() []ShardFigures
}

// Describe implements prometheus.Collector.
func (c *shardsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShardRole, descShardTerm, descShardCommit, descShardApplied, descShardLag, descShardChanges, descShardQueues} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *shardsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.figures() {
		shard := strconv.FormatUint(uint64(f.Shard), 10)
		for _, role := range clusterRoles {
			v := 0.0
			if role == f.Role {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descShardRole, prometheus.GaugeValue, v, shard, role)
		}
		ch <- prometheus.MustNewConstMetric(descShardTerm, prometheus.GaugeValue, float64(f.Term), shard)
		ch <- prometheus.MustNewConstMetric(descShardCommit, prometheus.GaugeValue, float64(f.CommitIndex), shard)
		ch <- prometheus.MustNewConstMetric(descShardApplied, prometheus.GaugeValue, float64(f.AppliedIndex), shard)
		lag := 0.0
		if f.CommitIndex > f.AppliedIndex {
			lag = float64(f.CommitIndex - f.AppliedIndex)
		}
		ch <- prometheus.MustNewConstMetric(descShardLag, prometheus.GaugeValue, lag, shard)
		ch <- prometheus.MustNewConstMetric(descShardChanges, prometheus.CounterValue, float64(f.LeaderChanges), shard)
		ch <- prometheus.MustNewConstMetric(descShardQueues, prometheus.GaugeValue, float64(f.Queues), shard)
	}
}
