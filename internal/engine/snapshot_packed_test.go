package engine

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// TestPackedSeqRoundTrip reads back what was added to a packedSeq, in
// order: climbing, falling, repeated and extreme values alike.
func TestPackedSeqRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := []uint64{0, 1, 2, 3, 3, 1, math.MaxUint64, 0, math.MaxUint64 - 1, 1 << 63, 5}
	for range 10_000 {
		switch rng.IntN(3) {
		case 0:
			want = append(want, want[len(want)-1]+1)
		case 1:
			want = append(want, rng.Uint64())
		default:
			want = append(want, want[len(want)-1]-uint64(rng.IntN(100)))
		}
	}
	var counter atomic.Int64
	s := newPackedSeq(len(want), &counter)
	defer s.release()
	for _, v := range want {
		s.add(v)
	}
	if s.len() != len(want) {
		t.Fatalf("%d entries, want %d", s.len(), len(want))
	}
	it := s.iter()
	for i, v := range want {
		if got := it.next(); got != v {
			t.Fatalf("entry %d: %d, want %d", i, got, v)
		}
	}
	if len(it.buf) != 0 {
		t.Fatalf("%d bytes left after the last entry", len(it.buf))
	}
}
