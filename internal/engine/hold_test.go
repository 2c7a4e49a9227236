package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// wantHeld fails unless applying req on q is refused for a hold.
func wantHeld(t *testing.T, h *harness, q api.QueueKey, req api.Request) {
	t.Helper()
	if _, err := h.raw(q, req); !IsHeld(err) {
		t.Fatalf("%s during a hold: %v, want the hold's refusal", req.Action(), err)
	}
}

// TestHoldDeparturesKeepsWhatLeaves holds an engine's departures as a
// backup does (hold.go): while the hold lasts, an outbox is not settled,
// a moved queue's old copy is not dropped, and no move starts or installs;
// the hold survives a snapshot, and once it is lifted, or ends by itself,
// each goes through.
func TestHoldDeparturesKeepsWhatLeaves(t *testing.T) {
	a, b, q, dlq := partedPair(t)
	deadLetterAll(t, a, q, 2)
	batches, err := allOutboxes(a.e, 1<<20)
	if err != nil || len(batches) != 1 {
		t.Fatalf("Outboxes = %+v, %v", batches, err)
	}
	bt := batches[0]
	b.now = a.now
	b.internal(dlq, bt.Take) // the destination takes, as a relay's first step
	// A queue fenced for a move before the hold.
	other := a.createQueue("other", nil)
	a.internal(other, &FenceQueueRequest{Move: "m-1"})
	var image bytes.Buffer
	if err := a.e.ExportQueue(other, "m-1", &image); err != nil {
		t.Fatal(err)
	}

	a.internal(api.QueueKey{}, &HoldDeparturesRequest{ID: "backup-1", Until: a.now + int64(time.Minute)})
	settle := &SettleOutboxRequest{Created: bt.Created, Through: bt.Through}
	wantHeld(t, a, q, settle)
	if got := outboxIDs(t, a.e, q); len(got) != 2 {
		t.Fatalf("outbox holds %v during the hold, want both messages", got)
	}
	// The fenced queue is neither installed elsewhere nor dropped, and
	// no new move fences a queue.
	b.internal(api.QueueKey{}, &HoldDeparturesRequest{ID: "backup-1", Until: b.now + int64(time.Minute)})
	wantHeld(t, b, other, &InstallQueueRequest{Move: "m-1", Image: image.Bytes()})
	wantHeld(t, a, other, &DropQueueRequest{Move: "m-1"})
	wantHeld(t, a, q, &FenceQueueRequest{Move: "m-2", Spanning: true})
	// A step done before the hold is done again as before: the fence of
	// the same move answers as it did.
	a.internal(other, &FenceQueueRequest{Move: "m-1"})

	// The hold is state: a replica restored from a snapshot refuses alike.
	restoreHarness(t, a)
	wantHeld(t, a, q, settle)
	if _, err := a.raw(api.QueueKey{}, &SetMetaRequest{Key: HoldPrefix + "backup-1"}); err == nil {
		t.Fatal("SetMeta lifted a hold: keys under HoldPrefix are the engine's own")
	}

	// Two holds: lifting one leaves the other.
	a.internal(api.QueueKey{}, &HoldDeparturesRequest{ID: "backup-2", Until: a.now + int64(2*time.Minute)})
	a.internal(api.QueueKey{}, &HoldDeparturesRequest{ID: "backup-1"})
	wantHeld(t, a, q, settle)
	// The second ends by itself.
	a.advance(2 * time.Minute)
	a.internal(q, settle)
	if got := outboxIDs(t, a.e, q); len(got) != 0 {
		t.Fatalf("outbox holds %v after the hold ended", got)
	}
	a.internal(other, &DropQueueRequest{Move: "m-1"})
	// An ended hold's key goes with the next hold applied.
	a.internal(api.QueueKey{}, &HoldDeparturesRequest{ID: "backup-3"})
	if keys := a.e.MetaKeys(HoldPrefix); len(keys) != 0 {
		t.Fatalf("hold keys %v left after every hold ended", keys)
	}

	b.internal(api.QueueKey{}, &HoldDeparturesRequest{ID: "backup-1"})
	b.internal(other, &InstallQueueRequest{Move: "m-1", Image: image.Bytes()})
	if c := b.counts(dlq); c != [3]int{2, 0, 0} {
		t.Fatalf("dead-letter queue counts %v, want the 2 messages taken once", c)
	}

	for _, bad := range []*HoldDeparturesRequest{{Until: a.now + 1}, {ID: "x", Until: a.now + int64(2*time.Hour)}} {
		if _, err := a.raw(api.QueueKey{}, bad); err == nil {
			t.Fatalf("hold %+v taken", bad)
		}
	}
}
