package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// liveDedups returns copies of a table's live records, oldest first,
// and its MessageIds that are not UUIDs.
func liveDedups(t *dedupTable) ([]dedupRecord, map[dedupKey]*string) {
	c := t.capture()
	var out []dedupRecord
	c.each(func(r *dedupRecord, _ msgID) error {
		out = append(out, *r)
		return nil
	})
	return out, c.others
}

// TestDedupTableModel drives a dedupTable and a map with the same random
// pushes (new keys and keys sent again) and expiries, checking after each
// step that both hold the same live records in the same order, through
// growth, shrinking and wrap-around of both arrays.
func TestDedupTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab dedupTable
	type entry struct {
		key dedupKey
		at  int64
		id  string // MessageId: a UUID or not
	}
	var model []entry // live records, oldest first
	latest := map[dedupKey]int64{}
	now := int64(0)
	check := func(step int) {
		t.Helper()
		if tab.Len() != len(model) {
			t.Fatalf("step %d: %d live records, want %d", step, tab.Len(), len(model))
		}
		if len(model) > 0 && tab.front().key != model[0].key {
			t.Fatalf("step %d: the front is not the oldest live record", step)
		}
		if step%101 != 0 {
			return // the full comparison every 101 steps
		}
		live, others := liveDedups(&tab)
		if len(others) != len(tab.others) {
			t.Fatalf("step %d: %d other ids copied of %d", step, len(others), len(tab.others))
		}
		for i, e := range model {
			if live[i].key != e.key || live[i].at != e.at {
				t.Fatalf("step %d: record %d = %x@%d, want %x@%d", step, i, live[i].key[:4], live[i].at, e.key[:4], e.at)
			}
			if r := tab.get(e.key); r == nil || r.at != e.at || tab.messageID(r).String() != e.id {
				t.Fatalf("step %d: get(%x) = %v, want time %d and id %s", step, e.key[:4], r, e.at, e.id)
			}
		}
	}
	for step := range 40000 {
		now++
		// Phases of growth and decay, so both arrays grow and shrink.
		grow := (step/5000)%2 == 0
		switch r := rng.IntN(10); {
		case r < 6 && grow || r < 3:
			k := dedupKeyOf("", strconv.Itoa(rng.IntN(20000)))
			if _, ok := latest[k]; ok {
				// Sent again: supersedes the old record.
				for i := range model {
					if model[i].key == k {
						model = append(model[:i], model[i+1:]...)
						break
					}
				}
			}
			id := fmt.Sprintf("%08x-0000-4000-8000-%012x", now, now)
			if rng.IntN(4) == 0 {
				id = "id-" + strconv.Itoa(int(now)) // not a UUID: kept beside the record
			}
			tab.push(dedupRecord{key: k, at: now, seq: uint64(now)}, makeMsgID(id))
			model = append(model, entry{k, now, id})
			latest[k] = now
		case len(model) > 0:
			// Expire the oldest live record.
			delete(latest, model[0].key)
			model = model[1:]
			tab.popFront()
		}
		check(step)
	}
	for len(model) > 0 {
		model = model[1:]
		tab.popFront()
	}
	check(-1)
	if !tab.empty() || cap(tab.recs) > shrinkAbove || len(tab.others) != 0 {
		t.Fatalf("emptied table holds %d records in an array of %d", tab.n, cap(tab.recs))
	}
}

// TestDedupKeyScopes checks that the key tells the scope's group from the
// id, whatever their lengths.
func TestDedupKeyScopes(t *testing.T) {
	keys := map[dedupKey]string{}
	for _, gi := range [][2]string{{"", "abc"}, {"a", "bc"}, {"ab", "c"}, {"abc", ""}, {"", ""}, {"a", "b"}} {
		k := dedupKeyOf(gi[0], gi[1])
		if prev, ok := keys[k]; ok {
			t.Fatalf("(%q, %q) has the key of %s", gi[0], gi[1], prev)
		}
		keys[k] = strconv.Quote(gi[0]) + "," + strconv.Quote(gi[1])
	}
}

// TestSnapshotVersion1Dedup restores a snapshot whose deduplication
// records are in the layout of format version 1 (group and id strings):
// the restored engine must be the one that wrote the snapshot, and go on
// deduplicating the ids it kept.
func TestSnapshotVersion1Dedup(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	gq := h.fifoQueue("g.fifo", map[string]string{api.AttrDeduplicationScope: "messageGroup", api.AttrFifoThroughputLimit: "perMessageGroupId"})
	type sent struct{ group, id string }
	ids := map[string][]sent{}
	first := map[string]string{}
	for i := range 40 {
		for _, k := range []api.QueueKey{q, gq} {
			g, d := "g"+strconv.Itoa(i%3), "d"+strconv.Itoa(i)
			r := h.sendFIFO(k, "body", g, d)
			scope := ""
			if k == gq {
				scope = g
			}
			ids[k.Name] = append(ids[k.Name], sent{scope, d})
			first[k.Name+"/"+d] = r.MessageId
		}
		h.advance(1)
	}
	good := snapshotBytes(t, h.e)
	p := parseSnapshot(t, good)
	p.Version = 1
	for i := range p.Queues {
		pq := &p.Queues[i]
		if pq.Q.Dedups == 0 {
			continue
		}
		n := 0
		for j := range pq.Chunks {
			c := &pq.Chunks[j]
			r := recordReader{buf: c.DedupData}
			var w recordWriter
			for range c.Dedups {
				d, id, err := r.dedup(snapVersion)
				if err != nil {
					t.Fatal(err)
				}
				s := ids[pq.Q.Name][n]
				if d.key != dedupKeyOf(s.group, s.id) {
					t.Fatalf("%s: record %d is not the key of %v", pq.Q.Name, n, s)
				}
				n++
				w.str(s.group)
				w.str(s.id)
				w.varint(d.at)
				w.str(id.String())
				w.uvarint(d.seq)
			}
			c.DedupData = w.buf
		}
	}
	old := p.encode(t)
	e := New(Config{Region: testRegion})
	if err := e.Restore(bytes.NewReader(old)); err != nil {
		t.Fatalf("Restore of a version 1 snapshot: %v", err)
	}
	if again := snapshotBytes(t, e); !bytes.Equal(again, good) {
		t.Fatal("the engine restored from version 1 differs from the one that wrote it")
	}
	h.e = e
	for _, k := range []api.QueueKey{q, gq} {
		if r := h.sendFIFO(k, "other", "g1", "d7"); r.MessageId != first[k.Name+"/d7"] {
			t.Errorf("%s: a duplicate of d7 after the restore got %s, want %s", k.Name, r.MessageId, first[k.Name+"/d7"])
		}
	}
	if r := h.sendFIFO(gq, "other", "g2", "d7"); r.MessageId == first["g.fifo/d7"] {
		t.Error("group scope: d7 in another group was deduplicated")
	}
}

// TestDedupTableReserve checks that a reserved table takes its records
// without growing either array.
func TestDedupTableReserve(t *testing.T) {
	var tab dedupTable
	tab.reserve(3000)
	recs, index := len(tab.recs), len(tab.index)
	for i := range 3000 {
		tab.push(dedupRecord{key: dedupKeyOf("", strconv.Itoa(i)), at: int64(i)}, msgID{})
	}
	if len(tab.recs) != recs || len(tab.index) != index || tab.Len() != 3000 {
		t.Fatalf("arrays %d, %d after reserve grew to %d, %d; %d live", recs, index, len(tab.recs), len(tab.index), tab.Len())
	}
	for i := range 3000 {
		if r := tab.get(dedupKeyOf("", strconv.Itoa(i))); r == nil || r.at != int64(i) {
			t.Fatalf("record %d: %v", i, r)
		}
	}
}

// TestHandleOfMessageMovedBack checks that a receipt handle still names a
// message that left its queue for the dead-letter queue and came back by
// a move task, although the message was not received since: the queue
// indexes by serial only the messages a handle may name (see handleable),
// and a moved message is one of them.
func TestHandleOfMessageMovedBack(t *testing.T) {
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	q := h.createQueue("src", map[string]string{
		api.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + dlq.ARN(testRegion) + `","maxReceiveCount":1}`,
	})
	h.send(q, &api.SendMessageRequest{MessageBody: "m"})
	got := h.receive(q, 1, 0)
	if len(got) != 1 {
		t.Fatalf("received %d messages", len(got))
	}
	old := got[0].ReceiptHandle
	h.advance(time.Second)
	if again := h.receive(q, 1, 30); len(again) != 0 {
		t.Fatalf("the message was received again instead of dead-lettered")
	}
	h.must(api.QueueKey{}, &api.StartMessageMoveTaskRequest{SourceArn: dlq.ARN(testRegion), DestinationArn: q.ARN(testRegion)})
	for range 10 {
		h.advance(time.Second)
		if _, err := h.raw(api.QueueKey{}, &TickRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.stored(q); n != 1 {
		t.Fatalf("%d messages back in the source queue, want 1", n)
	}
	if err := h.deleteMsg(q, old); err != nil {
		t.Fatalf("delete with the handle of the first receive: %v", err)
	}
	if n := h.stored(q); n != 0 {
		t.Fatalf("the handle of the first receive did not delete the message: %d left", n)
	}
}

// TestDedupTableFrozen checks that records a snapshot view reads stay as
// they were while the view is open: pushes that wrap around into their
// slots, and a push that supersedes one of them, move the table to a new
// buffer instead.
func TestDedupTableFrozen(t *testing.T) {
	var tab dedupTable
	key := func(i int) dedupKey { return dedupKeyOf("", strconv.Itoa(i)) }
	for i := range 16 {
		tab.push(dedupRecord{key: key(i), at: int64(i)}, msgID{})
	}
	cow := &cowState{gen: 1, active: true}
	c := tab.capture()
	tab.freeze(cow)
	want, _ := liveDedups(&tab)
	for range 8 {
		tab.popFront() // expired: slots free, but the view reads them
	}
	tab.push(dedupRecord{key: key(12), at: 100}, msgID{}) // supersedes a frozen record
	for i := 16; i < 24; i++ {
		tab.push(dedupRecord{key: key(i), at: int64(100 + i)}, msgID{}) // into the freed slots
	}
	var got []dedupRecord
	c.each(func(r *dedupRecord, _ msgID) error {
		got = append(got, *r)
		return nil
	})
	if len(got) != len(want) {
		t.Fatalf("the view reads %d records, %d when it was taken", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d changed under the view: %+v, was %+v", i, got[i], want[i])
		}
	}
	if r := tab.get(key(12)); r == nil || r.at != 100 {
		t.Fatalf("the superseding record: %+v", r)
	}
	// Once the view is released, the table writes its buffer again.
	cow.active = false
	if tab.isFrozen(tab.head) {
		t.Fatal("frozen after the view was released")
	}
}
