package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type heapItem struct {
	key int
	pos int32
}

// TestIndexedHeap checks the heap against a sorted slice under random
// pushes, removals, key changes and pops, and Scan against a filter.
func TestIndexedHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := newIndexedHeap(func(a, b *heapItem) bool { return a.key < b.key }, func(x *heapItem) *int32 { return &x.pos })
	var in []*heapItem
	for step := range 20_000 {
		switch op := rng.IntN(10); {
		case op < 4 || len(in) == 0:
			x := &heapItem{key: rng.IntN(1000)}
			h.Push(x)
			in = append(in, x)
		case op < 6:
			i := rng.IntN(len(in))
			h.Remove(in[i])
			h.Remove(in[i]) // removing twice is a no-op
			in = slices.Delete(in, i, i+1)
		case op < 8:
			x := in[rng.IntN(len(in))]
			x.key = rng.IntN(1000)
			h.Fix(x)
		default:
			x := h.Min()
			h.Remove(x)
			i := slices.Index(in, x)
			for _, y := range in {
				if y.key < x.key {
					t.Fatalf("step %d: Min %d while %d is in the heap", step, x.key, y.key)
				}
			}
			in = slices.Delete(in, i, i+1)
		}
		if h.Len() != len(in) {
			t.Fatalf("step %d: Len %d, want %d", step, h.Len(), len(in))
		}
		for _, x := range in {
			if !h.Contains(x) {
				t.Fatalf("step %d: item %d lost", step, x.key)
			}
		}
		if step%100 == 0 {
			bound := rng.IntN(1000)
			var visited []int
			next := -1
			h.Scan(func(x *heapItem) bool {
				if x.key > bound {
					return false
				}
				visited = append(visited, x.key)
				return true
			}, func(x *heapItem) {
				if next < 0 || x.key < next {
					next = x.key
				}
			})
			var want []int
			wantNext := -1
			for _, x := range in {
				if x.key <= bound {
					want = append(want, x.key)
				} else if wantNext < 0 || x.key < wantNext {
					wantNext = x.key
				}
			}
			slices.Sort(visited)
			slices.Sort(want)
			if !slices.Equal(visited, want) || next != wantNext {
				t.Fatalf("step %d: Scan(<= %d) visited %v next %d, want %v next %d", step, bound, visited, next, want, wantNext)
			}
		}
	}
	h.Clear()
	for _, x := range in {
		if h.Contains(x) {
			t.Fatalf("item still in a cleared heap")
		}
	}
}

func TestRing(t *testing.T) {
	var r ring[int]
	next, front := 0, 0
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		if rng.IntN(3) != 0 || r.Len() == 0 {
			r.Push(next)
			next++
		} else {
			if got := r.Front(); got != front {
				t.Fatalf("Front = %d, want %d", got, front)
			}
			r.PopFront()
			front++
		}
		if r.Len() != next-front {
			t.Fatalf("Len = %d, want %d", r.Len(), next-front)
		}
		if cap(r.buf) > 4*(r.Len()+16) {
			t.Fatalf("buffer of %d for %d elements", cap(r.buf), r.Len())
		}
	}
}
