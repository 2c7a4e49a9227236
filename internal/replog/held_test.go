package replog

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// TestCopiedEntryFallsBack stands in for a hashicorp/raft that copies an
// entry's bytes before it hands them to the log store and FSM.Apply,
// breaking the contract fsm.hold relies on: Raft is given a copy of the
// bytes the fsm holds the entry by. The state machine must then decode
// the entry, and the entry's wait answer its callers with the results that
// come through the future, leaving nothing held.
func TestCopiedEntryFallsBack(t *testing.T) {
	l, _ := openTest(t, t.TempDir(), RaftConfig{})
	defer l.Close()
	c := newClock()
	createFIFO(t, l, c)
	heldBefore := l.fsm.heldApplied.Load()

	// What commit does, but for the copy.
	batch := []*pending{
		{cmd: sendCommand(c, "m0"), done: make(chan applyResult, 1)},
		{cmd: sendCommand(c, "m1"), done: make(chan applyResult, 1)},
	}
	cmds := []*engine.Command{batch[0].cmd, batch[1].cmd}
	data, held, err := encodeEntryHeld(cmds, l.entryVersion(cmds))
	if err != nil {
		t.Fatal(err)
	}
	l.inflight <- struct{}{} // the slot answer frees, as the batcher takes it
	e := &entry{cmds: held, batch: batch, data: data, began: time.Now(), stored: make(chan struct{})}
	l.fsm.hold(e)
	l.awaitEntry(e, l.raft.Apply(bytes.Clone(data), 0))

	for i, p := range batch {
		select {
		case res := <-p.done:
			if res.err != nil {
				t.Fatalf("command %d: %v", i, res.err)
			}
			if _, ok := res.resp.(*api.SendMessageResult); !ok {
				t.Fatalf("command %d answered %T; want the send's result", i, res.resp)
			}
		default:
			t.Fatalf("command %d was not answered", i)
		}
	}
	if !e.answered.Load() {
		t.Fatal("the entry is not marked answered")
	}
	select {
	case <-e.stored:
	default:
		t.Fatal("the entry is not marked stored: the next one would never leave")
	}
	if got := l.fsm.heldApplied.Load(); got != heldBefore {
		t.Fatalf("%d entries applied from held commands; the copy must have been decoded", got-heldBefore)
	}
	l.fsm.heldMu.Lock()
	n := len(l.fsm.held)
	l.fsm.heldMu.Unlock()
	if n != 0 {
		t.Fatalf("%d entries still held after the copy was answered", n)
	}
	if got := receiveBodies(t, l, c, 10); !reflect.DeepEqual(got, []string{"m0", "m1"}) {
		t.Fatalf("received %v; want [m0 m1]", got)
	}
}
