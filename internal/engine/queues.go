package engine

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// createQueue creates a queue in the caller's account, or returns the URL
// of the existing queue of that name if every attribute the request gives
// has the queue's current value.
func (e *Engine) createQueue(cmd *Command, r *api.CreateQueueRequest, now int64) (api.Response, error) {
	key := api.QueueKey{Region: cmd.Region, Account: cmd.Caller, Name: r.QueueName}
	e.pruneDeleted(now)
	fifo, err := fifoFromRequest(r)
	if err != nil {
		return nil, err
	}
	attrs := defaultAttrs(fifo)
	if err := attrs.apply(r.Attributes, fifo); err != nil {
		return nil, err
	}
	if q := e.queues[key]; q != nil {
		if name, same := sameAttributes(q, r.Attributes, &attrs); !same {
			return nil, api.ErrQueueNameExists(name)
		}
		return &api.CreateQueueResult{QueueUrl: q.path()}, nil
	}
	if m, ok := e.moved[key]; ok && now < m.until {
		// The queue lives elsewhere now: this request came by an old map.
		return nil, errQueueMoving()
	}
	if d, ok := e.deleted[key]; ok && now < d.until {
		return nil, api.ErrQueueDeletedRecently()
	}
	if len(r.Tags) > api.MaxTagsPerQueue {
		return nil, errTooManyTags(key.Name)
	}
	arn := key.ARN(e.cfg.Region)
	if attrs.redrive != nil {
		if err := e.checkRedrive(key, arn, fifo, attrs.RedrivePolicy, attrs.redrive); err != nil {
			return nil, err
		}
	}
	delete(e.deleted, key)
	e.dropDeadDeletions()
	q := newQueue(key, e.cfg.Region, fifo, attrs, now)
	q.bodies = e.bodyStore()
	q.due, q.cow, q.ms = e.due, e.cow, e.ms
	for k, v := range r.Tags {
		q.tags[k] = v
	}
	e.queues[key] = q
	e.indexRedrive(q, nil)
	return &api.CreateQueueResult{QueueUrl: q.path()}, nil
}

// fifoFromRequest decides a new queue's type. The name and the FifoQueue
// attribute must agree: a name ending in .fifo needs FifoQueue=true and
// FifoQueue=true needs such a name. FifoQueue=false is refused like any
// FIFO-only attribute on a standard queue.
func fifoFromRequest(r *api.CreateQueueRequest) (bool, error) {
	v, given := r.Attributes[api.AttrFifoQueue]
	fifo := given && api.IsTrueAttr(v)
	switch fifoName := api.IsFIFOName(r.QueueName); {
	case fifo && !fifoName:
		return false, api.ErrInvalidParameterValue("The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.")
	case !fifo && fifoName:
		return false, api.ErrInvalidParameterValue("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	if given {
		if err := api.ValidateQueueAttribute(api.AttrFifoQueue, v, fifo); err != nil {
			return false, err
		}
	}
	return fifo, nil
}

// sameAttributes compares the attributes a CreateQueue request gives, in
// canonical form, with an existing queue's. Attributes the request leaves
// out are not compared: a CreateQueue with just a name returns any
// existing queue of that name. It returns the first differing attribute.
func sameAttributes(q *queue, given map[string]string, want *queueAttrs) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if name == api.AttrFifoQueue {
			continue // the name already decided the type
		}
		have, _ := q.attrs.get(name, q.fifo)
		w, _ := want.get(name, q.fifo)
		if have != w {
			return name, false
		}
	}
	return "", true
}

// deleteQueue deletes a queue with its messages. Its name cannot be used
// again for the command's RecreateDelay.
func (e *Engine) deleteQueue(cmd *Command, now int64) (api.Response, error) {
	q, err := e.queueAt(cmd.Queue, max(cmd.Time, e.now))
	if err != nil {
		return nil, err
	}
	delete(e.queues, q.key)
	e.dropBodies(q)
	if rp := q.attrs.redrive; rp != nil && q.redriveRemote {
		e.unlinkRemote(q, rp.key)
	}
	e.orphanOutbox(q)
	e.due.Remove(q)
	e.pruneDeleted(now)
	// A name freed at once needs no record; a record the name already has
	// (an earlier deletion whose cool-down runs) is superseded.
	delete(e.deleted, q.key)
	if d := cooldown(cmd.RecreateDelay, api.QueueDeletionCooldown); d > 0 {
		rec := deletion{key: q.key, at: now, until: now + d}
		e.deleted[q.key] = rec
		e.deletedLog.Push(rec)
	}
	e.dropDeadDeletions()
	e.unindexRedrive(q)
	for _, t := range q.tasks {
		e.stopRunning(t)
	}
	return api.Empty{}, nil
}

// setQueueAttributes changes attributes, all or none of them.
func (e *Engine) setQueueAttributes(cmd *Command, r *api.SetQueueAttributesRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	if v, ok := r.Attributes[api.AttrFifoQueue]; ok {
		// The queue type is fixed at creation. A standard queue has no
		// FifoQueue attribute: "Unknown Attribute FifoQueue.", whatever
		// the value. On a FIFO queue "true" (any case) changes nothing and
		// anything else is "Modifying queue type is not supported.".
		switch {
		case !q.fifo:
			return nil, api.ErrInvalidAttributeName(api.AttrFifoQueue)
		case !api.IsTrueAttr(v):
			return nil, api.ErrModifyQueueType()
		}
	}
	attrs := q.attrs
	if err := attrs.apply(r.Attributes, q.fifo); err != nil {
		return nil, err
	}
	if attrs.redrive != nil && attrs.RedrivePolicy != q.attrs.RedrivePolicy {
		if err := e.checkRedrive(q.key, q.arn, q.fifo, attrs.RedrivePolicy, attrs.redrive); err != nil {
			return nil, err
		}
	}
	old := q.attrs.redrive
	if q.fifo && attrs.DeduplicationScope != q.attrs.DeduplicationScope {
		// A split queue may turn to the queue's scope too, as SQS lets
		// any high-throughput queue: the change takes
		// dedupScopePropagation to take effect, time in which a cluster
		// gathers the partitions of a queue out of high-throughput mode
		// back into one (shards/spread.go). Until it has, each partition
		// deduplicates across its own groups only.
		q.prevDedupScope, q.dedupScopeChanged = q.dedupScope(now), now
	}
	q.attrs = attrs
	q.modifiedAt = now
	e.indexRedrive(q, old)
	if old != nil && q.redriveRemote && (attrs.redrive == nil || attrs.redrive.key != old.key) {
		e.unlinkRemote(q, old.key)
	}
	return api.Empty{}, nil
}

// purgeQueue deletes every message of a queue, at most once every
// command's PurgeDelay (a minute in SQS). A FIFO queue also forgets its
// deduplication ids, as SQS's does: a message sent after the purge with
// the id of one sent before is accepted and delivered.
func (e *Engine) purgeQueue(cmd *Command, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	if q.purged && now-q.purgedAt < cooldown(cmd.PurgeDelay, api.PurgeInterval) {
		// SQS names the queue by its name (recorded: "Only one PurgeQueue
		// operation on <queue-name> is allowed every 60 seconds.").
		return nil, api.ErrPurgeQueueInProgress(q.key.Name)
	}
	q.purged, q.purgedAt = true, now
	e.dropBodies(q)
	q.resetMessages()
	if q.fifo {
		q.dedup.reset()
	}
	return api.Empty{}, nil
}

// getQueueAttributes answers GetQueueAttributes as of time t.
func (e *Engine) getQueueAttributes(cmd *Command, r *api.GetQueueAttributesRequest, t int64) (api.Response, error) {
	q, err := e.queueAt(cmd.Queue, max(cmd.Time, e.now))
	if err != nil {
		return nil, err
	}
	all := false
	for _, name := range r.AttributeNames {
		switch {
		case name == api.AttrAll:
			all = true
		case !knownAttr(name):
			return nil, api.ErrInvalidAttributeName(name)
		case !q.fifo && (name == api.AttrFifoQueue || name == api.AttrContentBasedDeduplication):
			// A standard queue has no FIFO attributes: SQS answers
			// "Unknown Attribute FifoQueue." when they are asked for by
			// name (All leaves them out), as AWS's SDK team confirmed
			// (aws/aws-sdk-ruby#1350).
			return nil, api.ErrInvalidAttributeName(name)
		}
	}
	out := map[string]string{}
	want := func(name string) bool {
		if all {
			return true
		}
		for _, n := range r.AttributeNames {
			if n == name {
				return true
			}
		}
		return false
	}
	for _, name := range settableAttrs {
		if want(name) {
			if v, ok := q.attrs.get(name, q.fifo); ok {
				out[name] = v
			}
		}
	}
	if want(api.AttrApproximateNumberOfMessages) || want(api.AttrApproximateNumberOfMessagesNotVisible) ||
		want(api.AttrApproximateNumberOfMessagesDelayed) {
		visible, inflight, delayed := q.countsAt(t)
		for name, n := range map[string]int{
			api.AttrApproximateNumberOfMessages:           visible,
			api.AttrApproximateNumberOfMessagesNotVisible: inflight,
			api.AttrApproximateNumberOfMessagesDelayed:    delayed,
		} {
			if want(name) {
				out[name] = strconv.Itoa(n)
			}
		}
	}
	if want(api.AttrCreatedTimestamp) {
		out[api.AttrCreatedTimestamp] = strconv.FormatInt(q.createdAt/1e9, 10)
	}
	if want(api.AttrLastModifiedTimestamp) {
		out[api.AttrLastModifiedTimestamp] = strconv.FormatInt(q.modifiedAt/1e9, 10)
	}
	if want(api.AttrQueueArn) {
		out[api.AttrQueueArn] = q.arn
	}
	return &api.GetQueueAttributesResult{Attributes: out}, nil
}

// getQueueURL looks a queue up by name, in the caller's account unless the
// request names the owner.
func (e *Engine) getQueueURL(cmd *Command, r *api.GetQueueUrlRequest) (api.Response, error) {
	account := cmd.Caller
	if r.QueueOwnerAWSAccountId != "" {
		account = r.QueueOwnerAWSAccountId
	}
	q := e.queues[api.QueueKey{Region: cmd.Region, Account: account, Name: r.QueueName}]
	if q == nil {
		// A queue moved away answers IsQueueMoving for a while.
		_, err := e.queueAt(api.QueueKey{Region: cmd.Region, Account: account, Name: r.QueueName}, max(cmd.Time, e.now))
		return nil, err
	}
	return &api.GetQueueUrlResult{QueueUrl: q.path()}, nil
}

// listQueues lists the caller's queues in the request's region by name, a
// page at a time.
func (e *Engine) listQueues(cmd *Command, r *api.ListQueuesRequest) (api.Response, error) {
	var names []string
	for k := range e.queues {
		if k.Part == 0 && k.Account == cmd.Caller && k.Region == cmd.Region && strings.HasPrefix(k.Name, r.QueueNamePrefix) {
			names = append(names, k.Name)
		}
	}
	page, next, err := paginate(names, r.NextToken, r.MaxResults)
	if err != nil {
		return nil, err
	}
	res := &api.ListQueuesResult{NextToken: next}
	for _, name := range page {
		res.QueueUrls = append(res.QueueUrls, api.QueueKey{Region: cmd.Region, Account: cmd.Caller, Name: name}.Path())
	}
	return res, nil
}

// tagQueue adds or replaces tags.
func (e *Engine) tagQueue(cmd *Command, r *api.TagQueueRequest) (api.Response, error) {
	q, err := e.queueAt(cmd.Queue, max(cmd.Time, e.now))
	if err != nil {
		return nil, err
	}
	n := len(q.tags)
	for k := range r.Tags {
		if _, ok := q.tags[k]; !ok {
			n++
		}
	}
	if n > api.MaxTagsPerQueue {
		return nil, errTooManyTags(q.key.Name)
	}
	for k, v := range r.Tags {
		q.tags[k] = v
	}
	return api.Empty{}, nil
}

func errTooManyTags(name string) error {
	return api.ErrInvalidParameterValue("Too many tags added for queue %s. A queue can have at most %d tags.", name, api.MaxTagsPerQueue)
}

// untagQueue removes tags; keys that are not set are ignored.
func (e *Engine) untagQueue(cmd *Command, r *api.UntagQueueRequest) (api.Response, error) {
	q, err := e.queueAt(cmd.Queue, max(cmd.Time, e.now))
	if err != nil {
		return nil, err
	}
	for _, k := range r.TagKeys {
		delete(q.tags, k)
	}
	return api.Empty{}, nil
}

// listQueueTags returns a queue's tags.
func (e *Engine) listQueueTags(cmd *Command) (api.Response, error) {
	q, err := e.queueAt(cmd.Queue, max(cmd.Time, e.now))
	if err != nil {
		return nil, err
	}
	tags := make(map[string]string, len(q.tags))
	for k, v := range q.tags {
		tags[k] = v
	}
	return &api.ListQueueTagsResult{Tags: tags}, nil
}
