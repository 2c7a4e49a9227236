package engine

import (
	"cmp"
	"encoding/gob"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// A snapshot is the engine's whole state as a byte stream, for a
// replicated log to compact itself: a replica restores the latest snapshot
// and applies the commands after it, and must then answer exactly as a
// replica that applied every command from the start. So a snapshot keeps
// everything that affects a future result (see the doc comments on queue
// and message); the lists, heaps, maps and counts derived from it are
// rebuilt on Restore.
//
// Format, version 2:
//
//	magic    8 bytes  "FIFOQSNP"
//	version  4 bytes  big-endian uint32
//	body     an encoding/gob stream of, in order:
//	           snapHeader
//	           per queue, in key order: snapQueue, then snapChunk values
//	             until the counts snapQueue announces are reached, each
//	             followed by its packed records (see snapshot_frame.go)
//	           snapTrailer
//	checksum 4 bytes  big-endian CRC-32C (Castagnoli) of everything before it
//
// and nothing after. Records go in chunks of bounded size, so neither side
// holds a second copy of the state: memory beyond the live state is one
// chunk. Gob streams carry their type descriptions, so the body is
// self-describing, but for the packed message and deduplication records,
// whose layout the version number fixes (see snapshot_codec.go). A decoder
// of a later version reads the gob fields it knows and ignores the others;
// the version changes when a record layout or the meaning of a field does.
//
// Version 1, still read (snapshot_v1.go), differs from version 2 in two
// places: a chunk's packed records are inside its snapChunk value
// (MessageData, DedupData) rather than after it, and a deduplication
// record carries its group and id rather than their key. Version 3 is
// version 2 with message bodies referred to in a BodyStore rather than
// carried (see snapshot_refs.go); it is written only when asked for
// (SnapshotView.BodiesByReference). The bytes of every version are frozen
// in testdata/snapshots (TestFrozenSnapshotFormats): a change of the
// format adds a version and its fixture there.
//
// The output is a function of the state alone (queues, tags, attributes and
// tenants are written in sorted order, never by map iteration; see also
// init), so two replicas of the same binary in the same state write the
// same bytes, but for the header's Meta: gob writes a map in Go's
// iteration order, so the order of its keys differs from one snapshot to
// the next once it holds two.
const (
	snapMagic      = "FIFOQSNP"
	snapVersion    = 2 // written
	snapOldest     = 1 // the oldest version read
	snapChunkSize  = 1024
	snapChunkBytes = 1 << 20
)

var snapCRCTable = crc32.MakeTable(crc32.Castagnoli)

// Gob numbers types in the order a process first meets them and writes
// the numbers into its streams. Meeting the snapshot types when the package
// is initialised gives them the same numbers in every process running the
// same binary, so that replicas in the same state write the same bytes.
func init() {
	enc := gob.NewEncoder(io.Discard)
	for _, v := range []any{&snapHeader{}, &snapQueue{}, &snapChunk{}, &snapTrailer{}, &snapOutboxChunk{}, &snapOrphan{}} {
		if err := enc.Encode(v); err != nil {
			panic("engine: registering snapshot types: " + err.Error())
		}
	}
}

// snapHeader is the engine-wide state.
type snapHeader struct {
	Region  string // Config.Region of the engine that wrote it
	Now     int64  // time of the latest command applied, ns
	Serial  uint64 // serial of the latest message created
	Queues  int    // number of queue sections that follow
	Deleted []snapDeletion
	// Running lists the running move tasks, oldest first (the order in
	// which they advance), as positions in their source queue's Tasks.
	Running []snapTaskRef
	// Meta is the command log's metadata (meta.go); absent (nil) when
	// there is none, as in every snapshot written before it existed.
	Meta map[string]string
	// Moved lists the queues moved out of the engine whose names still
	// answer IsQueueMoving (move.go), by key; absent when there are none.
	Moved []snapMoved
	// Orphans counts the outboxes of deleted queues (outbox.go), each a
	// snapOrphan then its snapOutboxChunk values, after the queues and
	// before the trailer; absent (0) when there are none.
	Orphans int
}

// snapKey names a queue.
type snapKey struct {
	Region        string // absent (empty) in the engine's own region
	Account, Name string
	Part          uint32 // absent (0) but for a partition of a split queue
}

// snapTaken is a takenRecord: what a queue took from the outbox of the
// queue (Region, Account, Name) created at Created.
type snapTaken struct {
	Region        string
	Account, Name string
	Part          uint32
	Created       int64
	Through       uint64
	At            int64
}

// snapOutboxChunk is a run of an outbox's entries, oldest first.
type snapOutboxChunk struct {
	Entries []snapOutboxEntry
}

// snapOutboxEntry is an outboxEntry, its message as a message record of
// format version 2 (the body in it), whatever the snapshot's version.
type snapOutboxEntry struct {
	Seq                               uint64
	DestRegion, DestAccount, DestName string
	Kind                              uint8
	Record                            []byte
}

// snapOrphan is the outbox of a deleted queue; Outboxed entries follow
// it in snapOutboxChunk values.
type snapOrphan struct {
	Region        string
	Account, Name string
	Part          uint32
	Arn           string
	Created       int64
	Fifo          bool
	OutboxSeq     uint64
	Outboxed      int
}

// snapMoved is a queue moved away by the move Move, its name answering
// IsQueueMoving until Until.
type snapMoved struct {
	Region        string // absent (empty) in the engine's own region
	Account, Name string
	Part          uint32
	Move          string
	Until         int64
}

// snapPastTag is a receipt handle tag a moved queue honours until Until:
// the handles of serial Old[i] name the message of serial New[i]; by Old.
type snapPastTag struct {
	Tag      uint32
	Until    int64
	Old, New []uint64
}

// snapDeletion is a recently deleted queue, for QueueDeletedRecently:
// deleted at At, its name free again at Until. Until is absent (zero) in
// snapshots written before the cool-down was a setting; their records
// last SQS's 60 seconds.
type snapDeletion struct {
	Region        string // absent (empty) in the engine's own region
	Account, Name string
	Part          uint32
	At            int64
	Until         int64
}

// snapTaskRef names the Index-th task of queue (Account, Name).
type snapTaskRef struct {
	Region        string // absent (empty) in the engine's own region
	Account, Name string
	Index         int
}

// snapQueue is one queue's configuration and counters, and the number of
// records of each kind in the chunks that follow it.
type snapQueue struct {
	Account, Name string
	Arn           string // and in it, the queue's region
	Fifo          bool
	Attrs         snapAttrs
	Tags          []snapTag // by key
	CreatedAt     int64
	ModifiedAt    int64
	HandleTag     uint32 // binds receipt handles to this incarnation of the queue
	Purged        bool
	PurgedAt      int64
	LastSeq       uint64

	// A partition of a split queue (split.go): its number, and the range
	// of group hashes it holds; all absent for a queue never split.
	Part   uint32
	Split  bool
	Lo, Hi uint64

	// The DeduplicationScope change still propagating (queue
	// prevDedupScope, dedupScopeChanged); absent in older snapshots.
	PrevDedupScope    string
	DedupScopeChanged int64
	Tasks             []snapTask // oldest first

	// A queue being moved (move.go); all absent for the others.
	Fence   string        // the move that fenced it
	MovedIn string        // the move that installed it
	Past    []snapPastTag // the handle tags it had before, newest first

	Messages int // message records
	Dedups   int // deduplication records (FIFO)
	Attempts int // snapAttempt records (FIFO)
	Ordered  int // serials in snapOrder records (standard: every visible message)

	// Queues of other engines (outbox.go); all absent for the others.
	// Outboxed entries follow the queue's records, in snapOutboxChunk
	// values; OutboxSeq numbers the latest entry ever made.
	OutboxSeq     uint64
	Outboxed      int
	RedriveRemote bool
	RemoteSources []snapKey   // by key
	Taken         []snapTaken // by source
}

// snapAttrs is a queue's settable attributes, with the parsed forms of the
// JSON ones, so that a restore never depends on a parser's version.
type snapAttrs struct {
	VisibilityTimeout             int
	MaximumMessageSize            int
	MessageRetentionPeriod        int
	DelaySeconds                  int
	ReceiveMessageWaitTimeSeconds int
	Policy                        string
	RedrivePolicy                 string
	RedriveAllowPolicy            string
	ContentBasedDeduplication     bool
	KmsMasterKeyId                string
	KmsDataKeyReusePeriodSeconds  int
	SqsManagedSseEnabled          bool
	DeduplicationScope            string
	FifoThroughputLimit           string

	HasRedrive             bool
	RedriveTargetArn       string
	RedriveTargetAccount   string
	RedriveTargetName      string
	RedriveMaxReceiveCount int

	HasAllow             bool
	AllowPermission      string
	AllowSourceQueueArns []string
}

type snapTag struct{ Key, Value string }

// snapTask is a message move task.
type snapTask struct {
	Handle                    string
	SourceAccount, SourceName string
	SourceArn                 string
	DestArn                   string
	DestAccount, DestName     string
	HasRate                   bool
	Rate                      int
	PerSecond                 int64
	Status                    string
	Moved, ToMove             int64
	StartedAt                 int64
	Failure                   string
}

// snapChunk carries records of one queue: up to snapChunkSize records or
// about snapChunkBytes of them, whichever comes first. A writer sends all
// messages first, then deduplication records, then attempt records, then
// tenant orders. Messages and deduplication records are packed binary
// records (see snapshot_codec.go), which from version 2 on follow the
// chunk's gob value rather than fill MessageData and DedupData.
type snapChunk struct {
	Messages    int    // message records in MessageData
	MessageData []byte // in the order of the queue's arrival list (FIFO: each group's order), then the aged heap's
	Dedups      int    // deduplication records in DedupData
	DedupData   []byte // oldest first, the order in which they expire
	Attempts    []snapAttempt
	Orders      []snapOrder
}

// snapAttempt is a receive request attempt record, oldest first.
type snapAttempt struct {
	ID      string
	At      int64
	Serials []uint64
	Nonces  []uint64
	// A record made before the queue moved (attemptRecord's tag and
	// handles); absent for the others.
	Tag     uint32
	Handles []uint64
}

// snapOrder lists, in order, visible messages of a standard queue's tenant:
// the one order of a standard queue that is not derived from message
// fields. A tenant's list may span several records.
type snapOrder struct {
	Tenant  string
	Serials []uint64
}

// snapTrailer ends the body, so that a stream cut between two queues is
// not taken for a complete one.
type snapTrailer struct {
	Queues   int
	Messages int
}

// Snapshot writes the engine's whole state to w in a versioned,
// self-describing format (see the format description above). It changes
// nothing, so it may run concurrently with Read, NextWake and Receivable,
// but not with Apply or Restore. To write a snapshot while commands are
// applied, use BeginSnapshot.
func (e *Engine) Snapshot(w io.Writer) error {
	v, err := e.captureSnapshot()
	if err != nil {
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	defer v.unmap()
	return v.write(w, noLock{})
}

// compareRegionKeys orders keys by region, account and name.
func compareRegionKeys(a, b api.QueueKey) int {
	return cmp.Or(cmp.Compare(a.Region, b.Region), compareKeys(a, b))
}

func compareKeys(a, b api.QueueKey) int {
	return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Part, b.Part))
}

// snapHeader builds the engine-wide part of the snapshot.
func (e *Engine) snapHeader(queues int) (*snapHeader, error) {
	h := &snapHeader{Region: e.cfg.Region, Now: e.now, Serial: e.serial, Queues: queues, Meta: e.metaCopy()}
	// The log may hold records superseded since (a queue recreated, or
	// deleted again); only those the map still points to matter.
	for _, d := range e.deletedLog.live() {
		if cur, ok := e.deleted[d.key]; ok && cur == d {
			h.Deleted = append(h.Deleted, snapDeletion{Region: d.key.Region, Account: d.key.Account, Name: d.key.Name, Part: d.key.Part, At: d.at, Until: d.until})
		}
	}
	for _, t := range e.running {
		// A running task is always among its source's kept tasks: a new
		// task, which is what trims the list, only starts once none runs,
		// and deleting the source stops its tasks.
		i := -1
		if q := e.queues[t.source]; q != nil {
			i = slices.Index(q.tasks, t)
		}
		if i < 0 {
			return nil, fmt.Errorf("running move task %s is not among its source queue's tasks", t.handle)
		}
		h.Running = append(h.Running, snapTaskRef{Region: t.source.Region, Account: t.source.Account, Name: t.source.Name, Index: i})
	}
	for _, k := range slices.SortedFunc(maps.Keys(e.moved), compareRegionKeys) {
		m := e.moved[k]
		h.Moved = append(h.Moved, snapMoved{Region: k.Region, Account: k.Account, Name: k.Name, Part: k.Part, Move: m.move, Until: m.until})
	}
	h.Orphans = len(e.orphans)
	return h, nil
}

// liveRecords returns the records of an expiry log that its map still
// points to (current reports whether it does), oldest first. A log holds
// every record of the map, plus records superseded by a newer one for the
// same key: when it is no longer than the map, it holds none of those, and
// is returned as it is, without a map lookup per record.
func liveRecords[T any](log []T, inMap int, current func(T) bool) []T {
	if len(log) == inMap {
		return log
	}
	var live []T
	for _, r := range log {
		if current(r) {
			live = append(live, r)
		}
	}
	return live
}

// chunkWriter gathers records into chunks and encodes each full chunk.
type chunkWriter struct {
	enc   *gob.Encoder
	raw   io.Writer // the stream enc writes to, for the packed records
	chunk snapChunk
	msgs  recordWriter
	dedup recordWriter
	n     int // records in chunk
}

func (c *chunkWriter) added() error {
	c.n++
	if !c.full() {
		return nil
	}
	return c.flush()
}

// full reports whether the chunk holds as many records, or bytes of
// records, as a chunk may.
func (c *chunkWriter) full() bool {
	return c.n >= snapChunkSize || len(c.msgs.buf)+c.msgs.inlined+len(c.dedup.buf) >= snapChunkBytes
}

func (c *chunkWriter) flush() error {
	if c.n == 0 {
		return nil
	}
	err := c.enc.Encode(&c.chunk)
	if err == nil {
		err = writeChunkData(c.raw, c.msgs.buf, c.dedup.buf)
	}
	c.msgs.buf, c.dedup.buf = c.msgs.buf[:0], c.dedup.buf[:0]
	c.msgs.inlined = 0
	c.chunk = snapChunk{}
	c.n = 0
	return err
}

// message adds a message record to the chunk without flushing it: the
// caller holds the lock that keeps m still, and flushes once it is released.
func (c *chunkWriter) message(m *message, aged bool) {
	c.msgs.message(m, aged)
	c.chunk.Messages++
	c.n++
}

func (c *chunkWriter) dedupRecord(r *dedupRecord, id msgID) error {
	c.dedup.dedup(r, id)
	c.chunk.Dedups++
	return c.added()
}

func (c *chunkWriter) attempt(r *attemptRecord) error {
	c.chunk.Attempts = append(c.chunk.Attempts, snapAttempt{ID: r.id, At: r.at, Serials: r.serials, Nonces: r.nonces, Tag: r.tag, Handles: r.handles})
	return c.added()
}

func (c *chunkWriter) order(tenant string, serial uint64) error {
	o := c.chunk.Orders
	if n := len(o); n > 0 && o[n-1].Tenant == tenant {
		o[n-1].Serials = append(o[n-1].Serials, serial)
	} else {
		c.chunk.Orders = append(o, snapOrder{Tenant: tenant, Serials: []uint64{serial}})
	}
	return c.added()
}

func snapAttrsOf(a *queueAttrs) snapAttrs {
	s := snapAttrs{
		VisibilityTimeout: a.VisibilityTimeout, MaximumMessageSize: a.MaximumMessageSize,
		MessageRetentionPeriod: a.MessageRetentionPeriod, DelaySeconds: a.DelaySeconds,
		ReceiveMessageWaitTimeSeconds: a.ReceiveMessageWaitTimeSeconds, Policy: a.Policy,
		RedrivePolicy: a.RedrivePolicy, RedriveAllowPolicy: a.RedriveAllowPolicy,
		ContentBasedDeduplication: a.ContentBasedDeduplication, KmsMasterKeyId: a.KmsMasterKeyId,
		KmsDataKeyReusePeriodSeconds: a.KmsDataKeyReusePeriodSeconds, SqsManagedSseEnabled: a.SqsManagedSseEnabled,
		DeduplicationScope: a.DeduplicationScope, FifoThroughputLimit: a.FifoThroughputLimit,
	}
	if r := a.redrive; r != nil {
		s.HasRedrive, s.RedriveTargetArn, s.RedriveMaxReceiveCount = true, r.arn, r.maxReceiveCount
		s.RedriveTargetAccount, s.RedriveTargetName = r.key.Account, r.key.Name
	}
	if p := a.allow; p != nil {
		s.HasAllow, s.AllowPermission, s.AllowSourceQueueArns = true, p.RedrivePermission, p.SourceQueueArns
	}
	return s
}

func snapTaskOf(t *moveTask) snapTask {
	s := snapTask{
		Handle: t.handle, SourceAccount: t.source.Account, SourceName: t.source.Name, SourceArn: t.sourceArn,
		DestArn: t.destArn, DestAccount: t.dest.Account, DestName: t.dest.Name,
		PerSecond: t.perSecond, Status: t.status, Moved: t.moved, ToMove: t.toMove,
		StartedAt: t.startedAt, Failure: t.failure,
	}
	if t.rate != nil {
		s.HasRate, s.Rate = true, *t.rate
	}
	return s
}

// crcWriter checksums what it writes.
type crcWriter struct {
	w   io.Writer
	sum uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.sum = crc32.Update(c.sum, snapCRCTable, p)
	return c.w.Write(p)
}
