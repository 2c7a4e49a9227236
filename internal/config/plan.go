package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// step is one queue to declare, with everything resolved: its key and the
// attributes to give it, the dead-letter link's RedrivePolicy included.
type step struct {
	q     *Queue
	key   api.QueueKey
	attrs map[string]string
	// dlq is the key of the dead-letter queue the queue's RedrivePolicy
	// names, if any; dlqDeclared says whether the file declares it.
	dlq         *api.QueueKey
	dlqDeclared bool
}

// Check checks the file's queues for a default account and region (those
// of the settings in effect) as Apply will resolve them: a queue declared
// twice, dead-letter links to another account or region, links that form
// a cycle. Load checks with the file's own account and the default region;
// a server calls Check again once flags and environment are merged, before
// it opens its data.
func (f *File) Check(account, region string) error {
	_, err := f.plan(account, region)
	return err
}

// plan resolves the file's queues for a default account and region and
// orders them so that every dead-letter queue the file declares comes
// before the queues that name it: a RedrivePolicy may only name a queue
// that exists. It refuses a queue declared twice, a dead-letter link to
// another account or region, and links that form a cycle.
func (f *File) plan(account, region string) ([]step, error) {
	steps := make([]step, len(f.Queues))
	index := map[api.QueueKey]int{}
	for i := range f.Queues {
		q := &f.Queues[i]
		key := api.QueueKey{Account: q.Account, Name: q.Name}
		if key.Account == "" {
			key.Account = account
		}
		if first, dup := index[key]; dup {
			return nil, &Error{File: f.Path, Line: q.line("name"), Msg: fmt.Sprintf("queue %s of account %s is declared twice (first on line %d)", q.Name, key.Account, f.Queues[first].Line)}
		}
		index[key] = i
		s := step{q: q, key: key, attrs: make(map[string]string, len(q.Attributes)+1)}
		for k, v := range q.Attributes {
			s.attrs[k] = v
		}
		if d := q.DeadLetter; d != nil {
			dlq := api.QueueKey{Account: key.Account, Name: d.Queue}
			s.attrs[api.AttrRedrivePolicy] = redrivePolicy(dlq.ARN(region), d.MaxReceiveCount)
			s.dlq = &dlq
		} else if raw := q.Attributes[api.AttrRedrivePolicy]; raw != "" {
			dlq, err := f.rawTarget(q, key, raw, region)
			if err != nil {
				return nil, err
			}
			s.attrs[api.AttrRedrivePolicy] = canonicalRedrive(raw)
			s.dlq = &dlq
		}
		steps[i] = s
	}
	for i := range steps {
		if d := steps[i].dlq; d != nil {
			_, steps[i].dlqDeclared = index[*d]
		}
	}
	return f.order(steps, index)
}

// rawTarget checks the dead-letter queue a RedrivePolicy attribute names:
// the same account and region as the queue, and not the queue itself.
func (f *File) rawTarget(q *Queue, key api.QueueKey, raw, region string) (api.QueueKey, error) {
	at := func(format string, args ...any) error {
		return &Error{File: f.Path, Line: q.line("attributes." + api.AttrRedrivePolicy), Msg: fmt.Sprintf("queue %s: RedrivePolicy: ", q.Name) + fmt.Sprintf(format, args...)}
	}
	rp, err := api.ParseRedrivePolicy(raw) // valid: checked when loaded
	if err != nil {
		return api.QueueKey{}, at("%v", err)
	}
	arnRegion, dlq, _ := api.ParseQueueARN(rp.DeadLetterTargetArn)
	switch {
	case arnRegion != region:
		return api.QueueKey{}, at("the dead-letter queue %s is in region %s, but the server's region is %s", rp.DeadLetterTargetArn, arnRegion, region)
	case dlq.Account != key.Account:
		return api.QueueKey{}, at("the dead-letter queue %s belongs to account %s, not to the queue's account %s", rp.DeadLetterTargetArn, dlq.Account, key.Account)
	case dlq == key:
		return api.QueueKey{}, at("a queue cannot be its own dead-letter queue")
	case api.IsFIFOName(dlq.Name) != api.IsFIFOName(key.Name):
		return api.QueueKey{}, at("dead-letter queue %s must be of the same type as the queue (both FIFO or both standard)", dlq.Name)
	}
	return dlq, nil
}

// order sorts steps so that each dead-letter queue of the file precedes
// the queues that name it, keeping file order otherwise. A dead-letter
// queue the file does not declare must exist already when the file is
// applied; applying reports it if it does not.
func (f *File) order(steps []step, index map[api.QueueKey]int) ([]step, error) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(steps))
	out := make([]step, 0, len(steps))
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			q := steps[i].q
			line := q.line("dead_letter")
			if q.DeadLetter == nil {
				line = q.line("attributes." + api.AttrRedrivePolicy)
			}
			return &Error{File: f.Path, Line: line, Msg: "dead-letter links form a cycle: " + strings.Join(append(path, q.Name), " -> ")}
		}
		state[i] = visiting
		if d := steps[i].dlq; d != nil {
			if j, ok := index[*d]; ok {
				if err := visit(j, append(path, steps[i].q.Name)); err != nil {
					return err
				}
			}
		}
		state[i] = done
		out = append(out, steps[i])
		return nil
	}
	for i := range steps {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// redrivePolicy is the RedrivePolicy attribute of a dead-letter link, in
// the canonical form the server reports it in.
func redrivePolicy(arn string, maxReceiveCount int) string {
	b, err := json.Marshal(api.RedrivePolicy{DeadLetterTargetArn: arn, MaxReceiveCount: maxReceiveCount})
	if err != nil {
		panic("config: encode RedrivePolicy: " + err.Error()) // two plain fields cannot fail
	}
	return string(b)
}

// canonicalRedrive rewrites a valid RedrivePolicy in the form the server
// reports it in, so that an unchanged one compares equal.
func canonicalRedrive(raw string) string {
	rp, err := api.ParseRedrivePolicy(raw)
	if err != nil {
		return raw
	}
	return redrivePolicy(rp.DeadLetterTargetArn, rp.MaxReceiveCount)
}
