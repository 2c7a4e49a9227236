package replog

import (
	"testing"

	"github.com/fifoq/fifoq/internal/engine"
)

// TestTickMovesRoundTrip checks that a bounded tick keeps its bound through
// the log, and that a tick logged without one still decodes as unbounded:
// the two are applied differently (engine.TickRequest).
func TestTickMovesRoundTrip(t *testing.T) {
	data, err := encodeEntry([]*engine.Command{
		{Time: 1, Request: &engine.TickRequest{Moves: 123}},
		{Time: 2, Request: &engine.TickRequest{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if tk, ok := got[0].Request.(*engine.TickRequest); !ok || tk.Moves != 123 {
		t.Fatalf("bounded tick decoded as %#v", got[0].Request)
	}
	if tk, ok := got[1].Request.(*engine.TickRequest); !ok || tk.Moves != 0 {
		t.Fatalf("tick without a bound decoded as %#v", got[1].Request)
	}
}
