package server

import (
	"context"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

const (
	// moveTaskTick is how often a running message move task makes
	// progress.
	moveTaskTick = 100 * time.Millisecond
	// moveTaskCatchUp is the pause between two ticks while a task is
	// behind its rate (a tick moved as many messages as one command may):
	// short, so that tasks keep their rate, yet leaving the log to the
	// clients' commands in between.
	moveTaskCatchUp = 5 * time.Millisecond
)

// moveTaskDriver applies TickRequest commands while message move tasks run,
// so that they move messages at their rate. It sleeps on a channel when no
// task runs, so an idle server does no periodic work.
type moveTaskDriver struct {
	s    *Server
	wake chan struct{}
	quit chan struct{}
	// ctx ends at stop, so that a tick waiting on a log that no longer
	// answers (a hung disk) does not hold up the server's shutdown.
	ctx     context.Context
	cancel  context.CancelFunc
	stopped sync.WaitGroup
	once    sync.Once
}

func newMoveTaskDriver(s *Server) *moveTaskDriver {
	ctx, cancel := context.WithCancel(context.Background())
	return &moveTaskDriver{s: s, wake: make(chan struct{}, 1), quit: make(chan struct{}), ctx: ctx, cancel: cancel}
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
	d.cancel()
	d.stopped.Wait()
}

func (d *moveTaskDriver) run() {
	defer d.stopped.Done()
	timer := time.NewTimer(moveTaskTick)
	defer timer.Stop()
	for {
		select {
		case <-d.wake:
		case <-d.quit:
			return
		}
		next := moveTaskTick
		for d.active() {
			timer.Reset(next)
			select {
			case <-timer.C:
			case <-d.quit:
				return
			}
			next = moveTaskTick
			ticked := false
			for _, g := range d.s.allGroups() {
				// Only a group's leader ticks; the driver is kicked again
				// when this node next leads one (followLeadership, and
				// the housekeeper's look at the shards).
				if !g.leads() || !groupHasMoveTasks(g) {
					continue
				}
				ticked = true
				cmd := &engine.Command{Time: d.s.now().UnixNano(), Request: &engine.TickRequest{Moves: engine.DefaultTickMoves}, Entropy: newEntropy()}
				resp, err := d.s.apply(withGroup(d.ctx, g), cmd)
				if err != nil {
					d.s.logger.Warn("message move task tick failed", "err", err)
					continue
				}
				if res, ok := resp.(*engine.TickResult); ok && res.Behind {
					// One command moves a bounded number of messages: a
					// task behind its rate catches up in the next ones.
					next = moveTaskCatchUp
				}
			}
			if !ticked {
				break
			}
		}
	}
}

// active reports whether a group this node runs has move tasks running.
func (d *moveTaskDriver) active() bool {
	for _, g := range d.s.allGroups() {
		if groupHasMoveTasks(g) {
			return true
		}
	}
	return false
}

// groupHasMoveTasks reports whether g's engine has move tasks running.
func groupHasMoveTasks(g *group) (yes bool) {
	g.log.Read(func(e *engine.Engine) { yes = e.HasActiveMoveTasks() })
	return yes
}
