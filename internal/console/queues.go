package console

import (
	"net/http"
	"slices"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// maxListedQueues bounds the queues the console lists: ListQueues pages of
// 1000, ten of them.
const maxListedQueues = 10_000

// queueJSON is one queue as the console lists it.
type queueJSON struct {
	Name       string `json:"name"`
	URL        string `json:"url"` // path: /ACCOUNT/NAME
	ARN        string `json:"arn"`
	FIFO       bool   `json:"fifo"`
	Visible    int    `json:"visible"`
	NotVisible int    `json:"notVisible"`
	Delayed    int    `json:"delayed"`
	// OldestAgeMs is the age of the oldest message, 0 when there is none.
	OldestAgeMs int64 `json:"oldestAgeMs"`
	// DeadLetterTargetArn and ...Name (when it is the same account's) name
	// the queue's dead-letter queue.
	DeadLetterTargetArn  string       `json:"deadLetterTargetArn,omitempty"`
	DeadLetterTargetName string       `json:"deadLetterTargetName,omitempty"`
	MaxReceiveCount      int          `json:"maxReceiveCount,omitempty"`
	DeadLetterSources    int          `json:"deadLetterSources"`
	Groups               int          `json:"groups"`
	MoveTaskRunning      bool         `json:"moveTaskRunning"`
	Counters             countersJSON `json:"counters"`
	// Shard is the cluster's Raft group holding the queue, absent on a
	// server without shards.
	Shard *uint32 `json:"shard,omitempty"`
}

type countersJSON struct {
	Sent          uint64 `json:"sent"`
	SentBytes     uint64 `json:"sentBytes"`
	Received      uint64 `json:"received"`
	Deleted       uint64 `json:"deleted"`
	EmptyReceives uint64 `json:"emptyReceives"`
}

type queuesJSON struct {
	// Now is the server's time (Unix ms): rates are computed between two
	// answers' times, not the browser's.
	Now       int64       `json:"now"`
	Queues    []queueJSON `json:"queues"`
	Truncated bool        `json:"truncated,omitempty"`
}

func (c *Console) queueOf(st QueueStatus, nowNs int64) queueJSON {
	q := queueJSON{
		Name:              st.Queue.Name,
		URL:               st.Queue.Path(),
		ARN:               st.Queue.ARN(c.cfg.Region),
		FIFO:              st.FIFO,
		Visible:           st.Visible,
		NotVisible:        st.NotVisible,
		Delayed:           st.Delayed,
		MaxReceiveCount:   st.MaxReceiveCount,
		DeadLetterSources: st.DeadLetterSources,
		Groups:            st.Groups,
		MoveTaskRunning:   st.MoveTaskRunning,
		Shard:             st.Shard,
		Counters: countersJSON{
			Sent: st.Counters.Sent, SentBytes: st.Counters.SentBytes, Received: st.Counters.Received,
			Deleted: st.Counters.Deleted, EmptyReceives: st.Counters.EmptyReceives,
		},
	}
	if st.OldestAt != 0 {
		q.OldestAgeMs = max(nowNs-st.OldestAt, 0) / 1e6
	}
	if st.DeadLetterTarget != "" {
		q.DeadLetterTargetArn = st.DeadLetterTarget
		q.DeadLetterTargetName = c.sameAccountName(st.DeadLetterTarget, st.Queue.Account)
	}
	return q
}

// sameAccountName returns the name of the queue an ARN names if it is in
// account (the console links to it), else "".
func (c *Console) sameAccountName(arn, account string) string {
	if _, k, ok := api.ParseQueueARN(arn); ok && k.Account == account {
		return k.Name
	}
	return ""
}

// listQueues lists the account's queues with their figures: the names
// through ListQueues, so that the API's rules apply, the figures in one
// read of the engine.
func (c *Console) listQueues(r *http.Request, a *actor) (any, error) {
	var keys []api.QueueKey
	truncated := false
	next := ""
	for {
		resp, err := c.cfg.Backend.Do(r.Context(), a.account, &api.ListQueuesRequest{MaxResults: ptr(api.MaxListQueuesResults), NextToken: next})
		if err != nil {
			return nil, err
		}
		res := resp.(*api.ListQueuesResult)
		for _, u := range res.QueueUrls {
			if k, err := api.ParseQueueURL(u); err == nil {
				keys = append(keys, k)
			}
		}
		next = res.NextToken
		if next == "" {
			break
		}
		if len(keys) >= maxListedQueues {
			truncated = true
			break
		}
	}
	now := c.cfg.Now()
	out := queuesJSON{Now: now.UnixMilli(), Queues: []queueJSON{}, Truncated: truncated}
	for _, st := range c.cfg.Backend.Statuses(r.Context(), a.account, keys) {
		out.Queues = append(out.Queues, c.queueOf(st, now.UnixNano()))
	}
	slices.SortFunc(out.Queues, func(x, y queueJSON) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// queueKey is the queue a call names by {name}, in the caller's account.
func queueKey(r *http.Request, a *actor) (api.QueueKey, error) {
	name := r.PathValue("name")
	if name == "" || len(name) > api.MaxQueueNameLength || strings.ContainsAny(name, "/?#") {
		return api.QueueKey{}, api.ErrQueueDoesNotExist()
	}
	return api.QueueKey{Account: a.account, Name: name}, nil
}

// moveTaskJSON is one message move task out of a queue.
type moveTaskJSON struct {
	TaskHandle                   string `json:"taskHandle,omitempty"`
	Status                       string `json:"status"`
	DestinationArn               string `json:"destinationArn,omitempty"`
	DestinationName              string `json:"destinationName,omitempty"`
	MaxNumberOfMessagesPerSecond *int   `json:"maxNumberOfMessagesPerSecond,omitempty"`
	Moved                        int64  `json:"moved"`
	ToMove                       *int64 `json:"toMove,omitempty"`
	FailureReason                string `json:"failureReason,omitempty"`
	StartedAt                    int64  `json:"startedAt"` // Unix ms
}

type queueDetailJSON struct {
	Now        int64             `json:"now"`
	Queue      queueJSON         `json:"queue"`
	Attributes map[string]string `json:"attributes"`
	Tags       map[string]string `json:"tags"`
	// DeadLetterSources name the queues that use this one as their
	// dead-letter queue.
	DeadLetterSources []string       `json:"deadLetterSources"`
	MoveTasks         []moveTaskJSON `json:"moveTasks"`
}

// getQueue answers everything the queue page shows but the groups and
// messages: attributes and tags, dead-letter sources, move tasks, figures.
func (c *Console) getQueue(r *http.Request, a *actor) (any, error) {
	k, err := queueKey(r, a)
	if err != nil {
		return nil, err
	}
	ctx, do := r.Context(), c.cfg.Backend.Do
	resp, err := do(ctx, a.account, &api.GetQueueAttributesRequest{QueueUrl: k.Path(), AttributeNames: []string{api.MsgAttrAll}})
	if err != nil {
		return nil, err
	}
	// The rest is shown as far as the caller may see it: a secondary read
	// that a queue policy refuses leaves its part of the page empty.
	out := queueDetailJSON{
		Attributes:        resp.(*api.GetQueueAttributesResult).Attributes,
		Tags:              map[string]string{},
		DeadLetterSources: []string{},
		MoveTasks:         []moveTaskJSON{},
	}
	if resp, err := do(ctx, a.account, &api.ListQueueTagsRequest{QueueUrl: k.Path()}); err == nil && resp.(*api.ListQueueTagsResult).Tags != nil {
		out.Tags = resp.(*api.ListQueueTagsResult).Tags
	}
	if resp, err := do(ctx, a.account, &api.ListDeadLetterSourceQueuesRequest{QueueUrl: k.Path(), MaxResults: ptr(1000)}); err == nil {
		for _, u := range resp.(*api.ListDeadLetterSourceQueuesResult).QueueUrls {
			if sk, err := api.ParseQueueURL(u); err == nil {
				out.DeadLetterSources = append(out.DeadLetterSources, sk.Name)
			}
		}
		slices.Sort(out.DeadLetterSources)
	}
	arn := k.ARN(c.cfg.Region)
	if resp, err := do(ctx, a.account, &api.ListMessageMoveTasksRequest{SourceArn: arn, MaxResults: ptr(api.MaxListedMoveTasks)}); err == nil {
		for _, t := range resp.(*api.ListMessageMoveTasksResult).Results {
			out.MoveTasks = append(out.MoveTasks, moveTaskJSON{
				TaskHandle:                   t.TaskHandle,
				Status:                       t.Status,
				DestinationArn:               t.DestinationArn,
				DestinationName:              c.sameAccountName(t.DestinationArn, a.account),
				MaxNumberOfMessagesPerSecond: t.MaxNumberOfMessagesPerSecond,
				Moved:                        t.ApproximateNumberOfMessagesMoved,
				ToMove:                       t.ApproximateNumberOfMessagesToMove,
				FailureReason:                t.FailureReason,
				StartedAt:                    t.StartedTimestamp,
			})
		}
	}
	now := c.cfg.Now()
	sts := c.cfg.Backend.Statuses(r.Context(), a.account, []api.QueueKey{k})
	if len(sts) == 0 {
		return nil, api.ErrQueueDoesNotExist() // deleted meanwhile
	}
	out.Now = now.UnixMilli()
	out.Queue = c.queueOf(sts[0], now.UnixNano())
	return out, nil
}

func ptr[T any](v T) *T { return &v }
