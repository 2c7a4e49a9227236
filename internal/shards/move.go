package shards

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/placement"
	"github.com/fifoq/fifoq/internal/replog"
)

// Moving a queue from one shard to another. The first group's leader
// drives every move; the engine offers the steps (engine/move.go), and the
// server carries each out at the leader of the group it is for (Steps).
// A move is recorded in the first group's state before its first step:
//
//	"shards/move/ACCOUNT/REGION/NAME" = "MOVE FROM TO"
//
// and driven from that record to its end by whichever node leads the
// first group, so that a leader killed in the middle leaves its successor
// to finish. Every step is one the engine repeats safely, so the driver
// simply does them all again from the record:
//
//  1. Fence the queue in FROM. Its requests answer a retryable 503 from
//     here on, and its state stops changing.
//  2. Export its image from a replica of FROM that applied the fence.
//  3. Install the image in TO (a second install of the same move changes
//     nothing).
//  4. Flip the map: the queue's record names TO, and "shards/epoch" the
//     move, which tells every node to forget the records it cached.
//  5. Drop the queue from FROM, which answers a retryable 503 for its name
//     for ten minutes more, for routers whose map is older.
//  6. Remove the move's record.
//
// Once the map names TO, steps 1 to 3 are done; before, nothing outside
// FROM has changed, and a move that cannot go on is abandoned there: the
// fence is lifted and the record removed. So a queue is served by one
// shard at every moment, and a client sees only retryable 503s while it
// moves.

// Record keys of moves.
const (
	movePrefix = "shards/move/"
	// movedPrefix keys when a queue last finished a move
	// ("shards/moved/ACCOUNT/REGION/NAME" = Unix ns), for the balancer of
	// whichever node leads next (recentlyMoved).
	movedPrefix = "shards/moved/"
	epochKey    = "shards/epoch"
)

// MaxMoveImage bounds the image of a queue that moves: it is carried in
// one log entry of its new shard, as JSON (base64, a third more), and a
// log entry of the WAL is at most 64 MiB.
const MaxMoveImage = 32 << 20

// Steps carries a move's steps out, at the leader of the group each is
// for. The server implements it.
type Steps interface {
	// Step applies the move step req (an engine.FenceQueueRequest,
	// UnfenceQueueRequest, InstallQueueRequest or DropQueueRequest; or a
	// split's, engine.SplitQueueRequest or MergeQueueRequest) to queue q
	// in group id, at that group's leader.
	Step(ctx context.Context, id uint32, q api.QueueKey, req api.Request) error
	// Export returns the image of queue q, fenced for the move named
	// move in group id, from a replica of that group that applied that
	// fence.
	Export(ctx context.Context, id uint32, q api.QueueKey, move string) ([]byte, error)
	// Queues returns the queues group id holds, as one of its replicas
	// has them, each with the commands that replica applied on it since it
	// started and whether it is high-throughput (engine.QueueLoads): the
	// balancer compares two readings to tell a busy queue from an idle
	// one, and spreads high-throughput queues over partitions (spread.go).
	Queues(ctx context.Context, id uint32) (map[api.QueueKey]engine.QueueLoad, error)
	// Fenced returns the queues of group id fenced for a move, with the
	// move of each, as one of its replicas has them.
	Fenced(ctx context.Context, id uint32) (map[api.QueueKey]string, error)
	// Members returns group id's membership as its leader last committed
	// it, the index of the entry that committed it, and whether its
	// leader answered.
	Members(ctx context.Context, id uint32) ([]replog.Member, uint64, bool)
}

// SetSteps gives the Set what carries moves out. Until it is given, this
// node drives no move.
func (s *Set) SetSteps(st Steps) { s.steps.Store(&st) }

// moveRecord is a move's record in the first group's state.
type moveRecord struct {
	id       string
	from, to uint32
	// abandoned is set once the move is given up: what is left is to
	// lift the fence and remove the record.
	abandoned bool
}

func (m moveRecord) String() string {
	v := m.id + " " + strconv.FormatUint(uint64(m.from), 10) + " " + strconv.FormatUint(uint64(m.to), 10)
	if m.abandoned {
		v += " abandoned"
	}
	return v
}

func parseMove(v string) (moveRecord, bool) {
	f := strings.Fields(v)
	if len(f) != 3 && (len(f) != 4 || f[3] != "abandoned") {
		return moveRecord{}, false
	}
	from, err1 := strconv.ParseUint(f[1], 10, 32)
	to, err2 := strconv.ParseUint(f[2], 10, 32)
	if err1 != nil || err2 != nil || from == to || f[0] == "" {
		return moveRecord{}, false
	}
	return moveRecord{id: f[0], from: uint32(from), to: uint32(to), abandoned: len(f) == 4}, true
}

// moveKey is the record of a move of q.
func moveKey(q api.QueueKey) string { return movePrefix + recordName(q) }

// movedKey is the key of when q last finished a move.
func movedKey(q api.QueueKey) string { return movedPrefix + recordName(q) }

// recordName names queue q in the keys of its records:
// "ACCOUNT/REGION/NAME", and "#PART" after it for a partition of a split
// queue other than its first (partitions.go); no queue name holds a '#'.
func recordName(q api.QueueKey) string {
	name := q.Account + "/" + q.Region + "/" + q.Name
	if q.Part != 0 {
		name += "#" + strconv.FormatUint(uint64(q.Part), 10)
	}
	return name
}

// parseQueueRecordKey reads the queue of a record key after its prefix
// (recordName).
func parseQueueRecordKey(rest string) (api.QueueKey, bool) {
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return api.QueueKey{}, false
	}
	q := api.QueueKey{Account: parts[0], Region: parts[1], Name: parts[2]}
	if name, part, found := strings.Cut(q.Name, "#"); found {
		n, err := strconv.ParseUint(part, 10, 32)
		if err != nil || n == 0 || n > engine.MaxPart || name == "" {
			return api.QueueKey{}, false
		}
		q.Name, q.Part = name, uint32(n)
	}
	return q, true
}

// ErrMoveUnderWay is Move's refusal of a queue that is moving already.
var ErrMoveUnderWay = errors.New("shards: the queue is moving already")

// Move moves queue q to shard to and returns the shard it was in. Only
// on the first group's leader. A move of q already under way is refused
// with ErrMoveUnderWay (it goes on, driven by the leader); q in shard to
// already is no move at all.
func (s *Set) Move(ctx context.Context, q api.QueueKey, to uint32) (uint32, error) {
	st := s.steps.Load()
	switch {
	case st == nil:
		return 0, errors.New("shards: this node cannot carry moves out")
	case !s.host.Leading():
		return 0, errors.New("shards: only the first group's leader moves queues")
	case to == 0:
		return 0, api.ErrUnsupportedOperation("The first group (shard 0) takes no queue.")
	case !s.host.WritesMoves():
		return 0, api.ErrServiceUnavailable("Queues move once every member of the cluster runs a fifoq that reads log entry format 8.")
	}
	if _, ok := s.named()[to]; !ok {
		return 0, api.ErrInvalidParameterValue("The cluster's map names no shard %d.", to)
	}
	// Read the record as the log has it now, not as this node's cache or
	// a replica just elected (that has not applied all it holds) has it.
	if err := s.host.ReadBarrier(ctx); err != nil {
		return 0, err
	}
	s.Forget(q)
	from := s.Of(q)
	if from == 0 && !s.inFirstGroup(q) {
		return 0, api.ErrQueueDoesNotExist()
	}
	if from == to {
		return from, nil
	}
	m := moveRecord{id: newMoveID(), from: from, to: to}
	s.recordMu.Lock()
	if s.meta(splitKey(q)) != "" {
		s.recordMu.Unlock()
		return from, ErrSplitUnderWay // moved once it is split or merged
	}
	err := s.setOnce(ctx, moveKey(q), m.String())
	s.recordMu.Unlock()
	if err != nil {
		return from, err
	}
	var v string
	s.host.Read(func(e *engine.Engine) { v = e.Meta(moveKey(q)) })
	if got, ok := parseMove(v); !ok || got.id != m.id {
		return from, ErrMoveUnderWay
	}
	if err := s.drive(ctx, *st, q, m); errors.Is(err, errDropHeld) {
		s.noteMoved(q, time.Now())
		return from, nil // moved; its old copy goes after the backup
	} else if err != nil {
		// An abandoned move is finished (its fence lifted) at once.
		if errors.Is(err, errAbandoned) {
			s.drive(ctx, *st, q, m)
		}
		return from, err
	}
	s.noteMoved(q, time.Now())
	return from, nil
}

// noteMoved records that q moved at now, for the balancer (recentlyMoved),
// and forgets the moves older than movedQuiet.
func (s *Set) noteMoved(q api.QueueKey, now time.Time) {
	s.movedMu.Lock()
	defer s.movedMu.Unlock()
	for k, at := range s.moved {
		if now.Sub(at) >= movedQuiet {
			delete(s.moved, k)
		}
	}
	s.moved[q] = now
}

// recentlyMoved reports whether q moved less than movedQuiet before now:
// by this node's record, or by the first group's (a move an earlier
// leader finished).
func (s *Set) recentlyMoved(q api.QueueKey, now time.Time) bool {
	s.movedMu.Lock()
	at, ok := s.moved[q]
	s.movedMu.Unlock()
	if ok && now.Sub(at) < movedQuiet {
		return true
	}
	var v string
	s.host.Read(func(e *engine.Engine) { v = e.Meta(movedKey(q)) })
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && now.Sub(time.Unix(0, n)) < movedQuiet
}

// maxMovedPrunes bounds the records of past moves one balancing round
// removes.
const maxMovedPrunes = 16

// pruneMoved removes the first group's records of moves older than
// movedQuiet, a few a round.
func (s *Set) pruneMoved(ctx context.Context, now time.Time) {
	var old []string
	s.host.Read(func(e *engine.Engine) {
		for _, k := range e.MetaKeys(movedPrefix) {
			if n, err := strconv.ParseInt(e.Meta(k), 10, 64); err != nil || now.Sub(time.Unix(0, n)) >= movedQuiet {
				old = append(old, k)
			}
		}
	})
	for _, k := range old[:min(len(old), maxMovedPrunes)] {
		if _, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: k}}); err != nil {
			return
		}
	}
}

// newMoveID names a move: unique, so that a step of one move is never
// taken for a step of another.
func newMoveID() string {
	var b [8]byte
	rand.Read(b[:])
	return strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + hex.EncodeToString(b[:])
}

// resumeMoves drives every recorded move to its end: on the first group's
// leader, the moves a former leader left.
func (s *Set) resumeMoves() {
	st := s.steps.Load()
	if st == nil || !s.host.Leading() {
		return
	}
	for _, r := range s.recorded(movePrefix) {
		m, ok := parseMove(r.value)
		if !ok {
			continue
		}
		ctx, cancel := s.untilQuit(30 * time.Second)
		err := s.drive(ctx, *st, r.q, m)
		if err != nil && !errors.Is(err, errNotLeading) && !errors.Is(err, errDropHeld) && ctx.Err() == nil {
			s.cfg.Logger.Warn("shards: a queue's move did not finish yet", "queue", r.q, "move", m.id, "from", m.from, "to", m.to, "err", err)
		}
		cancel()
	}
}

// queueRecord is a record of the first group's state about a queue.
type queueRecord struct {
	q     api.QueueKey
	value string
}

// recorded returns the records under prefix whose key names a queue
// (parseQueueRecordKey), in the order of their keys.
func (s *Set) recorded(prefix string) []queueRecord {
	var out []queueRecord
	s.host.Read(func(e *engine.Engine) {
		for _, k := range e.MetaKeys(prefix) {
			if q, ok := parseQueueRecordKey(strings.TrimPrefix(k, prefix)); ok {
				out = append(out, queueRecord{q, e.Meta(k)})
			}
		}
	})
	return out
}

// untilQuit returns a context that ends after timeout, or once the Set
// closes: what a drive of a move or split, or a question to a shard's
// leader, runs in, so that a closing Set stops it where it is.
func (s *Set) untilQuit(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// errAbandoned says a move was given up, and why.
var errAbandoned = errors.New("shards: the move was abandoned")

// errDropHeld is a drive's end when a backup holds the dropping of the
// moved queue's old copy: the map names its new shard, and the record
// stays for the next drive to drop the copy.
var errDropHeld = errors.New("shards: the moved queue's old copy is held by a backup")

// errNotLeading stops a driver whose node no longer leads the first
// group: the new leader drives the move on from its record.
var errNotLeading = errors.New("shards: this node no longer leads the first group")

// driverKey keys, in a step's context, the check that the step's driver
// still leads the first group (WithDriver).
type driverKey struct{}

// WithDriver returns ctx carrying a step of a move, split or merge that
// the first group's leader drives, with still, which says whether it
// leads yet. A Steps implementation that tries a step again (its shard's
// leader not found, a peer not answering) asks still before every try
// (StillDriving): a driver deposed meanwhile stops there, and the next
// leader drives the move on from its record. Its steps going on, for as
// long as they retry, could land after the move was finished and the
// queue moved on: an install so late leaves a copy of the queue in a
// shard the map does not name, which then refuses the queue ever after.
func WithDriver(ctx context.Context, still func() bool) context.Context {
	return context.WithValue(ctx, driverKey{}, still)
}

// StillDriving reports whether the driver of the step ctx carries still
// leads the first group: true for a step no driver carries (an outbox's).
func StillDriving(ctx context.Context) bool {
	still, ok := ctx.Value(driverKey{}).(func() bool)
	return !ok || still()
}

// drive takes move m of q from wherever it is to its end (see the steps
// above). One move at a time on a node; and only while it leads the first
// group, which it checks before every step, so that a leader deposed in
// the middle of a move leaves it to its successor.
func (s *Set) drive(ctx context.Context, st Steps, q api.QueueKey, m moveRecord) error {
	s.moveMu.Lock()
	defer s.moveMu.Unlock()
	ctx = WithDriver(ctx, s.host.Leading)
	step := func(id uint32, req api.Request) error {
		if !s.host.Leading() {
			return errNotLeading
		}
		return st.Step(ctx, id, q, req)
	}
	// The record and the map are read as the log has them now.
	if err := s.host.ReadBarrier(ctx); err != nil {
		return err
	}
	var v string
	s.host.Read(func(e *engine.Engine) { v = e.Meta(moveKey(q)) })
	if cur, ok := parseMove(v); !ok || cur.id != m.id {
		return nil // done, or abandoned, meanwhile
	} else {
		m = cur
	}
	if m.abandoned {
		if err := step(m.from, &engine.UnfenceQueueRequest{Move: m.id}); err != nil {
			return fmt.Errorf("abandon the move: lift the fence: %w", err)
		}
		_, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: moveKey(q)}})
		if err == nil {
			s.tell("abandoned")
		}
		return err
	}
	s.Forget(q)
	var took moveTimes
	at := s.Of(q)
	if at != m.from && at != m.to {
		// The record names a shard the queue was not in when the move
		// began (its driver read the map before a later flip had reached
		// it): touching that shard's copy, if any, would serve a stale
		// queue. Nothing outside the record's move is changed.
		return s.abandon(ctx, q, m, fmt.Errorf("the map puts the queue in shard %d, not %d", at, m.from))
	}
	var flip []*engine.Command
	if at != m.to {
		// Once every member keeps outboxes, a queue in a redrive moves
		// too: its dead-letter queue, or its sources, are then reached
		// through the outboxes (engine/outbox.go); and once every member
		// reads format 11, so does a queue whose move tasks have ended.
		took.begin()
		fence := &engine.FenceQueueRequest{Move: m.id, Spanning: s.host.WritesOutbox(), Ended: s.host.WritesPartitions()}
		err := step(m.from, fence)
		if ae := (*api.Error)(nil); !(fence.Spanning && fence.Ended) && errors.As(err, &ae) && ae.Code == "UnsupportedOperation" {
			// A cluster of one raises its format only when a command
			// needs it: these fences do, where every member reads
			// them. Where one does not (a rolling upgrade), the queue
			// stays where it is, refused as before.
			fence.Spanning, fence.Ended = true, true
			if err2 := step(m.from, fence); err2 == nil || abandon(err2) {
				err = err2
			}
		}
		if old, ok := engine.FencedBy(err); ok && old != m.id {
			// A move given up whose fence was never lifted (its driver
			// was deposed in the middle): this move's record is the
			// queue's only one and the map puts the queue here, so that
			// fence is nobody's, on the queue's one live copy. Lift it.
			if err := step(m.from, &engine.UnfenceQueueRequest{Move: old}); err != nil {
				return fmt.Errorf("lift the fence of move %s: %w", old, err)
			}
			s.cfg.Logger.Warn("shards: lifted the fence a move given up left on a queue", "queue", q, "move", old)
			err = step(m.from, fence)
		}
		if err != nil {
			if abandon(err) {
				return s.abandon(ctx, q, m, err)
			}
			return fmt.Errorf("fence in shard %d: %w", m.from, err)
		}
		took.fence = took.lap()
		image, err := st.Export(ctx, m.from, q, m.id)
		if err != nil {
			return fmt.Errorf("export from shard %d: %w", m.from, err)
		}
		if len(image) > MaxMoveImage {
			return s.abandon(ctx, q, m, fmt.Errorf("its image is %d bytes, over %d", len(image), MaxMoveImage))
		}
		took.export, took.bytes = took.lap(), len(image)
		if err := step(m.to, &engine.InstallQueueRequest{Move: m.id, Image: image}); err != nil {
			if abandon(err) {
				return s.abandon(ctx, q, m, err)
			}
			return fmt.Errorf("install in shard %d: %w", m.to, err)
		}
		took.install = took.lap()
		flip = append(flip, &engine.Command{Request: &engine.SetMetaRequest{Key: queueKey(q), Value: strconv.FormatUint(uint64(m.to), 10)}})
	}
	// The record and then the epoch, in one round of the first group's
	// log: the queue's clients wait for it.
	flip = append(flip, &engine.Command{Request: &engine.SetMetaRequest{Key: epochKey, Value: m.id}})
	if _, err := s.host.ApplyInOrder(ctx, flip...); err != nil {
		return fmt.Errorf("flip the map: %w", err)
	}
	took.flip = took.lap()
	s.Forget(q)
	if err := step(m.from, &engine.DropQueueRequest{Move: m.id}); engine.IsHeld(err) {
		// A backup holds the old copy (engine/hold.go): the queue is
		// served from its new shard, and the next drive, from the
		// record, drops the copy once the backup ends.
		return errDropHeld
	} else if err != nil {
		return fmt.Errorf("drop from shard %d: %w", m.from, err)
	}
	if _, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: moveKey(q)}}); err != nil {
		return err
	}
	s.cfg.Logger.Info("shards: moved a queue", "queue", q, "from", m.from, "to", m.to, "move", m.id,
		"fenced_for", took.fenced(), "fence", took.fence, "export", took.export, "image_bytes", took.bytes, "install", took.install, "flip", took.flip)
	// Noted here, not only by Move: a move this leader resumed for a
	// deposed driver gets its quiet time too, or the balancer could
	// move the queue straight back. And noted in the first group, for
	// the next leader's balancer: best effort, as the quiet time is.
	now := time.Now()
	s.noteMoved(q, now)
	_, _ = s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: movedKey(q), Value: strconv.FormatInt(now.UnixNano(), 10)}})
	s.tell("moved")
	return nil
}

// moveTimes is how long each step of a move took that fences its queue,
// for the log: the queue's clients wait from the fence to the flip, and
// an operator reading a long pause sees which step made it. All zero for
// a move resumed past its flip.
type moveTimes struct {
	start, last                  time.Time
	fence, export, install, flip time.Duration
	bytes                        int
}

// begin starts the clock at the fence.
func (t *moveTimes) begin() { t.start = time.Now(); t.last = t.start }

// lap returns the time since the last lap (or begin), 0 if not begun.
func (t *moveTimes) lap() time.Duration {
	if t.start.IsZero() {
		return 0
	}
	now := time.Now()
	d := now.Sub(t.last)
	t.last = now
	return d.Round(time.Millisecond)
}

// fenced returns the time from the fence to the last lap.
func (t *moveTimes) fenced() time.Duration { return t.last.Sub(t.start).Round(time.Millisecond) }

// abandon gives up move m before the map names its target: the queue
// stays in its shard, served again. The record says so first, in the
// first group's log, which only its leader writes: a leader deposed
// meanwhile fails here, and one that succeeds is the only driver. The
// fence is lifted after (by the next drive, from the record).
func (s *Set) abandon(ctx context.Context, q api.QueueKey, m moveRecord, why error) error {
	m.abandoned = true
	if _, err := s.host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: moveKey(q), Value: m.String()}}); err != nil {
		return err
	}
	s.cfg.Logger.Warn("shards: abandoning a queue's move", "queue", q, "from", m.from, "to", m.to, "why", why)
	return fmt.Errorf("%w: %w", errAbandoned, why)
}

// abandon reports whether a step's error means the move cannot go on:
// the engine refused it for good (the queue is gone, or not movable, or
// its image was refused), not for now; or a backup holds it (a fence or
// an install, engine/hold.go), which the queue, fenced, would otherwise
// wait out unserved.
func abandon(err error) bool {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return false
	}
	if engine.IsHeld(err) {
		return true
	}
	switch ae.Code {
	case "QueueDoesNotExist", "UnsupportedOperation", "InvalidParameterValue", "QueueNameExists":
		return true
	}
	return false
}

// tell reports a move's end to Config.Moved.
func (s *Set) tell(result string) {
	if s.cfg.Moved != nil {
		s.cfg.Moved(result)
	}
}

// Forget drops what this node cached of q's record, after a group
// answered that q moved: the next request reads the map again.
func (s *Set) Forget(q api.QueueKey) { s.placed.Delete(q) }

// Epoch returns the map's epoch: it changes with every move, split and
// merge. It is read from this node's copy of the first group's state at
// every call, as the records and layouts cached under it are checked
// against it (Of, cachedLayout): a copy noted now and then would let a
// router pair a layout read before a split or merge with a partition's
// record read after it, and send a request to a shard that never held
// its partition.
func (s *Set) Epoch() (v string) {
	s.host.Read(func(e *engine.Engine) { v = e.Meta(epochKey) })
	return v
}

// epochPoll is how often AwaitChange reads the map's epoch.
const epochPoll = 20 * time.Millisecond

// AwaitChange waits until the map's epoch is other than epoch, reading it
// every 20 ms, and reports whether it changed before deadline and before
// ctx ended. A router whose request met a queue moving, split or merged
// so routes it again as soon as this node has applied the change.
func (s *Set) AwaitChange(ctx context.Context, epoch string, deadline time.Time) bool {
	t := time.NewTicker(epochPoll)
	defer t.Stop()
	for {
		if s.Epoch() != epoch {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// DefaultQueueBalance is how often the first group's leader looks whether
// the shards hold uneven numbers of queues (Config.QueueBalance).
const DefaultQueueBalance = 30 * time.Second

// testQueueBalance, if not 0, replaces DefaultQueueBalance: set only in a
// binary built for the tests (fault_inject.go).
var testQueueBalance time.Duration

// unmovableFor is how long a queue that would not move is passed over by
// the balancer: its redrive policy or move tasks may have changed by then.
const unmovableFor = time.Hour

// minBalancedRate is the least load, in commands applied a second, of
// the busiest shard that the balancer evens out by load
// (placement.BalanceLoad): below it a shard's leader is far from busy,
// and moving a queue would fence its clients for nothing. A variable for
// the tests.
var minBalancedRate = 50.0

// loadMoveQuiet is how long a queue moved by load is left where it went,
// by either kind of balancing: its clients saw one fence, and the loads
// read in the round after a move are of part of a round.
const loadMoveQuiet = 10 * time.Minute

// movedQuiet is how long the balancer leaves a queue that moved for any
// reason where it went: moved beside its partner in a redrive, or by an
// operator, it would otherwise often be the one the counts ask to move
// back (it is the newest and least loaded of its shard), a second fence
// for its clients for nothing.
const movedQuiet = 10 * time.Minute

// shardQueue is a queue as one shard's replica holds it: its readings of
// commands applied are compared only with the same shard's.
type shardQueue struct {
	shard uint32
	queue api.QueueKey
}

// queueLoads turns the commands each queue's replica has applied into
// the queues' loads: the commands applied since the last round of
// balancing, or, for a queue not seen then in the same shard or whose
// replica restarted since, all it has applied. It keeps this round's
// readings for the next, and says how long ago the last were taken (0:
// none were).
func (s *Set) queueLoads(commands map[shardQueue]uint64, now time.Time) (map[api.QueueKey]uint64, time.Duration) {
	load := make(map[api.QueueKey]uint64, len(commands))
	for sq, n := range commands {
		if last, ok := s.lastCommands[sq]; ok && n >= last {
			n -= last
		}
		load[sq.queue] = max(load[sq.queue], n)
	}
	var since time.Duration
	if !s.lastReading.IsZero() {
		since = now.Sub(s.lastReading)
	}
	s.lastCommands, s.lastReading = commands, now
	return load, since
}

// balanceQueues, on the first group's leader, moves one queue from the
// shard holding the most queues to the one holding the fewest, if they
// differ by two or more (placement.BalanceQueues): as when a shard is
// added to a cluster whose queues are all placed, or queues were deleted.
// Else it moves one of the queues the first group kept from before the
// cluster had shards out of it (placement.DrainFirstGroup). Either way
// the queue moved is the one of the least load (queueLoads) of those it
// may take, so that busy queues' clients are fenced last, or never.
// Queues are counted as their shards' replicas hold them, not by the map,
// whose records outlive deleted queues.
//
// Else, when the counts are even, it moves a busy queue from the shard of
// the most load to the shard of the least if that takes a fifth or more
// off the busiest (placement.BalanceLoad): two busy queues placed in one
// shard by count are so parted. A load is the commands applied on a queue
// since the last round; a move by load is made only when two rounds in a
// row ask for it, so that a burst moves nothing, and a queue moved by
// load is left where it went for loadMoveQuiet.
func (s *Set) balanceQueues(st Steps) {
	ids := s.Named()
	if len(ids) == 0 || !s.host.Leading() || !s.host.WritesMoves() {
		return // no shard to even out, or to drain the first group into
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { // a closing Set stops the balancing where it is
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	held := map[placement.ShardID][]string{}
	keys := map[string]api.QueueKey{}
	commands := map[shardQueue]uint64{}
	readings := map[shardQueue]engine.QueueLoad{}
	for _, id := range ids {
		qs, err := st.Queues(ctx, id)
		if err != nil {
			return // a shard that cannot be counted is not balanced against
		}
		names := make([]string, 0, len(qs))
		for q, l := range qs {
			names = append(names, q.String())
			keys[q.String()] = q
			commands[shardQueue{id, q}] = l.Applied
			readings[shardQueue{id, q}] = l
		}
		held[placement.ShardID(id)] = names
	}
	now := time.Now()
	s.pruneMoved(ctx, now)
	for q, at := range s.movedForLoad {
		if now.Sub(at) >= loadMoveQuiet {
			delete(s.movedForLoad, q)
		}
	}
	skip := func(q string) bool {
		until, unmovable := s.unmovable[keys[q]]
		moved, recent := s.movedForLoad[keys[q]]
		// A split queue's partitions are placed by spreadQueues and
		// splitHot: moved by count or load, two could land in one shard.
		return (unmovable && now.Before(until)) || (recent && now.Sub(moved) < loadMoveQuiet) || s.recentlyMoved(keys[q], now) ||
			s.IsSplit(keys[q].Whole())
	}
	// The first group takes no new queue; those it kept from before the
	// cluster had shards go, one a round, to the emptiest shard.
	var kept map[api.QueueKey]uint64
	s.host.Read(func(e *engine.Engine) { kept = e.CommandsApplied() })
	first := make([]api.QueueKey, 0, len(kept))
	for q, n := range kept {
		first = append(first, q)
		keys[q.String()] = q
		commands[shardQueue{0, q}] = n
	}
	load, since := s.queueLoads(commands, now)
	loadOf := func(q string) uint64 { return load[keys[q]] }
	s.noteShardRates(held, loadOf, since, now)
	if split := s.splitRate(); split > 0 && s.cfg.Spread >= 0 && since > 0 {
		hot := map[api.QueueKey]hotPart{}
		for sq, r := range readings {
			if r.HighThroughput && r.Splittable && r.SplitAt != 0 && float64(load[sq.queue])/since.Seconds() >= split && s.Of(sq.queue) == sq.shard {
				hot[sq.queue] = hotPart{shard: sq.shard, at: r.SplitAt}
			}
		}
		rate := map[uint32]float64{}
		if r := s.shardRates.Load(); r != nil {
			for id, v := range r.rate {
				rate[uint32(id)] = v
			}
		}
		if s.splitHot(ctx, hot, ids, rate) || s.mergeIdle(ctx, readings, load, since, ids) {
			return // one change a round: the next reads the loads anew
		}
	}
	why := "to even out the shards' queue counts"
	mv, ok := placement.BalanceQueues(held, skip, loadOf)
	if !ok {
		mv, ok = placement.DrainFirstGroup(first, held, skip, loadOf)
	}
	// A move by load is made the second round in a row it is asked for
	// (the loads of one round may be a burst): loadCandidate is what this
	// round asked, none if it moved by count or asked nothing.
	var asked placement.QueueMove
	if !ok && since > 0 {
		why = "to even out the shards' loads"
		if mv, ok = placement.BalanceLoad(held, skip, loadOf, uint64(minBalancedRate*since.Seconds())); ok {
			asked = mv
			if ok = mv == s.loadCandidate; ok {
				asked = placement.QueueMove{}
				s.movedForLoad[keys[mv.Queue]] = now
			}
		}
	}
	s.loadCandidate = asked
	if !ok {
		return
	}
	q := keys[mv.Queue]
	s.cfg.Logger.Info("shards: moving a queue "+why, "queue", q, "from", mv.From, "to", mv.To,
		"queues_from", len(held[mv.From]), "queues_to", len(held[mv.To]), "load", load[q])
	if _, err := s.Move(ctx, q, uint32(mv.To)); err != nil {
		if errors.Is(err, errAbandoned) {
			s.unmovable[q] = now.Add(unmovableFor)
		}
		s.cfg.Logger.Warn("shards: a queue moved by the balancer did not move", "queue", q, "err", err)
	}
}

// fenceSweepEvery is how often the first group's leader looks for fences
// without a record (liftStaleFences). A variable for the tests.
var fenceSweepEvery = 5 * time.Second

// staleFenceAfter is how long a fence may stand without its move's record
// before liftStaleFences acts on it: long enough for any step a deposed
// driver still had in flight to have landed. A variable for the tests.
var staleFenceAfter = 30 * time.Second

// liftStaleFences, on the first group's leader, looks at the fences in
// every shard whose move has no record: a move given up whose driver was
// deposed before it lifted its fence (or that fenced again after its
// successor finished) would otherwise leave the queue answering 503s, or
// a copy of it behind. The record is written before a move's first fence
// and removed after its last step, and the leader reads it after a read
// barrier, so a fence without one is nobody's. After staleFenceAfter, a
// fenced queue the map puts in its shard is the queue's live copy, whose
// fence is lifted; one the map puts elsewhere is a copy left behind, which
// is dropped. Each step names the fence's move, which the shard's engine
// checks as it applies it: a fence lifted or replaced meanwhile is left
// alone. It returns the fences it found in each shard it could list, for
// dropStrays.
func (s *Set) liftStaleFences(ctx context.Context, st Steps) map[uint32]map[api.QueueKey]string {
	if !s.host.Leading() || s.host.ReadBarrier(ctx) != nil {
		return nil
	}
	now := time.Now()
	seen := map[fenceRef]time.Time{}
	listed := map[uint32]map[api.QueueKey]string{}
	for _, id := range s.Named() {
		fenced, err := st.Fenced(ctx, id)
		if err != nil {
			// Not known now: keep what was seen of this shard.
			keepSeen(seen, s.staleFences, func(ref fenceRef) bool { return ref.id == id })
			continue
		}
		listed[id] = fenced
		for q, move := range fenced {
			if s.moveRecorded(q, move) {
				continue
			}
			ref := fenceRef{id, q, move}
			if !sightedLong(seen, s.staleFences, ref, now) || !s.host.Leading() {
				continue
			}
			s.Forget(q)
			var req api.Request = &engine.UnfenceQueueRequest{Move: move}
			what := "lifted a fence whose move has no record"
			if s.Of(q) != id {
				req, what = &engine.DropQueueRequest{Move: move}, "dropped a fenced copy of a queue the map puts elsewhere, whose move has no record"
			}
			if err := st.Step(WithDriver(ctx, s.host.Leading), id, q, req); err == nil {
				s.cfg.Logger.Warn("shards: "+what, "shard", id, "queue", q, "move", move)
				delete(seen, ref)
			}
		}
	}
	s.staleFences = seen
	return listed
}

// dropStrays, on the first group's leader, drops the unfenced copies of
// queues that a shard holds and the map puts in another, with no move of
// the queue under way: what a deposed driver's install leaves when it
// lands after its successor finished that move and moved the queue on
// (a step's driver check stops its retries, not a try already in
// flight). Such a copy is served by no request but is listed by the
// shard's ListQueues, counted by the balancer, and makes the shard
// refuse the queue's moves into it (QueueNameExists), for good.
//
// fenced holds the fences liftStaleFences found in each shard it could
// list, just before: a copy fenced then is not a stray, and one fenced
// since is left alone by the step below. The shards' queues are listed
// before the map and the records are read, after a read barrier: a copy
// a move had installed by then has its move's record, or is the one the
// map names once the move flipped it, so a copy with neither is nobody's. It is dropped once it has been seen so
// for staleFenceAfter, long enough for any step in flight to land: fenced
// under a move of its own, then dropped under it. No live copy can be
// fenced so: while the stray stands, no move can install the queue in
// its shard.
func (s *Set) dropStrays(ctx context.Context, st Steps, fenced map[uint32]map[api.QueueKey]string) {
	if !s.host.Leading() {
		return
	}
	held := map[uint32][]api.QueueKey{}
	seen := map[shardQueue]time.Time{}
	for _, id := range s.Named() {
		loads, err := st.Queues(ctx, id)
		shardFences, listed := fenced[id]
		if err != nil || !listed {
			// Not known now: keep what was seen of this shard.
			keepSeen(seen, s.strays, func(ref shardQueue) bool { return ref.shard == id })
			continue
		}
		for q := range loads {
			if _, ok := shardFences[q]; !ok {
				held[id] = append(held[id], q)
			}
		}
	}
	if s.host.ReadBarrier(ctx) != nil {
		return
	}
	now := time.Now()
	for id, qs := range held {
		for _, q := range qs {
			s.Forget(q)
			if s.Of(q) == id || s.moving(q) {
				continue
			}
			ref := shardQueue{id, q}
			if !sightedLong(seen, s.strays, ref, now) || !s.host.Leading() {
				continue
			}
			move := newMoveID()
			dctx := WithDriver(ctx, s.host.Leading)
			err := st.Step(dctx, id, q, &engine.FenceQueueRequest{Move: move, Spanning: s.host.WritesOutbox(), Ended: s.host.WritesPartitions()})
			if err == nil {
				// Left fenced if this fails: liftStaleFences drops it.
				err = st.Step(dctx, id, q, &engine.DropQueueRequest{Move: move})
			}
			if _, fenced := engine.FencedBy(err); isQueueGone(err) || fenced {
				// What was seen was a lagging replica's: the leader has
				// dropped it, or a move has fenced it.
				delete(seen, ref)
				continue
			}
			if err != nil {
				s.cfg.Logger.Warn("shards: could not drop a copy of a queue the map puts elsewhere", "shard", id, "queue", q, "err", err)
				continue
			}
			s.cfg.Logger.Warn("shards: dropped a copy of a queue the map puts elsewhere, left by a move's late step", "shard", id, "queue", q, "map", s.Of(q))
			delete(seen, ref)
		}
	}
	s.strays = seen
}

// sightedLong notes in seen that ref was seen at now, or since it was
// first seen in the sweeps before (was), and reports whether that is
// staleFenceAfter or longer ago.
func sightedLong[K comparable](seen, was map[K]time.Time, ref K, now time.Time) bool {
	since, ok := was[ref]
	if !ok {
		since = now
	}
	seen[ref] = since
	return now.Sub(since) >= staleFenceAfter
}

// keepSeen copies into seen the sightings of was that match.
func keepSeen[K comparable](seen, was map[K]time.Time, match func(K) bool) {
	for ref, since := range was {
		if match(ref) {
			seen[ref] = since
		}
	}
}

// moving reports whether the first group, as this node's replica has it,
// records a move of q under way.
func (s *Set) moving(q api.QueueKey) bool {
	var v string
	s.host.Read(func(e *engine.Engine) { v = e.Meta(moveKey(q)) })
	return v != ""
}

// moveRecorded reports whether the first group, as this node's replica
// has it, records the move named move of q.
func (s *Set) moveRecorded(q api.QueueKey, move string) bool {
	var v string
	s.host.Read(func(e *engine.Engine) { v = e.Meta(moveKey(q)) })
	m, ok := parseMove(v)
	return ok && m.id == move
}

// fenceRef names a fence: of move, on queue q, in shard id.
type fenceRef struct {
	id   uint32
	q    api.QueueKey
	move string
}
