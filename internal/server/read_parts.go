package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// An export (`fifoq export`) and the developer endpoint's listing read a
// queue's messages without receiving them. In a cluster each is read
// where the queue is current: at the leader of the shard of each of its
// partitions, which answered every write to it once applied. A follower's
// replica learns that its leader's last entries committed only with the
// leader's next append (up to two of a shard's CommitTimeout later, when
// the writes stop), so reading it would miss the messages sent last; and
// a high-throughput queue's messages are spread over partitions in
// several shards.
//
// The member the client asked reads each partition in turn: from its own
// replica where it leads the partition's shard, else from that shard's
// leader, to which it forwards the client's signed request with
// hdrReadPart and the partition (hdrPart). The leader checks the
// signature and the queue's policy as for any request, and answers with
// the partition's messages as partLines, streamed, so that an export of
// any length passes. A leader, here or there, first confirms that it
// still leads (a round of heartbeats), and a shard without a leader, or
// whose leader does not answer, is asked again every leaderRetryGap as it
// elects the next. Only where no leader answers within leaderWait (a
// shard without a majority) does a replica answer (this member's, once it
// has applied what it knows committed, else each other in turn), as
// current as what it has applied.

// hdrReadPart asks a member, on the node-to-node port, for one partition's
// messages as partLines in place of the answer a client gets; the member
// sets it on such an answer, so that one from a member of a version that
// does not know it (which answers as to a client) is told apart.
const hdrReadPart = "X-Fifoq-Read-Part"

// hdrReadAtLeader, on a partition read, asks the member as the leader of
// the partition's shard: one that does not lead it, or cannot confirm
// that it does, answers 503 rather than its replica's messages, and the
// asker tries the shard's next leader. Without it (a replica read once no
// leader answers, or an asker of a version without it) the member reads
// its replica.
const hdrReadAtLeader = "X-Fifoq-Read-At-Leader"

// partLine is one line of a member's answer to a partition read: a message,
// the error that ends the read, or the mark that the read is whole.
type partLine struct {
	Message  *engine.ListedMessage `json:"m,omitempty"`
	Error    *api.Error            `json:"error,omitempty"`
	Complete bool                  `json:"complete,omitempty"`
}

// partRead is one read of a queue's messages, for an export (every
// message, in pages) or a developer listing (up to engine.MaxListMessages).
type partRead struct {
	r      *http.Request
	body   []byte
	caller string
	export bool
	emit   func(part uint32, lm engine.ListedMessage) error
}

// readParts reads every partition of queue q (partition 0 alone for a
// queue that is not split) and hands their messages to rd.emit, a
// partition at a time, each in the order the queue holds them. A request
// that a member of a version without partition reads forwarded (it reads
// the queue's replica it found) is read from this member's replicas only.
func (s *Server) readParts(ctx context.Context, q api.QueueKey, rd partRead) error {
	parts := []uint32{0}
	if s.sharded() {
		parts = s.partsNow(q)
	}
	for _, p := range parts {
		pq := q
		pq.Part = p
		if err := s.readPart(ctx, pq, rd); err != nil {
			return err
		}
	}
	return nil
}

// readPart reads partition q (q.Part) where it is current, as the comment
// at the top of this file says.
func (s *Server) readPart(ctx context.Context, q api.QueueKey, rd partRead) error {
	id := uint32(0)
	if s.sharded() {
		id = s.shards.Of(q)
	}
	if fromPeer(rd.r) {
		g, held := s.groupByID(id)
		if !held {
			return api.ErrServiceUnavailable("This node holds no replica of the queue's shard %d now; retry.", id)
		}
		return s.readPartHere(ctx, g, q, rd)
	}
	// The shard's leader, this member or another, and the next one while
	// the shard elects it, for up to leaderWait: a replica read at once
	// would miss what its leader committed last.
	deadline := time.Now().Add(leaderWait)
	var lastErr error
	asked := ""
	for try := 0; ; try++ {
		// The map again each time: this member's copy may have lagged
		// (its first group's leader failed before it learnt that the
		// queue's record committed), and the next leader brings it up.
		if s.sharded() {
			id = s.shards.Of(q)
		}
		g, held := s.groupByID(id)
		if held && g.leads() {
			err := confirmLeads(ctx, g)
			if err == nil {
				return s.readPartHere(ctx, g, q, rd)
			}
			lastErr = err
		} else if member, addr := s.leaderOf(id, held, g, try); addr != "" && member != s.cluster.NodeID() {
			asked = addr
			// A leader that answers goes on answering (it read the
			// partition as the leader, and its stream would be cut for
			// nothing); one that does not is given up once the shard
			// names another.
			var answering atomic.Bool
			ask, stop := s.whileLeads(ctx, id, held, g, member, &answering)
			final, err := s.askPart(ask, addr, q, rd, true, &answering)
			stop()
			if err == nil || final {
				return err
			}
			lastErr = err
		}
		if !sleepUntil(ctx, deadline, leaderRetryGap) {
			break
		}
	}
	if ctx.Err() != nil {
		return api.ErrServiceUnavailable("The read ended before the shard's leader answered (%v); retry.", lastErr)
	}
	// No leader answered within leaderWait (a shard without a majority):
	// a replica answers, as of what it has applied.
	if g, held := s.groupByID(id); held {
		return s.readPartHere(ctx, g, q, rd)
	}
	for _, p := range s.shards.Replicas(id) {
		if p.Addr == asked {
			continue
		}
		final, err := s.askPart(ctx, p.Addr, q, rd, false, nil)
		if err == nil || final {
			return err
		}
		lastErr = err
	}
	return api.ErrServiceUnavailable("No replica of the queue's shard %d answered (%v); retry.", id, lastErr)
}

// confirmLeadsPart checks that this member leads the shard of partition
// q, as confirmLeads does.
func (s *Server) confirmLeadsPart(ctx context.Context, q api.QueueKey) error {
	id := uint32(0)
	if s.sharded() {
		id = s.shards.Of(q)
	}
	g, held := s.groupByID(id)
	if !held || !g.leads() {
		return api.ErrServiceUnavailable("This node does not lead the queue's shard %d now; retry.", id)
	}
	return confirmLeads(ctx, g)
}

// confirmLeads checks that this member still leads group g, with a round
// of heartbeats, and has applied what was committed before: a leader cut
// off from the others believes it leads until its lease runs out, while
// the others may already have elected another and committed more.
func confirmLeads(ctx context.Context, g *group) error {
	if g.raft == nil || !g.raft.Clustered() {
		return nil
	}
	return g.raft.ReadBarrier(ctx)
}

// askPart forwards rd's request to the member at raftAddr as a read of
// partition q, and hands the messages it answers to rd.emit. final says
// that err is the read's outcome: an answer of the member's (the queue's
// policy denies the caller, the queue does not exist) or a failure once
// messages were handed on; otherwise nothing was handed on, and another
// replica may be asked. answering, if not nil, is set once the member has
// begun its answer.
func (s *Server) askPart(ctx context.Context, raftAddr string, q api.QueueKey, rd partRead, atLeader bool, answering *atomic.Bool) (final bool, err error) {
	out, err := s.forwardedRequest(ctx, rd.r, rd.body, raftAddr)
	if err != nil {
		return true, err
	}
	out.Header.Set(hdrPart, strconv.FormatUint(uint64(q.Part), 10))
	out.Header.Set(hdrReadPart, "1")
	out.Header.Del(hdrReadAtLeader)
	if atLeader {
		out.Header.Set(hdrReadAtLeader, "1")
	}
	resp, err := s.fwd.client.Do(out)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(hdrReadPart) != "1" {
		return false, fmt.Errorf("the member at %s answered %s, not a partition's messages", raftAddr, resp.Status)
	}
	if answering != nil {
		answering.Store(true)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 64<<10))
	for emitted := false; ; emitted = true {
		var l partLine
		if err := dec.Decode(&l); err != nil {
			if errors.Is(context.Cause(ctx), errLeaderChanged) {
				err = fmt.Errorf("the shard is now led by another member: %w", err)
			}
			return emitted, fmt.Errorf("the read at %s was cut off: %w", raftAddr, err)
		}
		switch {
		case l.Error != nil:
			return true, l.Error
		case l.Complete:
			return true, nil
		case l.Message != nil:
			if err := rd.emit(q.Part, *l.Message); err != nil {
				return true, err
			}
		}
	}
}

// readPartHere reads partition q from group g's replica on this member:
// once it has applied what it knows committed, if it does not lead g.
func (s *Server) readPartHere(ctx context.Context, g *group, q api.QueueKey, rd partRead) error {
	if !g.leads() {
		if err := s.caughtUp(ctx, g); err != nil {
			return err
		}
	}
	if err := s.authorizeIn(g.log, nil, rd.caller, api.ActionReceiveMessage, q); err != nil {
		return err
	}
	if !rd.export {
		var listed []engine.ListedMessage
		var found bool
		var err error
		g.log.Read(func(e *engine.Engine) {
			listed, found, err = e.ListMessages(q, s.now().UnixNano(), engine.MaxListMessages, devReceiptHandle)
			// The attribute maps are the engine's: copy them under the lock.
			for i := range listed {
				listed[i].MessageAttributes = maps.Clone(listed[i].MessageAttributes)
			}
		})
		switch {
		case !found:
			return partMissing(q)
		case err != nil:
			return api.ErrInternalFailure("A message's body could not be read: %v", err)
		}
		for _, lm := range listed {
			if err := rd.emit(q.Part, lm); err != nil {
				return err
			}
		}
		return nil
	}
	var cur engine.ExportCursor
	for first := true; ; first = false {
		var page []engine.ListedMessage
		var done, found bool
		var err error
		now := s.now().UnixNano()
		g.log.Read(func(e *engine.Engine) {
			page, done, found, err = e.ExportPage(q, now, &cur, exportPage, "")
			for i := range page {
				page[i].MessageAttributes = maps.Clone(page[i].MessageAttributes)
			}
		})
		switch {
		case !found && first:
			return partMissing(q)
		case !found:
			err = engine.ErrExportQueueGone
		}
		if err != nil {
			return err
		}
		for _, lm := range page {
			if err := rd.emit(q.Part, lm); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// partMissing is the error of a read of partition q that its group does
// not hold: the queue does not exist, or, for a partition of a split
// queue, it moved or merged since this member's map was read, which a
// retry finds.
func partMissing(q api.QueueKey) error {
	if q.Part != 0 {
		return engine.ErrQueueMoving()
	}
	return api.ErrQueueDoesNotExist()
}

// answerPartRead answers a member's partition read (hdrReadPart) of
// queue q by caller, who the request's signature says it is, with the
// partition's messages from this member's replica, as partLines.
func (s *Server) answerPartRead(w http.ResponseWriter, r *http.Request, caller string, q api.QueueKey, export bool) {
	q.Part = hintPart(r)
	if r.Header.Get(hdrReadAtLeader) != "" {
		// Asked as the shard's leader: a member that does not lead it,
		// or cannot confirm that it does, says so before it answers, so
		// that the asker finds the next leader.
		if err := s.confirmLeadsPart(r.Context(), q); err != nil {
			e := api.AsError(err)
			writeJSONError(w, e.Status, e.Code+": "+e.Message)
			return
		}
	}
	w.Header().Set(hdrReadPart, "1")
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	// The header at once: the member that asked knows this one answers.
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := s.readPart(r.Context(), q, partRead{r: r, caller: caller, export: export, emit: func(_ uint32, lm engine.ListedMessage) error {
		return enc.Encode(partLine{Message: &lm})
	}})
	if err != nil {
		_ = enc.Encode(partLine{Error: api.AsError(err)})
	} else {
		_ = enc.Encode(partLine{Complete: true})
	}
	_ = bw.Flush()
}
