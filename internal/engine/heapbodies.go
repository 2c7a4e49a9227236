package engine

import (
	"fmt"
	"sync"
)

// heapFile is the file number of the references heapBodies hands out.
const heapFile = 1

// heapBodies is the BodyStore of an engine made without one (fifoq serve
// --in-memory): the payloads in memory, in a table of slots. A message
// refers to its body by slot, as it would to a store's record, so the
// message record holds no body of its own and has one size whichever log
// the engine runs on.
//
// A slot released while a snapshot view is open is reused only once the
// view is released, since the view may still write its body (the
// BodyStore contract). A table whose every slot is free is given back
// whole, so a drained backlog leaves no table behind; one drained partly
// keeps 16 bytes a slot of its largest size.
type heapBodies struct {
	mu      sync.RWMutex
	slots   []string
	free    []uint32 // slots that are empty, reused last released first
	held    []uint32 // slots released while a view is open
	holding bool
}

// Put keeps body in a free slot, or in a new one.
func (h *heapBodies) Put(body string) BodyRef {
	h.mu.Lock()
	defer h.mu.Unlock()
	var i uint32
	if n := len(h.free); n > 0 {
		i, h.free = h.free[n-1], h.free[:n-1]
		h.slots[i] = body
	} else {
		i = uint32(len(h.slots))
		h.slots = append(h.slots, body)
	}
	return BodyRef{File: heapFile, Off: i, Len: uint32(len(body))}
}

// Get returns the body in ref's slot.
func (h *heapBodies) Get(ref BodyRef) (string, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if ref.File != heapFile || uint64(ref.Off) >= uint64(len(h.slots)) || len(h.slots[ref.Off]) != int(ref.Len) {
		return "", fmt.Errorf("engine: no body %+v in memory", ref)
	}
	return h.slots[ref.Off], nil
}

// Release empties ref's slot, or holds it until the open view is released.
func (h *heapBodies) Release(ref BodyRef) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holding {
		h.held = append(h.held, ref.Off)
		return
	}
	h.empty(ref.Off)
}

// hold keeps the slots released from now on until unhold: a snapshot view
// is open.
func (h *heapBodies) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding = true
}

// unhold empties the slots released while the view was open.
func (h *heapBodies) unhold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding = false
	for _, i := range h.held {
		h.empty(i)
	}
	h.held = nil
}

// empty frees slot i, with h.mu held.
func (h *heapBodies) empty(i uint32) {
	h.slots[i] = ""
	h.free = append(h.free, i)
	if len(h.free) == len(h.slots) {
		h.slots, h.free = nil, nil
	}
}
