package engine

import (
	"errors"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// missingTargetReason is the reason SQS gives for a RedrivePolicy naming
// a queue that does not exist.
const missingTargetReason = "Dead letter target does not exist."

// IsMissingDeadLetterTarget reports whether err is the engine's refusal
// of a RedrivePolicy naming a queue this engine does not hold: a router
// that knows the queue lives in another engine (a shard) can bring the
// two together and try again.
func IsMissingDeadLetterTarget(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "InvalidParameterValue" && strings.HasSuffix(ae.Message, "Reason: "+missingTargetReason)
}

// checkRedrive enforces, when a queue's RedrivePolicy is set, what depends
// on the dead-letter queue it names: it must exist in the same account and
// region, be of the same type, and allow the queue as a source by its
// RedriveAllowPolicy. It may be the queue itself: SQS took such a policy
// (localstack test_sqs.py test_set_empty_redrive_policy, AWS-validated in
// 2024, sets a queue's RedrivePolicy to its own ARN); deadLetter then
// leaves the queue's messages where they are.
func (e *Engine) checkRedrive(src api.QueueKey, srcArn string, fifo bool, raw string, rp *redriveTarget) error {
	invalid := func(reason string) error {
		return api.ErrInvalidParameterValue("Value %s for parameter RedrivePolicy is invalid. Reason: %s", raw, reason)
	}
	// A dead-letter queue is in its source's region; the target is
	// placed here, as attributes are parsed without knowing the region.
	key, _ := api.QueueOfARN(rp.arn, e.cfg.Region)
	rp.key = key
	d := e.queues[key]
	if key.Region != src.Region || d == nil {
		return invalid(missingTargetReason)
	}
	if d.fence != "" {
		return errQueueMoving()
	}
	if key.Account != src.Account {
		return invalid("Dead-letter target owner should be same as the source.")
	}
	if d.fifo != fifo {
		return invalid("Dead-letter queue must be same type of queue as the source.")
	}
	if p := d.attrs.allow; p != nil {
		allowed := false
		switch p.RedrivePermission {
		case redrivePermAllowAll:
			allowed = true
		case redrivePermByQueue:
			for _, a := range p.SourceQueueArns {
				if a == srcArn {
					allowed = true
				}
			}
		}
		if !allowed {
			return invalid("Queue " + rp.arn + " does not allow this queue as a dead-letter queue source by its RedriveAllowPolicy.")
		}
	}
	if d.split {
		// What is dead-lettered goes by key, not by group (split.go), so
		// a split queue cannot be a dead-letter queue. A cluster gathers
		// the target into one partition before the request comes here
		// (shards.MakeWhole); finding it split again means the spread
		// raced the request (a new first-group leader knows nothing of
		// the gather), or the router's map lagged the split. Either way
		// a retry gathers it: the answer is the retryable one of a
		// moving queue, which the server routes anew.
		return errQueueMoving()
	}
	return nil
}

// indexRedrive records q as a source of the dead-letter queue its
// RedrivePolicy names, replacing the record of its previous policy old.
func (e *Engine) indexRedrive(q *queue, old *redriveTarget) {
	if old != nil {
		if s := e.dlqSources[old.key]; s != nil {
			delete(s, q.key)
			if len(s) == 0 {
				delete(e.dlqSources, old.key)
			}
		}
	}
	if rp := q.attrs.redrive; rp != nil {
		s := e.dlqSources[rp.key]
		if s == nil {
			s = map[api.QueueKey]struct{}{}
			e.dlqSources[rp.key] = s
		}
		s[q.key] = struct{}{}
	}
}

// unindexRedrive forgets a deleted queue as a dead-letter queue source.
// Sources that name it as their dead-letter queue keep their policy, as in
// SQS; while it does not exist their messages are not dead-lettered.
func (e *Engine) unindexRedrive(q *queue) {
	if rp := q.attrs.redrive; rp != nil {
		q.attrs.redrive = nil
		e.indexRedrive(q, rp)
	}
}

// isDeadLetterQueue reports whether some queue's RedrivePolicy names k:
// a queue of this engine, or one of another that k knows of.
func (e *Engine) isDeadLetterQueue(k api.QueueKey) bool {
	if len(e.dlqSources[k]) > 0 {
		return true
	}
	q := e.queues[k]
	return q != nil && len(q.remoteSources) > 0
}

// deadLetter moves m, which is visible in q and about to be received, to
// q's dead-letter queue if it has been received maxReceiveCount times
// already. The message keeps its id, body, attributes, group and
// deduplication ids and receive count; it gets DeadLetterQueueSourceArn and,
// in a FIFO dead-letter queue, a new sequence number and a new retention
// period (a standard one keeps the original enqueue time, as in SQS). The
// move bypasses the dead-letter queue's deduplication. It reports whether
// m was moved.
func (e *Engine) deadLetter(q *queue, m *message, now int64) bool {
	rp := q.attrs.redrive
	if rp == nil || int(q.ms.receives(m)) < rp.maxReceiveCount {
		return false
	}
	d := e.queues[rp.key]
	if rp.key != q.key && (d == nil && q.redriveRemote || d != nil && d.fifo == q.fifo && (d.fence != "" || len(q.outbox.entries) > 0)) {
		// The dead-letter queue lives in another engine (outbox.go); or
		// it is leaving this one (its image is taken already); or it is
		// here again, and messages the queue let go before are still on
		// their way to it, which this one must not overtake.
		return e.toOutbox(q, m, rp.key, OutboxDeadLetter)
	}
	if d == nil || d == q || d.fifo != q.fifo {
		return false
	}
	q.remove(m)
	e.cow.touch(m)
	e.ms.setDLQSource(m, q.arn)
	if r := e.ms.recvOf(m); r != (recvState{}) {
		e.ms.setRecv(m, recvState{firstAt: r.firstAt, at: r.at, receives: r.receives})
	}
	m.vizChanges = 0
	if d.fifo {
		e.ms.setEnqueuedAt(m, now)
		m.seq = d.nextSeq(now)
	}
	m.visibleAt = now
	d.insert(m, now)
	e.wake(d.key)
	return true
}

// listDeadLetterSourceQueues lists the queues whose RedrivePolicy names
// the queue, by name, a page at a time.
func (e *Engine) listDeadLetterSourceQueues(cmd *Command, r *api.ListDeadLetterSourceQueuesRequest) (api.Response, error) {
	q, err := e.queueAt(cmd.Queue, max(cmd.Time, e.now))
	if err != nil {
		return nil, err
	}
	byName := map[string]api.QueueKey{}
	var names []string
	for k := range e.dlqSources[q.key] {
		// Sources are in the dead-letter queue's account; the name orders
		// them, and names a split queue once.
		if _, dup := byName[k.Name]; !dup {
			byName[k.Name] = k.Whole()
			names = append(names, k.Name)
		}
	}
	for k := range q.remoteSources {
		if _, dup := byName[k.Name]; !dup {
			byName[k.Name] = k
			names = append(names, k.Name)
		}
	}
	page, next, err := paginate(names, r.NextToken, r.MaxResults)
	if err != nil {
		return nil, err
	}
	res := &api.ListDeadLetterSourceQueuesResult{QueueUrls: []string{}, NextToken: next}
	for _, name := range page {
		res.QueueUrls = append(res.QueueUrls, byName[name].Path())
	}
	return res, nil
}
