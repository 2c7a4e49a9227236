package server

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/console"
	"github.com/fifoq/fifoq/internal/engine"
)

// newConsole builds the web console's handler, acting through the server.
// If the console cannot be built (it only fails when the system has no
// randomness), /console/ answers 503 and the API goes on.
func (s *Server) newConsole() http.Handler {
	c, err := console.New(console.Config{
		Backend:        consoleBackend{s},
		Credentials:    s.verifier.Store,
		DefaultAccount: s.cfg.Account,
		Region:         s.cfg.Region,
		Logger:         s.logger,
		Now:            s.now,
	})
	if err != nil {
		s.logger.Error("web console unavailable", "err", err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "the web console is unavailable: "+err.Error(), http.StatusServiceUnavailable)
		})
	}
	return c
}

// consoleBackend is the console's way into the server: SQS actions through
// Do, as the API would carry them out, and read-only views of the engine
// under the same access rules.
type consoleBackend struct{ s *Server }

// Do implements console.Backend.
func (b consoleBackend) Do(ctx context.Context, account string, req api.Request) (api.Response, error) {
	return b.s.Do(ctx, account, req)
}

// Statuses implements console.Backend: queues whose attributes account may
// not read (GetQueueAttributes) are left out, as are deleted ones. A queue
// split into partitions is one queue to the console, as to
// GetQueueAttributes: partition 0's summary, with the message and group
// counts and the oldest message of every partition. Each is read from a
// replica of its shard (readConsole), the shards at once; the partitions
// of a shard that no replica of answered are left out of the counts, and
// a queue whose partition 0 is among them is left out.
func (b consoleBackend) Statuses(ctx context.Context, account string, queues []api.QueueKey) []console.QueueStatus {
	b.awaitMapped(ctx, queues)
	now := b.s.now().UnixNano()
	// place is a partition read: the queue's index in queues, and the
	// partition's in the queue's partitions.
	type place struct{ queue, part int }
	parts := make([][]api.QueueKey, len(queues))
	sums := make([][]*engine.QueueSummary, len(queues))
	byShard := map[uint32][]place{}
	for i, q := range queues {
		parts[i], _ = b.consoleParts(q, nil)
		sums[i] = make([]*engine.QueueSummary, len(parts[i]))
		for j, key := range parts[i] {
			id := b.shardOf(key)
			byShard[id] = append(byShard[id], place{i, j})
		}
	}
	var wg sync.WaitGroup
	for id, places := range byShard {
		wg.Go(func() {
			keys := make([]api.QueueKey, len(places))
			for k, p := range places {
				keys[k] = parts[p.queue][p.part]
			}
			reply, err := b.s.readConsole(ctx, consoleQuery{Kind: consoleSummaries, Caller: account, Shard: id, Queues: keys, Now: now})
			if err != nil {
				b.s.logger.Debug("the console could not read a shard's queues", "shard", id, "err", err)
				return
			}
			for k, p := range places {
				if k < len(reply.Summaries) {
					sums[p.queue][p.part] = reply.Summaries[k] // each place is one goroutine's
				}
			}
		})
	}
	wg.Wait()
	out := make([]console.QueueStatus, 0, len(queues))
	for i := range queues {
		if sums[i][0] == nil {
			continue
		}
		sum := *sums[i][0]
		for _, part := range sums[i][1:] {
			if part != nil {
				sum.QueueStats.Add(part.QueueStats)
				sum.Groups += part.Groups
			}
		}
		c := b.s.stats.snapshot(sum.Queue)
		st := console.QueueStatus{QueueSummary: sum, Counters: console.Counters{
			Sent: c.Sent, SentBytes: c.SentBytes, Received: c.Received, Deleted: c.Deleted, EmptyReceives: c.EmptyReceives,
		}}
		if b.s.sharded() {
			shard := b.s.shards.Of(sum.Queue)
			st.Shard = &shard
		}
		out = append(out, st)
	}
	return out
}

// mapWait bounds how long the console waits for this node's map to name
// the shard of a queue it was handed, while the first group has a leader;
// an election of the first group's lengthens the wait, up to
// mapWait+consoleReadWait in all.
const mapWait = time.Second

// awaitMapped waits, for up to mapWait (longer while the first group
// elects a leader, below), until this node's map names the shard of each
// of queues, or its replica of the first group holds the queue (one
// created before the cluster had shards lives there, without a record).
// The console is handed names that a routed request
// has just found (ListQueues, GetQueueAttributes), and a follower of the
// first group learns that a new queue's record committed up to a commit
// timeout after its creation was acknowledged: read before that, the
// queue seems not to exist, or not to be split. Where the first group's
// leader failed right after the record committed, the follower learns it
// only from the next leader, once elected: while the group knows no
// leader, or has not heard from it for a heartbeat timeout, the wait is
// kept to at least mapWait from the moment, up to mapWait+consoleReadWait
// in all. A name never mapped, a queue deleted meanwhile, costs the wait
// once.
func (b consoleBackend) awaitMapped(ctx context.Context, queues []api.QueueKey) {
	if !b.s.sharded() || b.s.first.leads() {
		return // the leader applied every record it acknowledged
	}
	start := time.Now()
	deadline, limit := start.Add(mapWait), start.Add(mapWait+consoleReadWait)
	for _, q := range queues {
		for !b.mapped(q) {
			now := time.Now()
			if b.firstElects() && now.Add(mapWait).After(deadline) {
				deadline = now.Add(mapWait)
				if deadline.After(limit) {
					deadline = limit
				}
			}
			if !now.Before(deadline) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// firstElects reports whether this node's replica of the first group
// knows no leader of it, or has not heard from the one it knows for a
// heartbeat timeout: one is being, or is about to be, elected.
func (b consoleBackend) firstElects() bool {
	return b.s.first.raft != nil && b.s.first.raft.LeaderSilent()
}

// mapped reports whether this node's map names queue q's shard, or its
// replica of the first group holds q.
func (b consoleBackend) mapped(q api.QueueKey) bool {
	if b.s.shards.Of(q) != 0 {
		return true
	}
	held := false
	b.s.first.log.Read(func(e *engine.Engine) { _, held = e.QueuePolicy(q) })
	return held
}

// shardOf returns the shard that holds queue or partition key by this
// node's map: 0, the first group, on a server without shards.
func (b consoleBackend) shardOf(key api.QueueKey) uint32 {
	if !b.s.sharded() {
		return 0
	}
	return b.s.shards.Of(key)
}

// consoleParts returns the partitions of queue q the console reads, and
// whether q is split: partition 0 (q itself) first; only the one holding
// group if group is set; just q for a queue never split.
func (b consoleBackend) consoleParts(q api.QueueKey, group *string) (keys []api.QueueKey, split bool) {
	if !b.s.sharded() || !b.s.shards.IsSplit(q) {
		return []api.QueueKey{q}, false
	}
	if group != nil {
		q.Part = b.s.shards.PartOf(q, api.GroupHash(*group))
		return []api.QueueKey{q}, true
	}
	for _, p := range b.s.shards.Parts(q) {
		key := q
		key.Part = p
		keys = append(keys, key)
	}
	return keys, true
}

// Groups implements console.Backend; it needs the right to read the
// queue's attributes. A split queue's page is merged from its
// partitions': the cursor, a head's sequence number, orders groups across
// partitions as within one, since sequence numbers are unique in the
// queue.
func (b consoleBackend) Groups(ctx context.Context, account string, q api.QueueKey, opts engine.GroupsOptions) (page engine.GroupsPage, err error) {
	b.awaitMapped(ctx, []api.QueueKey{q})
	now := b.s.now().UnixNano()
	keys, split := b.consoleParts(q, opts.Group)
	found, more := false, false
	for _, key := range keys {
		reply, err := b.readOne(ctx, consoleQuery{Kind: consoleGroups, Caller: account, Queues: []api.QueueKey{key}, Now: now, Groups: &opts})
		if err != nil {
			return engine.GroupsPage{}, err
		}
		if !reply.Found || reply.Groups == nil {
			continue
		}
		part := *reply.Groups
		if len(keys) == 1 {
			return part, nil
		}
		found = true
		page.FIFO = part.FIFO
		page.Total += part.Total
		page.InFlight += part.InFlight
		page.Groups = append(page.Groups, part.Groups...)
		more = more || part.Next != ""
	}
	if !found && !split {
		return page, api.ErrQueueDoesNotExist()
	}
	page.FIFO = page.FIFO || split // only FIFO queues are split
	slices.SortFunc(page.Groups, func(a, b engine.GroupInfo) int { return cmp.Compare(a.HeadSequence, b.HeadSequence) })
	if n := min(max(opts.Limit, 1), engine.MaxInspectGroups); len(page.Groups) > n || more && len(page.Groups) > 0 {
		page.Groups = page.Groups[:min(n, len(page.Groups))]
		page.Next = strconv.FormatUint(page.Groups[len(page.Groups)-1].HeadSequence, 10)
	}
	return page, nil
}

// Peek implements console.Backend. Peeking shows message bodies, so it
// needs the right to receive from the queue, though it receives nothing.
// A split queue's first messages are merged from its partitions' in
// sequence order.
func (b consoleBackend) Peek(ctx context.Context, account string, q api.QueueKey, opts engine.PeekOptions) (msgs []engine.PeekedMessage, err error) {
	b.awaitMapped(ctx, []api.QueueKey{q})
	now := b.s.now().UnixNano()
	found := false
	keys, split := b.consoleParts(q, opts.Group)
	for _, key := range keys {
		reply, err := b.readOne(ctx, consoleQuery{Kind: consolePeek, Caller: account, Queues: []api.QueueKey{key}, Now: now, Peek: &opts})
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, reply.Messages...)
		found = found || reply.Found
	}
	if !found && !split {
		return nil, api.ErrQueueDoesNotExist()
	}
	if len(keys) > 1 {
		slices.SortFunc(msgs, func(a, b engine.PeekedMessage) int { return cmp.Compare(a.SequenceNumber, b.SequenceNumber) })
		msgs = msgs[:min(len(msgs), min(max(opts.Limit, 1), engine.MaxPeekMessages))]
	}
	return msgs, nil
}

// readOne carries out a groups or peek read of one queue or partition,
// q.Queues[0], at a replica of its shard; a refusal there (access denied)
// is its error.
func (b consoleBackend) readOne(ctx context.Context, q consoleQuery) (consoleReply, error) {
	q.Shard = b.shardOf(q.Queues[0])
	reply, err := b.s.readConsole(ctx, q)
	if err == nil && reply.Error != nil {
		err = reply.Error
	}
	return reply, err
}
