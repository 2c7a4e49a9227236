package replog

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// The apply pipeline: Apply queues a command; batchLoop coalesces the
// queued commands into one log entry (group commit) and commit hands it to
// Raft; the state machine applies the entry and answers its callers (fsm.go,
// from the commands the leader holds), or, when Raft fails the entry or the
// state machine applied it without finding it held, the goroutine that
// awaits the entry's future does (answer, exactly once either way).

// maxInflightEntries bounds the log entries handed to Raft and not yet
// applied. While they are being fsynced, new commands wait and are
// coalesced into the next entry: that wait is what makes group commit
// batch under load.
//
// Raft is handed one entry at a time to write: the next entry is
// collected until the previous one is on this node's disk (its write and
// fsync returned, see storeGate), so it carries every command that came
// meanwhile, and leaves while the previous one is still being applied and
// answered, or, in a cluster, still on its round trip to the followers.
// Letting it leave at once instead (two entries being written) made it
// small, and the smaller entries cost more CPU than the overlap saved, on
// a node alone and on a cluster's leader alike, whose every entry is also
// encoded and sent to each follower; waiting for the previous entry's
// apply as well (the earlier rule) left the disk idle while the entry went
// through Raft's apply goroutine and its callers were woken
// (docs/benchmarks.md, "Durable batches: one entry in flight", "The next
// entry leaves at the fsync" and "A cluster's leader: fewer, larger
// entries"). At most two are then unapplied: one on its way to being
// applied, one being written.
const maxInflightEntries = 2

// errShuttingDown answers a command that was not appended because the log
// is closing.
func errShuttingDown() error { return api.ErrServiceUnavailable("The server is shutting down.") }

// refusal returns why the log takes no command now, or nil: it is closing,
// Raft has stopped, or an entry could not be applied. In each case nothing
// is appended.
func (l *Raft) refusal() error {
	select {
	case <-l.quit:
		return errShuttingDown()
	default:
	}
	if l.faults.err() != nil {
		return api.ErrServiceUnavailable("The server takes no requests: %s.", l.faults.summary())
	}
	select {
	case <-l.stopped:
		return api.ErrServiceUnavailable("The server cannot accept writes: its command log has stopped.")
	default:
	}
	if index, err := l.fsm.failure(); err != nil {
		// The entry's file and the decoding error are in the server's
		// log; the client learns what it needs: no write will succeed.
		return api.ErrServiceUnavailable("The server refuses writes: its command log stopped at log entry %d, which it cannot apply (see the server log).", index)
	}
	return nil
}

// Apply implements Log: it queues cmd for the next group commit and waits
// for its result.
//
// A command is refused at once, and nothing appended, while the log is
// closing or after an entry could not be applied. Once queued, the wait for
// its outcome ends with the outcome, or when the log stops, or when ctx
// ends: in the last two cases the command may still be (or have been)
// applied, and the error says the outcome is unknown. The log's state is
// the same either way; only this caller stops listening.
func (l *Raft) Apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	if err := l.refusal(); err != nil {
		return nil, err
	}
	if err := l.formatReady(ctx, cmd); err != nil {
		return nil, err
	}
	p := &pending{cmd: cmd, done: make(chan applyResult, 1)}
	if err := l.enqueue(ctx, p); err != nil {
		return nil, err
	}
	res := l.outcome(ctx, p)
	return res.resp, res.err
}

// ApplyInOrder queues cmds for group commit one after another, so that
// they are applied in that order, in one log entry or in consecutive
// ones, and waits for all their results: what two dependent writes cost
// as one round of Raft rather than two. The error is the first command's
// that failed; each result is in the slice either way. A command refused
// before it was queued leaves the ones after it unqueued too.
func (l *Raft) ApplyInOrder(ctx context.Context, cmds ...*engine.Command) ([]api.Response, error) {
	if err := l.refusal(); err != nil {
		return nil, err
	}
	for _, cmd := range cmds {
		if err := l.formatReady(ctx, cmd); err != nil {
			return nil, err
		}
	}
	queued := make([]*pending, 0, len(cmds))
	var unqueued error
	for _, cmd := range cmds {
		p := &pending{cmd: cmd, done: make(chan applyResult, 1)}
		if unqueued = l.enqueue(ctx, p); unqueued != nil {
			break
		}
		queued = append(queued, p)
	}
	out := make([]api.Response, len(cmds))
	var err error
	for i, p := range queued {
		res := l.outcome(ctx, p)
		out[i] = res.resp
		err = cmp.Or(err, res.err)
	}
	return out, cmp.Or(err, unqueued)
}

// formatReady makes sure the cluster writes a log entry format that
// carries cmd, raising it if cmd needs a newer one, or says why not.
func (l *Raft) formatReady(ctx context.Context, cmd *engine.Command) error {
	if need := commandFormat(cmd); need > byte(l.format.Load()) {
		if _, raise := formatRaise(cmd); !raise {
			return l.formatFor(ctx, cmd, need)
		}
	}
	return nil
}

// enqueue hands p to the batcher for the next group commit.
func (l *Raft) enqueue(ctx context.Context, p *pending) error {
	select {
	case l.submit <- p:
		return nil
	case <-l.quit:
		return errShuttingDown()
	case <-ctx.Done():
		return api.ErrServiceUnavailable("The request ended (%v) while the server was too busy to take its command; it was not applied.", ctx.Err())
	}
}

// outcome waits for queued p's result, or for the log to stop or ctx to
// end, in which cases the command may still be (or have been) applied.
func (l *Raft) outcome(ctx context.Context, p *pending) applyResult {
	var res applyResult
	select {
	case res = <-p.done:
	case <-l.stopped:
		res.resp, res.err = p.outcomeOr(api.ErrServiceUnavailable("The command log stopped before this request's outcome was known: it may or may not have been applied."))
	case <-ctx.Done():
		res.resp, res.err = p.outcomeOr(api.ErrInternalFailure("The request ended (%v) before its outcome was known: it may still be applied.", ctx.Err()))
	}
	return res
}

// outcomeOr returns p's outcome if it has come, else err: when a wait ends
// for another reason at the same moment as the outcome arrives, the
// outcome wins.
func (p *pending) outcomeOr(err error) (api.Response, error) {
	select {
	case res := <-p.done:
		return res.resp, res.err
	default:
		return nil, err
	}
}

// batchLoop collects queued commands into log entries and hands them to
// Raft, at most maxInflightEntries at a time, each once the previous one
// is on disk.
func (l *Raft) batchLoop() {
	defer l.wg.Done()
	var prev *entry // the last entry handed to Raft
	for {
		var first *pending
		select {
		case first = <-l.submit:
		case <-l.quit:
			l.drain()
			return
		}
		// Wait for the previous entry to be stored and for a free slot
		// first: while the previous entries are being fsynced, more
		// commands queue up and join this batch.
		if prev != nil {
			select {
			case <-prev.stored:
			case <-l.quit:
				first.done <- applyResult{err: errShuttingDown()}
				l.drain()
				return
			}
		}
		select {
		case l.inflight <- struct{}{}:
		case <-l.quit:
			first.done <- applyResult{err: errShuttingDown()}
			l.drain()
			return
		}
		batch := []*pending{first}
		size := 0
	collect:
		for len(batch) < l.cfg.MaxBatchCommands && size < l.cfg.MaxBatchBytes {
			select {
			case p := <-l.submit:
				batch = append(batch, p)
				size += approxSize(p.cmd)
			default:
				break collect
			}
		}
		prev = l.commit(batch)
	}
}

// entry is one group commit on its way through Raft: the commands it
// carries, the callers waiting for them, and the encoded bytes handed to
// Raft. It is answered exactly once, by whichever comes first: the state
// machine applying it (the usual way, on Raft's apply goroutine, as soon as
// it is applied) or the wait for its future (an error, or an entry the
// state machine applied without finding it here).
type entry struct {
	cmds     []*engine.Command
	batch    []*pending
	data     []byte
	began    time.Time
	answered atomic.Bool
	// stored is closed once the entry is written and fsynced on this
	// node (storeGate), or once it is answered, whichever comes first:
	// the batcher waits on it before handing Raft the next entry.
	stored     chan struct{}
	storedDone atomic.Bool
}

// markStored closes e.stored, once.
func (e *entry) markStored() {
	if e.storedDone.CompareAndSwap(false, true) {
		close(e.stored)
	}
}

// answer hands each caller its result and frees the entry's slot in the
// pipeline; it does nothing if the entry was answered already.
func (l *Raft) answer(e *entry, results []applyResult, err error) {
	if !e.answered.CompareAndSwap(false, true) {
		return
	}
	// An entry that failed before it was stored must not hold the next
	// one back.
	e.markStored()
	<-l.inflight
	if err == nil {
		l.observeCommit(len(e.batch), time.Since(e.began))
	}
	for i, p := range e.batch {
		switch {
		case err != nil:
			p.done <- applyResult{err: err}
		case i < len(results):
			p.done <- results[i]
		default:
			p.done <- applyResult{err: api.ErrInternalFailure("log entry applied without a result")}
		}
	}
}

// commit writes one batch as one log entry and returns it, or nil if it
// answered the batch with a refusal at once. The state machine answers its
// commands once it is applied (see fsm.Apply); a goroutine waits for the
// entry's future meanwhile, to answer them if Raft fails it instead, so
// that the next batch can be collected without waiting.
func (l *Raft) commit(batch []*pending) *entry {
	err := l.checkDiskSpace()
	if err != nil && l.cfg.Observer != nil {
		l.cfg.Observer.DiskFull(len(batch))
	}
	if _, failed := l.fsm.failure(); failed != nil {
		// Past an entry the state machine could not apply, nothing more
		// is appended: it would never be applied either.
		err = l.refusal()
	}
	if err != nil {
		<-l.inflight
		for _, p := range batch {
			p.done <- applyResult{err: err}
		}
		return nil
	}
	cmds := make([]*engine.Command, len(batch))
	for i, p := range batch {
		cmds[i] = p.cmd
	}
	l.clampTimes(cmds)
	data, held, err := encodeEntryHeld(cmds, l.entryVersion(cmds))
	if err != nil {
		<-l.inflight
		for _, p := range batch {
			p.done <- applyResult{err: api.ErrInternalFailure("encode command: %v", err)}
		}
		return nil
	}
	e := &entry{cmds: held, batch: batch, data: data, began: time.Now(), stored: make(chan struct{})}
	l.fsm.hold(e)
	fut := l.raft.Apply(data, 0)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.awaitEntry(e, fut)
	}()
	return e
}

// awaitEntry waits for the future of entry e and answers e's callers, unless
// the state machine answered them already (the usual way): when Raft fails
// the entry, or when the state machine applied it without finding it held
// (the fallback of fsm.hold's contract), in which case the results come
// through the future.
func (l *Raft) awaitEntry(e *entry, fut raft.ApplyFuture) {
	err := l.await(fut)
	l.transfers.note(err, time.Now())
	if e.answered.Load() {
		return
	}
	l.fsm.release(e)
	if err != nil {
		if refusedUnappended(err) {
			// A leadership lost or handed over: nothing of the entry was
			// done, and its callers carry it to the next leader.
			l.logger.Info("log append refused: this node no longer leads", "err", err)
		} else {
			l.logger.Error("log append failed", "err", err)
		}
		l.answer(e, nil, unavailable(err))
		return
	}
	results, ok := fut.Response().([]applyResult)
	if !ok {
		if _, failed := l.fsm.failure(); failed != nil {
			// This entry, or one before it, could not be applied:
			// this one is in the log but was not applied.
			l.answer(e, nil, l.refusal())
			return
		}
	}
	l.answer(e, results, nil)
}

// errRaftStopped is the outcome of an entry whose future Raft did not
// answer before it shut down.
var errRaftStopped = errors.New("raft stopped before the entry's outcome was known")

// await waits for an entry's outcome, or for Raft to stop: Raft does not
// answer an entry still queued for its leader loop when it shuts down, and
// a wait for it must not hang. In that case the goroutine reading the
// future stays blocked on the dead Raft; it is one per entry in flight at
// that moment, and at most maxInflightEntries.
func (l *Raft) await(fut raft.ApplyFuture) error {
	return awaitUntil(fut, l.stopped, errRaftStopped)
}

// awaitUntil waits for f's outcome, or until stop closes, and then returns
// stopped unless f has answered meanwhile. The goroutine reading f is left
// to end when (if) Raft answers it.
func awaitUntil(f raft.Future, stop <-chan struct{}, stopped error) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-stop:
		select {
		case err := <-done:
			return err
		default:
			return stopped
		}
	}
}

// checkDiskSpace refuses a write when the data dir's file system has less
// than MinFreeBytes free. It is one statfs per group commit, not per request.
func (l *Raft) checkDiskSpace() error {
	if l.cfg.MinFreeBytes < 0 {
		return nil
	}
	free, err := freeBytes(l.cfg.Dir)
	if err != nil {
		return nil // cannot tell: let the write itself find out
	}
	if free < l.cfg.MinFreeBytes {
		if l.lowDisk.CompareAndSwap(false, true) {
			l.logger.Error("disk almost full: refusing writes until space returns", "dir", l.cfg.Dir, "free_bytes", free, "min_free_bytes", l.cfg.MinFreeBytes)
		}
		return api.ErrServiceUnavailable("The server's disk is full (%d bytes free); writes are refused until space returns. Retry later.", free)
	}
	if l.lowDisk.CompareAndSwap(true, false) {
		l.logger.Info("disk space returned: accepting writes", "dir", l.cfg.Dir, "free_bytes", free)
	}
	return nil
}

// drain answers commands still queued at shutdown.
func (l *Raft) drain() {
	for {
		select {
		case p := <-l.submit:
			p.done <- applyResult{err: api.ErrServiceUnavailable("The server is shutting down.")}
		default:
			return
		}
	}
}

// unavailable turns a log failure into the 503 clients see.
func unavailable(err error) error {
	var fault *storageFault
	switch {
	case errors.As(err, &fault):
		// The disk failed the entry's write: it may be there after a
		// restart, or not.
		return api.ErrServiceUnavailable("The server's disk failed while this request was being made durable (%v); the server stops. The request may or may not have been applied.", fault)
	case refusedUnappended(err):
		return api.ErrServiceUnavailable(notLeadingPrefix+" (%v); it was not applied: retry.", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		// Refused before it was appended.
		return api.ErrServiceUnavailable("The server cannot accept writes now (%v); retry.", err)
	case errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, errRaftStopped):
		// Appended, perhaps committed: nobody can say.
		return api.ErrServiceUnavailable("The command log stopped before this request's outcome was known (%v): it may or may not have been applied.", err)
	}
	return api.ErrServiceUnavailable("The write could not be made durable (%v); retry.", err)
}

// refusedUnappended reports whether Raft refused an entry before it was
// appended because this node does not lead its group, or is handing its
// leadership to another member (a balancer's move, a node that stops).
func refusedUnappended(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress)
}

// notLeadingPrefix begins the refusal of a write that Raft refused before
// it was appended because this node no longer leads its group, or is
// handing its leadership over (refusedUnappended).
const notLeadingPrefix = "This node no longer leads the request's group"

// IsNotLeading reports whether err refused a write before it was
// appended because this node no longer leads the write's group, or is
// handing its leadership over: nothing of it was done, so the node that
// took the request may carry it to the group's next leader instead of
// answering the client a 503.
func IsNotLeading(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "ServiceUnavailable" && strings.HasPrefix(ae.Message, notLeadingPrefix)
}

// approxSize estimates a command's encoded size, to bound batches in bytes.
func approxSize(c *engine.Command) int {
	switch r := c.Request.(type) {
	case *api.SendMessageRequest:
		return 256 + len(r.MessageBody)
	case *api.SendMessageBatchRequest:
		n := 256
		for _, e := range r.Entries {
			n += 128 + len(e.MessageBody)
		}
		return n
	case *engine.InstallQueueRequest:
		return 256 + len(r.Image)*4/3 // as base64 in the entry's JSON
	}
	return 256
}
