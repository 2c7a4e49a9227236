package console

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// peekBodyBytes is how much of each body a peek shows: enough for any
// ordinary message, and a page of peeked messages stays a few MiB at most.
const peekBodyBytes = 64 << 10

// ms converts Unix ns to Unix ms (0 stays 0).
func ms(ns int64) int64 { return ns / 1e6 }

// queryInt reads an integer query parameter, def when absent.
func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errBadRequest("Query parameter %s must be a positive integer.", name)
	}
	return n, nil
}

// queryGroup reads the optional group query parameter: present (even
// empty, the group of standard messages sent without one) or not.
func queryGroup(r *http.Request) *string {
	q := r.URL.Query()
	if !q.Has("group") {
		return nil
	}
	g := q.Get("group")
	return &g
}

type ownerJSON struct {
	ReceiptHandle string `json:"receiptHandle"`
	AttemptID     string `json:"attemptId,omitempty"`
	ReceivedAt    int64  `json:"receivedAt"`
	VisibleAt     int64  `json:"visibleAt"`
	ReceiveCount  int    `json:"receiveCount"`
}

type groupJSON struct {
	ID       string `json:"id"`
	Messages int    `json:"messages"`
	Capped   bool   `json:"capped,omitempty"`
	Visible  int    `json:"visible"`
	InFlight int    `json:"inFlight"`
	Delayed  int    `json:"delayed"`
	// HeadSequence is a string: sequence numbers exceed JavaScript's
	// exact integers.
	HeadSequence string     `json:"headSequence,omitempty"`
	OldestSentAt int64      `json:"oldestSentAt,omitempty"`
	Owner        *ownerJSON `json:"owner,omitempty"`
}

type groupsJSON struct {
	Now      int64       `json:"now"`
	FIFO     bool        `json:"fifo"`
	Total    int         `json:"total"`
	InFlight int         `json:"inFlight"`
	Groups   []groupJSON `json:"groups"`
	Next     string      `json:"next,omitempty"`
}

// listGroups answers a page of a queue's message groups.
func (c *Console) listGroups(r *http.Request, a *actor) (any, error) {
	k, err := queueKey(r, a)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", 50)
	if err != nil {
		return nil, err
	}
	page, err := c.cfg.Backend.Groups(r.Context(), a.account, k, engine.GroupsOptions{Limit: limit, After: r.URL.Query().Get("after"), Group: queryGroup(r)})
	if err != nil {
		return nil, err
	}
	out := groupsJSON{Now: c.cfg.Now().UnixMilli(), FIFO: page.FIFO, Total: page.Total, InFlight: page.InFlight, Groups: []groupJSON{}, Next: page.Next}
	for _, g := range page.Groups {
		gj := groupJSON{
			ID: g.ID, Messages: g.Messages, Capped: g.Capped,
			Visible: g.Visible, InFlight: g.InFlight, Delayed: g.Delayed,
			OldestSentAt: ms(g.OldestSentAt),
		}
		if g.HeadSequence != 0 {
			gj.HeadSequence = strconv.FormatUint(g.HeadSequence, 10)
		}
		if o := g.Owner; o != nil {
			gj.Owner = &ownerJSON{ReceiptHandle: o.ReceiptHandle, AttemptID: o.AttemptID, ReceivedAt: ms(o.ReceivedAt), VisibleAt: ms(o.VisibleAt), ReceiveCount: o.ReceiveCount}
		}
		out.Groups = append(out.Groups, gj)
	}
	return out, nil
}

// attributeJSON is one message attribute. Binary values are base64;
// list values (reserved by SQS, never accepted) are not shown.
type attributeJSON struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

type messageJSON struct {
	MessageID       string          `json:"messageId"`
	Body            string          `json:"body"`
	BodyBytes       int             `json:"bodyBytes"`
	BodyTruncated   bool            `json:"bodyTruncated,omitempty"`
	Attributes      []attributeJSON `json:"attributes"`
	Size            int             `json:"size"`
	GroupID         string          `json:"groupId,omitempty"`
	DeduplicationID string          `json:"deduplicationId,omitempty"`
	SequenceNumber  string          `json:"sequenceNumber,omitempty"`
	SenderID        string          `json:"senderId"`
	TraceHeader     string          `json:"traceHeader,omitempty"`
	DeadLetterSrc   string          `json:"deadLetterSourceArn,omitempty"`
	SentAt          int64           `json:"sentAt"`
	EnqueuedAt      int64           `json:"enqueuedAt"`
	State           string          `json:"state"`
	VisibleAt       int64           `json:"visibleAt,omitempty"`
	ReceiveCount    int             `json:"receiveCount"`
	FirstReceivedAt int64           `json:"firstReceivedAt,omitempty"`
	ReceivedAt      int64           `json:"receivedAt,omitempty"`
}

type peekJSON struct {
	Now      int64         `json:"now"`
	Messages []messageJSON `json:"messages"`
}

// peek answers the first messages of a queue, or of one of its groups,
// without receiving them.
func (c *Console) peek(r *http.Request, a *actor) (any, error) {
	k, err := queueKey(r, a)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", 20)
	if err != nil {
		return nil, err
	}
	msgs, err := c.cfg.Backend.Peek(r.Context(), a.account, k, engine.PeekOptions{Limit: limit, Group: queryGroup(r), MaxBodyBytes: peekBodyBytes})
	if err != nil {
		return nil, err
	}
	out := peekJSON{Now: c.cfg.Now().UnixMilli(), Messages: make([]messageJSON, 0, len(msgs))}
	for _, m := range msgs {
		mj := messageJSON{
			MessageID: m.MessageID, Body: m.Body, BodyBytes: m.BodyBytes, BodyTruncated: m.BodyTruncated,
			Attributes: attributesOf(m.MessageAttributes), Size: m.Size,
			GroupID: m.GroupID, DeduplicationID: m.DeduplicationID,
			SenderID: m.SenderID, TraceHeader: m.TraceHeader, DeadLetterSrc: m.DeadLetterSourceARN,
			SentAt: ms(m.SentAt), EnqueuedAt: ms(m.EnqueuedAt), State: string(m.State), VisibleAt: ms(m.VisibleAt),
			ReceiveCount: m.ReceiveCount, FirstReceivedAt: ms(m.FirstReceivedAt), ReceivedAt: ms(m.ReceivedAt),
		}
		if m.SequenceNumber != 0 {
			mj.SequenceNumber = strconv.FormatUint(m.SequenceNumber, 10)
		}
		out.Messages = append(out.Messages, mj)
	}
	return out, nil
}

func attributesOf(attrs map[string]api.MessageAttributeValue) []attributeJSON {
	out := make([]attributeJSON, 0, len(attrs))
	for name, v := range attrs {
		a := attributeJSON{Name: name, Type: v.DataType}
		switch {
		case v.StringValue != nil:
			a.Value = *v.StringValue
		case v.BinaryValue != nil:
			a.Value = base64.StdEncoding.EncodeToString(v.BinaryValue)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y attributeJSON) int { return strings.Compare(x.Name, y.Name) })
	return out
}
