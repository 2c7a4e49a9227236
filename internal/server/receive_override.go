package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// LocalStack lets a ReceiveMessage go past SQS's bounds with two headers
// of its own, which its Lambda event source mapping sends to gather a
// batch in one call (its sqs_poller.py; its tests, TestSqsOverrideHeaders
// in tests/aws/services/sqs/test_sqs_developer_api.py):
//
//   - x-localstack-sqs-override-message-count: N takes up to N messages
//     instead of MaxNumberOfMessages (at most maxOverrideCount, and no
//     more once maxOverrideBytes of them are taken);
//   - x-localstack-sqs-override-wait-time-seconds: S waits S seconds
//     instead of WaitTimeSeconds (at most maxOverrideWait), and, as in
//     LocalStack, goes on waiting after the first messages it finds until
//     it holds its count or the time is up, so that a batch fills (or
//     until the first messages it took would become visible again: see
//     receiveMany).
//
// fifoq honours them as an emulator habit, for code written against
// LocalStack, without changing what a receive is: the engine still takes
// at most SQS's ten messages a receive, and the server gathers a larger
// count from several receives, each a command of the log like any other.
// So every member of a cluster, whatever its version, applies them alike,
// and on a FIFO queue each take follows SQS's rule that a group with
// messages in flight gives no more: a receive of 20 from one group gets
// its first ten.
//
// The request itself must still be valid (MaxNumberOfMessages up to 10,
// WaitTimeSeconds up to 20), as the clients that send the headers make it;
// a header that is not a positive integer is ignored, as LocalStack
// ignores it. A FIFO receive with a ReceiveRequestAttemptId takes once, up
// to its own MaxNumberOfMessages: a retry of it must get back what that one
// receive took.
const (
	hdrOverrideCount = "X-Localstack-Sqs-Override-Message-Count"
	hdrOverrideWait  = "X-Localstack-Sqs-Override-Wait-Time-Seconds"
)

// maxOverrideCount bounds the count the header asks for: the largest
// batch of a Lambda event source mapping.
const maxOverrideCount = 10_000

// maxOverrideBytes bounds the messages one receive gathers, as SQS counts
// their size (body and attributes): it takes no more once it holds this
// much, so that its answer, whose bodies are in memory, stays under twice
// this (a take is at most ten messages of the largest size).
const maxOverrideBytes = api.MaxReceiveMessages * api.MaxMessageSizeLimit

// maxOverrideWait bounds the wait the header asks for. A receive's answer
// must leave before the server's WriteTimeout (60 s, counted from the
// request's headers, so the body's reading and the answer's writing count
// too), and, when a follower forwards it, before its forwarder gives up on
// the leader's headers (45 s): 40 s leaves room for both.
const maxOverrideWait = 40 * time.Second

// receiveOverride is what the headers of one receive ask for; zero fields
// ask for nothing.
type receiveOverride struct {
	count int
	wait  time.Duration
}

type overrideKey struct{}

// withReceiveOverride returns ctx carrying what the override headers of h
// ask for, if any.
func withReceiveOverride(ctx context.Context, h http.Header) context.Context {
	var o receiveOverride
	if n, ok := positiveHeader(h, hdrOverrideCount); ok {
		o.count = min(n, maxOverrideCount)
	}
	if n, ok := positiveHeader(h, hdrOverrideWait); ok {
		// Held to a million seconds first, so that the Duration cannot
		// overflow.
		o.wait = min(time.Duration(min(n, 1<<20))*time.Second, maxOverrideWait)
	}
	if o == (receiveOverride{}) {
		return ctx
	}
	return context.WithValue(ctx, overrideKey{}, o)
}

func positiveHeader(h http.Header, name string) (int, bool) {
	v := h.Get(name)
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil && n > 0
}

func receiveOverrideOf(ctx context.Context) receiveOverride {
	o, _ := ctx.Value(overrideKey{}).(receiveOverride)
	return o
}

// receiveMany carries out a receive whose count or wait the headers set,
// as takes of up to api.MaxReceiveMessages each: the first waits as any
// receive does; then, with a wait header, it waits for more and takes it
// until it holds its count or deadline passes, and without one it takes
// what is there, without waiting, until a take comes back short. It stops
// taking once it holds maxOverrideBytes of messages, and answers all it
// took in one.
//
// The wait ends, at the latest, when the messages of the first take
// become visible again (their visibility timeout, from the take): holding
// them longer would give them to others while this client has yet to see
// them, and let this receive take them again. Should it take one again all
// the same (at that very instant), the answer holds it once, with its
// latest receipt handle.
func (s *Server) receiveMany(ctx context.Context, cmd *engine.Command, req *api.ReceiveMessageRequest, o receiveOverride, deadline time.Time) (api.Response, error) {
	limit := 1
	if req.MaxNumberOfMessages != nil {
		limit = *req.MaxNumberOfMessages
	}
	if o.count > 0 {
		limit = o.count
	}
	res := &api.ReceiveMessageResult{}
	at := map[string]int{} // MessageId -> index in res.Messages
	size := 0
	for {
		want := min(limit-len(res.Messages), api.MaxReceiveMessages)
		until := deadline
		if len(res.Messages) > 0 {
			if o.wait == 0 {
				until = s.now() // take what is there, and no more
			} else if !s.now().Before(deadline) {
				return res, nil
			}
		}
		if want <= 0 || size >= maxOverrideBytes {
			return res, nil
		}
		// A request and a command of their own per take: the log may keep
		// those it applied.
		r := *req
		r.MaxNumberOfMessages = &want
		c := *cmd
		c.Request = &r
		resp, err := s.receiveUntil(ctx, &c, &r, until)
		if err != nil {
			if len(res.Messages) > 0 {
				// The messages taken are in flight for this client:
				// answer them rather than hide them for their
				// visibility timeout.
				return res, nil
			}
			return nil, err
		}
		got, _ := resp.(*api.ReceiveMessageResult)
		if got == nil || len(got.Messages) == 0 {
			// The wait ended, or there was nothing to take without one:
			// its time is up, the server shuts down, the client left, the
			// queue went, or no poll slot was free.
			return res, nil
		}
		if len(res.Messages) == 0 {
			vis, err := s.visibilityTimeout(ctx, cmd, req)
			if err != nil {
				return got, nil
			}
			if end := time.Unix(0, c.Time).Add(vis); end.Before(deadline) {
				deadline = end
			}
		}
		for _, m := range got.Messages {
			if i, again := at[m.MessageId]; again {
				res.Messages[i] = m
				continue
			}
			at[m.MessageId] = len(res.Messages)
			res.Messages = append(res.Messages, m)
			size += api.MessageSize(m.Body, m.MessageAttributes)
		}
		if o.wait == 0 && len(got.Messages) < want {
			return res, nil
		}
	}
}
