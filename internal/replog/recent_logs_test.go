package replog

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// countingStore is an in-memory log store that counts the reads that
// reach it, and fails the appends it is told to.
type countingStore struct {
	*raft.InmemStore
	reads int
	fail  error
}

func (s *countingStore) GetLog(index uint64, log *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(index, log)
}

func (s *countingStore) StoreLogs(logs []*raft.Log) error {
	if s.fail != nil {
		return s.fail
	}
	return s.InmemStore.StoreLogs(logs)
}

func entryOf(index uint64, size int, tag string) *raft.Log {
	data := bytes.Repeat([]byte{'x'}, size)
	copy(data, tag)
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}

// TestRecentLogsServesWhatWasStored checks that recentLogs answers reads
// of recent entries itself, with the entries stored, and passes every
// other read to the store: older entries, entries too large to keep,
// entries a failed append did not store, and every entry after a
// deletion, whose indexes a follower may then append again with other
// entries.
func TestRecentLogsServesWhatWasStored(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	r := newRecentLogs(store)
	read := func(index uint64) *raft.Log {
		t.Helper()
		var log raft.Log
		if err := r.GetLog(index, &log); err != nil {
			t.Fatalf("GetLog(%d): %v", index, err)
		}
		return &log
	}
	fromStore := func(what string, index uint64, want bool) {
		t.Helper()
		before := store.reads
		read(index)
		if got := store.reads > before; got != want {
			t.Fatalf("%s: read of entry %d reached the store: %v, want %v", what, index, got, want)
		}
	}

	var logs []*raft.Log
	for i := uint64(1); i <= 100; i++ {
		logs = append(logs, entryOf(i, 100, fmt.Sprintf("entry %d", i)))
	}
	if err := r.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 100; i++ {
		if got := read(i); got.Index != i || !bytes.HasPrefix(got.Data, fmt.Appendf(nil, "entry %d", i)) {
			t.Fatalf("entry %d read back as %d %q", i, got.Index, got.Data[:12])
		}
	}
	fromStore("the newest", 100, false)
	fromStore(fmt.Sprintf("the oldest kept (%d kept)", recentLogsCount), 100-recentLogsCount+1, false)
	fromStore("one older than the ring", 100-recentLogsCount, true)

	// An entry of more than a quarter of the byte limit is not kept.
	if err := r.StoreLog(entryOf(101, recentLogsBytes/4+1, "large")); err != nil {
		t.Fatal(err)
	}
	fromStore("a large entry", 101, true)

	// Entries that together pass the byte limit push the oldest out.
	quarter := recentLogsBytes / 4
	if err := r.StoreLogs([]*raft.Log{entryOf(102, quarter, "a"), entryOf(103, quarter, "b"), entryOf(104, quarter, "c"),
		entryOf(105, quarter, "d"), entryOf(106, quarter, "e")}); err != nil {
		t.Fatal(err)
	}
	if r.bytes > r.limit {
		t.Fatalf("the ring holds %d bytes, over its limit of %d", r.bytes, r.limit)
	}
	fromStore("the newest of large ones", 106, false)
	fromStore("the fourth newest of large ones", 103, false)
	fromStore("the first of large ones, pushed out", 102, true)
	fromStore("a small one before them, pushed out", 100, true)

	// A failed append keeps nothing.
	store.fail = errors.New("disk on fire")
	if err := r.StoreLog(entryOf(107, 10, "failed")); err == nil {
		t.Fatal("a failed append returned no error")
	}
	store.fail = nil
	var log raft.Log
	if err := r.GetLog(107, &log); err == nil {
		t.Fatal("an entry whose append failed is read back")
	}

	// After a deletion, reads go to the store, and an index appended
	// again reads back as its new entry.
	if err := r.DeleteRange(105, 106); err != nil {
		t.Fatal(err)
	}
	fromStore("after a deletion", 104, true)
	if err := r.StoreLogs([]*raft.Log{entryOf(105, 10, "again")}); err != nil {
		t.Fatal(err)
	}
	if got := read(105); !bytes.HasPrefix(got.Data, []byte("again")) {
		t.Fatalf("entry 105 appended again read back as %q", got.Data)
	}
}

// monotonicStore is a log store that says, as raft-wal does, that it
// takes only entries that follow its last.
type monotonicStore struct{ *raft.InmemStore }

func (monotonicStore) IsMonotonic() bool { return true }

// TestRecentLogsKeepsTheStoreMonotonic checks that raft-wal's answer to
// IsMonotonic reaches Raft through recentLogs and storeGate: without it,
// a follower that installs a snapshot keeps its old entries and refuses
// every one after the snapshot.
func TestRecentLogsKeepsTheStoreMonotonic(t *testing.T) {
	var store raft.LogStore = &storeGate{LogStore: newRecentLogs(monotonicStore{raft.NewInmemStore()})}
	if m, ok := store.(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
		t.Fatal("the log store Raft is given does not say it is monotonic")
	}
}

// applyFuture stands for hashicorp/raft's: a leader hands its log store
// pointers to the Log inside each Apply's future, which also holds the
// state machine's answer.
type applyFuture struct {
	log    raft.Log
	answer []byte
}

// discardStore takes every append and keeps nothing.
type discardStore struct{ raft.LogStore }

func (discardStore) StoreLogs([]*raft.Log) error { return nil }

// TestRecentLogsKeepsOnlyTheEntry checks that recentLogs keeps an entry,
// not the future around it: keeping the pointer Raft hands over kept each
// answer alive (the bodies of a receive's messages), and a server with a
// backlog of 1 MB messages ran out of memory draining it
// (TestBacklogLargerThanMemory).
func TestRecentLogsKeepsOnlyTheEntry(t *testing.T) {
	r := newRecentLogs(discardStore{})
	collected := make(chan struct{})
	func() {
		f := &applyFuture{log: raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("entry")}, answer: make([]byte, 1<<20)}
		runtime.SetFinalizer(f, func(*applyFuture) { close(collected) })
		if err := r.StoreLogs([]*raft.Log{&f.log}); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			var log raft.Log
			if err := r.GetLog(1, &log); err != nil || string(log.Data) != "entry" {
				t.Fatalf("the entry kept reads back as %q (%v)", log.Data, err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the future of an entry kept was not collected: the ring keeps it alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
