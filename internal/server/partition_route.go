package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Routing to the partitions of a split queue (docs/cluster.md, "One busy
// FIFO queue over many shards: partitions"). A FIFO queue split by the
// hash of MessageGroupId is a set of partitions, each a queue of the
// engine keyed by the queue's key and its number, each in a shard of its
// own record (shards/partitions.go). A request that names one message
// group, by its MessageGroupId or by a receipt handle that carries the
// group's hash (engine.HandleGroupHash), goes to the partition holding
// the group, by this node's copy of the queue's layout: routed to that
// partition's shard as any request is routed to its queue's, and served
// there on the partition (the command's queue key names it: partOf). A
// request forwarded to another member says the partition it was routed
// to (hdrPart); a layout that lags only sends a group to a partition
// that no longer holds it, which answers the retryable moving error.
//
// What spans partitions is carried out where it arrives (serveOverParts):
// a batch whose entries fall in several is split (serveSpanningBatch), a
// receive asks every partition with one long-poll deadline
// (partition_receive.go), and the queue's attributes, purge, deletion,
// tags and permissions, and handles from before the queue's first split,
// reach every partition (partition_wide.go).

// serveOverParts carries out, from this member, a request on a split
// queue that spans several of its partitions, and reports whether req was
// one; any other request is routed to the one partition it names, or to
// partition 0.
func (s *Server) serveOverParts(ctx context.Context, in api.Scope, req api.Request) (api.Response, bool, error) {
	switch req.(type) {
	case *api.ReceiveMessageRequest:
		return s.serveSpanningReceive(ctx, in, req)
	case *api.DeleteMessageBatchRequest, *api.ChangeMessageVisibilityBatchRequest:
		if resp, spans, err := s.serveOldHandleBatch(ctx, in, req); spans {
			return resp, spans, err
		}
		return s.serveSpanningBatch(ctx, in, req)
	case *api.SendMessageBatchRequest:
		return s.serveSpanningBatch(ctx, in, req)
	}
	return s.serveQueueWide(ctx, in, req)
}

// spanningQueue returns the split queue req names and its partitions, by
// this node's copy of the map, and whether req is one this member carries
// out over them: false for a queue never split, or where the members do
// not carry out each other's typed requests (routesTyped). A request so
// carried out is validated whole first (err), before any partition is
// asked.
func (s *Server) spanningQueue(in api.Scope, req api.Request) (q api.QueueKey, parts []uint32, spans bool, err error) {
	if !s.routesTyped() {
		return q, nil, false, nil
	}
	q, named := s.queueOfRequest(in, req)
	if !named {
		return q, nil, false, nil
	}
	if parts = s.shards.Parts(q); len(parts) < 2 {
		return q, nil, false, nil
	}
	return q, parts, true, api.Validate(req)
}

// hdrPart names, on a request forwarded to another member, the partition
// of a split queue it was routed to; absent for partition 0.
const hdrPart = "X-Fifoq-Part"

// partCtxKey keys, in a request's context, the partition it is served on.
type partCtxKey struct{}

// withPart returns ctx serving its request on partition part of its queue.
func withPart(ctx context.Context, part uint32) context.Context {
	if part == 0 {
		return ctx
	}
	return context.WithValue(ctx, partCtxKey{}, part)
}

// partOf returns the partition ctx serves its request on: 0 unless
// withPart said another.
func partOf(ctx context.Context) uint32 {
	p, _ := ctx.Value(partCtxKey{}).(uint32)
	return p
}

// hintPart returns the partition a forwarded request was routed to.
func hintPart(r *http.Request) uint32 {
	n, err := strconv.ParseUint(r.Header.Get(hdrPart), 10, 32)
	if err != nil || n > engine.MaxPart {
		return 0
	}
	return uint32(n)
}

// partitionOf returns the partition of queue q that req goes to: the one
// holding the message group it names, if it names one, by this node's
// copy of the map; 0 for anything else, and for a queue never split.
func (s *Server) partitionOf(q api.QueueKey, req api.Request) uint32 {
	if s.shards == nil || !s.shards.IsSplit(q) {
		return 0
	}
	var h string
	switch r := req.(type) {
	case *api.SendMessageRequest:
		if r.MessageGroupId == "" {
			return 0
		}
		return s.shards.PartOf(q, api.GroupHash(r.MessageGroupId))
	case *api.DeleteMessageRequest:
		h = r.ReceiptHandle
	case *api.ChangeMessageVisibilityRequest:
		h = r.ReceiptHandle
	default:
		if _, parts := s.batchPartitions(q, req); len(parts) == 1 {
			return parts[0].part
		}
		return 0 // no group, or several partitions' groups
	}
	hash, ok := engine.HandleGroupHash(h)
	if !ok {
		// A handle of a queue never split, or from before its first
		// split: partition 0 has its message, or says it moved.
		return 0
	}
	return s.shards.PartOf(q, hash)
}

// serveSpanningBatch carries out a batch on a split queue whose entries
// fall in several partitions, and reports whether req was one: split
// into one batch per partition, each carried out in its partition's
// shard as the typed request (doSharded: over the node-to-node port, so
// only between members that trust each other), the batches at once, and
// answered as one batch, its entries in the order sent. The batch is
// validated whole first, so that what SQS refuses of a batch (ids not
// distinct, too many entries, too long) is refused whole. A batch that
// fails in one partition fails whole, for the client to send it again:
// what it did in the other partitions is repeated safely (a FIFO send is
// deduplicated, and a delete or visibility change by the same handle does
// the same thing again).
func (s *Server) serveSpanningBatch(ctx context.Context, in api.Scope, req api.Request) (api.Response, bool, error) {
	if !isMessageBatch(req) {
		return nil, false, nil
	}
	q, named := s.queueOfRequest(in, req)
	if !named {
		return nil, false, nil
	}
	ids, parts := s.batchPartitions(q, req)
	if len(parts) < 2 {
		return nil, false, nil
	}
	if err := api.Validate(req); err != nil {
		return nil, true, err
	}
	if r, ok := req.(*api.SendMessageBatchRequest); ok {
		if err := s.validateFIFOBatchWhole(ctx, in, q, r); err != nil {
			return nil, true, err
		}
	}
	type answer struct {
		resp api.Response
		err  error
	}
	answers := make([]answer, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].resp, answers[i].err = s.doMovingOn(ctx, in, q, subBatch(req, p.entries))
		}()
	}
	wg.Wait()
	for _, a := range answers {
		if a.err != nil {
			return nil, true, a.err
		}
	}
	rank := func(id string) int { return ids[id] }
	switch req.(type) {
	case *api.SendMessageBatchRequest:
		out := &api.SendMessageBatchResult{}
		for _, a := range answers {
			r := a.resp.(*api.SendMessageBatchResult)
			out.Successful = append(out.Successful, r.Successful...)
			out.Failed = append(out.Failed, r.Failed...)
		}
		slices.SortFunc(out.Successful, func(a, b api.SendMessageBatchResultEntry) int { return rank(a.Id) - rank(b.Id) })
		slices.SortFunc(out.Failed, func(a, b api.BatchResultErrorEntry) int { return rank(a.Id) - rank(b.Id) })
		return out, true, nil
	default:
		var ok []api.BatchResultEntry
		var failed []api.BatchResultErrorEntry
		for _, a := range answers {
			switch r := a.resp.(type) {
			case *api.DeleteMessageBatchResult:
				ok, failed = append(ok, r.Successful...), append(failed, r.Failed...)
			case *api.ChangeMessageVisibilityBatchResult:
				ok, failed = append(ok, r.Successful...), append(failed, r.Failed...)
			}
		}
		slices.SortFunc(ok, func(a, b api.BatchResultEntry) int { return rank(a.Id) - rank(b.Id) })
		slices.SortFunc(failed, func(a, b api.BatchResultErrorEntry) int { return rank(a.Id) - rank(b.Id) })
		if _, del := req.(*api.DeleteMessageBatchRequest); del {
			return &api.DeleteMessageBatchResult{Successful: ok, Failed: failed}, true, nil
		}
		return &api.ChangeMessageVisibilityBatchResult{Successful: ok, Failed: failed}, true, nil
	}
}

// validateFIFOBatchWhole refuses a send batch on split queue q as the
// queue's engine refuses it whole (api.ValidateFIFOSendBatch) for an entry
// without a message group, or without a deduplication id where the queue
// does not deduplicate by content: checked in one partition after the
// others had sent their entries, the refusal would leave those sent
// (localstack test_sqs.snapshot.json:
// test_send_batch_missing_deduplication_id_for_fifo_queue,
// test_send_batch_missing_message_group_id_for_fifo_queue: the answer is an
// error, so nothing was sent). Whether the queue deduplicates by content
// is asked of partition 0, as the queue's owner (a caller allowed to send
// need not be allowed to read the attributes), only for a batch that
// needs to know; a SetQueueAttributes that turns it off in between is the
// one case the check misses, as a change of attributes takes a while to
// reach all of SQS's hosts too. A caller this node can tell is not
// allowed to send (by its replica of partition 0's policy) is refused by
// the partitions instead, as by a queue never split, which checks access
// first.
func (s *Server) validateFIFOBatchWhole(ctx context.Context, in api.Scope, q api.QueueKey, r *api.SendMessageBatchRequest) error {
	noGroup := slices.ContainsFunc(r.Entries, func(e api.SendMessageBatchRequestEntry) bool { return e.MessageGroupId == "" })
	noDedup := slices.ContainsFunc(r.Entries, func(e api.SendMessageBatchRequestEntry) bool { return e.MessageDeduplicationId == "" })
	if !noGroup && !noDedup {
		return nil // what a batch of many groups sends: nothing to refuse
	}
	if s.authorizeOn(transportOf(ctx), in.Account, api.ActionSendMessage, q) != nil {
		return nil
	}
	byContent := true // what matters only if an entry names no deduplication id
	if noDedup {
		owner := api.Scope{Account: q.Account, Region: in.Region}
		resp, err := s.doOnPart(ctx, owner, q, 0, &api.GetQueueAttributesRequest{QueueUrl: r.QueueUrl,
			AttributeNames: []string{api.AttrContentBasedDeduplication}})
		if err != nil {
			return err
		}
		attrs, _ := resp.(*api.GetQueueAttributesResult)
		byContent = attrs != nil && attrs.Attributes[api.AttrContentBasedDeduplication] == "true"
	}
	return api.ValidateFIFOSendBatch(r.Entries, byContent)
}

// movingDeadlineKey keys, in a request's context, when it stops being
// routed again while its queue moves (movingDeadline).
type movingDeadlineKey struct{}

// movingDeadline returns when a request refused because its queue is
// moving stops being routed again: movingWait after it arrived, kept in
// ctx so that the parts of a batch, and a request carried out over the
// partitions once its queue split, share the request's bound.
func movingDeadline(ctx context.Context) (context.Context, time.Time) {
	if d, ok := ctx.Value(movingDeadlineKey{}).(time.Time); ok {
		return ctx, d
	}
	d := time.Now().Add(movingWait)
	return context.WithValue(ctx, movingDeadlineKey{}, d), d
}

// doMovingOn carries out req, the part of a batch on split queue q whose
// entries fall in one partition by this node's map, as doSharded does;
// while the partition answers that it is moving, split or merged, it is
// carried out again as soon as this node's map has changed (split over
// the partitions anew if its entries now fall in several), until
// movingWait after the batch arrived, as serveInShards does a request:
// the refusal changed nothing, and the client is spared its backoff.
func (s *Server) doMovingOn(ctx context.Context, in api.Scope, q api.QueueKey, req api.Request) (api.Response, error) {
	ctx, deadline := movingDeadline(ctx)
	for {
		epoch := s.shards.Epoch()
		resp, err := s.doSharded(ctx, in, q, req)
		if err == nil || !engine.IsQueueMoving(err) || !s.awaitReroute(ctx, epoch, deadline) {
			return resp, err
		}
		if resp, spans, err := s.serveSpanningBatch(ctx, in, req); spans {
			return resp, err
		}
	}
}

// isMessageBatch reports whether req is a batch of messages' actions.
func isMessageBatch(req api.Request) bool {
	switch req.(type) {
	case *api.SendMessageBatchRequest, *api.DeleteMessageBatchRequest, *api.ChangeMessageVisibilityBatchRequest:
		return true
	}
	return false
}

// batchPart is the entries of a batch (by their positions) that go to
// one partition.
type batchPart struct {
	part    uint32
	entries []int
}

// batchPartitions returns, for a batch on queue q, the position of each
// entry by its Id, and the partitions its entries go to, in the order
// each first appears: one for a batch that is no batch or a queue never
// split. An entry whose handle carries no group's hash goes to partition
// 0, which has its message or says it moved.
func (s *Server) batchPartitions(q api.QueueKey, req api.Request) (map[string]int, []batchPart) {
	if !isMessageBatch(req) || s.shards == nil || !s.shards.IsSplit(q) {
		return nil, nil
	}
	pos := map[string]int{}
	var parts []batchPart
	n := 0 // entries seen
	add := func(id string, part uint32) {
		pos[id] = n
		j := slices.IndexFunc(parts, func(p batchPart) bool { return p.part == part })
		if j < 0 {
			parts = append(parts, batchPart{part: part})
			j = len(parts) - 1
		}
		parts[j].entries = append(parts[j].entries, n)
		n++
	}
	handle := func(id, h string) {
		var part uint32
		if hash, ok := engine.HandleGroupHash(h); ok {
			part = s.shards.PartOf(q, hash)
		}
		add(id, part)
	}
	switch r := req.(type) {
	case *api.SendMessageBatchRequest:
		for _, e := range r.Entries {
			add(e.Id, s.shards.PartOf(q, api.GroupHash(e.MessageGroupId)))
		}
	case *api.DeleteMessageBatchRequest:
		for _, e := range r.Entries {
			handle(e.Id, e.ReceiptHandle)
		}
	case *api.ChangeMessageVisibilityBatchRequest:
		for _, e := range r.Entries {
			handle(e.Id, e.ReceiptHandle)
		}
	}
	return pos, parts
}

// subBatch returns a copy of batch req holding the entries at positions
// idx, in their order.
func subBatch(req api.Request, idx []int) api.Request {
	switch r := req.(type) {
	case *api.SendMessageBatchRequest:
		out := *r
		out.Entries = pick(r.Entries, idx)
		return &out
	case *api.DeleteMessageBatchRequest:
		out := *r
		out.Entries = pick(r.Entries, idx)
		return &out
	case *api.ChangeMessageVisibilityBatchRequest:
		out := *r
		out.Entries = pick(r.Entries, idx)
		return &out
	}
	return req
}

// pick returns the items of all at positions idx, in their order.
func pick[E any](all []E, idx []int) []E {
	out := make([]E, len(idx))
	for i, j := range idx {
		out[i] = all[j]
	}
	return out
}
