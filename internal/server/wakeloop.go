package server

import (
	"context"
	"sync"
	"time"
)

// wakeLoop is the goroutine of a driver that works only while there is
// work (move tasks to tick, outboxes to relay): it sleeps on a channel
// until kicked, then runs its step again and again, pausing as the step
// asks, until the step says there is nothing left. So an idle server
// does no periodic work for it.
type wakeLoop struct {
	wake chan struct{}
	quit chan struct{}
	// ctx ends at stop, so that a step waiting on a log or a member that
	// no longer answers (a hung disk) does not hold up the shutdown.
	ctx     context.Context
	cancel  context.CancelFunc
	stopped sync.WaitGroup
	once    sync.Once
}

func newWakeLoop() wakeLoop {
	ctx, cancel := context.WithCancel(context.Background())
	return wakeLoop{wake: make(chan struct{}, 1), quit: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// start runs the loop, once, and kicks it: work restored from the log
// is taken up at once. step reports whether to run again, after pause.
func (l *wakeLoop) start(step func() (again bool, pause time.Duration)) {
	l.once.Do(func() {
		l.stopped.Add(1)
		go l.run(step)
		l.kick()
	})
}

// kick tells the loop that there may be work.
func (l *wakeLoop) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// stop ends the loop and waits for its step to return.
func (l *wakeLoop) stop() {
	select {
	case <-l.quit:
	default:
		close(l.quit)
	}
	l.cancel()
	l.stopped.Wait()
}

func (l *wakeLoop) run(step func() (bool, time.Duration)) {
	defer l.stopped.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-l.wake:
		case <-l.quit:
			return
		}
		for {
			again, pause := step()
			if !again {
				break
			}
			timer.Reset(pause)
			select {
			case <-timer.C:
			case <-l.quit:
				return
			}
		}
	}
}
