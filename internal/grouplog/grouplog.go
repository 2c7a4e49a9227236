// Package grouplog keeps the Raft logs of many groups in one write-ahead
// log, so that the shards a node holds share one stream of writes and one
// fsync for whatever they all appended meanwhile, as TiKV's Raft Engine
// and CockroachDB's one store per node do: with a log of its own, a shard
// that sees a sixteenth of a node's load gathers nothing into its fsyncs,
// and sixteen of them cost up to sixteen times the fsyncs of one
// (docs/benchmarks.md, "What a log per group costs in fsyncs").
//
// A Log lies over one WAL (raft-wal, whose segments, fault handling and
// space checks it keeps) whose entries are records: one entry of one
// group appended, or copied forward; a range of a group's entries
// deleted; a group dropped. A Group is one group's view, a raft.LogStore
// and raft.StableStore that hashicorp/raft is given as if it were a log
// of its own. Every write of every group goes to one goroutine, which
// writes all that is waiting as one StoreLogs of the WAL, one fsync, and
// answers each writer once it is durable.
//
// Each group's entries are found through an index in memory built by
// reading the WAL once at Open: runs of the group's entries held by
// consecutive WAL entries, one Raft entry in each, so that reading an
// entry reads its own record and nothing more. The WAL's oldest entries are removed
// once no group's live entries are in them; a group idle for long, whose
// entries would keep the whole WAL since them, has its live entries copied
// to the head (relocate), so that the WAL's size follows what the groups
// hold, not the age of the oldest.
package grouplog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/hashicorp/raft"
)

// WAL is the log a Log writes its records into: indexes contiguous from
// its first to its last, a StoreLogs durable when it returns, deletions of
// a prefix. raft-wal is one.
type WAL interface {
	raft.LogStore
	raft.StableStore
}

// ErrClosed is what a Group answers once its Log is closed.
var ErrClosed = errors.New("grouplog: closed")

// Settings of a Log's upkeep, variables for the tests.
var (
	// truncateEvery is how many of the WAL's oldest entries must be free
	// of live entries before they are removed: each removal writes the
	// WAL's meta database, with an fsync of its own.
	truncateEvery uint64 = 1024
	// relocateAfter is how many WAL entries may lie between a group's
	// oldest live entry and the newest before its live entries are copied
	// forward, if it has appended nothing for half as many. A group that
	// writes compacts its own log as Raft snapshots it; one that does not
	// (an idle shard, a replica closed as the map moved it away) never
	// would.
	relocateAfter uint64 = 1 << 17
	// relocateBytes bounds the entries one upkeep copies forward: the
	// copy holds up every group's writes while it is written, so a large
	// group is copied over several, its oldest entries first.
	relocateBytes = 4 << 20
)

// Log is the one log of many groups. Its methods and its Groups' are safe
// for concurrent use.
type Log struct {
	wal WAL

	mu      sync.Mutex
	cond    *sync.Cond // signalled when pending grows or the log closes
	groups  map[uint64]*group
	pending []*request
	closed  bool
	failed  error  // the first error of writing the WAL: every write after fails
	next    uint64 // the WAL index the next record takes
	first   uint64 // the WAL's first index (0: empty)

	writes  uint64 // StoreLogs of the WAL, each one fsync
	stopped chan struct{}
}

// group is one group's entries as the Log knows them: those durable
// (first..last, found through runs) and, for checking new writes, those
// once the pending writes are durable (nextFirst..nextLast).
type group struct {
	first, last         uint64 // 0, 0: empty
	runs                []run  // ascending, covering first..last exactly
	nextFirst, nextLast uint64
	appendedAt          uint64 // the WAL index of its last append
}

// run is a run of a group's entries, first..last, held by the WAL's
// entries at..at+last-first, one each.
type run struct {
	first, last uint64
	at          uint64 // the WAL index of the record holding entry first
}

// walIndex returns the WAL index of the record holding entry i of r.
func (r run) walIndex(i uint64) uint64 { return r.at + i - r.first }

// request is one write waiting for the writer: a record, and where its
// outcome is sent.
type request struct {
	rec  record
	done chan error
}

// Open reads wal and returns the Log over it, its groups as wal holds
// them. The Log writes into wal until Close, which does not close wal.
func Open(wal WAL) (*Log, error) {
	l := &Log{wal: wal, groups: map[uint64]*group{}, stopped: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	if err := l.replay(); err != nil {
		return nil, err
	}
	go l.write()
	return l, nil
}

// replay builds the groups' indexes from the WAL's records.
func (l *Log) replay() error {
	first, err := l.wal.FirstIndex()
	if err != nil {
		return fmt.Errorf("grouplog: read the log's first index: %w", err)
	}
	last, err := l.wal.LastIndex()
	if err != nil {
		return fmt.Errorf("grouplog: read the log's last index: %w", err)
	}
	l.first, l.next = first, last+1
	if last == 0 {
		l.first, l.next = 0, 1
	}
	for at := first; at != 0 && at <= last; at++ {
		var e raft.Log
		if err := l.wal.GetLog(at, &e); err != nil {
			return fmt.Errorf("grouplog: read record %d: %w", at, err)
		}
		rec, err := decodeRecord(e.Data)
		if err != nil {
			return fmt.Errorf("grouplog: record %d: %w", at, err)
		}
		if err := l.apply(rec, at); err != nil {
			return fmt.Errorf("grouplog: record %d: %w", at, err)
		}
	}
	for id, g := range l.groups {
		if !g.whole() {
			return fmt.Errorf("grouplog: group %d: the log does not hold every entry of %d..%d", id, g.first, g.last)
		}
		g.nextFirst, g.nextLast = g.first, g.last
	}
	return nil
}

// Group returns the view of group id, a log of its own to Raft: empty if
// the Log holds nothing of it.
func (l *Log) Group(id uint64) *Group {
	return &Group{log: l, id: id}
}

// Groups returns the ids of the groups the Log holds entries of,
// ascending.
func (l *Log) Groups() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]uint64, 0, len(l.groups))
	for id, g := range l.groups {
		if g.last != 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Drop forgets every entry of group id, durably: a replica removed from
// the node, whose log is not to come back with it.
func (l *Log) Drop(id uint64) error {
	return l.submit(record{kind: kindDrop, group: id})
}

// Writes returns how many writes (each one fsync) the Log has made of the
// WAL.
func (l *Log) Writes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

// Close stops the writer once what is waiting is written, and answers
// every later call with ErrClosed. It does not close the WAL.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.cond.Broadcast()
	}
	l.mu.Unlock()
	<-l.stopped
	return nil
}

// submit hands rec to the writer, once it is checked against the group's
// entries as they will be when what waits before it is written, and waits
// until it is durable.
func (l *Log) submit(rec record) error {
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return ErrClosed
	case l.failed != nil:
		err := l.failed
		l.mu.Unlock()
		return err
	}
	g := l.groups[rec.group]
	if g == nil {
		g = &group{}
	}
	nf, nl, err := rangeAfter(rec, g.nextFirst, g.nextLast)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	if nf == g.nextFirst && nl == g.nextLast && rec.kind == kindDelete {
		l.mu.Unlock()
		return nil // deletes nothing
	}
	g.nextFirst, g.nextLast = nf, nl
	l.groups[rec.group] = g
	req := &request{rec: rec, done: make(chan error, 1)}
	l.pending = append(l.pending, req)
	l.cond.Signal()
	l.mu.Unlock()
	return <-req.done
}

// rangeAfter returns the range a group of entries first..last holds once
// rec (an append, a deletion or a drop) is applied, or why rec cannot be:
// an append must follow the group's last entry (any index, if the group
// is empty), a deletion take a prefix or a suffix, as raft.LogStore's
// callers do.
func rangeAfter(rec record, first, last uint64) (uint64, uint64, error) {
	switch rec.kind {
	case kindAppend:
		if len(rec.entries) == 0 {
			return first, last, nil
		}
		a, b := rec.entries[0].Index, rec.entries[len(rec.entries)-1].Index
		if last != 0 && a != last+1 {
			return first, last, fmt.Errorf("grouplog: group %d: entry %d appended after %d", rec.group, a, last)
		}
		if last == 0 {
			first = a
		}
		return first, b, nil
	case kindDelete:
		lo, hi := rec.min, rec.max
		switch {
		case last == 0 || lo > hi || hi < first || lo > last:
			return first, last, nil
		case lo <= first && hi >= last:
			return 0, 0, nil
		case lo <= first:
			return hi + 1, last, nil
		case hi >= last:
			return first, lo - 1, nil
		default:
			return first, last, fmt.Errorf("grouplog: group %d: only a prefix or a suffix of the log is deleted, not %d..%d of %d..%d", rec.group, lo, hi, first, last)
		}
	case kindDrop:
		return 0, 0, nil
	}
	return first, last, fmt.Errorf("grouplog: record of unknown kind %d", rec.kind)
}

// apply makes rec, durable at WAL index at, part of its group's index.
func (l *Log) apply(rec record, at uint64) error {
	g := l.groups[rec.group]
	if g == nil {
		g = &group{}
		l.groups[rec.group] = g
	}
	if rec.kind == kindCopy {
		g.cover(rec, at)
		return nil
	}
	first, last, err := rangeAfter(rec, g.first, g.last)
	if err != nil {
		return err
	}
	switch rec.kind {
	case kindAppend:
		if len(rec.entries) > 0 {
			g.runs = appendRun(g.runs, run{first: rec.entries[0].Index, last: rec.entries[len(rec.entries)-1].Index, at: at})
			g.appendedAt = at
		}
	case kindDelete, kindDrop:
		g.runs = clip(g.runs, first, last)
	}
	g.first, g.last = first, last
	if g.last == 0 && g.nextLast == 0 {
		delete(l.groups, rec.group)
	}
	return nil
}

// appendRun adds r after the last of runs, extending it when r continues
// it both in the group's indexes and in the WAL's.
func appendRun(runs []run, r run) []run {
	if n := len(runs); n > 0 {
		if p := &runs[n-1]; p.last+1 == r.first && p.walIndex(r.first) == r.at {
			p.last = r.last
			return runs
		}
	}
	return append(runs, r)
}

// part returns the part first..last of r, which must lie within it.
func (r run) part(first, last uint64) run {
	return run{first: first, last: last, at: r.walIndex(first)}
}

// clip returns the runs covering first..last alone (none if last is 0).
func clip(runs []run, first, last uint64) []run {
	if last == 0 {
		return nil
	}
	out := runs[:0]
	for _, r := range runs {
		if r.last < first || r.first > last {
			continue
		}
		out = append(out, r.part(max(r.first, first), min(r.last, last)))
	}
	return out
}

// cover points the group's entries that the copy rec holds at rec's WAL
// index. A copy holds entries the group had when it was made, so the
// group's range grows to include them: when the Log is read at Open, the
// records before the copy that held them may be gone (removed once the
// copy was durable), and the group as read so far is then a part of what
// it was. Between the copies of one relocation a group read so may have a
// gap, which the last copy fills (checked at the end of replay).
func (g *group) cover(rec record, at uint64) {
	if len(rec.entries) == 0 {
		return
	}
	a, b := rec.entries[0].Index, rec.entries[len(rec.entries)-1].Index
	if g.last == 0 {
		g.first, g.last = a, b
	} else {
		g.first, g.last = min(g.first, a), max(g.last, b)
	}
	out := make([]run, 0, len(g.runs)+2)
	for _, r := range g.runs {
		if r.last < a || r.first > b {
			out = append(out, r)
			continue
		}
		if r.first < a {
			out = append(out, r.part(r.first, a-1))
		}
		if r.last > b {
			out = append(out, r.part(b+1, r.last))
		}
	}
	out = append(out, run{first: a, last: b, at: at})
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	g.runs = out
}

// oldestRecord returns the WAL index of the oldest record holding one of
// the group's entries: not always its first entry's, once part of its
// entries were copied forward.
func (g *group) oldestRecord() uint64 {
	at := g.runs[0].at
	for _, r := range g.runs[1:] {
		at = min(at, r.at)
	}
	return at
}

// whole reports whether the group's runs cover first..last, each entry
// once.
func (g *group) whole() bool {
	if g.last == 0 {
		return len(g.runs) == 0
	}
	next := g.first
	for _, r := range g.runs {
		if r.first != next || r.last < r.first {
			return false
		}
		next = r.last + 1
	}
	return next == g.last+1
}

// write is the writer: it writes what waits as one StoreLogs of the WAL,
// then answers each request, until the Log closes with nothing waiting.
func (l *Log) write() {
	defer close(l.stopped)
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.pending) == 0 {
			l.mu.Unlock()
			return
		}
		batch := l.pending
		l.pending = nil
		failed := l.failed
		start := l.next
		l.mu.Unlock()

		recs := make([]record, 0, len(batch))
		at := make([]uint64, len(batch)) // the WAL index of each request's first record
		for i, req := range batch {
			at[i] = start + uint64(len(recs))
			recs = append(recs, req.rec.split()...)
		}
		err := failed
		if err == nil {
			err = l.store(recs, start)
		}
		l.mu.Lock()
		if err == nil {
			for i, req := range batch {
				if aerr := l.apply(req.rec, at[i]); aerr != nil && err == nil {
					err = aerr // the checks of submit passed: a fault of this package
				}
			}
			l.next = start + uint64(len(recs))
			if l.first == 0 {
				l.first = start
			}
			l.writes++
		}
		if err != nil && l.failed == nil {
			l.failed = err
		}
		l.mu.Unlock()
		for _, req := range batch {
			req.done <- err
		}
		if err == nil {
			l.upkeep()
		}
	}
}

// store writes recs as the WAL's entries from start on, in one write.
func (l *Log) store(recs []record, start uint64) error {
	entries := make([]*raft.Log, len(recs))
	for i, rec := range recs {
		entries[i] = &raft.Log{Index: start + uint64(i), Term: 1, Type: raft.LogCommand, Data: rec.encode()}
	}
	if err := l.wal.StoreLogs(entries); err != nil {
		return fmt.Errorf("grouplog: write %d records: %w", len(entries), err)
	}
	return nil
}

// upkeep, on the writer after a write, removes the WAL's oldest entries
// once enough of them hold nothing live, and copies forward the live
// entries of a group that keeps too many of them.
func (l *Log) upkeep() {
	l.mu.Lock()
	oldest := l.next // the WAL index of the oldest live entry
	var stale []uint64
	for id, g := range l.groups {
		if len(g.runs) == 0 {
			continue
		}
		at := g.oldestRecord()
		oldest = min(oldest, at)
		if l.next-at > relocateAfter && l.next-g.appendedAt > relocateAfter/2 {
			stale = append(stale, id)
		}
	}
	first := l.first
	l.mu.Unlock()
	slices.Sort(stale)
	for _, id := range stale {
		if err := l.relocate(id); err != nil {
			return // a fault of the WAL: the next write answers it
		}
	}
	if len(stale) > 0 {
		return // the next upkeep sees the copies
	}
	if first == 0 || oldest-first < truncateEvery {
		return
	}
	if err := l.wal.DeleteRange(first, oldest-1); err != nil {
		l.mu.Lock()
		if l.failed == nil {
			l.failed = fmt.Errorf("grouplog: remove records %d..%d: %w", first, oldest-1, err)
		}
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.first = oldest
	l.mu.Unlock()
}

// relocate copies group id's oldest live entries, up to relocateBytes of
// them, to the WAL's head, one record each, written at once; the next
// upkeep copies more if the group still holds old records. Until the
// copies are durable the old records stay where the group's index points,
// so a copy cut short by a crash leaves the group whole.
func (l *Log) relocate(id uint64) error {
	l.mu.Lock()
	g := l.groups[id]
	if g == nil || g.last == 0 {
		l.mu.Unlock()
		return nil
	}
	// The entries of the oldest records first: after a copy cut at
	// relocateBytes, the group's first entries are no longer its oldest.
	runs := slices.Clone(g.runs)
	l.mu.Unlock()
	slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.at, b.at) })
	// Only this goroutine writes, so the group keeps these entries while
	// they are read (a deletion waits for it).
	var recs []record
	size := 0
	for _, r := range runs {
		for i := r.first; i <= r.last && size < relocateBytes; i++ {
			e := new(raft.Log)
			if err := l.getLog(id, i, e); err != nil {
				return err
			}
			recs = append(recs, record{kind: kindCopy, group: id, entries: []*raft.Log{e}})
			size += len(e.Data) + len(e.Extensions) + 32
		}
	}
	l.mu.Lock()
	start := l.next
	l.mu.Unlock()
	err := l.store(recs, start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.failed == nil {
			l.failed = err
		}
		return err
	}
	for i, rec := range recs {
		_ = l.apply(rec, start+uint64(i)) // a copy is never refused
	}
	l.next = start + uint64(len(recs))
	l.writes++
	return nil
}

// getLog reads entry index of group id into out.
func (l *Log) getLog(id, index uint64, out *raft.Log) error {
	l.mu.Lock()
	g := l.groups[id]
	if g == nil || g.last == 0 || index < g.first || index > g.last {
		l.mu.Unlock()
		return raft.ErrLogNotFound
	}
	i := sort.Search(len(g.runs), func(i int) bool { return g.runs[i].last >= index })
	if i == len(g.runs) || g.runs[i].first > index {
		l.mu.Unlock()
		return fmt.Errorf("grouplog: group %d: entry %d missing from its index", id, index)
	}
	at := g.runs[i].walIndex(index)
	l.mu.Unlock()
	var e raft.Log
	if err := l.wal.GetLog(at, &e); errors.Is(err, raft.ErrLogNotFound) {
		// Removed since the index was read: the group deleted the entry
		// meanwhile. Raft compares with ErrLogNotFound itself (a
		// follower's entries gone, it sends a snapshot).
		return raft.ErrLogNotFound
	} else if err != nil {
		return fmt.Errorf("grouplog: group %d: read record %d: %w", id, at, err)
	}
	rec, err := decodeRecord(e.Data)
	if err != nil {
		return fmt.Errorf("grouplog: record %d: %w", at, err)
	}
	if rec.group != id || len(rec.entries) != 1 || rec.entries[0].Index != index {
		return fmt.Errorf("grouplog: record %d does not hold entry %d of group %d", at, index, id)
	}
	*out = *rec.entries[0]
	return nil
}

// bounds returns group id's first and last index (0, 0: empty).
func (l *Log) bounds(id uint64) (uint64, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, 0, ErrClosed
	}
	if g := l.groups[id]; g != nil {
		return g.first, g.last, nil
	}
	return 0, 0, nil
}

// stableKey is the key in the WAL's stable store of group id's key.
func stableKey(id uint64, key []byte) []byte {
	return append([]byte("grouplog/"+strconv.FormatUint(id, 10)+"/"), key...)
}
