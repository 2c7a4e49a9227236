package server

import "testing"

// TestCoverEveryHash: a router takes the message of a handle for gone only
// when the partitions that said they do not hold it hold every group hash
// between them; a gap (a partition its map lags behind) or none at all
// is not every hash.
func TestCoverEveryHash(t *testing.T) {
	for _, c := range []struct {
		spans [][2]uint64
		want  bool
	}{
		{nil, false},
		{[][2]uint64{{0, 1 << 32}}, true},
		{[][2]uint64{{1 << 31, 1 << 32}, {0, 1 << 31}}, true},
		{[][2]uint64{{0, 1 << 30}, {1 << 31, 1 << 32}}, false},
		{[][2]uint64{{0, 1 << 31}, {1 << 31, 3 << 30}}, false},
		{[][2]uint64{{1, 1 << 32}}, false},
		{[][2]uint64{{0, 1 << 31}, {0, 1 << 31}, {1 << 31, 1 << 32}}, true},
	} {
		if got := coverEveryHash(c.spans); got != c.want {
			t.Errorf("coverEveryHash(%v) = %v, want %v", c.spans, got, c.want)
		}
	}
}
