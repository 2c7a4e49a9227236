package engine

// Where a queued message lives.
//
// A backlog of millions of messages is mostly message records, and on the
// garbage-collected heap every byte of them would cost about two of
// memory: the collector lets the heap grow to twice what is live before it
// runs (GOGC=100), and it has to scan every record for pointers each time
// it does. So records live in a msgArena, memory mapped outside the heap,
// and hold no pointer the collector would need to see: what a record
// refers to on the heap (its rarely used fields, its receive state, its
// group and sender ids) it names by index into the tables of its engine's
// msgStore, which the collector sees as a handful of large slices; its
// ids that only a receive shows are in its payload (see payload). A record may point to other records (list links): those
// pointers lead outside the heap, where the collector does not look.
//
// Records and table slots are freed by hand, so their lifetimes are kept
// in one place: a message is made by msgStore.newMessage (a send) or
// msgStore.adopt (a restore) and ends in
// msgStore.freeMessage (through queue.discard, Engine.dropBody or
// Engine.dropBodies), and the tables' slots change only through the
// store's setters. While a snapshot view is open, frees are held until it
// is released, since the view may still read what they free.

// msgStore holds an engine's message records and the tables they index.
// It is used under the engine's lock, as the records are.
type msgStore struct {
	arena *msgArena
	exts  slotTable[*msgExt]
	recvs slotTable[recvState]
	strs  internTable

	// While a view is open (holding), what is freed waits in the held
	// lists until it is released.
	holding   bool
	heldMsgs  []*message
	heldExts  []uint32
	heldRecvs []uint32
}

// newMsgStore returns an empty store. Its records' memory is given back
// when the store is no longer reachable.
func newMsgStore() *msgStore {
	s := &msgStore{arena: &msgArena{}}
	registerArenaCleanup(s, s.arena)
	return s
}

// newMessage returns a zeroed record with its group and sender ids set.
func (s *msgStore) newMessage(group, sender string) *message {
	m := s.arena.alloc()
	m.group = s.strs.ref(group)
	m.sender = s.strs.ref(sender)
	return m
}

// adopt returns a new record with v's fields, but for its table indices:
// those of group, sender and r. v is a record decoded outside the store.
func (s *msgStore) adopt(v *message, group, sender []byte, r recvState) *message {
	m := s.arena.alloc()
	*m = *v
	m.ext, m.recv = 0, 0
	m.group = s.strs.refBytes(group)
	m.sender = s.strs.refBytes(sender)
	s.setRecv(m, r)
	return m
}

// freeMessage frees m and what it refers to, or holds it until the open
// view is released. m must be in no queue or index.
func (s *msgStore) freeMessage(m *message) {
	if s.holding {
		s.heldMsgs = append(s.heldMsgs, m)
		return
	}
	s.exts.drop(m.ext)
	s.recvs.drop(m.recv)
	s.strs.unref(m.group)
	s.strs.unref(m.sender)
	s.arena.free(m)
}

// hold keeps everything freed from now on until unhold: a snapshot view is
// open.
func (s *msgStore) hold() { s.holding = true }

// unhold frees what was freed while the view was open.
func (s *msgStore) unhold() {
	s.holding = false
	for _, i := range s.heldExts {
		s.exts.drop(i)
	}
	for _, i := range s.heldRecvs {
		s.recvs.drop(i)
	}
	for _, m := range s.heldMsgs {
		s.freeMessage(m)
	}
	s.heldMsgs, s.heldExts, s.heldRecvs = nil, nil, nil
}

// live returns the number of messages made and not freed, held ones
// included.
func (s *msgStore) live() int { return s.arena.live }

// group returns m's MessageGroupId (FIFO) or tenant (standard), "" if none.
func (s *msgStore) group(m *message) string { return s.strs.get(m.group) }

// sender returns m's SenderId.
func (s *msgStore) sender(m *message) string { return s.strs.get(m.sender) }

// noExt is the msgExt of a message that has none: all empty. It is only
// ever read.
var noExt msgExt

// ext returns m's rarely used fields, to be read only: noExt if all are
// empty.
func (s *msgStore) ext(m *message) *msgExt {
	if x := s.exts.get(m.ext); x != nil {
		return x
	}
	return &noExt
}

// setExt replaces m's msgExt with x (nil: none).
func (s *msgStore) setExt(m *message, x *msgExt) {
	old := m.ext
	m.ext = 0
	if x != nil {
		m.ext = s.exts.put(x)
	}
	dropOrHold(s, &s.exts, &s.heldExts, old)
}

// dropOrHold frees slot i of t, or, while a view is open, adds it to held
// to free at unhold: a message the view saved may still name it.
func dropOrHold[T comparable](s *msgStore, t *slotTable[T], held *[]uint32, i uint32) {
	if s.holding && i != 0 {
		*held = append(*held, i)
		return
	}
	t.drop(i)
}

// recvOf returns m's receive state, all zero if it was never received here.
func (s *msgStore) recvOf(m *message) recvState { return s.recvs.get(m.recv) }

// setRecv sets m's receive state to r, keeping none if it is all zero.
func (s *msgStore) setRecv(m *message, r recvState) {
	old := m.recv
	m.recv = 0
	if r != (recvState{}) {
		m.recv = s.recvs.put(r)
	}
	dropOrHold(s, &s.recvs, &s.heldRecvs, old)
}

// slotTable is a table of values named by index, 0 naming none (the zero
// value of T). Freed slots are reused, last freed first; a table whose
// every slot is free is given back whole.
type slotTable[T comparable] struct {
	slots []T
	free  []uint32
	n     int // slots in use
}

// put stores v in a slot and returns its index (never 0).
func (t *slotTable[T]) put(v T) uint32 {
	if len(t.slots) == 0 {
		t.slots = make([]T, 1, 16) // slot 0 names none
	}
	t.n++
	if k := len(t.free); k > 0 {
		i := t.free[k-1]
		t.free = t.free[:k-1]
		t.slots[i] = v
		return i
	}
	t.slots = append(t.slots, v)
	return uint32(len(t.slots) - 1)
}

// get returns the value in slot i, the zero value for 0.
func (t *slotTable[T]) get(i uint32) T {
	if i == 0 {
		var zero T
		return zero
	}
	return t.slots[i]
}

// drop frees slot i; 0 is none, and is ignored.
func (t *slotTable[T]) drop(i uint32) {
	if i == 0 {
		return
	}
	var zero T
	t.slots[i] = zero
	t.n--
	if t.n == 0 {
		t.slots, t.free = nil, nil
		return
	}
	t.free = append(t.free, i)
}

// internTable holds strings many records share (group and sender ids), each
// once, counted by the records that refer to it. Index 0 is "".
type internTable struct {
	ids     map[string]uint32
	entries slotTable[internEntry]
}

type internEntry struct {
	s    string
	refs int
}

// ref returns the index of s, counting one more reference to it.
func (t *internTable) ref(s string) uint32 {
	if s == "" {
		return 0
	}
	if i, ok := t.ids[s]; ok {
		t.entries.slots[i].refs++
		return i
	}
	return t.add(s)
}

// refBytes is ref of a byte slice, which it does not keep.
func (t *internTable) refBytes(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	if i, ok := t.ids[string(b)]; ok {
		t.entries.slots[i].refs++
		return i
	}
	return t.add(string(b))
}

func (t *internTable) add(s string) uint32 {
	if t.ids == nil {
		t.ids = map[string]uint32{}
	}
	i := t.entries.put(internEntry{s: s, refs: 1})
	t.ids[s] = i
	return i
}

// get returns the string of index i.
func (t *internTable) get(i uint32) string {
	if i == 0 {
		return ""
	}
	return t.entries.slots[i].s
}

// unref counts one reference fewer to index i, and forgets its string when
// none is left.
func (t *internTable) unref(i uint32) {
	if i == 0 {
		return
	}
	e := &t.entries.slots[i]
	if e.refs--; e.refs > 0 {
		return
	}
	delete(t.ids, e.s)
	t.entries.drop(i)
}
