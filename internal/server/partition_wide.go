package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// The actions of a split queue that reach every partition (docs/cluster.md,
// "One busy FIFO queue over many shards: partitions"). Each partition is a
// queue of the engine with the queue's attributes, tags and policy, so what
// changes them is carried out in each, and what reads them is read from
// partition 0 but for the message counts, which are summed:
//
//   - GetQueueAttributes: partition 0's answer, its message counts the sums
//     of every partition's;
//   - SetQueueAttributes, TagQueue, UntagQueue, AddPermission,
//     RemovePermission: carried out in every partition at once, and
//     answered with the first error (partition 0's first): each is the same
//     change whatever was done before, so the client's retry finishes what
//     one partition's failure left undone (but for AddPermission and
//     RemovePermission, which the partitions that took the first refuse,
//     as SQS refuses a label added twice or removed twice);
//   - PurgeQueue: in every partition at once; refused as in progress only if
//     every partition refused it so (one purged moments ago, by an answer
//     the client did not see, is done);
//   - DeleteQueue: in every partition at once, a partition already gone
//     counting as deleted; once every partition is gone, the first
//     group's leader forgets the partitions (forgetParts), so that a
//     queue created again by the name starts whole;
//   - DeleteMessage and ChangeMessageVisibility by a handle from before the
//     queue's first split (it names no group): tried in partition 0, then in
//     each other partition while they answer that they know no such handle;
//     their batches holding such a handle, entry by entry
//     (serveOldHandleBatch).
//
// A partition that answers that it is moving, split or merged changed
// nothing: the member asks again, once its map has changed, where the map
// then puts the partitions that have not answered otherwise (a change,
// changeEveryPart), or every partition (a read, readEveryPart), until
// movingWait after the request arrived, so the client sees its queue's
// moves no more than a request of one partition does.
//
// As batches and receives, they are carried out from the member where they
// arrive, so only where the members carry out each other's typed requests
// (routesTyped); elsewhere they reach partition 0 alone.

// serveQueueWide carries out req over every partition of its split queue,
// and reports whether req was one of the actions above on one.
func (s *Server) serveQueueWide(ctx context.Context, in api.Scope, req api.Request) (api.Response, bool, error) {
	switch req.(type) {
	case *api.GetQueueAttributesRequest, *api.SetQueueAttributesRequest, *api.TagQueueRequest, *api.UntagQueueRequest,
		*api.AddPermissionRequest, *api.RemovePermissionRequest, *api.PurgeQueueRequest, *api.DeleteQueueRequest:
	case *api.DeleteMessageRequest, *api.ChangeMessageVisibilityRequest:
	default:
		return nil, false, nil
	}
	q, parts, spans, err := s.spanningQueue(in, req)
	if !spans || err != nil {
		return nil, spans, err
	}
	_, reads := req.(*api.GetQueueAttributesRequest)
	if !reads && s.shards.Splitting(q) {
		// Between a split in the engine and the layout naming the new
		// partition, the change would miss it: it waits for the
		// layout, as a request that meets its partition moving does.
		var deadline time.Time
		ctx, deadline = movingDeadline(ctx)
		for s.shards.Splitting(q) {
			if !s.awaitReroute(ctx, s.shards.Epoch(), deadline) {
				return nil, true, api.ErrServiceUnavailable("A partition of the queue is being split or merged; retry.")
			}
		}
		parts = s.partsNow(q)
	}
	switch r := req.(type) {
	case *api.DeleteMessageRequest:
		return s.tryEachPart(ctx, in, q, parts, req, r.ReceiptHandle)
	case *api.ChangeMessageVisibilityRequest:
		return s.tryEachPart(ctx, in, q, parts, req, r.ReceiptHandle)
	}
	var answers []partAnswer
	if reads {
		answers = s.readEveryPart(ctx, in, q, parts, req)
	} else {
		answers = s.changeEveryPart(ctx, in, q, parts, req)
	}
	switch req.(type) {
	case *api.GetQueueAttributesRequest:
		resp, err := sumCounts(answers)
		return resp, true, err
	case *api.PurgeQueueRequest:
		inProgress := 0
		for _, a := range answers {
			if isPurgeInProgress(a.err) {
				inProgress++
			}
		}
		if inProgress < len(answers) {
			for i := range answers {
				if isPurgeInProgress(answers[i].err) {
					answers[i] = partAnswer{resp: api.Empty{}}
				}
			}
		}
	case *api.DeleteQueueRequest:
		gone := true
		for i, a := range answers {
			gone = gone && (a.err == nil || isQueueGone(a.err))
			if i > 0 && isQueueGone(a.err) {
				answers[i] = partAnswer{resp: api.Empty{}}
			}
		}
		if gone {
			// Deleted in every partition (by this request, or by one
			// whose answer was lost): the map forgets the partitions.
			if err := s.forgetParts(ctx, q); err != nil {
				return nil, true, api.ErrServiceUnavailable("The queue was deleted, and its partitions could not be forgotten (%v); retry.", err)
			}
		}
	}
	for _, a := range answers {
		if a.err != nil {
			return nil, true, a.err
		}
	}
	return answers[0].resp, true, nil
}

// serveOldHandleBatch carries out a DeleteMessageBatch or
// ChangeMessageVisibilityBatch of a split queue that holds a handle from
// before the queue's first split, and reports whether req was one: entry
// by entry, each as its single action, routed by its handle's group or
// tried in every partition (tryEachPart), and answered as one batch. An
// entry's error is its failure, as in a batch carried out whole, but for
// one that is the whole queue's (it does not exist, the caller may not,
// the shard cannot answer now), which fails the batch.
func (s *Server) serveOldHandleBatch(ctx context.Context, in api.Scope, req api.Request) (api.Response, bool, error) {
	type entry struct {
		id, handle string
		vis        *int
	}
	var entries []entry
	var url string
	switch r := req.(type) {
	case *api.DeleteMessageBatchRequest:
		url = r.QueueUrl
		for _, e := range r.Entries {
			entries = append(entries, entry{id: e.Id, handle: e.ReceiptHandle})
		}
	case *api.ChangeMessageVisibilityBatchRequest:
		url = r.QueueUrl
		for _, e := range r.Entries {
			entries = append(entries, entry{id: e.Id, handle: e.ReceiptHandle, vis: e.VisibilityTimeout})
		}
	default:
		return nil, false, nil
	}
	if !slices.ContainsFunc(entries, func(e entry) bool { _, hashed := engine.HandleGroupHash(e.handle); return !hashed }) {
		return nil, false, nil
	}
	q, parts, spans, err := s.spanningQueue(in, req)
	if !spans || err != nil {
		return nil, spans, err
	}
	if s.shards.Splitting(q) {
		return nil, true, api.ErrServiceUnavailable("A partition of the queue is being split or merged; retry.")
	}
	_, del := req.(*api.DeleteMessageBatchRequest)
	ok, failed := []api.BatchResultEntry{}, []api.BatchResultErrorEntry{}
	for _, e := range entries {
		var one api.Request = &api.ChangeMessageVisibilityRequest{QueueUrl: url, ReceiptHandle: e.handle, VisibilityTimeout: e.vis}
		if del {
			one = &api.DeleteMessageRequest{QueueUrl: url, ReceiptHandle: e.handle}
		}
		var err error
		if _, hashed := engine.HandleGroupHash(e.handle); hashed {
			_, err = s.doSharded(ctx, in, q, one)
		} else {
			_, _, err = s.tryEachPart(ctx, in, q, parts, one, e.handle)
		}
		if err != nil {
			ae := api.AsError(err)
			if ae.Status >= 500 || isQueueGone(err) || ae.Code == "AccessDenied" {
				return nil, true, err
			}
			failed = append(failed, api.BatchError(e.id, ae))
			continue
		}
		ok = append(ok, api.BatchResultEntry{Id: e.id})
	}
	if del {
		return &api.DeleteMessageBatchResult{Successful: ok, Failed: failed}, true, nil
	}
	return &api.ChangeMessageVisibilityBatchResult{Successful: ok, Failed: failed}, true, nil
}

// forgetParts has the first group's leader forget the partitions of q,
// deleted in every one: here if this node leads it, else asked over the
// node-to-node port (POST /cluster/unsplit).
func (s *Server) forgetParts(ctx context.Context, q api.QueueKey) error {
	if s.first.leads() {
		return s.shards.Unsplit(ctx, q)
	}
	_, addr := s.cluster.Leader()
	if addr == "" {
		return errors.New("the cluster has no leader now")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, _ := json.Marshal(q.Whole())
	resp, err := s.askPeer(ctx, http.MethodPost, addr, "/cluster/unsplit", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("the first group's leader: %w", err)
	}
	resp.Body.Close()
	return nil
}

// serveUnsplit forgets the partitions of a queue deleted in every one,
// for another member (forgetParts), where the first group is led. Only
// from a member that may have other members carry its requests out
// (trustedPeerEndpoint): forgetting the partitions of a queue that still
// has them would leave their messages where no request is routed.
func (s *Server) serveUnsplit(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "forgetting a deleted queue's partitions") {
		return
	}
	var q api.QueueKey
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&q); err != nil || q.Name == "" || q.Account == "" {
		writeJSONError(w, http.StatusBadRequest, "want a queue key")
		return
	}
	if !s.first.leads() {
		writeJSONError(w, http.StatusServiceUnavailable, "this node does not lead the cluster's first group")
		return
	}
	if err := s.shards.Unsplit(r.Context(), q); err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// partAnswer is one partition's answer.
type partAnswer struct {
	resp api.Response
	err  error
}

// askEveryPart carries out req in every partition of q at once, and
// returns their answers, partition 0's first.
func (s *Server) askEveryPart(ctx context.Context, in api.Scope, q api.QueueKey, parts []uint32, req api.Request) []partAnswer {
	answers := make([]partAnswer, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].resp, answers[i].err = s.doOnPart(ctx, in, q, p, req)
		}()
	}
	wg.Wait()
	return answers
}

// readEveryPart reads req (GetQueueAttributes) from every partition of q
// at once; while one answers that it is moving, split or merged, it reads
// them all again as soon as this node's map has changed, until movingWait
// after the request arrived, as serveInShards does a request of one
// partition: the sums are of one layout's partitions.
func (s *Server) readEveryPart(ctx context.Context, in api.Scope, q api.QueueKey, parts []uint32, req api.Request) []partAnswer {
	ctx, deadline := movingDeadline(ctx)
	for {
		epoch := s.shards.Epoch()
		answers := s.askEveryPart(ctx, in, q, parts, req)
		if !slices.ContainsFunc(answers, partMoving) || !s.awaitReroute(ctx, epoch, deadline) {
			return answers
		}
		parts = s.partsNow(q)
	}
}

// changeEveryPart carries out req, a change of the whole queue, in every
// partition of q at once, and returns the answers, partition 0's first. A
// partition that answers it is moving, split or merged changed nothing:
// once this node's map has changed, req is carried out in the
// partitions the map then names that have not yet answered otherwise (a
// partition moved, and one a split made meanwhile), until movingWait after
// the request arrived. Those that answered are not asked again, as
// AddPermission, say, is refused the second time. A partition merged
// away is not asked again either: it changed nothing, and the partition
// it merged into holds the queue's state.
func (s *Server) changeEveryPart(ctx context.Context, in api.Scope, q api.QueueKey, parts []uint32, req api.Request) []partAnswer {
	ctx, deadline := movingDeadline(ctx)
	last := map[uint32]partAnswer{} // each partition's latest answer
	answered := func(p uint32) bool { a, asked := last[p]; return asked && !partMoving(a) }
	took := false // some partition carried req out
	todo := parts
	for {
		epoch := s.shards.Epoch()
		for i, a := range s.askEveryPart(ctx, in, q, todo, req) {
			last[todo[i]] = a
			took = took || a.err == nil
		}
		parts = s.partsNow(q)
		todo = slices.DeleteFunc(slices.Clone(parts), answered)
		if len(todo) == 0 {
			break
		}
		// A partition this node's map did not name (a split it has
		// caught up with) is asked at once; one still moving once the
		// map has changed.
		fresh := slices.ContainsFunc(todo, func(p uint32) bool { _, asked := last[p]; return !asked })
		if fresh && time.Now().After(deadline) || !fresh && !s.awaitReroute(ctx, epoch, deadline) {
			break
		}
	}
	out := make([]partAnswer, 0, len(last))
	for _, p := range parts {
		a, asked := last[p]
		if !asked {
			a.err = api.ErrServiceUnavailable("The queue's partitions changed; retry.")
		}
		if took && isLabelConflict(a.err) {
			// A partition split off one that had taken the change
			// (after it answered) holds it already, or its undoing.
			a = partAnswer{resp: api.Empty{}}
		}
		out = append(out, a)
	}
	for _, p := range slices.Sorted(maps.Keys(last)) {
		if answered(p) && !slices.Contains(parts, p) {
			out = append(out, last[p]) // merged away since it answered
		}
	}
	return out
}

// isLabelConflict reports whether err refuses an AddPermission because
// its label is there already, or a RemovePermission because it is not.
func isLabelConflict(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "InvalidParameterValue" && strings.Contains(ae.Message, "for parameter Label is invalid")
}

// partsNow returns the partitions of q by this node's map now: partition
// 0 alone for a queue gathered whole meanwhile.
func (s *Server) partsNow(q api.QueueKey) []uint32 {
	if parts := s.shards.Parts(q); len(parts) > 0 {
		return parts
	}
	return []uint32{0}
}

// partMoving reports whether a partition answered that it is moving,
// split or merged, which changed nothing.
func partMoving(a partAnswer) bool { return a.err != nil && engine.IsQueueMoving(a.err) }

// tryEachPart carries out a delete or visibility change by a handle from
// before the queue's first split, which names no group, in each partition
// in turn while they answer that they do not hold its message
// (engine.IsHandleElsewhere). If none does, and the partitions that said
// so hold every group hash between them, the message is gone, and the
// answer is the one a queue never split gives for a handle of a message
// gone: a delete succeeds, a visibility change is refused; or, where none
// of them honours the handle's tag, the one it gives for a handle not its
// own: ReceiptHandleIsInvalid. If they do not
// hold every hash, this node's map lags a split that made a partition it
// does not know yet, which may hold the message: taken for gone, the
// delete would be acknowledged and the message come back after its
// visibility timeout. The client is asked to retry.
func (s *Server) tryEachPart(ctx context.Context, in api.Scope, q api.QueueKey, parts []uint32, req api.Request, handle string) (api.Response, bool, error) {
	if _, ok := engine.HandleGroupHash(handle); ok {
		return nil, false, nil // routed to its group's partition
	}
	var spans [][2]uint64
	knownTag := false
	for _, p := range parts {
		resp, err := s.doOnPart(ctx, in, q, p, req)
		if !engine.IsHandleElsewhere(err) {
			return resp, true, err
		}
		if lo, hi, ok := engine.HandleElsewhereSpan(err); ok {
			spans = append(spans, [2]uint64{lo, hi})
		}
		knownTag = knownTag || engine.HandleElsewhereKnowsTag(err)
	}
	if now := s.shards.Parts(q); !slices.Equal(now, parts) || !coverEveryHash(spans) {
		// A partition this node's map did not have may hold it.
		return nil, true, api.ErrServiceUnavailable("The queue's partitions changed; retry.")
	}
	if !knownTag {
		// Another queue's handle, or one whose tag every partition has
		// forgotten: what a queue never split answers for either.
		return nil, true, api.ErrReceiptHandleIsInvalid(handle)
	}
	if _, del := req.(*api.DeleteMessageRequest); del {
		return api.Empty{}, true, nil
	}
	return nil, true, engine.ErrMessageNotAvailable(handle)
}

// coverEveryHash reports whether spans, each a range [lo, hi) of group
// hashes, cover every hash from 0 to 1<<32 between them.
func coverEveryHash(spans [][2]uint64) bool {
	slices.SortFunc(spans, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	next := uint64(0)
	for _, sp := range spans {
		if sp[0] > next {
			return false
		}
		next = max(next, sp[1])
	}
	return next >= 1<<32
}

// isPurgeInProgress reports whether err refuses a purge made less than 60
// seconds after the last.
func isPurgeInProgress(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.ErrPurgeQueueInProgress("").Code
}

// isQueueGone reports whether err says the queue does not exist.
func isQueueGone(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.ErrQueueDoesNotExist().Code
}

// countAttributes are the attributes of a split queue summed over its
// partitions.
var countAttributes = []string{api.AttrApproximateNumberOfMessages, api.AttrApproximateNumberOfMessagesNotVisible, api.AttrApproximateNumberOfMessagesDelayed}

// sumCounts is partition 0's GetQueueAttributes answer with each message
// count the sum of every partition's; the first error, if any.
func sumCounts(answers []partAnswer) (api.Response, error) {
	for _, a := range answers {
		if a.err != nil {
			return nil, a.err
		}
	}
	base, ok := answers[0].resp.(*api.GetQueueAttributesResult)
	if !ok {
		return answers[0].resp, nil
	}
	out := &api.GetQueueAttributesResult{Attributes: make(map[string]string, len(base.Attributes))}
	for k, v := range base.Attributes {
		out.Attributes[k] = v
	}
	for _, name := range countAttributes {
		if _, asked := base.Attributes[name]; !asked {
			continue
		}
		sum := 0
		for _, a := range answers {
			if r, ok := a.resp.(*api.GetQueueAttributesResult); ok {
				n, _ := strconv.Atoi(r.Attributes[name])
				sum += n
			}
		}
		out.Attributes[name] = strconv.Itoa(sum)
	}
	return out, nil
}
