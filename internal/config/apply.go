package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/fifoq/fifoq/internal/api"
)

// Doer carries out a typed SQS request as an account, with the validation
// and authorization of the SQS API. *server.Server is one.
type Doer interface {
	Do(ctx context.Context, account string, req api.Request) (api.Response, error)
}

// Outcome is what applying the file did to one queue.
type Outcome int

// The outcomes.
const (
	// Unchanged: the queue existed with the file's attributes and tags.
	Unchanged Outcome = iota
	// Created: the queue did not exist.
	Created
	// Updated: the queue existed, and some of its attributes or tags were
	// set to the file's values.
	Updated
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Updated:
		return "updated"
	}
	return "unchanged"
}

// QueueResult is the outcome for one queue.
type QueueResult struct {
	Queue   api.QueueKey
	Outcome Outcome
}

// Result is what Apply did, queue by queue, in the order it went.
type Result struct {
	Queues []QueueResult
}

// Count is the number of queues with outcome o.
func (r Result) Count(o Outcome) int {
	n := 0
	for _, q := range r.Queues {
		if q.Outcome == o {
			n++
		}
	}
	return n
}

// Names lists the queues with outcome o, as ACCOUNT/NAME.
func (r Result) Names(o Outcome) []string {
	var names []string
	for _, q := range r.Queues {
		if q.Outcome == o {
			names = append(names, q.Queue.String())
		}
	}
	return names
}

// Apply declares the file's queues through d, for the default account and
// the region the server runs with, dead-letter queues first. For each
// queue: if it does not exist it is created with its attributes and tags;
// if it exists, the attributes the file gives are compared with the
// queue's and, where one differs, all of them are set with
// SetQueueAttributes; tags missing or different are set with TagQueue.
// A queue that already matches is not written to, so applying the same
// file twice changes nothing. Attributes and tags the file does not
// mention are left alone, and no queue is deleted.
//
// Apply stops at the first error, an *Error naming the queue and the line
// of its entry; queues before it in the order stay applied.
func (f *File) Apply(ctx context.Context, d Doer, account, region string) (Result, error) {
	var res Result
	steps, err := f.plan(account, region)
	if err != nil {
		return res, err
	}
	for _, s := range steps {
		if s.dlq != nil && !s.dlqDeclared {
			if err := f.checkTarget(ctx, d, s); err != nil {
				return res, err
			}
		}
		outcome, err := applyStep(ctx, d, s)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return res, err
			}
			return res, &Error{File: f.Path, Line: s.q.Line, Msg: fmt.Sprintf("queue %s of account %s", s.key.Name, s.key.Account), Err: err}
		}
		res.Queues = append(res.Queues, QueueResult{Queue: s.key, Outcome: outcome})
	}
	return res, nil
}

// checkTarget checks that a dead-letter queue the file names but does not
// declare exists, so that its absence is reported at the link's line in
// words, rather than as the server's refusal of the RedrivePolicy.
func (f *File) checkTarget(ctx context.Context, d Doer, s step) error {
	_, err := d.Do(ctx, s.dlq.Account, &api.GetQueueUrlRequest{QueueName: s.dlq.Name})
	if err == nil {
		return nil
	}
	line := s.q.line("dead_letter")
	if s.q.DeadLetter == nil {
		line = s.q.line("attributes." + api.AttrRedrivePolicy)
	}
	if hasCode(err, api.ErrQueueDoesNotExist()) {
		return &Error{File: f.Path, Line: line, Msg: fmt.Sprintf("queue %s: dead-letter queue %s is not declared in this file and does not exist", s.key.Name, s.dlq.Name)}
	}
	return &Error{File: f.Path, Line: line, Msg: fmt.Sprintf("queue %s: look up dead-letter queue %s", s.key.Name, s.dlq.Name), Err: err}
}

// applyStep brings one queue to what the file declares.
func applyStep(ctx context.Context, d Doer, s step) (Outcome, error) {
	do := func(action string, req api.Request) (api.Response, error) {
		resp, err := d.Do(ctx, s.key.Account, req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", action, err)
		}
		return resp, nil
	}
	url := s.key.Path()
	_, err := d.Do(ctx, s.key.Account, &api.GetQueueUrlRequest{QueueName: s.key.Name})
	switch {
	case hasCode(err, api.ErrQueueDoesNotExist()):
		req := &api.CreateQueueRequest{QueueName: s.key.Name, Attributes: s.attrs, Tags: s.q.Tags}
		if len(req.Tags) == 0 {
			req.Tags = nil
		}
		if _, err := do("CreateQueue", req); err != nil {
			return 0, err
		}
		return Created, nil
	case err != nil:
		return 0, fmt.Errorf("GetQueueUrl: %w", err)
	}

	outcome := Unchanged
	changed, err := attributesDiffer(ctx, d, s)
	if err != nil {
		return 0, err
	}
	if changed {
		set := make(map[string]string, len(s.attrs))
		for k, v := range s.attrs {
			if k != api.AttrFifoQueue { // fixed at creation; the name already agrees
				set[k] = v
			}
		}
		if _, err := do("SetQueueAttributes", &api.SetQueueAttributesRequest{QueueUrl: url, Attributes: set}); err != nil {
			return 0, err
		}
		outcome = Updated
	}

	if len(s.q.Tags) > 0 {
		resp, err := do("ListQueueTags", &api.ListQueueTagsRequest{QueueUrl: url})
		if err != nil {
			return 0, err
		}
		have := resp.(*api.ListQueueTagsResult).Tags
		missing := map[string]string{}
		for k, v := range s.q.Tags {
			if cur, ok := have[k]; !ok || cur != v {
				missing[k] = v
			}
		}
		if len(missing) > 0 {
			if _, err := do("TagQueue", &api.TagQueueRequest{QueueUrl: url, Tags: missing}); err != nil {
				return 0, err
			}
			outcome = Updated
		}
	}
	return outcome, nil
}

// attributesDiffer reports whether an existing queue differs from the
// file in an attribute the file gives. It first compares the values the
// queue reports with the file's as text, which settles the usual case
// without a write. Where the text differs, the server decides: a
// CreateQueue with the file's attributes succeeds for an existing queue
// only if each has the same value in the server's canonical form (so
// "030" equals "30"), and answers QueueAlreadyExists otherwise.
func attributesDiffer(ctx context.Context, d Doer, s step) (bool, error) {
	if len(s.attrs) == 0 {
		return false, nil
	}
	resp, err := d.Do(ctx, s.key.Account, &api.GetQueueAttributesRequest{QueueUrl: s.key.Path(), AttributeNames: []string{api.AttrAll}})
	if err != nil {
		return false, fmt.Errorf("GetQueueAttributes: %w", err)
	}
	have := resp.(*api.GetQueueAttributesResult).Attributes
	same := true
	for k, v := range s.attrs {
		if have[k] != v {
			same = false
			break
		}
	}
	if same {
		return false, nil
	}
	_, err = d.Do(ctx, s.key.Account, &api.CreateQueueRequest{QueueName: s.key.Name, Attributes: s.attrs})
	switch {
	case err == nil:
		return false, nil
	case hasCode(err, api.ErrQueueNameExists("")):
		return true, nil
	}
	return false, fmt.Errorf("CreateQueue: %w", err)
}

// hasCode reports whether err is an API error with the code of want.
func hasCode(err error, want *api.Error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == want.Code
}
