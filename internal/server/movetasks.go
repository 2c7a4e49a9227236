package server

import (
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
// so that they move messages at their rate. It sleeps while no task runs.
type moveTaskDriver struct {
	s *Server
	wakeLoop
}

func newMoveTaskDriver(s *Server) *moveTaskDriver {
	return &moveTaskDriver{s: s, wakeLoop: newWakeLoop()}
}

// start runs the driver; tasks restored from the log resume at once.
func (d *moveTaskDriver) start() { d.wakeLoop.start(d.step) }

// step ticks every group this node leads that has tasks running, and
// says when to tick again: at the tasks' pace, sooner while one is
// behind; not at all once no task runs here.
func (d *moveTaskDriver) step() (again bool, pause time.Duration) {
	if !d.active() {
		return false, 0
	}
	next := moveTaskTick
	ticked := false
	for _, g := range d.s.allGroups() {
		// Only a group's leader ticks; the driver is kicked again when
		// this node next leads one (followLeadership, and the
		// housekeeper's look at the shards).
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
			// One command moves a bounded number of messages: a task
			// behind its rate catches up in the next ones.
			next = moveTaskCatchUp
		}
	}
	return ticked, next
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
