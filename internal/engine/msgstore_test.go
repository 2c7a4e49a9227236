package engine

import (
	"reflect"
	"runtime"
	"testing"
)

func init() {
	// A record used after it was freed shows as garbage in every test of
	// the package.
	poisonFreed = true
}

// TestMessageHoldsNoHeapPointer keeps the message record free of anything
// the garbage collector would have to see: records live outside the heap
// (msgArena), where it does not look, so a heap object that only a record
// referred to would be freed under it. Pointers to other records are
// allowed: they point outside the heap too.
func TestMessageHoldsNoHeapPointer(t *testing.T) {
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Pointer:
			if typ.Elem() != reflect.TypeFor[message]() {
				t.Errorf("%s is a %s: a record may point only to other records", path, typ)
			}
		case reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		case reflect.Array:
			walk(path+"[]", typ.Elem())
		case reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
			t.Errorf("%s is a %s, which refers to the heap", path, typ)
		}
	}
	walk("message", reflect.TypeFor[message]())
}

// TestArenaReusesAndReleases frees and reallocates records: freed ones are
// reused before a new chunk is mapped, a freed record is poisoned, and
// records come from the lowest chunk with room, so that the highest empty
// first.
func TestArenaReusesAndReleases(t *testing.T) {
	a := &msgArena{}
	defer a.unmapAll()
	var ms []*message
	for i := range 1000 {
		m := a.alloc()
		if *m != (message{}) {
			t.Fatalf("record %d is not zero: %+v", i, *m)
		}
		m.serial = uint64(i + 1)
		ms = append(ms, m)
	}
	chunks := len(a.chunks)
	if a.live != 1000 || chunks < 2 {
		t.Fatalf("live %d in %d chunks", a.live, chunks)
	}
	// A record's place names it, and climbs by one from a record to the
	// next of a fresh chunk.
	for i, m := range ms {
		if p := a.placeOf(m); a.at(p) != m || p != uint64(i) {
			t.Fatalf("record %d is at place %d, which names %p, not %p", i, p, a.at(p), m)
		}
	}
	// A record finds its chunk by its address, the first and last of
	// each chunk included.
	for i, c := range a.chunks {
		for _, m := range []*message{&c.recs[0], &c.recs[len(c.recs)-1]} {
			if got := a.chunkOf(m); got != i {
				t.Errorf("record %p of chunk %d found in chunk %d", m, i, got)
			}
		}
	}
	a.free(ms[10])
	if ms[10].serial == 11 {
		t.Error("a freed record still reads as its message")
	}
	if m := a.alloc(); m != ms[10] || m.serial != 0 {
		t.Errorf("the freed record was not reused, zeroed: got %p (serial %d), freed %p", m, m.serial, ms[10])
	}
	// Free a record of the first chunk, then empty the last: its memory
	// goes back, and the next record comes from the lowest chunk with
	// room.
	a.free(ms[0])
	last := a.chunks[len(a.chunks)-1]
	inLast := countIn(a, ms, chunks-1)
	for _, m := range ms {
		if a.chunkOf(m) == chunks-1 {
			a.free(m)
		}
	}
	if last.live != 0 || last.used != 0 || last.free != nil {
		t.Errorf("the emptied chunk has %d live, %d used", last.live, last.used)
	}
	if m := a.alloc(); m != ms[0] {
		t.Errorf("record taken from chunk %d, want the freed one of chunk 0", a.chunkOf(m))
	}
	if want := 1000 - inLast; a.live != want {
		t.Errorf("live %d, want %d", a.live, want)
	}
}

func countIn(a *msgArena, ms []*message, chunk int) (n int) {
	for _, m := range ms {
		if a.chunkOf(m) == chunk {
			n++
		}
	}
	return n
}

// checkMsgStore requires e's message store to hold exactly what its
// queues' messages refer to: as many records, table slots and string
// references as the messages (and those a view holds) use; none leaked,
// none freed early.
func checkMsgStore(t testing.TB, e *Engine) {
	t.Helper()
	s := e.ms
	var n, exts, recvs int
	refs := map[uint32]int{}
	count := func(m *message) {
		n++
		exts += min(1, int(m.ext))
		recvs += min(1, int(m.recv))
		refs[m.group]++
		refs[m.sender]++
	}
	e.eachStoredMessage(func(m *message) bool { count(m); return true })
	for _, m := range s.heldMsgs {
		count(m)
	}
	exts += len(s.heldExts)
	recvs += len(s.heldRecvs)
	if s.live() != n || s.exts.n != exts || s.recvs.n != recvs {
		t.Errorf("store holds %d records, %d exts, %d receive states; the messages use %d, %d, %d",
			s.live(), s.exts.n, s.recvs.n, n, exts, recvs)
	}
	delete(refs, 0)
	if len(refs) != len(s.strs.ids) {
		t.Errorf("%d strings interned, %d referred to", len(s.strs.ids), len(refs))
	}
	for str, i := range s.strs.ids {
		if got := s.strs.entries.slots[i].refs; got != refs[i] || s.strs.get(i) != str {
			t.Errorf("string %q (index %d) counts %d references, has %d", str, i, got, refs[i])
		}
	}
}

// TestFreedRecordReadsAsNoMessage frees records without the tests'
// poison, as in production: a freed record must read as no message
// (serial 0, no table index), so that a holder of a stale pointer that
// checks the serial, as ExportCursor does, never follows the indexes the
// record held into tables that may have shrunk since.
func TestFreedRecordReadsAsNoMessage(t *testing.T) {
	poisonFreed = false
	defer func() { poisonFreed = true }()
	a := &msgArena{}
	defer a.unmapAll()
	keep, m := a.alloc(), a.alloc()
	m.serial, m.ext, m.recv, m.group = 7, 3, 4, 5
	a.free(m)
	if m.serial != 0 || m.ext != 0 || m.recv != 0 || m.group != 0 {
		t.Errorf("a freed record reads serial %d, ext %d, recv %d, group %d", m.serial, m.ext, m.recv, m.group)
	}
	runtime.KeepAlive(keep)
}

// testMessageID returns m's MessageId, read from its payload.
func testMessageID(q *queue, m *message) string {
	p, err := readPayload(q.bodies, q.ms, m)
	if err != nil {
		panic(err)
	}
	return q.ms.messageID(m, p.head).String()
}
