package engine

// ring is a first-in first-out buffer. The engine appends records in time
// order (command times never go backwards) and drops them from the front
// once they expire, so expiry costs amortised O(1) per record.
type ring[T any] struct {
	buf  []T
	head int // index of the first live element
}

// Len returns the number of elements.
func (r *ring[T]) Len() int { return len(r.buf) - r.head }

// Push appends x.
func (r *ring[T]) Push(x T) {
	// Reclaim the dead prefix once it is at least half the buffer, so the
	// backing array stays proportional to the live elements.
	if r.head > 0 && r.head >= len(r.buf)/2 {
		n := copy(r.buf, r.buf[r.head:])
		clear(r.buf[n:])
		r.buf = r.buf[:n]
		r.head = 0
	}
	r.buf = append(r.buf, x)
}

// Front returns the oldest element; the ring must not be empty.
func (r *ring[T]) Front() T { return r.buf[r.head] }

// PopFront removes the oldest element; the ring must not be empty.
func (r *ring[T]) PopFront() {
	var zero T
	r.buf[r.head] = zero
	r.head++
	if r.head == len(r.buf) {
		r.buf = r.buf[:0]
		r.head = 0
	}
}

// live returns the elements, oldest first, without copying: the caller
// must not keep or change the slice.
func (r *ring[T]) live() []T { return r.buf[r.head:] }
