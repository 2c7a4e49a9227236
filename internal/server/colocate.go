package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Bringing together the queues a request joins. SetQueueAttributes
// checks the dead-letter queue its RedrivePolicy names (type, allow
// policy) where that queue is, and a message move task with a
// DestinationArn moves messages within one group: so, with shards, a
// request that would join two queues of two shards (SetQueueAttributes
// naming a dead-letter queue, StartMessageMoveTask naming a destination)
// first moves one of them beside the other, as CreateQueue places a new
// queue beside its dead-letter queue. The queue the policy is set on, or
// the task's destination, moves if it can, else its partner; a queue with
// a running move task does not move, nor one in a redrive before the
// cluster writes log entry format 10, nor one whose tasks have ended
// before it writes 11 (engine.FenceQueueRequest), and if neither
// can, the request goes on and the engine refuses it as SQS would a
// dead-letter queue it cannot reach. Once together, the two may be
// parted again by later moves: the engine's outboxes then carry what
// spans them (engine/outbox.go). The move is the first group leader's to
// drive (internal/shards/move.go): asked over the node-to-node port
// (POST /cluster/colocate) from another node. A dead-letter queue that is
// split over partitions (a high-throughput queue spread over the shards)
// is gathered into one partition first (shards.MakeWhole): what is
// dead-lettered goes to a queue, not to its group's partition, so the
// engine refuses a split queue as one.

// partnerOf returns the queue req would join to its own queue q in a
// redrive: the dead-letter queue a SetQueueAttributes names, or a move
// task's destination.
func (s *Server) partnerOf(req api.Request) (api.QueueKey, bool) {
	var arn string
	switch r := req.(type) {
	case *api.SetQueueAttributesRequest:
		raw := r.Attributes[api.AttrRedrivePolicy]
		var p struct {
			Target string `json:"deadLetterTargetArn"`
		}
		if raw == "" || json.Unmarshal([]byte(raw), &p) != nil {
			return api.QueueKey{}, false
		}
		arn = p.Target
	case *api.StartMessageMoveTaskRequest:
		arn = r.DestinationArn
	}
	if arn == "" {
		return api.QueueKey{}, false
	}
	k, ok := api.QueueOfARN(arn, s.cfg.Region)
	return s.placed(k), ok
}

// joinDeadLetterQueue brings a queue and the dead-letter queue its
// request names (CreateQueue or SetQueueAttributes with a RedrivePolicy)
// together when the engine refused the request only because they are
// apart, and reports whether it did, for the request to be served again.
// Routing colocates them before such a request (routeShard), but not
// always:
//   - a queue created again keeps its name's shard (its cool-down was
//     kept there), so CreateQueue finds it placed, not beside its
//     dead-letter queue; the engine finds no such dead-letter queue.
//     The dead-letter queue moves beside it.
//   - a dead-letter queue gathered into one partition for the request
//     may be spread again before the request reaches it (a new
//     first-group leader knows nothing of the gather), or this node's
//     map lagged its split; the engine answers as for a moving queue.
//     It is gathered again.
//
// A dead-letter queue that truly does not exist, or cannot move, gets the
// engine's answer on the second try (having cost a question to the first
// group's leader).
func (s *Server) joinDeadLetterQueue(ctx context.Context, in api.Scope, req api.Request, err error) bool {
	if err == nil || s.shards == nil {
		return false
	}
	var dlq api.QueueKey
	switch r := req.(type) {
	case *api.CreateQueueRequest:
		k := s.deadLetterQueueOf(r)
		if k == nil {
			return false
		}
		dlq = *k
	case *api.SetQueueAttributesRequest:
		k, ok := s.partnerOf(r)
		if !ok {
			return false
		}
		dlq = k
	default:
		return false
	}
	q, named := s.queueOfRequest(in, req)
	if !named {
		return false
	}
	var cerr error
	switch {
	case engine.IsMissingDeadLetterTarget(err):
		// Whether the dead-letter queue exists, and where, is the
		// first group leader's to say: this node's map may not show it
		// yet.
		s.shards.Forget(dlq)
		cerr = s.colocate(ctx, dlq, q, false)
	case engine.IsQueueMoving(err) && strings.HasSuffix(q.Name, ".fifo") && s.shards.IsSplit(dlq):
		cerr = s.colocate(ctx, q, dlq, true)
	default:
		return false
	}
	if cerr != nil {
		s.logger.Warn("could not bring a queue and its dead-letter queue into one shard", "queue", q, "dead_letter_queue", dlq, "err", cerr)
		return false
	}
	return true
}

// colocateRequest is the body of POST /cluster/colocate.
type colocateRequest struct {
	Queue api.QueueKey `json:"queue"`
	With  api.QueueKey `json:"with"`
	// Whole: With is to be one partition (a dead-letter queue). A
	// first-group leader of a version without it leaves With split, and
	// the engine refuses the request as it did then.
	Whole bool `json:"whole,omitempty"`
}

// colocate makes q and with live in one shard, moving one of them if
// they do not and one can move. It fails only when it cannot tell (no
// leader of the first group, a move that did not finish): with a
// retryable error, as the request cannot be carried out meanwhile.
func (s *Server) colocate(ctx context.Context, q, with api.QueueKey, whole bool) error {
	whole = whole && s.shards.IsSplit(with)
	if !whole && s.shards.Of(q) == s.shards.Of(with) {
		return nil
	}
	if !s.cluster.PeersAuthenticated() && s.verifier != nil && !s.verifier.Store.Empty() && !s.first.leads() {
		// The first group's leader would refuse to be asked (trustedPeer):
		// the request goes on, and the engine answers as it can.
		return nil
	}
	deadline := time.Now().Add(leaderWait)
	for {
		var err error
		if s.first.leads() {
			err = s.colocateHere(ctx, q, with, whole)
		} else if _, addr := s.cluster.Leader(); addr != "" {
			b, _ := json.Marshal(colocateRequest{Queue: q, With: with, Whole: whole})
			var resp *http.Response
			if resp, err = s.askPeer(ctx, http.MethodPost, addr, "/cluster/colocate", bytes.NewReader(b)); err == nil {
				resp.Body.Close()
			}
		} else {
			err = errors.New("the cluster has no leader")
		}
		if err == nil {
			s.shards.Forget(q)
			s.shards.Forget(with)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return api.ErrServiceUnavailable("The queues this request joins could not be put in one shard yet (%v); retry.", err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// colocateHere is colocate on the first group's leader: with is gathered
// into one partition if whole says so, then q moves beside with, or with
// beside q; a queue that cannot move (or does not exist) is no error, for
// the engine to answer the request as it can.
func (s *Server) colocateHere(ctx context.Context, q, with api.QueueKey, whole bool) error {
	if whole {
		if err := s.shards.MakeWhole(ctx, with); err != nil {
			return err
		}
	}
	for _, try := range [][2]api.QueueKey{{q, with}, {with, q}} {
		s.shards.Forget(try[1]) // as this leader's map has it now
		to := s.shards.Of(try[1])
		if to == 0 {
			continue // the first group takes no queue
		}
		_, err := s.shards.Move(ctx, try[0], to)
		if err == nil {
			return nil
		}
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status >= 500 {
			return err // a move under way, no leader: not known yet
		}
	}
	return nil
}

// serveColocate colocates two queues for another member (colocate). Only
// on the node-to-node port, from a trusted peer, where the first group is
// led.
func (s *Server) serveColocate(w http.ResponseWriter, r *http.Request) {
	if !s.trustedPeerEndpoint(w, r, "moving queues for another member") {
		return
	}
	var c colocateRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&c); err != nil || c.Queue.Name == "" || c.With.Name == "" {
		writeJSONError(w, http.StatusBadRequest, `want {"queue": {...}, "with": {...}}`)
		return
	}
	if !s.first.leads() {
		writeJSONError(w, http.StatusServiceUnavailable, "this node does not lead the cluster's first group")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	if err := s.colocateHere(ctx, c.Queue, c.With, c.Whole); err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}
