package server

import (
	"context"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

// moveTaskTick is how often a running message move task makes progress.
const moveTaskTick = 100 * time.Millisecond

// moveTaskDriver applies TickRequest commands while message move tasks run,
// so that they move messages at their rate. It sleeps on a channel when no
// task runs, so an idle server does no periodic work.
type moveTaskDriver struct {
	s       *Server
	wake    chan struct{}
	quit    chan struct{}
	stopped sync.WaitGroup
	once    sync.Once
}

func newMoveTaskDriver(s *Server) *moveTaskDriver {
	return &moveTaskDriver{s: s, wake: make(chan struct{}, 1), quit: make(chan struct{})}
}

// start runs the driver; tasks restored from the log resume at once.
func (d *moveTaskDriver) start() {
	d.once.Do(func() {
		d.stopped.Add(1)
		go d.run()
		d.kick()
	})
}

// kick tells the driver that a task may have started.
func (d *moveTaskDriver) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *moveTaskDriver) stop() {
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	d.stopped.Wait()
}

func (d *moveTaskDriver) run() {
	defer d.stopped.Done()
	for {
		select {
		case <-d.wake:
		case <-d.quit:
			return
		}
		ticker := time.NewTicker(moveTaskTick)
		for d.active() {
			select {
			case <-ticker.C:
			case <-d.quit:
				ticker.Stop()
				return
			}
			if !d.s.leading() {
				// Only the leader ticks; it is kicked again when this
				// node next becomes leader.
				break
			}
			cmd := &engine.Command{Time: d.s.now().UnixNano(), Request: &engine.TickRequest{}, Entropy: newEntropy()}
			if _, err := d.s.apply(context.Background(), cmd); err != nil {
				d.s.logger.Warn("message move task tick failed", "err", err)
			}
		}
		ticker.Stop()
	}
}

func (d *moveTaskDriver) active() (yes bool) {
	d.s.log.Read(func(e *engine.Engine) { yes = e.HasActiveMoveTasks() })
	return yes
}
