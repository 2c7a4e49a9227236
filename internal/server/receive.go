package server

import (
	"context"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// receive carries out a ReceiveMessage, waiting up to its wait time (or the
// queue's ReceiveMessageWaitTimeSeconds) for a message when none is there.
//
// Each attempt first asks the engine, changing nothing, whether it would
// take anything. Only then does it go through the log, as a command of its
// own timestamped when it is made: a receive that finds nothing changes
// nothing, so a short poll of an empty queue, or a long poll woken for a
// message another took, writes nothing and syncs nothing. A FIFO retry of a
// ReceiveRequestAttemptId whose record is kept goes through the log, which
// answers it from the record; an attempt that returned nothing left no
// record (as in SQS), so its retry is a new receive.
//
// The wait never polls: it blocks on the queue's notifier, which wakes one
// waiter when a message may have become receivable, and which sets one
// timer per queue for the next delayed or in-flight message the engine
// knows of. A woken waiter that goes to the log wakes the next one too while
// the queue holds more than the waiters already taking can take, and one
// that took messages and leaves more behind wakes the next one, so a burst
// reaches as many waiters as it has messages for, at once.
//
// LocalStack's override headers, if the request came with them (see
// receive_override.go), change its count and its wait, which then goes on
// until the count is filled (receiveMany).
func (s *Server) receive(ctx context.Context, cmd *engine.Command, req *api.ReceiveMessageRequest) (api.Response, error) {
	o := receiveOverrideOf(ctx)
	wait := o.wait
	if wait == 0 {
		var err error
		if wait, err = s.waitTime(ctx, cmd, req); err != nil {
			return nil, err
		}
	}
	deadline := time.Unix(0, cmd.Time).Add(wait)
	if o != (receiveOverride{}) && req.ReceiveRequestAttemptId == "" {
		return s.receiveMany(ctx, cmd, req, o, deadline)
	}
	return s.receiveUntil(ctx, cmd, req, deadline)
}

// receiveUntil is a receive that waits until deadline, at the most, for a
// message when none is there.
func (s *Server) receiveUntil(ctx context.Context, cmd *engine.Command, req *api.ReceiveMessageRequest, deadline time.Time) (api.Response, error) {
	holding := false
	var w *waiter
	defer func() {
		if holding {
			<-s.pollSlots
		}
	}()
	for {
		if w != nil {
			// Back in the waiting list before looking, so that a message
			// sent between the look and the wait still wakes us.
			s.notifier.rejoin(w)
		}
		now := s.now()
		cmd.Time = now.UnixNano()
		exists, take := s.receiveOutlook(ctx, cmd.Queue, cmd.Time, req.ReceiveRequestAttemptId)
		if !exists {
			if w != nil {
				// Deleted while we waited: the waiter goes, and the next
				// receive hears that the queue does not exist.
				s.notifier.leave(w)
				return &api.ReceiveMessageResult{}, nil
			}
			err := s.confirmNegative(ctx, api.ErrQueueDoesNotExist(), func() error {
				if exists, _ := s.receiveOutlook(ctx, cmd.Queue, cmd.Time, req.ReceiveRequestAttemptId); !exists {
					return api.ErrQueueDoesNotExist()
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		if take && peeking(ctx) {
			// A peek of a split queue's receive (partition_receive.go):
			// it takes nothing, and says the partition has something.
			s.leaveWaiting(ctx, w, cmd.Queue)
			return receivable{}, nil
		}
		if take {
			if w != nil {
				s.notifier.taking(w, s.receiveSpread(ctx, cmd.Queue, req.MaxNumberOfMessages))
			}
			cmd.Entropy = newEntropy()
			resp, err := s.apply(ctx, cmd)
			if w != nil {
				s.notifier.doneTaking(w)
			}
			if err != nil {
				s.leaveWaiting(ctx, w, cmd.Queue)
				return nil, err
			}
			if res, ok := resp.(*api.ReceiveMessageResult); !ok || len(res.Messages) > 0 {
				s.leaveWaiting(ctx, w, cmd.Queue)
				return resp, nil
			}
		}
		remaining := deadline.Sub(now)
		if remaining <= 0 {
			s.leaveWaiting(ctx, w, cmd.Queue)
			return &api.ReceiveMessageResult{}, nil
		}
		if !holding {
			// Waiting takes a slot; with none free, answer as a short poll
			// would, so that a flood of idle polls cannot pile up.
			select {
			case s.pollSlots <- struct{}{}:
				holding = true
			default:
				return &api.ReceiveMessageResult{}, nil
			}
		}
		if w == nil {
			// Join, then look again: a message sent since the look above
			// would not have woken us.
			w = s.notifier.join(cmd.Queue)
			continue
		}
		if wake, ok := s.nextWake(ctx, cmd.Queue, cmd.Time); ok {
			if d := time.Duration(wake - cmd.Time); d < remaining {
				s.notifier.wakeAt(cmd.Queue, time.Unix(0, wake))
			}
		}
		timer := s.clock.TimerAt(deadline)
		select {
		case <-w.ch:
		case <-timer.C():
		case <-ctx.Done():
			// The client went away: free the waiter. Nothing was received
			// for it, so nothing is lost; a wake-up it got goes on.
			timer.Stop()
			s.notifier.leave(w)
			return &api.ReceiveMessageResult{}, nil
		case <-s.done:
			timer.Stop()
			s.notifier.leave(w)
			return &api.ReceiveMessageResult{}, nil
		}
		timer.Stop()
	}
}

// leaveWaiting ends a receive's wait, if it waited: a wake-up it got and
// did not use goes to the next waiter, and if messages are still there to
// take, the next waiter is woken for them. If not, the queue's timer is set
// again for the next delayed or in-flight message: the timer may have been
// what woke this waiter, and the others sleep until their own deadlines.
func (s *Server) leaveWaiting(ctx context.Context, w *waiter, q api.QueueKey) {
	if w == nil {
		return
	}
	s.notifier.leave(w)
	now := s.now().UnixNano()
	if s.receivable(ctx, q, now) {
		s.notifier.signal(q)
	} else if wake, ok := s.nextWake(ctx, q, now); ok {
		s.notifier.wakeAt(q, time.Unix(0, wake))
	}
}

// waitTime is the request's WaitTimeSeconds, or the queue's
// ReceiveMessageWaitTimeSeconds when the request gives none.
func (s *Server) waitTime(ctx context.Context, cmd *engine.Command, req *api.ReceiveMessageRequest) (time.Duration, error) {
	if req.WaitTimeSeconds != nil {
		return time.Duration(*req.WaitTimeSeconds) * time.Second, nil
	}
	return s.queueSeconds(ctx, cmd, req.QueueUrl, api.AttrReceiveMessageWaitTimeSeconds)
}

// visibilityTimeout is the request's VisibilityTimeout, or the queue's
// when the request gives none: how long the messages it takes stay in
// flight.
func (s *Server) visibilityTimeout(ctx context.Context, cmd *engine.Command, req *api.ReceiveMessageRequest) (time.Duration, error) {
	if req.VisibilityTimeout != nil {
		return time.Duration(*req.VisibilityTimeout) * time.Second, nil
	}
	return s.queueSeconds(ctx, cmd, req.QueueUrl, api.AttrVisibilityTimeout)
}

// queueSeconds reads a queue attribute that is a number of seconds.
func (s *Server) queueSeconds(ctx context.Context, cmd *engine.Command, queueURL, attr string) (time.Duration, error) {
	resp, err := s.readQueue(ctx, &engine.Command{
		Time:    cmd.Time,
		Caller:  cmd.Caller,
		Queue:   cmd.Queue,
		Request: &api.GetQueueAttributesRequest{QueueUrl: queueURL, AttributeNames: []string{attr}},
	})
	if err != nil {
		return 0, err
	}
	attrs := resp.(*api.GetQueueAttributesResult).Attributes
	secs := 0
	for _, c := range attrs[attr] {
		if c < '0' || c > '9' {
			break
		}
		secs = secs*10 + int(c-'0')
	}
	return time.Duration(secs) * time.Second, nil
}

func (s *Server) receiveOutlook(ctx context.Context, q api.QueueKey, now int64, attemptID string) (exists, take bool) {
	s.servedLog(ctx, q).Read(func(e *engine.Engine) { exists, take = e.ReceiveOutlook(q, now, attemptID) })
	return exists, take
}

func (s *Server) receiveSpread(ctx context.Context, q api.QueueKey, max *int) (n int) {
	take := 1
	if max != nil {
		take = *max
	}
	s.servedLog(ctx, q).Read(func(e *engine.Engine) { n = e.ReceiveSpread(q, take) })
	return n
}

func (s *Server) receivable(ctx context.Context, q api.QueueKey, now int64) (ok bool) {
	s.servedLog(ctx, q).Read(func(e *engine.Engine) { ok = e.Receivable(q, now) })
	return ok
}

func (s *Server) nextWake(ctx context.Context, q api.QueueKey, now int64) (at int64, ok bool) {
	s.servedLog(ctx, q).Read(func(e *engine.Engine) { at, ok = e.NextWake(q, now) })
	return at, ok
}

// longPollWaiters returns the number of receives waiting for messages: each
// holds one poll slot while it waits.
func (s *Server) longPollWaiters() int { return len(s.pollSlots) }
