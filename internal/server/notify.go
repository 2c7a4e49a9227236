package server

import (
	"sync"

	"github.com/fifoq/fifoq/internal/api"
)

// notifier wakes long polls when messages may have become receivable in a
// queue. Each queue with waiters has one channel; broadcast closes it, which
// wakes every waiter at once, and the next waiter makes a new one. Waiters
// block on the channel, so an idle long poll costs no CPU.
type notifier struct {
	mu    sync.Mutex
	chans map[api.QueueKey]chan struct{}
}

func newNotifier() *notifier {
	return &notifier{chans: make(map[api.QueueKey]chan struct{})}
}

// wait returns a channel that is closed at the next broadcast for q. A
// waiter must take the channel before it checks the queue, so that a send
// between the check and the wait is not missed.
func (n *notifier) wait(q api.QueueKey) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.chans[q]
	if !ok {
		ch = make(chan struct{})
		n.chans[q] = ch
	}
	return ch
}

// broadcast wakes every waiter of q. It never blocks, so the engine may call
// it while applying a command.
func (n *notifier) broadcast(q api.QueueKey) {
	n.mu.Lock()
	ch, ok := n.chans[q]
	if ok {
		delete(n.chans, q)
	}
	n.mu.Unlock()
	if ok {
		close(ch)
	}
}
