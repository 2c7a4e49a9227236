package server

import (
	"context"
	"errors"
	"strconv"
	"sync"

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
//     one partition's failure left undone;
//   - PurgeQueue: in every partition at once; refused as in progress only if
//     every partition refused it so (one purged moments ago, by an answer
//     the client did not see, is done);
//   - DeleteQueue: in every partition at once, a partition already gone
//     counting as deleted;
//   - DeleteMessage and ChangeMessageVisibility by a handle from before the
//     queue's first split (it names no group): tried in partition 0, then in
//     each other partition while they answer that they know no such handle.
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
	if !s.routesTyped() {
		return nil, false, nil
	}
	q, named := s.queueOfRequest(in, req)
	if !named {
		return nil, false, nil
	}
	parts := s.shards.Parts(q)
	if len(parts) < 2 {
		return nil, false, nil
	}
	if err := api.Validate(req); err != nil {
		return nil, true, err
	}
	switch r := req.(type) {
	case *api.DeleteMessageRequest:
		return s.tryEachPart(ctx, in, q, parts, req, r.ReceiptHandle)
	case *api.ChangeMessageVisibilityRequest:
		return s.tryEachPart(ctx, in, q, parts, req, r.ReceiptHandle)
	}
	answers := s.askEveryPart(ctx, in, q, parts, req)
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
		for i := 1; i < len(answers); i++ {
			if isQueueGone(answers[i].err) {
				answers[i] = partAnswer{resp: api.Empty{}}
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

// tryEachPart carries out a delete or visibility change by a handle from
// before the queue's first split, which names no group, in each partition
// in turn while they answer that they do not hold its message
// (engine.IsHandleElsewhere). If none does, the message is gone, and the
// answer is the one a queue never split gives for a handle of a message
// gone: a delete succeeds, a visibility change is refused.
func (s *Server) tryEachPart(ctx context.Context, in api.Scope, q api.QueueKey, parts []uint32, req api.Request, handle string) (api.Response, bool, error) {
	if _, ok := engine.HandleGroupHash(handle); ok {
		return nil, false, nil // routed to its group's partition
	}
	for _, p := range parts {
		resp, err := s.doOnPart(ctx, in, q, p, req)
		if !engine.IsHandleElsewhere(err) {
			return resp, true, err
		}
	}
	if _, del := req.(*api.DeleteMessageRequest); del {
		return api.Empty{}, true, nil
	}
	return nil, true, engine.ErrMessageNotAvailable(handle)
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
