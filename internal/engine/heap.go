package engine

// indexedHeap is a binary min-heap whose items remember their position, so
// that any item can be removed or repositioned in O(log n) without a search.
// The engine keeps its time-ordered and priority-ordered indexes in such
// heaps: message timers, groups with a receivable head, fair-queue tenants.
//
// An item's position is stored by the item itself (through pos), as the
// index plus one, so that the zero value means "not in this heap". It is an
// int32, 4 bytes in each of millions of messages; no heap holds 2^31 items
// (that many messages would take over 500 GB).
type indexedHeap[T any] struct {
	items []T
	less  func(a, b T) bool
	pos   func(T) *int32
}

func newIndexedHeap[T any](less func(a, b T) bool, pos func(T) *int32) indexedHeap[T] {
	return indexedHeap[T]{less: less, pos: pos}
}

// Len returns the number of items.
func (h *indexedHeap[T]) Len() int { return len(h.items) }

// Min returns the smallest item; the heap must not be empty.
func (h *indexedHeap[T]) Min() T { return h.items[0] }

// Contains reports whether x is in the heap.
func (h *indexedHeap[T]) Contains(x T) bool { return *h.pos(x) != 0 }

// Push adds x, which must not be in the heap.
func (h *indexedHeap[T]) Push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	*h.pos(x) = int32(i + 1)
	h.up(i)
}

// Remove removes x if it is in the heap.
func (h *indexedHeap[T]) Remove(x T) {
	p := h.pos(x)
	if *p == 0 {
		return
	}
	i := int(*p) - 1
	*p = 0
	last := len(h.items) - 1
	if i != last {
		h.items[i] = h.items[last]
		*h.pos(h.items[i]) = int32(i + 1)
	}
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	if i != last {
		h.fix(i)
	}
}

// Fix restores the heap order after x's key changed; x must be in the heap.
func (h *indexedHeap[T]) Fix(x T) { h.fix(int(*h.pos(x)) - 1) }

// Clear removes every item.
func (h *indexedHeap[T]) Clear() {
	for _, x := range h.items {
		*h.pos(x) = 0
	}
	clear(h.items)
	h.items = h.items[:0]
}

// Scan walks the heap from the root: it calls descend for every item it
// reaches, goes on to the children of the items for which descend is true,
// and calls stop (if not nil) for the others. As an item sorts before all
// its descendants, a descend of the form "key <= bound" visits exactly the
// items within the bound, and the stop items are the candidates for the
// smallest item beyond it. The cost is that of the items reached; the heap
// is not modified, so read-only callers may scan concurrently.
func (h *indexedHeap[T]) Scan(descend func(T) bool, stop func(T)) {
	h.scan(0, descend, stop)
}

func (h *indexedHeap[T]) scan(i int, descend func(T) bool, stop func(T)) {
	if i >= len(h.items) {
		return
	}
	x := h.items[i]
	if !descend(x) {
		if stop != nil {
			stop(x)
		}
		return
	}
	h.scan(2*i+1, descend, stop)
	h.scan(2*i+2, descend, stop)
}

func (h *indexedHeap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *indexedHeap[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			break
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts item i down and reports whether it moved.
func (h *indexedHeap[T]) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		left := 2*i + 1
		if left >= n {
			break
		}
		j := left
		if right := left + 1; right < n && h.less(h.items[right], h.items[left]) {
			j = right
		}
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *indexedHeap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = int32(i + 1)
	*h.pos(h.items[j]) = int32(j + 1)
}
