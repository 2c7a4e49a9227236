package main

import (
	"runtime"
	"testing"
)

func TestMaxProcsFor(t *testing.T) {
	for _, tc := range []struct {
		quota float64
		want  int
	}{
		{0.05, 1}, {0.3, 1}, {1, 1},
		{1.01, min(2, runtime.NumCPU())},
		{1.5, min(2, runtime.NumCPU())},
		{1000, runtime.NumCPU()},
	} {
		if got := maxProcsFor(tc.quota); got != tc.want {
			t.Errorf("maxProcsFor(%v) = %d, want %d", tc.quota, got, tc.want)
		}
	}
}
