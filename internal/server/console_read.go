package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// The web console's reads of queues. The console shows a queue as its
// shard's leader holds it: this node's replica where it leads the shard;
// else the leader's, asked over the node-to-node port (POST
// /cluster/console-read), so that every member's console shows every
// queue as clients were last answered, in a cluster whose shards are each
// on three of its members too. A shard without a leader is asked again as
// it elects one (readAtLeader); where none answers, another replica does,
// this node's first. The member that holds the replica checks
// the caller's right to the read against the queue's policy as it holds
// it: a member without the queue has no policy to check.

// consoleReadPath is the node-to-node endpoint of a console's read.
const consoleReadPath = "/cluster/console-read"

// consoleReadWait bounds how long a console read waits for one member: a
// page of the console waits for no member that is down.
const consoleReadWait = 3 * time.Second

// What a console read asks for.
const (
	consoleSummaries = "summaries"
	consoleGroups    = "groups"
	consolePeek      = "peek"
)

// consoleQuery is a console's read of queues of one shard: the body of
// POST /cluster/console-read.
type consoleQuery struct {
	Kind   string `json:"kind"`
	Caller string `json:"caller"`
	// Shard is the shard the asking member's map puts Queues in.
	Shard uint32 `json:"shard"`
	// Queues are the queues (or partitions) read: every one for
	// summaries, one for groups and peek.
	Queues []api.QueueKey        `json:"queues"`
	Now    int64                 `json:"now"`
	Groups *engine.GroupsOptions `json:"groups,omitempty"`
	Peek   *engine.PeekOptions   `json:"peek,omitempty"`
	// Relayed marks a read that a follower passed on to its shard's
	// leader: it is answered where it arrives, never passed on again.
	Relayed bool `json:"relayed,omitempty"`
}

// consoleReply answers a consoleQuery.
type consoleReply struct {
	// Summaries holds, for each queue asked for, in order, its summary,
	// or nil if the replica holds no such queue or the caller may not
	// read its attributes.
	Summaries []*engine.QueueSummary `json:"summaries,omitempty"`
	// Found tells whether the replica holds the queue a groups or peek
	// read names.
	Found    bool                   `json:"found,omitempty"`
	Groups   *engine.GroupsPage     `json:"groups_page,omitempty"`
	Messages []engine.PeekedMessage `json:"messages,omitempty"`
	// Error is the refusal of a groups or peek read (access denied).
	Error *api.Error `json:"error,omitempty"`
}

// readConsole carries q out on a replica of shard q.Shard: its leader's
// (readAtLeader, which says why; this node's own replica where it leads),
// waited for up to consoleReadWait while the shard elects one; then, if no
// leader answered, this node's replica, or without one every other
// replica's in turn.
func (s *Server) readConsole(ctx context.Context, q consoleQuery) (consoleReply, error) {
	if !s.sharded() {
		return s.answerConsole(s.first.log, q), nil
	}
	body, err := json.Marshal(q)
	if err != nil {
		return consoleReply{}, err
	}
	var reply consoleReply
	done, asked := s.readAtLeader(ctx, q.Shard, consoleReadWait, func(ctx context.Context, addr string) (err error) {
		reply, err = s.askConsole(ctx, addr, body)
		return err
	})
	if done {
		return reply, nil
	}
	if g, held := s.groupByID(q.Shard); held {
		return s.answerConsole(g.log, q), nil
	}
	if err := ctx.Err(); err != nil {
		return consoleReply{}, api.ErrServiceUnavailable("The request ended while shard %d's leader was asked for the console's read; retry.", q.Shard)
	}
	var lastErr error = fmt.Errorf("the map names no replica of shard %d", q.Shard)
	if asked != "" {
		lastErr = fmt.Errorf("its leader, as this node knows it, did not answer")
	}
	for _, p := range s.shards.Replicas(q.Shard) {
		if p.ID == s.cluster.NodeID() || p.Addr == asked {
			continue
		}
		reply, err := s.askConsole(ctx, p.Addr, body)
		if err == nil {
			return reply, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return consoleReply{}, api.ErrServiceUnavailable("No replica of shard %d answered the console: %v", q.Shard, lastErr)
}

// askConsole asks the member at raftAddr to carry a console read out. Its
// refusal (no replica there, no trust in this node) is an error, as any
// answer but 200 OK is (askPeer), so the read goes on to another replica.
func (s *Server) askConsole(ctx context.Context, raftAddr string, body []byte) (consoleReply, error) {
	ctx, cancel := context.WithTimeout(ctx, consoleReadWait)
	defer cancel()
	resp, err := s.askPeer(ctx, http.MethodPost, raftAddr, consoleReadPath, bytes.NewReader(body))
	if err != nil {
		return consoleReply{}, err
	}
	defer resp.Body.Close()
	var reply consoleReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&reply); err != nil {
		return consoleReply{}, err
	}
	return reply, nil
}

// serveConsoleRead carries out another member's console read of a shard
// this node holds a replica of. It needs what an export does
// (trustedPeerEndpoint): a peek shows message bodies.
func (s *Server) serveConsoleRead(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "a console's read for another member") {
		return
	}
	var q consoleQuery
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&q); err != nil || q.Caller == "" || len(q.Queues) == 0 {
		writeJSONError(w, http.StatusBadRequest, "want a console read")
		return
	}
	g, held := s.groupByID(q.Shard)
	if !held {
		// The asking member tries another replica; this one relays
		// nothing, so that two members with different maps cannot pass
		// a read back and forth.
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("this node holds no replica of shard %d", q.Shard))
		return
	}
	if !q.Relayed && !g.leads() {
		// The asking member took this follower for the shard's leader
		// (it holds no replica of the shard to know better), and this
		// replica may lack what the leader answered: the read goes on to
		// the leader, once, for up to half of what the asking member
		// waits for this one.
		q.Relayed = true
		body, err := json.Marshal(q)
		if err == nil {
			var reply consoleReply
			if done, _ := s.readAtLeader(r.Context(), q.Shard, consoleReadWait/2, func(ctx context.Context, addr string) (err error) {
				reply, err = s.askConsole(ctx, addr, body)
				return err
			}); done {
				writeJSON(w, http.StatusOK, reply)
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, s.answerConsole(g.log, q))
}

// answerConsole carries q out on the replica that l holds, checking the
// caller's right to each queue read against its policy there.
func (s *Server) answerConsole(l replog.Log, q consoleQuery) consoleReply {
	var reply consoleReply
	switch q.Kind {
	case consoleSummaries:
		reply.Summaries = make([]*engine.QueueSummary, len(q.Queues))
		for i, key := range q.Queues {
			if s.authorizeIn(l, nil, q.Caller, api.ActionGetQueueAttributes, key) != nil {
				continue
			}
			var sum engine.QueueSummary
			ok := false
			l.Read(func(e *engine.Engine) { sum, ok = e.QueueSummary(key, q.Now) })
			if ok {
				reply.Summaries[i] = &sum
			}
		}
	case consoleGroups, consolePeek:
		key := q.Queues[0]
		action := api.ActionGetQueueAttributes
		if q.Kind == consolePeek {
			// Peeking shows message bodies: it needs the right to
			// receive, though it receives nothing.
			action = api.ActionReceiveMessage
		}
		if err := s.authorizeIn(l, nil, q.Caller, action, key); err != nil {
			reply.Error = api.AsError(err)
			return reply
		}
		l.Read(func(e *engine.Engine) {
			if q.Kind == consoleGroups {
				var page engine.GroupsPage
				page, reply.Found = e.Groups(key, q.Now, derefOr(q.Groups))
				reply.Groups = &page
				return
			}
			reply.Messages, reply.Found = e.Peek(key, q.Now, derefOr(q.Peek))
			// Message attribute maps are shared with the engine: copy
			// them while the lock is held, so that nothing of the
			// engine's is read after it is released.
			for i := range reply.Messages {
				reply.Messages[i].MessageAttributes = maps.Clone(reply.Messages[i].MessageAttributes)
			}
		})
	}
	return reply
}

// derefOr returns *p, or T's zero value if p is nil.
func derefOr[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
