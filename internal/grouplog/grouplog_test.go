package grouplog

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	raftwal "github.com/fifoq/fifoq/internal/third_party/raftwal"
	"github.com/fifoq/fifoq/internal/third_party/raftwal/metadb"
)

// testWAL is a raft-wal with the meta database it is given, which its
// Close closes too (raft-wal leaves open one it opened itself).
type testWAL struct {
	*raftwal.WAL
	meta *metadb.BoltMetaDB
}

func (w *testWAL) Close() error {
	err := w.WAL.Close()
	if merr := w.meta.Close(); err == nil {
		err = merr
	}
	return err
}

// openWAL opens a raft-wal in dir, closed when the test ends.
func openWAL(t *testing.T, dir string) *testWAL {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta))
	if err != nil {
		t.Fatal(err)
	}
	tw := &testWAL{WAL: w, meta: meta}
	t.Cleanup(func() { tw.Close() })
	return tw
}

// reopen closes l and its WAL and opens both again from dir.
func reopen(t *testing.T, l *Log, dir string) *Log {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.wal.(*testWAL).Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(openWAL(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })
	return l2
}

func openLog(t *testing.T, dir string) *Log {
	t.Helper()
	l, err := Open(openWAL(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// entry is entry i of group g, with a body that names both.
func entry(g uint64, i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("g%d-e%d", g, i)),
		AppendedAt: time.Unix(1700000000, int64(i)).UTC()}
}

func store(t *testing.T, g *Group, from, to uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, entry(g.ID(), i))
	}
	if err := g.StoreLogs(logs); err != nil {
		t.Fatalf("group %d: store %d..%d: %v", g.ID(), from, to, err)
	}
}

// check fails the test unless g holds exactly first..last, each entry as
// entry wrote it.
func check(t *testing.T, g *Group, first, last uint64) {
	t.Helper()
	f, err := g.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := g.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("group %d holds %d..%d, want %d..%d", g.ID(), f, l, first, last)
	}
	for _, i := range []uint64{first - 1, last + 1} {
		if i == 0 {
			continue
		}
		var e raft.Log
		if err := g.GetLog(i, &e); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("group %d: entry %d, outside %d..%d: %v, want ErrLogNotFound", g.ID(), i, first, last, err)
		}
	}
	if last == 0 {
		return
	}
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := g.GetLog(i, &e); err != nil {
			t.Fatalf("group %d: entry %d: %v", g.ID(), i, err)
		}
		want := entry(g.ID(), i)
		if e.Index != want.Index || e.Term != want.Term || e.Type != want.Type || !bytes.Equal(e.Data, want.Data) || !e.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("group %d: entry %d is %+v, want %+v", g.ID(), i, e, *want)
		}
	}
}

// TestGroupsKeepTheirOwnLogs: each group is a log of its own as Raft uses
// one (append, a prefix deleted by compaction, a suffix deleted on a
// conflict and written again, the whole log deleted and written from a
// snapshot's index on), and reads back the same after the Log is opened
// again from its WAL.
func TestGroupsKeepTheirOwnLogs(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	a, b, c := l.Group(1), l.Group(2), l.Group(3)
	store(t, a, 1, 10)
	store(t, b, 1, 5)
	store(t, a, 11, 20)
	store(t, c, 100, 120)
	if err := a.DeleteRange(1, 7); err != nil { // compaction
		t.Fatal(err)
	}
	if err := b.DeleteRange(4, 5); err != nil { // a conflict
		t.Fatal(err)
	}
	store(t, b, 4, 9)
	if err := c.DeleteRange(100, 120); err != nil { // a snapshot past the end
		t.Fatal(err)
	}
	store(t, c, 500, 503)
	check(t, a, 8, 20)
	check(t, b, 1, 9)
	check(t, c, 500, 503)
	check(t, l.Group(4), 0, 0)
	if err := a.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}

	l = reopen(t, l, dir)
	a, b, c = l.Group(1), l.Group(2), l.Group(3)
	check(t, a, 8, 20)
	check(t, b, 1, 9)
	check(t, c, 500, 503)
	if got := l.Groups(); fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("Groups() = %v, want [1 2 3]", got)
	}
	if v, err := a.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("group 1's CurrentTerm: %d, %v; want 7", v, err)
	}
	if v, err := b.GetUint64([]byte("CurrentTerm")); err != nil || v != 0 {
		t.Fatalf("group 2's CurrentTerm: %d, %v; want 0 (group 1's is its own)", v, err)
	}
	if v, err := b.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
		t.Fatalf("group 2's LastVoteCand: %q, %v; want n2", v, err)
	}
	store(t, a, 21, 22)
	check(t, a, 8, 22)

	if err := l.Drop(2); err != nil {
		t.Fatal(err)
	}
	check(t, l.Group(2), 0, 0)
	l = reopen(t, l, dir)
	check(t, l.Group(2), 0, 0)
	check(t, l.Group(1), 8, 22)
	if got := l.Groups(); fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("Groups() after the drop = %v, want [1 3]", got)
	}
}

// TestGroupRefusesWhatRaftNeverAsks: a write that does not follow the
// log's last entry, or skips an index, and a deletion from the middle are
// refused, and leave the log as it was.
func TestGroupRefusesWhatRaftNeverAsks(t *testing.T) {
	l := openLog(t, t.TempDir())
	g := l.Group(1)
	store(t, g, 1, 10)
	if err := g.StoreLogs([]*raft.Log{entry(1, 12)}); err == nil {
		t.Fatal("an entry after a gap was stored")
	}
	if err := g.StoreLogs([]*raft.Log{entry(1, 5)}); err == nil {
		t.Fatal("an entry over one held was stored")
	}
	if err := g.StoreLogs([]*raft.Log{entry(1, 11), entry(1, 13)}); err == nil {
		t.Fatal("a write skipping an index was stored")
	}
	if err := g.DeleteRange(3, 5); err == nil {
		t.Fatal("a range inside the log was deleted")
	}
	check(t, g, 1, 10)
	store(t, g, 11, 11)
	check(t, g, 1, 11)
}

// countingWAL counts the WAL's StoreLogs, each one fsync.
type countingWAL struct {
	*testWAL
	mu     sync.Mutex
	stores int
}

func (w *countingWAL) StoreLogs(logs []*raft.Log) error {
	w.mu.Lock()
	w.stores++
	w.mu.Unlock()
	return w.testWAL.StoreLogs(logs)
}

// TestGroupsShareTheWrites: sixteen groups writing at once share the
// WAL's writes, so there are fewer of them than the groups' writes, and
// every entry is found after the Log is opened again.
func TestGroupsShareTheWrites(t *testing.T) {
	dir := t.TempDir()
	w := &countingWAL{testWAL: openWAL(t, dir)}
	l, err := Open(w)
	if err != nil {
		t.Fatal(err)
	}
	const groups, writes = 16, 50
	var wg sync.WaitGroup
	for id := uint64(1); id <= groups; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := l.Group(id)
			for i := uint64(1); i <= writes; i++ {
				if err := g.StoreLogs([]*raft.Log{entry(id, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d groups' %d writes took %d writes of the WAL", groups, groups*writes, w.stores)
	if w.stores >= groups*writes || uint64(w.stores) != l.Writes() {
		t.Fatalf("%d groups' %d writes took %d writes of the WAL (Writes says %d): none shared", groups, groups*writes, w.stores, l.Writes())
	}
	l.Close()
	w.testWAL.Close()
	l = openLog(t, dir)
	for id := uint64(1); id <= groups; id++ {
		check(t, l.Group(id), 1, writes)
	}
}

// TestIdleGroupIsCopiedForward: a group that writes nothing while another
// writes much has its entries copied to the WAL's head, so that the WAL's
// oldest entries are removed rather than kept for it; both groups read
// back whole, before and after the Log is opened again.
func TestIdleGroupIsCopiedForward(t *testing.T) {
	defer func(r, tr uint64, b int) { relocateAfter, truncateEvery, relocateBytes = r, tr, b }(relocateAfter, truncateEvery, relocateBytes)
	relocateAfter, truncateEvery, relocateBytes = 64, 16, 200 // a few entries a copy: several upkeeps
	dir := t.TempDir()
	l := openLog(t, dir)
	idle, busy := l.Group(1), l.Group(2)
	store(t, idle, 1, 30)
	if err := idle.DeleteRange(1, 4); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 400; i++ {
		store(t, busy, i, i)
		if i%50 == 0 { // the busy group compacts as it goes
			if err := busy.DeleteRange(1, i-10); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := l.wal.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if first < 300 {
		t.Fatalf("the WAL's first record is %d of %d: its old records were kept", first, l.next-1)
	}
	check(t, idle, 5, 30)
	check(t, busy, 391, 400)
	l = reopen(t, l, dir)
	check(t, l.Group(1), 5, 30)
	check(t, l.Group(2), 391, 400)
	store(t, l.Group(1), 31, 31)
	check(t, l.Group(1), 5, 31)
	// The copied entries are deleted and replaced as any others.
	if err := l.Group(1).DeleteRange(5, 12); err != nil {
		t.Fatal(err)
	}
	if err := l.Group(1).DeleteRange(29, 31); err != nil {
		t.Fatal(err)
	}
	store(t, l.Group(1), 29, 33)
	check(t, l.Group(1), 13, 33)
	l = reopen(t, l, dir)
	check(t, l.Group(1), 13, 33)
	check(t, l.Group(2), 391, 400)
}

// TestClosedLogRefuses: after Close, every call answers ErrClosed.
func TestClosedLogRefuses(t *testing.T) {
	l := openLog(t, t.TempDir())
	g := l.Group(1)
	store(t, g, 1, 3)
	l.Close()
	if err := g.StoreLogs([]*raft.Log{entry(1, 4)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreLogs after Close: %v", err)
	}
	if _, err := g.LastIndex(); !errors.Is(err, ErrClosed) {
		t.Fatalf("LastIndex after Close: %v", err)
	}
	var e raft.Log
	if err := g.GetLog(1, &e); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetLog after Close: %v", err)
	}
}

// failingWAL fails every StoreLogs from the first it is told to.
type failingWAL struct {
	*testWAL
	fail bool
}

func (w *failingWAL) StoreLogs(logs []*raft.Log) error {
	if w.fail {
		return errors.New("input/output error")
	}
	return w.testWAL.StoreLogs(logs)
}

// TestWriteFaultIsFinal: once a write of the WAL fails, every group's
// writes fail, the one that met it and every later one (an fsync that
// failed leaves pages whose state nobody knows).
func TestWriteFaultIsFinal(t *testing.T) {
	w := &failingWAL{testWAL: openWAL(t, t.TempDir())}
	l, err := Open(w)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	store(t, l.Group(1), 1, 3)
	w.fail = true
	if err := l.Group(1).StoreLogs([]*raft.Log{entry(1, 4)}); err == nil {
		t.Fatal("a write the WAL failed succeeded")
	}
	w.fail = false
	if err := l.Group(2).StoreLogs([]*raft.Log{entry(2, 1)}); err == nil {
		t.Fatal("a write after the WAL failed one succeeded")
	}
	check(t, l.Group(1), 1, 3)
}

// TestRecordRoundTrip: each kind of record decodes to what was encoded.
func TestRecordRoundTrip(t *testing.T) {
	for _, rec := range []record{
		{kind: kindAppend, group: 7, entries: []*raft.Log{entry(7, 3), entry(7, 4), {Index: 5, Term: 2, Type: raft.LogConfiguration, Extensions: []byte{1, 2}}}},
		{kind: kindCopy, group: 1 << 60, entries: []*raft.Log{entry(1, 1)}},
		{kind: kindDelete, group: 3, min: 10, max: 1 << 40},
		{kind: kindDrop, group: 9},
	} {
		got, err := decodeRecord(rec.encode())
		if err != nil {
			t.Fatalf("%+v: %v", rec, err)
		}
		if got.kind != rec.kind || got.group != rec.group || got.min != rec.min || got.max != rec.max || len(got.entries) != len(rec.entries) {
			t.Fatalf("decoded %+v, want %+v", got, rec)
		}
		for i, e := range rec.entries {
			g := got.entries[i]
			if g.Index != e.Index || g.Term != e.Term || g.Type != e.Type || !bytes.Equal(g.Data, e.Data) || !bytes.Equal(g.Extensions, e.Extensions) || !g.AppendedAt.Equal(e.AppendedAt) {
				t.Fatalf("entry %d decoded %+v, want %+v", i, g, e)
			}
		}
	}
	if _, err := decodeRecord([]byte{kindAppend, 1, 200}); !errors.Is(err, errDamaged) {
		t.Fatalf("a record cut short: %v", err)
	}
}

// FuzzDecodeRecord: no input makes the decoder panic, and what it
// accepts encodes back to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(record{kind: kindAppend, group: 1, entries: []*raft.Log{entry(1, 1), entry(1, 2)}}.encode())
	f.Add(record{kind: kindDelete, group: 1, min: 1, max: 4}.encode())
	f.Add(record{kind: kindDrop, group: 2}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		if again, err := decodeRecord(rec.encode()); err != nil || again.kind != rec.kind || again.group != rec.group || len(again.entries) != len(rec.entries) {
			t.Fatalf("%x decoded to %+v, which encodes to what decodes to %+v, %v", b, rec, again, err)
		}
	})
}
