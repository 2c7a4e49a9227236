package server

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// A receive on a split queue (docs/cluster.md, "One busy FIFO queue over
// many shards: partitions"). A ReceiveMessage names no message group, so
// the member it reaches asks every partition, each in its own shard, as
// one long poll with one deadline:
//
//   - a sweep asks the partitions one after another without waiting,
//     each for what the receive may still take (MaxNumberOfMessages less
//     what the partitions before gave), and answers once any gave
//     messages: a receive never takes more than it may return, since a
//     message taken and not returned would stay in flight, its group
//     locked, until its visibility timeout;
//   - finding none, it waits on every partition at once with a peek: a
//     long poll that takes nothing and answers as soon as its partition
//     may have a message to take (receivable). The first peek to answer
//     starts a new sweep at its partition; the others end. A peek holds
//     a long-poll slot on its partition's leader as a receive does.
//
// A sweep without a ReceiveRequestAttemptId starts at a partition whose
// shard this member leads, if it leads any, else at any, picked at random:
// the consumers of a queue spread over its partitions as they spread over
// the members, and a receive that finds its messages where it arrived
// costs no hop to another member, nor does the delete of what it returned,
// whose handles all name that partition. The next sweep starts at the
// partition whose peek answered.
//
// A FIFO receive with a ReceiveRequestAttemptId starts every sweep at a
// partition picked by the attempt id instead, whatever member it reaches:
// its retry, through this member or another, asks the partitions in the
// same order, each answering again what it recorded for the attempt (a
// partition that gave nothing recorded nothing, as in SQS), so that it
// returns the messages the lost answer held. Not always: a partition
// before them in the order that has messages now, and had none then,
// gives them first, and the retry then returns more than
// MaxNumberOfMessages (a partition answers its record whole), or, with the
// count filled before the partition that recorded the attempt, does not
// return its messages, which stay in flight until their visibility
// timeout, as a lost answer's do in SQS.

// peekCtxKey marks, in a request's context, a receive that only peeks.
type peekCtxKey struct{}

// withPeek returns ctx making its receive a peek.
func withPeek(ctx context.Context) context.Context {
	return context.WithValue(ctx, peekCtxKey{}, true)
}

// peeking reports whether ctx makes its receive a peek.
func peeking(ctx context.Context) bool {
	p, _ := ctx.Value(peekCtxKey{}).(bool)
	return p
}

// peekRetryPause is how long a peek that failed (its partition's leader
// changed, or could not be reached) waits before it waits again.
const peekRetryPause = 100 * time.Millisecond

// receivable is a peek's answer when its partition may hold a message to
// take; a peek that found none in its wait answers an empty receive.
type receivable struct{}

// serveSpanningReceive carries out a ReceiveMessage on a split queue over
// its partitions, and reports whether req was one. Only where the members
// carry out each other's typed requests (routesTyped); elsewhere the
// receive goes to the queue's first partition alone.
func (s *Server) serveSpanningReceive(ctx context.Context, in api.Scope, req api.Request) (api.Response, bool, error) {
	r, ok := req.(*api.ReceiveMessageRequest)
	if !ok {
		return nil, false, nil
	}
	q, parts, spans, err := s.spanningQueue(in, req)
	if !spans || err != nil {
		return nil, spans, err
	}
	max := 1
	if r.MaxNumberOfMessages != nil {
		max = *r.MaxNumberOfMessages
	}
	local := func(p uint32) bool { return s.leadsPart(q, p) }
	order := sweepOrder(parts, r.ReceiveRequestAttemptId, local)
	out := &api.ReceiveMessageResult{}
	ctx, rerouteBy := movingDeadline(ctx)
	var deadline time.Time
	for {
		epoch := s.shards.Epoch()
		err := s.sweepParts(ctx, in, q, r, order, max, out)
		switch {
		case len(out.Messages) > 0:
			return out, true, nil
		case engine.IsQueueMoving(err) && s.awaitReroute(ctx, epoch, rerouteBy):
			// A partition moved, split or merged since the map was
			// read, and took nothing: ask the partitions the map has
			// now (partition 0 alone if the queue is whole again).
			if parts = s.shards.Parts(q); len(parts) == 0 {
				parts = []uint32{0}
			}
			order = sweepOrder(parts, r.ReceiveRequestAttemptId, local)
			continue
		case err != nil:
			return nil, true, err
		}
		if deadline.IsZero() {
			// Found nothing, and allowed to receive (a caller who is not
			// was refused by the sweep): how long to wait.
			wait, err := s.spanningWait(ctx, in, q, r)
			if err != nil {
				return nil, true, err
			}
			deadline = s.now().Add(wait)
		}
		remaining := deadline.Sub(s.now())
		if remaining <= 0 {
			return out, true, nil
		}
		first, got, ok := s.peekParts(ctx, in, q, r.QueueUrl, order, remaining)
		if len(got) > 0 {
			out.Messages = got
			return out, true, nil
		}
		if !ok {
			return out, true, nil
		}
		if r.ReceiveRequestAttemptId == "" {
			// Without an attempt id, start where the message is; with
			// one, keep the order its retry will walk.
			order = startAt(order, first)
		}
	}
}

// spanningWait is the receive's WaitTimeSeconds, or the queue's
// ReceiveMessageWaitTimeSeconds (its first partition's) when it gives
// none, read as the queue's owner: a caller allowed to receive need not
// be allowed to read the queue's attributes.
func (s *Server) spanningWait(ctx context.Context, in api.Scope, q api.QueueKey, r *api.ReceiveMessageRequest) (time.Duration, error) {
	if r.WaitTimeSeconds != nil {
		return time.Duration(*r.WaitTimeSeconds) * time.Second, nil
	}
	owner := api.Scope{Account: q.Account, Region: in.Region}
	resp, err := s.doOnPart(ctx, owner, q, 0, &api.GetQueueAttributesRequest{QueueUrl: r.QueueUrl, AttributeNames: []string{api.AttrReceiveMessageWaitTimeSeconds}})
	if err != nil {
		return 0, err
	}
	secs := 0
	for _, c := range resp.(*api.GetQueueAttributesResult).Attributes[api.AttrReceiveMessageWaitTimeSeconds] {
		if c < '0' || c > '9' {
			break
		}
		secs = secs*10 + int(c-'0')
	}
	return time.Duration(secs) * time.Second, nil
}

// sweepParts asks each partition in order, without waiting, for what the
// receive may still take, until it has max messages; it adds what they
// give to out, and returns the first error met (a partition moving, or
// whose shard is electing): the caller answers it only if no partition
// gave anything.
func (s *Server) sweepParts(ctx context.Context, in api.Scope, q api.QueueKey, r *api.ReceiveMessageRequest, order []uint32, max int, out *api.ReceiveMessageResult) error {
	var first error
	for _, p := range order {
		left := max - len(out.Messages)
		if left <= 0 {
			break
		}
		noWait := 0
		sub := *r
		sub.MaxNumberOfMessages, sub.WaitTimeSeconds = &left, &noWait
		resp, err := s.doOnPart(ctx, in, q, p, &sub)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		if res, ok := resp.(*api.ReceiveMessageResult); ok {
			out.Messages = append(out.Messages, res.Messages...)
		}
	}
	return first
}

// peekParts waits up to wait on every partition at once for one that may
// have a message to take, and returns the first that answered so; false
// if none did in the wait (or none could wait: a leader out of long-poll
// slots answers at once, as a short poll). A member that does not know
// peeks (of a version before them) makes a real receive of one message:
// what such receives took is returned (got), since a message taken and not
// returned would stay in flight.
func (s *Server) peekParts(ctx context.Context, in api.Scope, q api.QueueKey, queueURL string, order []uint32, wait time.Duration) (first uint32, got []api.Message, ok bool) {
	pctx, cancel := context.WithTimeout(withPeek(ctx), wait)
	defer cancel()
	secs := int((wait + time.Second - 1) / time.Second)
	secs = min(secs, api.MaxWaitTimeSeconds)
	var mu sync.Mutex
	ready := make(chan uint32, len(order))
	var wg sync.WaitGroup
	for _, p := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := 1
			var resp api.Response
			for {
				var err error
				resp, err = s.doOnPart(pctx, in, q, p, &api.ReceiveMessageRequest{QueueUrl: queueURL, MaxNumberOfMessages: &one, WaitTimeSeconds: &secs})
				if err == nil {
					break
				}
				// The partition's leader changed under the peek, or
				// could not be reached: wait on the next one, until the
				// deadline.
				select {
				case <-pctx.Done():
					return
				case <-time.After(peekRetryPause):
				}
			}
			switch r := resp.(type) {
			case receivable:
			case *api.ReceiveMessageResult:
				if len(r.Messages) == 0 {
					return
				}
				mu.Lock()
				got = append(got, r.Messages...)
				mu.Unlock()
			default:
				return
			}
			ready <- p
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case first = <-ready:
		cancel()
		<-done
		return first, got, true
	case <-done:
		select {
		case first = <-ready:
			return first, got, true
		default:
			return 0, got, false
		}
	}
}

// sweepOrder is the order a receive asks parts in: from a partition picked
// by the receive's attempt id, if it has one, so that its retry through any
// member walks the same order; else from one picked at random among those
// local says are led here, or among all if none is.
func sweepOrder(parts []uint32, attemptID string, local func(uint32) bool) []uint32 {
	start := rand.IntN(len(parts))
	if attemptID != "" {
		h := fnv.New32a()
		h.Write([]byte(attemptID))
		start = int(h.Sum32() % uint32(len(parts)))
	} else {
		n := 0
		for i, p := range parts {
			if local(p) {
				n++
				if rand.IntN(n) == 0 { // each of the n led here equally likely
					start = i
				}
			}
		}
	}
	return append(append([]uint32(nil), parts[start:]...), parts[:start]...)
}

// leadsPart reports whether this member leads the shard holding partition
// part of queue q, by its copy of the map.
func (s *Server) leadsPart(q api.QueueKey, part uint32) bool {
	q.Part = part
	g, held := s.groupByID(s.shards.Of(q))
	return held && g.leads()
}

// startAt returns order rotated to start at part.
func startAt(order []uint32, part uint32) []uint32 {
	for i, p := range order {
		if p == part {
			return append(append([]uint32(nil), order[i:]...), order[:i]...)
		}
	}
	return order
}
