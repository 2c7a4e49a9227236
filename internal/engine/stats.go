package engine

import (
	"errors"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// QueueStats are one queue's message figures at one moment: the gauges
// CloudWatch keeps for an SQS queue, for metrics and the console.
type QueueStats struct {
	// Queue is the queue's account and name.
	Queue api.QueueKey
	// FIFO tells a FIFO queue from a standard one.
	FIFO bool
	// Visible, NotVisible and Delayed are the numbers GetQueueAttributes
	// gives as ApproximateNumberOfMessages, ...NotVisible and ...Delayed.
	Visible, NotVisible, Delayed int
	// OldestAt is when the retention period of the oldest stored message
	// began (Unix ns), 0 when the queue holds none. That is its send time,
	// or for a message moved into the queue by a FIFO redrive or a move
	// task, the time of the move; a standard dead-letter queue keeps the
	// original enqueue time, as its retention does.
	OldestAt int64
}

// Add adds o's message counts to s's and keeps the older of their oldest
// messages: one queue's figures over its partitions, or over the copies
// of a queue that moves between two groups one node holds.
func (s *QueueStats) Add(o QueueStats) {
	s.Visible += o.Visible
	s.NotVisible += o.NotVisible
	s.Delayed += o.Delayed
	if o.OldestAt != 0 && (s.OldestAt == 0 || o.OldestAt < s.OldestAt) {
		s.OldestAt = o.OldestAt
	}
}

// CommandsApplied returns every queue this engine holds, with how many
// commands it applied on each since it was made or restored: the queues'
// loads, for a balancer that compares them between two moments. The
// counts are not part of the queues' state: a restored engine counts
// from 0.
func (e *Engine) CommandsApplied() map[api.QueueKey]uint64 {
	out := make(map[api.QueueKey]uint64, len(e.queues))
	for k, q := range e.queues {
		out[k] = q.applied
	}
	return out
}

// QueueLoad is what a balancer reads of one queue of an engine
// (QueueLoads).
type QueueLoad struct {
	// Applied is as CommandsApplied.
	Applied uint64
	// HighThroughput: the queue is a FIFO queue in high-throughput mode
	// (FifoThroughputLimit perMessageGroupId, which SQS allows only with
	// DeduplicationScope messageGroup): one a cluster spreads over
	// partitions.
	HighThroughput bool
	// Splittable: a SplitQueueRequest at a hash inside the queue's range
	// would be carried out now (not a dead-letter queue, no move task,
	// no outbox, deduplicating by group, not fenced...). Only reported
	// for a high-throughput queue.
	Splittable bool
	// NotSplittable says why a high-throughput queue is not Splittable,
	// for an operator reading why it stays whole.
	NotSplittable string `json:",omitempty"`
	// SplitAt is the hash that halves the queue's message groups holding
	// messages now (the median of their hashes, of a sample where they
	// are many), where a split would part its load; 0 when fewer than
	// two groups hold messages, which no split parts. Only reported for
	// a high-throughput queue.
	SplitAt uint32
	// Sent: a message was ever sent to the queue (its sequence numbers
	// began). A cluster spreads a high-throughput queue once it is used:
	// one made to be a dead-letter queue, which a split queue cannot be,
	// is named so before anything reaches it. Only reported for a
	// high-throughput queue.
	Sent bool
}

// splitAtSample bounds the groups whose hashes QueueLoads sorts for a
// queue's SplitAt: a sample's median is as good a cut, at a bounded cost.
const splitAtSample = 1024

// QueueLoads returns every queue this engine holds with its load and
// mode as of time now: CommandsApplied, with whether each is
// high-throughput, and for those whether and where they would split.
// Which groups a large queue's SplitAt samples varies from call to call
// (map order): it is a reading, not state.
func (e *Engine) QueueLoads(now int64) map[api.QueueKey]QueueLoad {
	out := make(map[api.QueueKey]QueueLoad, len(e.queues))
	for k, q := range e.queues {
		l := QueueLoad{Applied: q.applied, HighThroughput: q.highThroughput()}
		if l.HighThroughput {
			refusal := e.splitRefusal(q, now)
			l.Splittable = refusal == nil
			var ae *api.Error
			if errors.As(refusal, &ae) {
				l.NotSplittable = ae.Message
			}
			l.SplitAt = q.medianGroupHash()
			l.Sent = q.lastSeq > 0
		}
		out[k] = l
	}
	return out
}

// highThroughput reports whether q is a FIFO queue in high-throughput
// mode.
func (q *queue) highThroughput() bool {
	return q.fifo && q.attrs.FifoThroughputLimit == limitPerMessageGrp
}

// medianGroupHash returns the hash above which half of q's groups holding
// messages fall (of a sample of splitAtSample of them), or 0 if fewer
// than two groups hold messages or they share one hash.
func (q *queue) medianGroupHash() uint32 {
	if len(q.groups) < 2 {
		return 0
	}
	hashes := make([]uint32, 0, min(len(q.groups), splitAtSample))
	for id := range q.groups {
		if len(hashes) == splitAtSample {
			break
		}
		hashes = append(hashes, api.GroupHash(id))
	}
	slices.Sort(hashes)
	// The cut is the first hash of the upper half: at least one group
	// falls on each side unless every hash is the lowest.
	at := hashes[len(hashes)/2]
	if at == hashes[0] {
		return 0
	}
	return at
}

// QueueStats returns the figures of queue q as of time now, and false if
// there is no such queue. Like Read, it accounts for the delays,
// visibility timeouts and retention periods that ran out by now without
// applying them, and changes nothing. Its cost is that of
// GetQueueAttributes: constant, plus the messages whose timer or retention
// period ran out since a command last touched the queue.
func (e *Engine) QueueStats(q api.QueueKey, now int64) (QueueStats, bool) {
	qu := e.queues[q]
	if qu == nil {
		return QueueStats{}, false
	}
	return qu.statsAt(max(now, e.now)), true
}

// AppendQueueStats appends the figures of every queue as of time now to
// dst, in no particular order, and returns the extended slice. It changes
// nothing; its cost is that of QueueStats for each queue.
func (e *Engine) AppendQueueStats(dst []QueueStats, now int64) []QueueStats {
	t := max(now, e.now)
	for _, qu := range e.queues {
		dst = append(dst, qu.statsAt(t))
	}
	return dst
}

// statsAt computes the queue's figures at time t without changing it.
func (q *queue) statsAt(t int64) QueueStats {
	s := QueueStats{Queue: q.key, FIFO: q.fifo}
	s.Visible, s.NotVisible, s.Delayed = q.countsAt(t)
	s.OldestAt = q.oldestAt(t)
	return s
}

// oldestAt returns the start of the retention period of the oldest message
// that has not outlived it by time t, or 0 if there is none. The arrival
// list is in retention order, and the aged heap is ordered the same way,
// so only messages that expired unprocessed are passed over.
func (q *queue) oldestAt(t int64) int64 {
	limit := q.retentionLimit(t)
	oldest := int64(0)
	for m := q.arrivalHead; m != nil; m = m.anext {
		if m.enqueuedAt > limit {
			oldest = m.enqueuedAt
			break
		}
	}
	// In the aged heap every expired message sorts before every live one,
	// so the live items where the scan stops hold the smallest live one.
	q.aged.Scan(func(m *message) bool { return m.enqueuedAt <= limit }, func(m *message) {
		if oldest == 0 || m.enqueuedAt < oldest {
			oldest = m.enqueuedAt
		}
	})
	return oldest
}

// QueueCount returns the number of queues.
func (e *Engine) QueueCount() int { return len(e.queues) }

// MessageCount returns the number of stored messages, in any state.
func (e *Engine) MessageCount() int {
	n := 0
	for _, q := range e.queues {
		n += q.nVisible + q.nInflight + q.nDelayed
	}
	return n
}
