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
// The wait never polls: it blocks on the queue's notifier, which the engine
// wakes when a message may have become receivable, and on a timer set for the
// next delayed or in-flight message the engine knows of. Each attempt is a
// command of its own, timestamped when it is made.
func (s *Server) receive(ctx context.Context, cmd *engine.Command, req *api.ReceiveMessageRequest) (api.Response, error) {
	wait, err := s.waitTime(cmd, req)
	if err != nil {
		return nil, err
	}
	deadline := time.Unix(0, cmd.Time).Add(wait)
	first, holding := true, false
	for {
		// Take the wake-up channel before looking, so that a message sent
		// between the look and the wait still wakes us.
		woken := s.notifier.wait(cmd.Queue)
		now := s.now()
		cmd.Time = now.UnixNano()
		// The first attempt always goes through the log: it may answer a
		// retried ReceiveRequestAttemptId, or an error. Later attempts go
		// only when the engine says a message is there, so an idle wait
		// writes nothing to the log.
		if first || s.receivable(cmd.Queue, cmd.Time) {
			first = false
			cmd.Entropy = newEntropy()
			resp, err := s.apply(ctx, cmd)
			if err != nil {
				return nil, err
			}
			if res, ok := resp.(*api.ReceiveMessageResult); !ok || len(res.Messages) > 0 {
				return resp, nil
			}
		}
		remaining := deadline.Sub(now)
		if remaining <= 0 {
			return &api.ReceiveMessageResult{}, nil
		}
		if !holding {
			// Waiting takes a slot; with none free, answer as a short poll
			// would, so that a flood of idle polls cannot pile up.
			select {
			case s.pollSlots <- struct{}{}:
				holding = true
				defer func() { <-s.pollSlots }()
			default:
				return &api.ReceiveMessageResult{}, nil
			}
		}
		if wake, ok := s.nextWake(cmd.Queue, cmd.Time); ok {
			if d := time.Duration(wake - cmd.Time); d < remaining {
				remaining = d
			}
		}
		timer := time.NewTimer(remaining)
		select {
		case <-woken:
		case <-timer.C:
		case <-ctx.Done():
			// The client went away: free the waiter. Nothing was received
			// for it, so nothing is lost.
			timer.Stop()
			return &api.ReceiveMessageResult{}, nil
		case <-s.done:
			timer.Stop()
			return &api.ReceiveMessageResult{}, nil
		}
		timer.Stop()
	}
}

// waitTime is the request's WaitTimeSeconds, or the queue's
// ReceiveMessageWaitTimeSeconds when the request gives none.
func (s *Server) waitTime(cmd *engine.Command, req *api.ReceiveMessageRequest) (time.Duration, error) {
	if req.WaitTimeSeconds != nil {
		return time.Duration(*req.WaitTimeSeconds) * time.Second, nil
	}
	resp, err := s.read(&engine.Command{
		Time:    cmd.Time,
		Caller:  cmd.Caller,
		Queue:   cmd.Queue,
		Request: &api.GetQueueAttributesRequest{QueueUrl: req.QueueUrl, AttributeNames: []string{api.AttrReceiveMessageWaitTimeSeconds}},
	})
	if err != nil {
		return 0, err
	}
	attrs := resp.(*api.GetQueueAttributesResult).Attributes
	secs := 0
	for _, c := range attrs[api.AttrReceiveMessageWaitTimeSeconds] {
		if c < '0' || c > '9' {
			break
		}
		secs = secs*10 + int(c-'0')
	}
	return time.Duration(secs) * time.Second, nil
}

func (s *Server) receivable(q api.QueueKey, now int64) (ok bool) {
	s.log.Read(func(e *engine.Engine) { ok = e.Receivable(q, now) })
	return ok
}

func (s *Server) nextWake(q api.QueueKey, now int64) (at int64, ok bool) {
	s.log.Read(func(e *engine.Engine) { at, ok = e.NextWake(q, now) })
	return at, ok
}

// longPollWaiters returns the number of receives waiting for messages: each
// holds one poll slot while it waits.
func (s *Server) longPollWaiters() int { return len(s.pollSlots) }
