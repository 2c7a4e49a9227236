package server

import (
	"slices"
	"strconv"
	"testing"
)

// TestSweepOrderStartsWhereThisMemberLeads: a receive on a split queue asks
// first a partition whose shard the member it reached leads, so that it
// costs no hop when that partition has messages; every partition is asked
// once; with an attempt id the order is the attempt's on every member.
func TestSweepOrderStartsWhereThisMemberLeads(t *testing.T) {
	parts := []uint32{0, 1, 2, 3, 4, 5}
	ledHere := func(led ...uint32) func(uint32) bool {
		return func(p uint32) bool { return slices.Contains(led, p) }
	}
	none := ledHere()
	starts := map[uint32]int{}
	for i := range 600 {
		order := sweepOrder(parts, "", ledHere(2, 4))
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, parts) {
			t.Fatalf("order %v does not ask every partition once", order)
		}
		if order[0] != 2 && order[0] != 4 {
			t.Fatalf("sweep %d starts at %d, led elsewhere, with 2 and 4 led here", i, order[0])
		}
		starts[order[0]]++
		starts[sweepOrder(parts, "", none)[0]+10]++
	}
	if starts[2] < 200 || starts[4] < 200 {
		t.Errorf("of 600 sweeps, %d started at 2 and %d at 4: not spread over the partitions led here", starts[2], starts[4])
	}
	for p := range uint32(6) {
		if starts[p+10] < 50 {
			t.Errorf("led nowhere here, %d of 600 sweeps started at %d: not spread over all", starts[p+10], p)
		}
	}
	// With an attempt id, the order is the attempt's, wherever the
	// receive arrives: its retry through another member walks it too.
	for i := range 20 {
		id := "attempt-" + strconv.Itoa(i)
		a, b := sweepOrder(parts, id, ledHere(1, 3, 5)), sweepOrder(parts, id, none)
		if !slices.Equal(a, b) {
			t.Fatalf("attempt %s: order %v on one member, %v on another; want the same", id, a, b)
		}
	}
}
