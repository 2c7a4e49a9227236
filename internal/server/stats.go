package server

import (
	"cmp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/metrics"
)

// QueueCounters are the running totals of one queue since the server
// started, the counters CloudWatch keeps for SQS. They count what requests
// succeeded at, as the client saw it; they are not replicated or persisted,
// so a restart starts them from zero, as Prometheus counters expect.
type QueueCounters struct {
	// Sent counts messages accepted by SendMessage and SendMessageBatch
	// (NumberOfMessagesSent), a deduplicated resend included.
	Sent uint64
	// SentBytes sums their sizes as SQS measures them: body plus message
	// attributes (SentMessageSize).
	SentBytes uint64
	// Received counts messages returned by ReceiveMessage
	// (NumberOfMessagesReceived).
	Received uint64
	// Deleted counts successful DeleteMessage and DeleteMessageBatch entries
	// (NumberOfMessagesDeleted).
	Deleted uint64
	// EmptyReceives counts ReceiveMessage calls that returned no message
	// (NumberOfEmptyReceives).
	EmptyReceives uint64
}

// queueCounters is the live, concurrently updated form of QueueCounters.
type queueCounters struct {
	sent, sentBytes, received, deleted, emptyReceives atomic.Uint64
}

// statsTable holds the counters of every queue seen since the start.
//
// DeleteQueue drops its queue's counters, but a request that was applied
// before the deletion and is counted after it (a long poll answered when
// its queue went, a send racing the delete) brings them back for a queue
// that is gone. prune sweeps those out, so that queues created and deleted
// over days do not pile up here.
type statsTable struct {
	queues  sync.Map // api.QueueKey -> *queueCounters
	deletes atomic.Uint64
}

// pruneEvery is how many DeleteQueue calls pass between sweeps of the
// counters of queues that are gone: often enough to bound them, rarely
// enough that deleting many queues does not cost a sweep each.
const pruneEvery = 256

// prune drops the counters of every queue for which exists is false. A
// queue created between its check and its drop would lose the counts of
// its first requests: its name must have been deleted before, and the
// drop is of counters only.
func (t *statsTable) prune(exists func(api.QueueKey) bool) {
	t.queues.Range(func(k, _ any) bool {
		if !exists(k.(api.QueueKey)) {
			t.queues.Delete(k)
		}
		return true
	})
}

// pruneGone drops the counters of queues the engine no longer has.
func (s *Server) pruneGone() {
	s.stats.prune(func(q api.QueueKey) (ok bool) {
		s.logOf(q).Read(func(e *engine.Engine) { _, ok = e.QueuePolicy(q) })
		return ok
	})
}

func (t *statsTable) of(q api.QueueKey) *queueCounters {
	if c, ok := t.queues.Load(q); ok {
		return c.(*queueCounters)
	}
	c, _ := t.queues.LoadOrStore(q, &queueCounters{})
	return c.(*queueCounters)
}

// record counts the outcome of one successful request on queue q.
func (t *statsTable) record(q api.QueueKey, req api.Request, resp api.Response) {
	switch r := resp.(type) {
	case *api.SendMessageResult:
		in := req.(*api.SendMessageRequest)
		c := t.of(q)
		c.sent.Add(1)
		c.sentBytes.Add(uint64(api.MessageSize(in.MessageBody, in.MessageAttributes)))
	case *api.SendMessageBatchResult:
		if len(r.Successful) == 0 {
			return
		}
		in := req.(*api.SendMessageBatchRequest)
		sizes := make(map[string]int, len(in.Entries))
		for _, e := range in.Entries {
			sizes[e.Id] = api.MessageSize(e.MessageBody, e.MessageAttributes)
		}
		c := t.of(q)
		for _, ok := range r.Successful {
			c.sent.Add(1)
			c.sentBytes.Add(uint64(sizes[ok.Id]))
		}
	case *api.ReceiveMessageResult:
		c := t.of(q)
		if len(r.Messages) == 0 {
			c.emptyReceives.Add(1)
		} else {
			c.received.Add(uint64(len(r.Messages)))
		}
	case *api.DeleteMessageBatchResult:
		if n := len(r.Successful); n > 0 {
			t.of(q).deleted.Add(uint64(n))
		}
	default:
		switch req.(type) {
		case *api.DeleteMessageRequest:
			t.of(q).deleted.Add(1)
		case *api.DeleteQueueRequest:
			// A queue created again under the name starts from zero.
			t.queues.Delete(q)
			t.deletes.Add(1)
		}
	}
}

// snapshot reads the counters of q.
func (t *statsTable) snapshot(q api.QueueKey) QueueCounters {
	c, ok := t.queues.Load(q)
	if !ok {
		return QueueCounters{}
	}
	qc := c.(*queueCounters)
	return QueueCounters{
		Sent:          qc.sent.Load(),
		SentBytes:     qc.sentBytes.Load(),
		Received:      qc.received.Load(),
		Deleted:       qc.deleted.Load(),
		EmptyReceives: qc.emptyReceives.Load(),
	}
}

// QueueCounters returns the running totals of queue q since the server
// started (zero for a queue it has not seen).
func (s *Server) QueueCounters(q api.QueueKey) QueueCounters {
	return s.stats.snapshot(q)
}

// queueFigures appends the figures of every existing queue to dst, for the
// metrics: the engine's counts and oldest message, read under the log's
// read lock and copied out, joined with the server's counters afterwards
// so that the lock is held no longer than the engine needs.
func (s *Server) queueFigures(dst []metrics.QueueFigures) []metrics.QueueFigures {
	now := s.now()
	var stats []engine.QueueStats
	for _, g := range s.allGroups() {
		g.log.Read(func(e *engine.Engine) { stats = e.AppendQueueStats(stats, now.UnixNano()) })
	}
	// A queue may be in several of this node's groups at once: the
	// partitions of a split queue, or a queue being moved between two
	// shards this node holds. It is one queue to its metrics: one series,
	// its counts the sums (docs/cluster.md, partitions).
	at := map[api.QueueKey]int{}
	merged := stats[:0]
	for _, st := range stats {
		st.Queue = st.Queue.Whole()
		if i, seen := at[st.Queue]; seen {
			merged[i].Add(st)
			continue
		}
		at[st.Queue] = len(merged)
		merged = append(merged, st)
	}
	for _, st := range merged {
		whole := st.Queue
		var oldest time.Duration
		if st.OldestAt != 0 {
			oldest = max(now.Sub(time.Unix(0, st.OldestAt)), 0)
		}
		c := s.stats.snapshot(whole)
		dst = append(dst, metrics.QueueFigures{
			Region: cmp.Or(whole.Region, s.cfg.Region), Account: whole.Account, Name: whole.Name,
			Visible: st.Visible, NotVisible: st.NotVisible, Delayed: st.Delayed, OldestAge: oldest,
			Sent: c.Sent, SentBytes: c.SentBytes, Received: c.Received,
			Deleted: c.Deleted, EmptyReceives: c.EmptyReceives,
		})
	}
	return dst
}
