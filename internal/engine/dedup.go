package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
)

// dedupKey is what a FIFO queue deduplicates on: the deduplication id, and
// the group id when DeduplicationScope is messageGroup, as a 128-bit
// digest (see dedupKeyOf).
type dedupKey [16]byte

// dedupKeyOf returns the key of a deduplication id sent in a group ("" for
// queue-wide scope): the first 128 bits of SHA-256 over the group's length,
// the group and the id.
//
// SQS compares deduplication ids exactly, so two different ids must never
// share a key. A queue keeps at most its last 5 minutes of ids: even at a
// billion of them the chance that any two of 128-bit digests from SHA-256
// collide is about n²/2¹²⁹ ≈ 10⁻²¹, and making a collision on purpose
// costs about 2⁶⁴ SHA-256 evaluations (the best known attack on SHA-256
// truncated to 128 bits is the generic birthday one). A sender could in any
// case only make its own messages look like duplicates of each other. In
// exchange the key is 16 bytes whatever the ids' length (up to 128
// characters each), which is what makes a million live records cheap. The
// group's length comes first so that (group "ab", id "c") and (group "a",
// id "bc") differ.
func dedupKeyOf(group, id string) dedupKey {
	var buf [2*binary.MaxVarintLen64 + 2*128]byte
	b := binary.AppendUvarint(buf[:0], uint64(len(group)))
	b = append(b, group...)
	b = append(b, id...)
	sum := sha256.Sum256(b)
	return dedupKey(sum[:16])
}

// dedupRecord remembers the first message sent with a deduplication key,
// for DeduplicationInterval from its send: its time, sequence number and
// MessageId (uuid; one that is not a canonical UUID is kept beside, in
// dedupTable.others, so that the record is 48 bytes).
type dedupRecord struct {
	key  dedupKey
	at   int64
	seq  uint64
	uuid [16]byte
}

// dedupTable holds a FIFO queue's deduplication records, in send order
// (which is expiry order), with an index by key. The records lie by value
// in a circular buffer, and the index is an open-addressing table of
// positions in it (linear probing, deletion by backward shift), so that a
// record costs its 48 bytes plus a few bytes of index, with no pointer per
// record for the garbage collector to follow, and so that churn leaves no
// tombstones: a Go map under steady inserts and deletes grows its tables
// for a long while before it levels off (measured: a map of 300,000 live
// keys under FIFO churn held 29 MiB for 20 minutes of 1,000 inserts/s,
// then 52 MiB), which made a server's heap step up 25–35 minutes into
// steady traffic. Both arrays are sized to the records they hold and
// shrink when those fall to a quarter.
//
// A key is already a digest, but ids could be chosen (by brute force) to
// put digests in one probe run of the index; so the index slot comes from
// the key mixed with a per-table random seed, which no client sees. The
// seed changes where entries sit in the index, never what a lookup
// answers, so the table behaves the same on every replica.
//
// A record whose key is sent again after it expired but before it was
// dropped is superseded: the index points to the new one, the old one is
// marked (its time set to superseded, which no command time is), and it is
// dropped (with any superseded records behind it) as soon as it reaches
// the front, so that the front is always a live record, as in an engine
// restored from a snapshot, which keeps only live ones.
type dedupTable struct {
	recs  []dedupRecord // circular
	head  int           // position of the oldest record
	n     int           // records held, live or superseded
	index []uint32      // 0: empty; else 1 + position in recs
	live  int           // entries in index: live records
	// others holds the MessageIds that are not canonical UUIDs, of live
	// records; nil if there is none. otherDrops counts deletions from it
	// since it was last copied (see compactMap).
	others     map[dedupKey]*string
	otherDrops int
	// frozen is the part of recs an open snapshot view reads (see
	// capture): while the view is open, push leaves it alone.
	frozen dedupFreeze
	seed   uint64 // set by the first push; never 0 once set
}

// dedupFreeze is the part of a table's buffer a snapshot view reads: n
// records from head in the buffer that starts at buf, for as long as cow's
// view of generation gen is open.
type dedupFreeze struct {
	cow     *cowState
	gen     uint32
	buf     *dedupRecord
	head, n int
}

// dedupCapture is a table's records as a snapshot view holds them: n
// records from head in recs (shared with the table, which does not write
// them while the view is open), live of them not superseded.
type dedupCapture struct {
	recs          []dedupRecord
	head, n, live int
	others        map[dedupKey]*string
}

// capture returns the table's records for a snapshot view, without
// copying them; freeze must follow once the view is open.
func (t *dedupTable) capture() dedupCapture {
	return dedupCapture{recs: t.recs, head: t.head, n: t.n, live: t.live, others: maps.Clone(t.others)}
}

// freeze keeps the records capture returned unchanged while the view of
// cow's current generation is open.
func (t *dedupTable) freeze(cow *cowState) {
	t.frozen = dedupFreeze{cow: cow, gen: cow.gen, head: t.head, n: t.n}
	if len(t.recs) > 0 {
		t.frozen.buf = &t.recs[0]
	}
}

// isFrozen reports whether position pos holds a record an open view reads.
func (t *dedupTable) isFrozen(pos int) bool {
	f := &t.frozen
	if f.cow == nil || !f.cow.active || f.cow.gen != f.gen || len(t.recs) == 0 || &t.recs[0] != f.buf {
		return false
	}
	off := pos - f.head
	if off < 0 {
		off += len(t.recs)
	}
	return off < f.n
}

// each calls fn with the live records of c, oldest first, and their
// MessageIds, until fn returns an error.
func (c *dedupCapture) each(fn func(r *dedupRecord, id msgID) error) error {
	for k := range c.n {
		i := c.head + k
		if i >= len(c.recs) {
			i -= len(c.recs)
		}
		r := &c.recs[i]
		if r.at == superseded {
			continue
		}
		id := msgID{uuid: r.uuid}
		if s := c.others[r.key]; s != nil {
			id = msgID{other: s}
		}
		if err := fn(r, id); err != nil {
			return err
		}
	}
	return nil
}

// superseded is the time of a superseded record.
const superseded = math.MinInt64

// minDedupCap is the smallest capacity of a non-empty table's arrays.
const minDedupCap = 16

// Len returns the number of live records.
func (t *dedupTable) Len() int { return t.live }

// empty reports whether the table holds no record at all.
func (t *dedupTable) empty() bool { return t.n == 0 }

// front returns the oldest record; the table must not be empty. It is
// live (see dropSuperseded).
func (t *dedupTable) front() *dedupRecord { return &t.recs[t.head] }

// home is the index slot where the search for key starts.
func (t *dedupTable) home(key dedupKey) int {
	return int(mix64(binary.LittleEndian.Uint64(key[:8])^t.seed) & uint64(len(t.index)-1))
}

// find returns the index slot holding key's entry, or -1.
func (t *dedupTable) find(key dedupKey) int {
	if t.live == 0 {
		return -1
	}
	mask := len(t.index) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		e := t.index[i]
		if e == 0 {
			return -1
		}
		if t.recs[e-1].key == key {
			return i
		}
	}
}

// get returns the live record of key, or nil.
func (t *dedupTable) get(key dedupKey) *dedupRecord {
	if i := t.find(key); i >= 0 {
		return &t.recs[t.index[i]-1]
	}
	return nil
}

// messageID returns the MessageId of a live record.
func (t *dedupTable) messageID(r *dedupRecord) msgID {
	if t.others != nil {
		if s := t.others[r.key]; s != nil {
			return msgID{other: s}
		}
	}
	return msgID{uuid: r.uuid}
}

// each calls f with every live record, oldest first, and its MessageId.
func (t *dedupTable) each(f func(r *dedupRecord, id msgID)) {
	for i := range t.n {
		r := &t.recs[t.wrap(t.head+i)]
		if r.at != superseded {
			f(r, t.messageID(r))
		}
	}
}

// push appends r, whose time is no earlier than any record's, with
// MessageId id, superseding the record of the same key if there is one.
func (t *dedupTable) push(r dedupRecord, id msgID) {
	r.uuid = id.uuid
	switch {
	case id.other != nil:
		if t.others == nil {
			t.others = map[dedupKey]*string{}
		}
		t.others[r.key] = id.other
	case t.others != nil:
		delete(t.others, r.key) // a superseded record's
	}
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	if t.n == len(t.recs) {
		// Grow by a quarter, as append does for large slices: a
		// doubling would leave up to half the buffer unused for good.
		t.resize(max(minDedupCap, len(t.recs)+len(t.recs)/4))
	}
	pos := t.wrap(t.head + t.n)
	i := t.find(r.key)
	if t.isFrozen(pos) || i >= 0 && t.isFrozen(int(t.index[i]-1)) {
		// An open snapshot view reads that slot: move the records to a
		// new buffer and leave the old one to the view.
		t.resize(len(t.recs))
		pos, i = t.wrap(t.head+t.n), t.find(r.key)
	}
	t.recs[pos] = r
	t.n++
	if i >= 0 {
		t.recs[t.index[i]-1].at = superseded
		t.index[i] = uint32(pos + 1)
		t.dropSuperseded()
		return
	}
	if 4*(t.live+1) > 3*len(t.index) {
		t.reindex(t.recs, t.head, max(minDedupCap, 2*len(t.index)))
	}
	t.insert(r.key, pos)
	t.live++
}

// insert puts an entry for key, which the index does not hold, at pos.
func (t *dedupTable) insert(key dedupKey, pos int) {
	mask := len(t.index) - 1
	i := t.home(key)
	for t.index[i] != 0 {
		i = (i + 1) & mask
	}
	t.index[i] = uint32(pos + 1)
}

// popFront drops the oldest record, then any superseded ones behind it.
func (t *dedupTable) popFront() {
	t.dropFront()
	t.dropSuperseded()
	switch {
	case t.n == 0 && len(t.recs) > 4*minDedupCap:
		t.reset()
	case len(t.recs) > shrinkAbove && 4*t.n < len(t.recs):
		t.resize(len(t.recs) / 2)
	}
}

// dropFront removes the oldest record, and its index entry if it is live.
func (t *dedupTable) dropFront() {
	pos := t.head
	if t.recs[pos].at != superseded {
		if i := t.find(t.recs[pos].key); i >= 0 {
			t.unindex(i)
			t.live--
		}
		if t.others != nil {
			delete(t.others, t.recs[pos].key)
			t.otherDrops++
			if len(t.others) == 0 {
				t.others, t.otherDrops = nil, 0
			} else {
				t.others = compactMap(t.others, &t.otherDrops)
			}
		}
	}
	// The slot is left as it is: a record holds no pointer, and an open
	// snapshot view may still read it.
	t.head = t.wrap(pos + 1)
	t.n--
}

// dropSuperseded drops records at the front that the index no longer
// points to.
func (t *dedupTable) dropSuperseded() {
	for t.n > 0 && t.recs[t.head].at == superseded {
		t.dropFront()
	}
}

// unindex empties index slot i, moving later entries of its probe run
// back so that every entry stays reachable from its home slot.
func (t *dedupTable) unindex(i int) {
	mask := len(t.index) - 1
	for j := i; ; {
		j = (j + 1) & mask
		e := t.index[j]
		if e == 0 {
			break
		}
		k := t.home(t.recs[e-1].key)
		// The entry at j may move to i unless its home lies cyclically
		// in (i, j].
		if (i < j && i < k && k <= j) || (i > j && (k > i || k <= j)) {
			continue
		}
		t.index[i] = e
		i = j
	}
	t.index[i] = 0
}

// wrap returns position i of the circular buffer, for i < 2*len(t.recs).
func (t *dedupTable) wrap(i int) int {
	if i >= len(t.recs) {
		i -= len(t.recs)
	}
	return i
}

// resize moves the records into a buffer of capacity c (at least t.n),
// oldest first at position 0, and rebuilds the index.
func (t *dedupTable) resize(c int) {
	recs := make([]dedupRecord, c)
	for k := range t.n {
		recs[k] = t.recs[t.wrap(t.head+k)]
	}
	old, head := t.recs, t.head
	t.recs, t.head = recs, 0
	size := minDedupCap
	for size < 2*t.live {
		size *= 2
	}
	t.reindex(old, head, size)
}

// reindex rebuilds the index at the given size (a power of two) from the
// current one, whose positions are into old with its oldest record at
// oldHead; the records now start at position 0 of t.recs.
func (t *dedupTable) reindex(old []dedupRecord, oldHead int, size int) {
	prev := t.index
	t.index = make([]uint32, size)
	for _, e := range prev {
		if e == 0 {
			continue
		}
		age := int(e-1) - oldHead
		if age < 0 {
			age += len(old)
		}
		pos := t.wrap(t.head + age)
		t.insert(t.recs[pos].key, pos)
	}
}

// reserve makes room for n records without growing (a restore knows how
// many it will push).
func (t *dedupTable) reserve(n int) {
	if c := max(n, minDedupCap); c > len(t.recs) {
		t.resize(c)
	}
	size := minDedupCap
	for 4*n > 3*size {
		size *= 2
	}
	if size > len(t.index) {
		t.reindex(t.recs, t.head, size)
	}
}

// reset drops every record.
func (t *dedupTable) reset() {
	seed := t.seed
	*t = dedupTable{seed: seed}
}
