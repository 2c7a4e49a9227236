package server

import (
	"context"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/engine"
)

const (
	// housekeepInterval is how often the server asks the engine whether
	// time has work in queues nobody touches (engine.NextHousekeeping):
	// a read of one heap's minimum, no log write unless there is work.
	housekeepInterval = time.Second
	// housekeepBacklogInterval is the pause between two housekeeping
	// commands while a backlog lasts (the previous one hit its limit):
	// short enough to drain 100,000 expirations a second, long enough to
	// leave the log to the clients' commands.
	housekeepBacklogInterval = 100 * time.Millisecond
)

// housekeeper applies engine.HousekeepRequest commands through the log when
// the engine says something is due: messages past their retention period,
// delays and visibility timeouts that ran out, expired deduplication,
// receive attempt and deletion records of queues no command names. Each
// command does a bounded amount of work; a backlog is drained over several
// commands. It runs only while the server takes writes (on a cluster's
// leader), and a server with nothing due writes nothing.
type housekeeper struct {
	s    *Server
	quit chan struct{}
	// ctx ends at stop, so that a command waiting on a log that no
	// longer answers (a hung disk) does not hold up the server's shutdown.
	ctx     context.Context
	cancel  context.CancelFunc
	stopped sync.WaitGroup
	once    sync.Once
}

func newHousekeeper(s *Server) *housekeeper {
	ctx, cancel := context.WithCancel(context.Background())
	return &housekeeper{s: s, quit: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// start runs the housekeeper.
func (h *housekeeper) start() {
	h.once.Do(func() {
		h.stopped.Add(1)
		go h.run()
	})
}

// stop stops the housekeeper and waits for its last command.
func (h *housekeeper) stop() {
	select {
	case <-h.quit:
	default:
		close(h.quit)
	}
	h.cancel()
	h.stopped.Wait()
}

func (h *housekeeper) run() {
	defer h.stopped.Done()
	timer := time.NewTimer(housekeepInterval)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-timer.C:
		case <-h.quit:
			return
		}
		next := housekeepInterval
		if _, more, err := h.step(); err != nil {
			// Warn once per run of failures, not every second.
			if !failing {
				h.s.logger.Warn("housekeeping failed", "err", err)
			}
			failing = true
		} else {
			failing = false
			if more {
				next = housekeepBacklogInterval
			}
		}
		timer.Reset(next)
	}
}

// step applies a housekeeping command in every group this node leads
// that has work due, and reports whether it did and whether work is left.
func (h *housekeeper) step() (applied, more bool, err error) {
	s := h.s
	if s.ready() != "" {
		return false, false, nil
	}
	for _, g := range s.allGroups() {
		if !g.leads() {
			continue
		}
		a, m, gerr := h.stepIn(g)
		applied, more = applied || a, more || m
		if gerr != nil {
			err = gerr
		}
		if g != s.first {
			// A shard's move tasks are ticked where it is led, and its
			// leadership moves without the first group's: look each
			// second.
			var active bool
			g.log.Read(func(e *engine.Engine) { active = e.HasActiveMoveTasks() })
			if active {
				s.movers.kick()
			}
		}
		// Outboxes are relayed where their group is led: one this node
		// has come to lead, or one a snapshot restored, is seen here.
		if groupHasOutbox(g) {
			s.relay.kick()
		}
	}
	return applied, more, err
}

// stepIn applies one housekeeping command in group g if its engine has
// work due.
func (h *housekeeper) stepIn(g *group) (applied, more bool, err error) {
	s := h.s
	now := s.now().UnixNano()
	due := false
	g.log.Read(func(e *engine.Engine) {
		at, ok := e.NextHousekeeping()
		due = ok && at <= now
	})
	if !due {
		return false, false, nil
	}
	cmd := &engine.Command{Time: now, Request: &engine.HousekeepRequest{Limit: engine.DefaultHousekeepLimit}, Entropy: newEntropy()}
	resp, err := s.apply(withGroup(h.ctx, g), cmd)
	if err != nil {
		return false, false, err
	}
	res, _ := resp.(*engine.HousekeepResult)
	return true, res != nil && res.More, nil
}
