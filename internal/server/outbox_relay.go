package server

import (
	"context"
	"errors"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// The outbox relay: where a queue and its dead-letter queue (or the queue
// a move task returns messages to) live in two shards, the engine puts
// the messages leaving the one for the other in the queue's outbox, and
// this relay carries them over (engine/outbox.go). It runs beside each
// group this node leads, as move tasks and housekeeping do: it reads the
// outbox from the leader's replica, applies fifoq:TakeMessages at the
// destination's shard leader (here, or over the node-to-node port, as a
// move's steps are: POST /cluster/move-step), then fifoq:SettleOutbox in
// its own group. A relay killed between the two, or deposed, leaves the
// entries in the outbox; the next leader's relay sends them again, and
// the destination, which remembers what it took, adds nothing twice.

const (
	// relayRetry is the pause before the relay tries again an outbox it
	// could not empty (a destination's shard without a leader, a queue
	// moving).
	relayRetry = 250 * time.Millisecond
	// relayBytes bounds the records of one fifoq:TakeMessages, beyond
	// its first message: well within a request between members.
	relayBytes = 4 << 20
	// relayMissingFor is how long a destination must answer that it does
	// not exist before its messages are given back to their queue: a
	// node whose map lags a move asks the queue's old shard, which
	// answers that for a moment, and a queue moving between shards is in
	// neither for a moment.
	relayMissingFor = 10 * time.Second
	// relayTakeWait bounds one take, its leader's election included: a
	// destination that takes longer is tried again later, after the
	// others.
	relayTakeWait = 5 * time.Second
)

// outboxRelay carries the outboxes of the groups this node leads. It
// sleeps while no outbox holds anything.
type outboxRelay struct {
	s *Server
	wakeLoop
	// dests is what the relay knows of each destination it is sending
	// to; only the relay's goroutine touches it.
	dests map[api.QueueKey]*relayDest
}

// relayDest is a destination the relay has met trouble with.
type relayDest struct {
	missingSince time.Time // when it first answered that it does not exist, in a row
	failures     int       // takes refused or unanswered in a row
	next         time.Time // no take before then
	seen         bool      // an outbox sent to it in this pass
}

// relayBackoff bounds the pause before the relay tries a destination that
// failed again.
const relayBackoff = 10 * time.Second

func newOutboxRelay(s *Server) *outboxRelay {
	return &outboxRelay{s: s, wakeLoop: newWakeLoop(), dests: map[api.QueueKey]*relayDest{}}
}

// start runs the relay; outboxes restored from the log are relayed at
// once.
func (r *outboxRelay) start() {
	r.wakeLoop.start(func() (bool, time.Duration) { return r.relayAll(), relayRetry })
}

// relayAll relays every outbox of the groups this node leads once, and
// reports whether one still holds messages.
func (r *outboxRelay) relayAll() (left bool) {
	for _, d := range r.dests {
		d.seen = false
	}
	for _, g := range r.s.allGroups() {
		if r.ctx.Err() != nil {
			return false
		}
		if !g.leads() || !groupHasOutbox(g) {
			continue
		}
		r.relayGroup(g)
		left = left || groupHasOutbox(g)
	}
	// A destination no outbox sends to now (its messages went, or the
	// queue or the leadership did) starts afresh if it comes back.
	for k, d := range r.dests {
		if !d.seen {
			delete(r.dests, k)
		}
	}
	return left
}

// groupHasOutbox reports whether g's engine has messages in an outbox.
func groupHasOutbox(g *group) (yes bool) {
	g.log.Read(func(e *engine.Engine) { yes = e.HasOutbox() })
	return yes
}

// relayGroup carries, for each outbox of g, its oldest entries bound for
// one destination, unless that destination is waited for.
func (r *outboxRelay) relayGroup(g *group) {
	s := r.s
	var heads []engine.OutboxHead
	g.log.Read(func(e *engine.Engine) { heads = e.OutboxHeads() })
	for _, h := range heads {
		if r.ctx.Err() != nil {
			return
		}
		d := r.dests[h.Dest]
		if d == nil {
			d = &relayDest{}
			r.dests[h.Dest] = d
		}
		d.seen = true
		if time.Now().Before(d.next) {
			continue
		}
		var b engine.OutboxBatch
		var ok bool
		var err error
		// One batch at a time under the read lock: its bodies are read
		// back from the store, and Apply waits meanwhile.
		g.log.Read(func(e *engine.Engine) { b, ok, err = e.OutboxBatch(h.Source, h.Created, relayBytes) })
		if err != nil {
			// A body that cannot be read back: the store's own checks
			// stop the node if its disk fails; until then, try again.
			s.logger.Warn("outbox relay: reading an outbox", "queue", h.Source, "err", err)
			r.failed(d)
			continue
		}
		if !ok {
			continue
		}
		r.routeByGroup(&b)
		settle := &engine.SettleOutboxRequest{Created: b.Created, Through: b.Through}
		err = r.take(b)
		switch {
		case err == nil:
			d.missingSince, d.failures, d.next = time.Time{}, 0, time.Time{}
		case errCode(err) == "QueueDoesNotExist":
			if d.missingSince.IsZero() {
				d.missingSince = time.Now()
			}
			if time.Since(d.missingSince) < relayMissingFor {
				d.next = time.Now().Add(relayRetry)
				continue
			}
			s.logger.Warn("outbox relay: the destination does not exist; its messages go back to their queue",
				"queue", b.Source, "destination", b.Dest, "messages", len(b.Take.Messages))
			settle.Returned = true
			d.missingSince = time.Time{}
		default:
			d.missingSince = time.Time{}
			r.failed(d)
			if r.ctx.Err() == nil && d.failures%20 == 0 {
				s.logger.Warn("outbox relay: the destination does not take the messages", "queue", b.Source,
					"destination", b.Dest, "tries", d.failures, "err", err)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(r.ctx, stepWait)
		cmd := &engine.Command{Time: s.now().UnixNano(), Queue: b.Source, Request: settle, Entropy: newEntropy()}
		if _, err := s.apply(withGroup(ctx, g), cmd); err != nil && r.ctx.Err() == nil {
			// The next pass, or the next leader, sends the entries
			// again, and the destination takes nothing twice.
			s.logger.Debug("outbox relay: settling", "queue", b.Source, "err", err)
			if engine.IsHeld(err) {
				// A backup holds the outbox (engine/hold.go): sending
				// the entries again meanwhile would only log takes of
				// nothing at the destination.
				d.next = time.Now().Add(relayBackoff)
			}
		}
		cancel()
	}
}

// failed notes a take that failed, and when to try the destination again:
// backing off, so that an unreachable shard holds up the other
// destinations little.
func (r *outboxRelay) failed(d *relayDest) {
	d.failures++
	pause := relayRetry << min(d.failures, 6)
	d.next = time.Now().Add(min(pause, relayBackoff))
}

// routeByGroup cuts b, if its destination is a queue split into
// partitions by this node's map, to its leading run of entries whose
// groups one partition holds, and names that partition its destination.
// A partition keeps, by source, the highest entry number it took; a split
// gives both halves that record and a merge keeps the higher one. Runs
// taken whole, each settled before the next is sent, keep that record
// true: every entry up to the highest number any partition took has been
// taken by one, so no merge or split makes a partition skip an entry
// another did not take. A partition whose range the map has wrong refuses
// the run, and the relay tries again once its map has caught up.
func (r *outboxRelay) routeByGroup(b *engine.OutboxBatch) {
	if r.s.shards == nil || !r.s.shards.IsSplit(b.Dest) {
		return
	}
	msgs := b.Take.Messages
	part := r.s.shards.PartOf(b.Dest, msgs[0].GroupHash)
	n := 1
	for n < len(msgs) && r.s.shards.PartOf(b.Dest, msgs[n].GroupHash) == part {
		n++
	}
	b.Take.Messages = msgs[:n]
	b.Through = msgs[n-1].Seq
	b.Dest.Part = part
}

// take applies b's fifoq:TakeMessages at the leader of the destination's
// group, as this node's map places it.
func (r *outboxRelay) take(b engine.OutboxBatch) error {
	s := r.s
	var id uint32
	if s.shards != nil {
		s.shards.Forget(b.Dest)
		id = s.shards.Of(b.Dest)
	}
	ctx, cancel := context.WithTimeout(r.ctx, relayTakeWait)
	defer cancel()
	return s.MoveSteps().Step(ctx, id, b.Dest, b.Take)
}

// errCode returns the SQS error code of err, "" if it has none.
func errCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}
