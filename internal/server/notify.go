package server

import (
	"container/list"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/clock"
)

// notifier wakes long polls when messages may have become receivable in a
// queue. Waiters block on a channel of their own, so an idle long poll costs
// no CPU.
//
// A wake-up goes to one waiter, the one that has waited longest, not to all:
// one arriving message should cost one receive through the log, not one per
// waiter. The woken waiter passes the wake-up on when it leaves without
// having used it, or when it took messages and more remain (see receive), so
// that a burst still reaches as many waiters as it has messages for.
//
// Only queues with waiters have an entry, and an entry goes when its last
// waiter leaves: the map is keyed by names that clients choose, so it must
// not outlive them.
type notifier struct {
	mu     sync.Mutex
	queues map[api.QueueKey]*waitQueue
	// clock runs the wake-up timers: the server's, so that a fake clock's
	// Advance wakes a long poll for a message that became visible.
	clock clock.Clock
}

// waitQueue is the waiters of one queue, in the order they began to wait,
// and the timer that wakes one of them when a delayed or in-flight message
// becomes visible. One timer per queue, not one per waiter, so that such a
// message too wakes one waiter rather than all.
type waitQueue struct {
	waiting list.List // of *waiter not yet signalled, oldest first
	members int       // waiters registered, signalled or not
	taking  int       // waiters gone to the log to take messages
	timer   clock.Timer
	timerAt time.Time // when timer fires; zero when there is none
}

// waiter is one receive waiting on a queue. Its channel holds at most one
// wake-up; signal removes it from the waiting list when it fills it.
type waiter struct {
	q    api.QueueKey
	ch   chan struct{}
	elem *list.Element // in its queue's waiting list; nil when not there
	left bool
}

func newNotifier() *notifier {
	return &notifier{queues: make(map[api.QueueKey]*waitQueue), clock: clock.Real{}}
}

// join registers a new waiter for q. The waiter must take part before it
// checks the queue, so that a send between the check and the wait wakes it;
// and it must leave when it is done, or the queue's entry stays.
func (n *notifier) join(q api.QueueKey) *waiter {
	w := &waiter{q: q, ch: make(chan struct{}, 1)}
	n.mu.Lock()
	defer n.mu.Unlock()
	wq := n.queues[q]
	if wq == nil {
		wq = &waitQueue{}
		n.queues[q] = wq
	}
	wq.members++
	w.elem = wq.waiting.PushBack(w)
	return w
}

// rejoin puts a waiter that was woken, and used its wake-up, back at the end
// of its queue's waiting list. Like join, it comes before the next check.
func (n *notifier) rejoin(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w.elem != nil {
		return
	}
	select {
	case <-w.ch:
		// A wake-up it has not looked at: the check that follows covers it.
	default:
	}
	wq := n.queues[w.q] // present: w is still a member
	w.elem = wq.waiting.PushBack(w)
}

// leave unregisters w. A wake-up that reached w but that w did not use goes
// to the next waiter, so that none is lost; the queue's entry goes with its
// last waiter.
func (n *notifier) leave(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	wq := n.queues[w.q]
	if wq == nil || w.left {
		return
	}
	w.left = true
	if w.elem != nil {
		wq.waiting.Remove(w.elem)
		w.elem = nil
	} else {
		select {
		case <-w.ch:
			wq.signal()
		default:
		}
	}
	wq.members--
	if wq.members <= 0 {
		if wq.timer != nil {
			wq.timer.Stop()
		}
		delete(n.queues, w.q)
	}
}

// signal wakes one waiter of q, if any. It never blocks, so the engine may
// call it while applying a command.
func (n *notifier) signal(q api.QueueKey) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if wq := n.queues[q]; wq != nil {
		wq.signal()
	}
}

// broadcast wakes every waiter of q: for a queue deleted or purged, which
// every waiter must notice. It never blocks.
func (n *notifier) broadcast(q api.QueueKey) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if wq := n.queues[q]; wq != nil {
		for wq.waiting.Len() > 0 {
			wq.signal()
		}
	}
}

// taking tells that waiter w goes to the log to take messages, of which
// the queue holds enough for about spread receives: while fewer waiters
// than that are taking, the next one is woken too, so that a burst is
// received by as many waiters at once as it can feed, their commands
// sharing the log's group commits, rather than one after another.
// doneTaking must follow.
func (n *notifier) taking(w *waiter, spread int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	wq := n.queues[w.q] // present: w is still a member
	wq.taking++
	if wq.taking < spread {
		wq.signalExcept(w)
	}
}

// doneTaking tells that waiter w is back from the log.
func (n *notifier) doneTaking(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queues[w.q].taking--
}

// wakeAt asks for one waiter of q to be woken when the server's clock
// reaches at, when a delayed or in-flight message becomes visible. Of
// several requests the earliest holds; the timer goes with the queue's
// entry.
func (n *notifier) wakeAt(q api.QueueKey, at time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	wq := n.queues[q]
	if wq == nil {
		return
	}
	if !wq.timerAt.IsZero() && !at.Before(wq.timerAt) {
		return
	}
	if wq.timer != nil {
		wq.timer.Stop()
	}
	wq.timerAt = at
	var t clock.Timer
	t = n.clock.FuncAt(at, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		// A timer replaced, stopped too late, or of a queue whose entry
		// went and came back is stale.
		if cur := n.queues[q]; cur == wq && wq.timer == t {
			wq.timer, wq.timerAt = nil, time.Time{}
			wq.signal()
		}
	})
	wq.timer = t
}

// size returns the number of queues with waiters, for tests.
func (n *notifier) size() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.queues)
}

// signal wakes the longest-waiting waiter. The caller holds the notifier's
// lock.
func (wq *waitQueue) signal() { wq.signalExcept(nil) }

// signalExcept wakes the longest-waiting waiter other than self. The
// caller holds the notifier's lock.
func (wq *waitQueue) signalExcept(self *waiter) {
	e := wq.waiting.Front()
	if e != nil && e.Value.(*waiter) == self {
		e = e.Next()
	}
	if e == nil {
		return
	}
	w := wq.waiting.Remove(e).(*waiter)
	w.elem = nil
	select {
	case w.ch <- struct{}{}:
	default:
	}
}
