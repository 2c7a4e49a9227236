package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// Moving a queue from one engine to another, whole: what a cluster does to
// spread its queues over its Raft groups. The engine knows nothing of
// groups, shards or maps; it offers four steps, each a command or a read
// that every replica of an engine applies alike, and a mover outside it
// drives them in order and repeats any of them safely:
//
//  1. FenceQueueRequest on the source: from then on every request on the
//     queue is answered with a retryable ServiceUnavailable (IsQueueMoving),
//     so its state stops changing. A queue that takes part in a dead-letter
//     redrive or a running message move task is not moved: those span
//     queues, and the queue's partner would be left behind (unless the
//     fence says otherwise: Spanning, Ended).
//  2. ExportQueue on the source's leader: the fenced queue as an image,
//     the snapshot format holding that one queue, with its bodies.
//  3. InstallQueueRequest on the target: the queue again, with every
//     message, in-flight state, visibility deadline, deduplication and
//     receive attempt record, sequence number and receipt handle.
//  4. DropQueueRequest on the source: the queue leaves it, and for
//     movedMarkerLife its name answers IsQueueMoving rather than
//     QueueDoesNotExist, so that a request routed by an old map is retried
//     rather than failed. UnfenceQueueRequest instead abandons a move.
//
// Receipt handles survive the move. A handle names its message by serial,
// and serials are unique only in the engine that made them, so the target
// gives the queue's messages serials of its own, and the queue a new
// handle tag; for the handles handed out before, it keeps the old tag and
// a map from the old serials to the new (pastTag), for as long as such a
// handle can still be in use (the longest visibility timeout).

// FenceQueueRequest is an internal request, never sent by clients: it
// fences the command's queue for the move named Move (step 1 above).
// Fencing a queue fenced for the same move changes nothing.
type FenceQueueRequest struct {
	Move string `json:"move"`
	// Spanning lets the move take a queue that has a RedrivePolicy or is
	// a dead-letter queue: what spans the two queues goes through their
	// outboxes once they are apart (outbox.go). An engine that knows no
	// outbox must never apply such a fence, so a log writes it only in a
	// format every member reads.
	Spanning bool `json:"spanning,omitempty"`
	// Ended lets the move take a queue whose message move tasks have all
	// ended: their records (ListMessageMoveTasks) go with it in its
	// image. Without it, a queue that ever ran a task is not moved. An
	// engine that refuses such a queue must never apply such a fence, so
	// a log writes it only in a format every member reads.
	Ended bool `json:"ended,omitempty"`
}

// UnfenceQueueRequest is an internal request: it lifts the fence of the
// move named Move from the command's queue, abandoning the move. A queue
// not fenced for that move is left alone.
type UnfenceQueueRequest struct {
	Move string `json:"move"`
}

// InstallQueueRequest is an internal request: it installs the queue that
// Image (ExportQueue's output) holds, as the command's queue, for the move
// named Move (step 3 above). Installing it again for the same move
// changes nothing.
type InstallQueueRequest struct {
	Move  string `json:"move"`
	Image []byte `json:"image"`
}

// DropQueueRequest is an internal request: it removes the command's queue,
// fenced for the move named Move, once the move's target holds it (step 4
// above). Dropping a queue no longer there changes nothing.
type DropQueueRequest struct {
	Move string `json:"move"`
}

// The actions of the move requests. They are not SQS actions.
const (
	ActionFenceQueue   api.Action = "fifoq:FenceQueue"
	ActionUnfenceQueue api.Action = "fifoq:UnfenceQueue"
	ActionInstallQueue api.Action = "fifoq:InstallQueue"
	ActionDropQueue    api.Action = "fifoq:DropQueue"
)

// Action implements api.Request.
func (*FenceQueueRequest) Action() api.Action { return ActionFenceQueue }

// Action implements api.Request.
func (*UnfenceQueueRequest) Action() api.Action { return ActionUnfenceQueue }

// Action implements api.Request.
func (*InstallQueueRequest) Action() api.Action { return ActionInstallQueue }

// Action implements api.Request.
func (*DropQueueRequest) Action() api.Action { return ActionDropQueue }

// maxMoveID bounds a move's name, in bytes.
const maxMoveID = 128

// movedMarkerLife is how long a queue's name answers IsQueueMoving in the
// engine it was moved out of: long enough for every router's map to have
// learnt where it went.
const movedMarkerLife = int64(10 * time.Minute)

// pastTagLife is how long the receipt handles handed out before a move
// are honoured after it: the longest visibility timeout, and a minute.
const pastTagLife = int64(api.MaxVisibilityTimeout*time.Second + time.Minute)

// queueMovingMessage is the text of IsQueueMoving's errors.
const queueMovingMessage = "The queue is moving between the server's groups. Retry the request."

// errQueueMoving is the answer to any request on a fenced or moved queue.
func errQueueMoving() error { return api.ErrServiceUnavailable(queueMovingMessage) }

// ErrQueueMoving returns the engine's answer to a request on a queue that
// is moving, or was moved, split or merged away: for a router that gave up
// waiting for the queue to arrive where its map will place it.
func ErrQueueMoving() error { return errQueueMoving() }

// IsQueueMoving reports whether err is the engine's answer to a request on
// a queue that is being moved, or was moved out of this engine: a router
// should learn where the queue is now and retry there.
func IsQueueMoving(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "ServiceUnavailable" && ae.Message == queueMovingMessage
}

// fencedByPrefix begins FenceQueueRequest's refusal of a queue fenced for
// another move, which FencedBy reads.
const fencedByPrefix = "The queue is fenced for move "

// FencedBy returns the move that fenced a queue, if err is a
// FenceQueueRequest's refusal of a queue fenced for another move: a mover
// that finds that move given up lifts its fence.
func FencedBy(err error) (move string, ok bool) {
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != "ServiceUnavailable" {
		return "", false
	}
	return strings.CutPrefix(ae.Message, fencedByPrefix)
}

// movedAway records that a queue was moved out of the engine.
type movedAway struct {
	key   api.QueueKey
	move  string
	until int64
}

// pastTag is a receipt handle tag a queue had before a move, with the
// serial each message that may be named by such a handle has now.
type pastTag struct {
	tag     uint32
	until   int64
	serials map[uint64]uint64
}

// queueAt returns the queue key names, or the error a request on it at
// time now gets: QueueDoesNotExist, or IsQueueMoving's if it is fenced or
// was moved away.
func (e *Engine) queueAt(key api.QueueKey, now int64) (*queue, error) {
	q := e.queues[key]
	switch {
	case q != nil && q.fence != "":
		return nil, errQueueMoving()
	case q != nil:
		return q, nil
	}
	if m, ok := e.moved[key]; ok && m.until > now {
		return nil, errQueueMoving()
	}
	return nil, api.ErrQueueDoesNotExist()
}

// fenceQueue applies a FenceQueueRequest.
func (e *Engine) fenceQueue(cmd *Command, r *FenceQueueRequest, now int64) (api.Response, error) {
	if err := checkMoveID(r.Move); err != nil {
		return nil, err
	}
	q := e.queues[cmd.Queue]
	switch {
	case q == nil:
		return nil, api.ErrQueueDoesNotExist()
	case q.fence == r.Move:
		return api.Empty{}, nil
	case q.fence != "":
		return nil, api.ErrServiceUnavailable("%s%s", fencedByPrefix, q.fence)
	case e.held(now):
		return nil, errHeld("a new move of a queue")
	}
	if err := e.movable(q, r.Spanning, r.Ended); err != nil {
		return nil, err
	}
	e.process(q, now)
	q.fence = r.Move
	// Long polls on the queue answer now, and are retried where it goes.
	e.wake(q.key)
	return api.Empty{}, nil
}

// movable refuses to fence a queue whose state spans other queues: one
// in a redrive, unless spanning (outbox.go), and one with message move
// tasks, unless ended and none of them runs.
func (e *Engine) movable(q *queue, spanning, ended bool) error {
	switch {
	case q.attrs.redrive != nil && !spanning:
		return api.ErrUnsupportedOperation("Queue %s has a RedrivePolicy: its dead-letter queue would be left behind.", q.key.Name)
	case e.isDeadLetterQueue(q.key) && !spanning:
		return api.ErrUnsupportedOperation("Queue %s is a dead-letter queue of other queues.", q.key.Name)
	case len(q.tasks) > 0 && (!ended || slices.ContainsFunc(q.tasks, func(t *moveTask) bool { return t.status == api.MoveTaskRunning })):
		return api.ErrUnsupportedOperation("Queue %s has message move tasks.", q.key.Name)
	}
	for _, t := range e.running {
		if t.dest == q.key {
			return api.ErrUnsupportedOperation("Queue %s is the destination of a running message move task.", q.key.Name)
		}
	}
	return nil
}

// unfenceQueue applies an UnfenceQueueRequest.
func (e *Engine) unfenceQueue(cmd *Command, r *UnfenceQueueRequest) (api.Response, error) {
	if q := e.queues[cmd.Queue]; q != nil && q.fence == r.Move && r.Move != "" {
		q.fence = ""
		e.wake(q.key)
	}
	return api.Empty{}, nil
}

func checkMoveID(id string) error {
	if id == "" || len(id) > maxMoveID || strings.Contains(id, " ") {
		// Its records name it among other fields, apart by spaces; so do
		// a merge's markers (isMergeMarker).
		return api.ErrInvalidParameterValue("A move is named by 1 to %d bytes, none a space.", maxMoveID)
	}
	return nil
}

// ExportQueue writes the image of queue key, which a FenceQueueRequest of
// the move named move has fenced, to w: what InstallQueueRequest takes.
// A queue fenced for another move is refused: a replica that has not yet
// applied this move's fence may show an older move's, over an older state
// of the queue. Like Snapshot, it changes nothing and must not run
// concurrently with Apply.
func (e *Engine) ExportQueue(key api.QueueKey, move string, w io.Writer) error {
	q := e.queues[key]
	switch {
	case q == nil:
		return fmt.Errorf("engine: export: %w", api.ErrQueueDoesNotExist())
	case q.fence != move || move == "":
		return fmt.Errorf("engine: export: queue %s is not fenced for move %s (fence %q)", key, move, q.fence)
	}
	qv := captureQueue(q)
	// The image names every source of the queue, for the engine it goes
	// to: those of this engine are not there.
	qv.sq.RemoteSources = snapKeysOf(q.remoteSources, e.dlqSources[key], key)
	// The image's header carries the engine's time and the serial bound of
	// the queue's messages, nothing engine-wide.
	var top uint64
	places := qv.msgs.iter()
	for range qv.msgs.len() {
		top = max(top, q.ms.arena.at(places.next()).serial)
	}
	for _, en := range q.outbox.entries {
		if en.m != nil {
			top = max(top, en.m.serial)
		}
	}
	v := &SnapshotView{
		header: &snapHeader{Region: e.cfg.Region, Now: e.now, Serial: top, Queues: 1},
		queues: []queueView{qv}, total: q.stored(), ms: e.ms, bodies: e.bodyStore(),
		external: e.cfg.Bodies != nil, lockBatch: e.cfg.lockBatch(),
	}
	if err := v.write(w, noLock{}); err != nil {
		return fmt.Errorf("engine: export: %w", err)
	}
	return nil
}

// installQueue applies an InstallQueueRequest.
func (e *Engine) installQueue(cmd *Command, r *InstallQueueRequest, now int64) (api.Response, error) {
	if err := checkMoveID(r.Move); err != nil {
		return nil, err
	}
	if q := e.queues[cmd.Queue]; q != nil {
		if q.movedIn == r.Move {
			return api.Empty{}, nil
		}
		return nil, api.ErrQueueNameExists(cmd.Queue.Name)
	}
	if e.held(now) {
		return nil, errHeld("installing a moved queue")
	}
	if m, ok := e.moved[cmd.Queue]; ok && m.until > now && isMergeMarker(m.move) {
		// A partition merged into another here lately: an install of it
		// now can only be a stale mover's retry of the move that brought
		// it, which would make its messages twice.
		return nil, api.ErrInvalidParameterValue("Partition %d of queue %s was merged into another lately.", cmd.Queue.Part, cmd.Queue.Name)
	}
	if err := VerifySnapshot(bytes.NewReader(r.Image)); err != nil {
		return nil, api.ErrInvalidParameterValue("The queue image is damaged: %v", err)
	}
	q, err := e.decodeImage(r.Image, r.Move, cmd.Queue, now)
	if err != nil {
		return nil, api.ErrInvalidParameterValue("The queue image cannot be installed: %v", err)
	}
	e.queues[q.key] = q
	q.due, q.cow = e.due, e.cow
	q.refreshDue()
	e.indexRedrive(q, nil)
	e.joined(q)
	delete(e.moved, q.key)
	// A queue of this name deleted here earlier is no longer recent: the
	// name is in use again.
	delete(e.deleted, q.key)
	e.dropDeadDeletions()
	e.process(q, now)
	e.wake(q.key)
	return api.Empty{}, nil
}

// decodeImage builds the queue an image holds, in this engine's message
// store and body store, with serials of this engine.
func (e *Engine) decodeImage(image []byte, move string, want api.QueueKey, now int64) (*queue, error) {
	cr, dec, version, h, err := openSnapshot(bufio.NewReader(bytes.NewReader(image)), e.cfg.Region)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Queues != 1 || len(h.Deleted) > 0 || len(h.Running) > 0 || len(h.Meta) > 0 || len(h.Moved) > 0 || h.Orphans != 0:
		return nil, errors.New("not a queue image")
	}
	serial := e.serial
	rs := &restorer{e: e, dec: dec, cr: cr, version: version, interned: map[string]string{},
		install: &installing{top: h.Serial, serials: map[uint64]uint64{}}}
	var sq snapQueue
	if err := dec.Decode(&sq); err != nil {
		return nil, fmt.Errorf("decoding the queue: %w", err)
	}
	key := rs.queueKey(&sq)
	rs.install.tag = sq.HandleTag
	switch {
	case key != want:
		return nil, fmt.Errorf("the image holds queue %s, not %s", key, want)
	case sq.Fence == "":
		return nil, errors.New("the queue was not fenced")
	}
	q, err := rs.newQueue(&sq)
	if err == nil {
		err = rs.records(q, &sq)
	}
	if err == nil {
		err = rs.finishQueue(q, &sq)
	}
	if err == nil {
		err = rs.outboxState(q, &sq)
	}
	if err == nil {
		var tr snapTrailer
		if err = dec.Decode(&tr); err == nil && (tr.Queues != 1 || tr.Messages != q.stored()) {
			err = fmt.Errorf("trailer counts %d queues and %d messages", tr.Queues, tr.Messages)
		}
	}
	if err != nil {
		if q != nil {
			e.dropBodies(q)
			e.dropOutbox(&q.outbox)
		}
		// A refused image leaves the engine as it was.
		e.serial = serial
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	q.fence, q.movedIn = "", move
	q.past = carryPastTags(q, &sq, rs.install.serials, now)
	q.handleTag = newHandleTag(q, move)
	return q, nil
}

// installing is what a restorer needs to install one queue into an engine
// that holds others: the serial bound the image gives, and the serials
// given to its messages so far, old to new.
type installing struct {
	top     uint64
	tag     uint32 // the queue's handle tag in the image
	serials map[uint64]uint64
}

// reserial gives the message of serial old, from an image, the engine's
// next serial, and returns it; 0 if old is out of the image's range or
// came twice.
func (rs *restorer) reserial(old uint64) uint64 {
	in := rs.install
	if old == 0 || old > in.top {
		return 0
	}
	if _, dup := in.serials[old]; dup {
		return 0
	}
	rs.e.serial++
	in.serials[old] = rs.e.serial
	return rs.e.serial
}

// resolveAll maps, in place, the serials an image's records name to the
// serials their messages have in this engine; 0 (no message) for one the
// image does not hold.
func (in *installing) resolveAll(serials []uint64) {
	for i, old := range serials {
		serials[i] = in.serials[old]
	}
}

// carryPastTags returns the tags a moved queue honours: the one it had in
// the image, and those it had honoured there, with their serials mapped
// to the ones the queue's messages have now. Entries whose message is gone
// and tags past their life are left behind.
func carryPastTags(q *queue, sq *snapQueue, serials map[uint64]uint64, now int64) []pastTag {
	current := pastTag{tag: sq.HandleTag, until: now + pastTagLife, serials: map[uint64]uint64{}}
	for old, cur := range serials {
		if q.handles[cur] != nil {
			current.serials[old] = cur
		}
	}
	out := []pastTag{current}
	for _, p := range sq.Past {
		if p.Until <= now || p.Tag == sq.HandleTag {
			continue
		}
		t := pastTag{tag: p.Tag, until: p.Until, serials: map[uint64]uint64{}}
		for i, old := range p.Old {
			if cur := serials[p.New[i]]; cur != 0 && q.handles[cur] != nil {
				t.serials[old] = cur
			}
		}
		out = append(out, t)
	}
	// Newest first: a queue moved more than maxPastTags times within a
	// handle's life forgets the oldest handles.
	return out[:min(len(out), maxPastTags)]
}

// maxPastTags bounds the past tags a queue honours.
const maxPastTags = 16

// newHandleTag returns a tag for the handles a moved queue hands out from
// now on, distinct from every tag it honours.
func newHandleTag(q *queue, move string) uint32 {
	for i := 0; ; i++ {
		h := fnv.New32a()
		h.Write([]byte(q.key.Account))
		h.Write([]byte{0})
		h.Write([]byte(q.key.Name))
		h.Write([]byte{0})
		h.Write([]byte(strconv.FormatInt(q.createdAt, 10)))
		h.Write([]byte{0})
		h.Write([]byte(move))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(i)))
		tag := h.Sum32()
		if !slices.ContainsFunc(q.past, func(p pastTag) bool { return p.tag == tag }) {
			return tag
		}
	}
}

// pastSerial resolves a handle of one of q's past tags: the serial its
// message has now (0 if it is gone), and whether the tag is one q
// honours.
func (q *queue) pastSerial(tag uint32, serial uint64) (uint64, bool) {
	for _, p := range q.past {
		if p.tag == tag {
			return p.serials[serial], true
		}
	}
	return 0, false
}

// deadTagGrace is how long a past tag that names no message the partition
// holds (namesLive) is kept while there is room: long enough for a
// client's retry of a delete whose answer was lost, made across a split,
// move or merge, to be answered as the first was (a delete of a message
// gone succeeds).
const deadTagGrace = int64(time.Minute)

// namesLive reports whether past tag p names a message that live says is
// held: if not, every handle it resolves names a message deleted, or
// received again since (whose old handle has expired), or now in another
// partition, which honours the tag itself. Forgotten, such a handle
// answers ReceiptHandleIsInvalid, or, in a split queue without its
// group's hash, the answer that another partition may hold it, for the
// router to ask the others (lookup), in place of what it answered with
// the tag.
func (p pastTag) namesLive(live func(serial uint64) bool) bool {
	for _, cur := range p.serials {
		if cur != 0 && live(cur) {
			return true
		}
	}
	return false
}

// holds reports whether q holds the message of serial, handed out or not.
func (q *queue) holds(serial uint64) bool { return q.handles[serial] != nil }

// livePast returns how many of q's past tags name a message q holds: the
// ones a split or merge counts against maxPastTags.
func (q *queue) livePast() int {
	n := 0
	for _, p := range q.past {
		if p.namesLive(q.holds) {
			n++
		}
	}
	return n
}

// trimPast drops, of past, the tags that name no message live says is held
// (namesLive) and were made, or last refreshed, deadTagGrace or more
// before now; then, while more than maxPastTags are left, the oldest of
// the others that name none. The tags that name a held message stay,
// however many: the split or merge that made them checked their count.
func trimPast(past []pastTag, live func(serial uint64) bool, now int64) []pastTag {
	past = slices.DeleteFunc(past, func(p pastTag) bool {
		return !p.namesLive(live) && now-(p.until-pastTagLife) >= deadTagGrace
	})
	for len(past) > maxPastTags {
		oldest := -1
		for i, p := range past {
			if !p.namesLive(live) && (oldest < 0 || p.until < past[oldest].until) {
				oldest = i
			}
		}
		if oldest < 0 {
			break
		}
		past = slices.Delete(past, oldest, oldest+1)
	}
	if len(past) == 0 {
		return nil
	}
	return past
}

// dropDeadPast trims q's past tags (trimPast), after forgetting those
// whose life has run out. Only a split or merge calls it, as it is
// applied: entries that only a cluster whose members all trim alike
// writes.
func (q *queue) dropDeadPast(now int64) {
	q.prunePast(now)
	q.past = trimPast(q.past, q.holds, now)
}

// prunePast forgets the past tags whose life has run out by now.
func (q *queue) prunePast(now int64) {
	if len(q.past) > 0 {
		q.past = slices.DeleteFunc(q.past, func(p pastTag) bool { return p.until <= now })
		if len(q.past) == 0 {
			q.past = nil
		}
	}
}

// Fenced returns the queues fenced for a move, with the move of each.
// It changes nothing.
func (e *Engine) Fenced() map[api.QueueKey]string {
	var out map[api.QueueKey]string
	for k, q := range e.queues {
		if q.fence != "" {
			if out == nil {
				out = map[api.QueueKey]string{}
			}
			out[k] = q.fence
		}
	}
	return out
}

// dropQueue applies a DropQueueRequest.
func (e *Engine) dropQueue(cmd *Command, r *DropQueueRequest, now int64) (api.Response, error) {
	if err := checkMoveID(r.Move); err != nil {
		return nil, err
	}
	q := e.queues[cmd.Queue]
	if q == nil {
		return api.Empty{}, nil
	}
	if q.fence != r.Move {
		return nil, api.ErrInvalidParameterValue("Queue %s is not fenced for move %s.", q.key.Name, r.Move)
	}
	if e.held(now) {
		return nil, errHeld("dropping a moved queue's old copy")
	}
	delete(e.queues, q.key)
	e.partedFrom(q)
	e.unindexRedrive(q)
	e.dropBodies(q)
	e.dropOutbox(&q.outbox)
	e.due.Remove(q)
	e.pruneMoved(now)
	e.moved[q.key] = movedAway{key: q.key, move: r.Move, until: now + movedMarkerLife}
	e.wake(q.key)
	return api.Empty{}, nil
}

// pruneMoved forgets the queues moved away whose marker has run out.
func (e *Engine) pruneMoved(now int64) {
	for k, m := range e.moved {
		if m.until <= now {
			delete(e.moved, k)
		}
	}
}
