package server

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"

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
// not read (GetQueueAttributes) are left out, as are deleted ones.
func (b consoleBackend) Statuses(account string, queues []api.QueueKey) []console.QueueStatus {
	allowed := make([]api.QueueKey, 0, len(queues))
	for _, q := range queues {
		if b.s.authorizeOn(nil, account, api.ActionGetQueueAttributes, q) == nil {
			allowed = append(allowed, q)
		}
	}
	now := b.s.now().UnixNano()
	sums := make([]engine.QueueSummary, 0, len(allowed))
	for _, q := range allowed {
		if sum, ok := b.summary(q, now); ok {
			sums = append(sums, sum)
		}
	}
	out := make([]console.QueueStatus, len(sums))
	for i, sum := range sums {
		c := b.s.stats.snapshot(sum.Queue)
		out[i] = console.QueueStatus{QueueSummary: sum, Counters: console.Counters{
			Sent: c.Sent, SentBytes: c.SentBytes, Received: c.Received, Deleted: c.Deleted, EmptyReceives: c.EmptyReceives,
		}}
		if b.s.sharded() {
			shard := b.s.shards.Of(sum.Queue)
			out[i].Shard = &shard
		}
	}
	return out
}

// summary returns queue q's summary as this node's replicas hold it. A
// queue split into partitions is one queue to the console, as to its
// metrics: partition 0's summary, with the message and group counts and
// the oldest message of every partition this node holds a replica of.
func (b consoleBackend) summary(q api.QueueKey, now int64) (sum engine.QueueSummary, ok bool) {
	b.s.logOf(q).Read(func(e *engine.Engine) { sum, ok = e.QueueSummary(q, now) })
	if !ok || !b.s.sharded() {
		return sum, ok
	}
	for _, p := range b.s.shards.Parts(q) {
		if p == 0 {
			continue
		}
		key := q
		key.Part = p
		var part engine.QueueSummary
		var held bool
		b.s.logOf(key).Read(func(e *engine.Engine) { part, held = e.QueueSummary(key, now) })
		if !held {
			continue // in a shard this node holds no replica of
		}
		sum.QueueStats.Add(part.QueueStats)
		sum.Groups += part.Groups
	}
	return sum, true
}

// consoleParts returns the partitions of queue q the console reads, and
// whether q is split: partition 0 (q itself) first; only the one holding
// group if group is set; just q for a queue never split. Like the
// summary, the console's pages of a split queue show what this node holds
// replicas of, which on a node with a replica of every shard is all, and
// nothing (not an error) where it holds none of them.
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
func (b consoleBackend) Groups(account string, q api.QueueKey, opts engine.GroupsOptions) (page engine.GroupsPage, err error) {
	if err := b.s.authorizeOn(nil, account, api.ActionGetQueueAttributes, q); err != nil {
		return page, err
	}
	now := b.s.now().UnixNano()
	keys, split := b.consoleParts(q, opts.Group)
	found, more := false, false
	for _, key := range keys {
		var part engine.GroupsPage
		ok := false
		b.s.logOf(key).Read(func(e *engine.Engine) { part, ok = e.Groups(key, now, opts) })
		if !ok {
			continue // in a shard this node holds no replica of
		}
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
func (b consoleBackend) Peek(account string, q api.QueueKey, opts engine.PeekOptions) (msgs []engine.PeekedMessage, err error) {
	if err := b.s.authorizeOn(nil, account, api.ActionReceiveMessage, q); err != nil {
		return nil, err
	}
	now := b.s.now().UnixNano()
	found := false
	keys, split := b.consoleParts(q, opts.Group)
	for _, key := range keys {
		ok := false
		b.s.logOf(key).Read(func(e *engine.Engine) {
			var part []engine.PeekedMessage
			part, ok = e.Peek(key, now, opts)
			// Message attribute maps are shared with the engine; copy
			// them while the lock is held, so that nothing of the
			// engine's is read after it is released.
			for i := range part {
				part[i].MessageAttributes = maps.Clone(part[i].MessageAttributes)
			}
			msgs = append(msgs, part...)
		})
		found = found || ok
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
