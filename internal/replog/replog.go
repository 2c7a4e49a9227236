package replog

import (
	"context"
	"sync"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Log orders commands and applies them to the engine.
type Log interface {
	// Apply appends a state-changing command and returns the engine's
	// result once the command is committed and applied.
	Apply(ctx context.Context, cmd *engine.Command) (api.Response, error)
	// Read runs fn with the engine while no command is being applied. fn
	// must not change the engine and must not keep it after returning.
	Read(fn func(e *engine.Engine))
	// Close stops the log; commands applied before Close returns are kept.
	Close() error
	// SetAvailableHook sets the function the engine calls when queues
	// gain receivable messages (engine.Engine.SetAvailableHook): the log
	// owns its engine, and so the hook.
	SetAvailableHook(fn func(api.QueueKey))
}

// newLogEngine makes the engine a log applies its commands to: the log owns
// it, from its first command to its last.
func newLogEngine(cfg engine.Config) *engine.Engine { return engine.New(cfg) }

// Memory is a Log that keeps the engine in memory only: nothing survives
// the process. Commands are applied one at a time, in the order Apply is
// called.
type Memory struct {
	mu  sync.RWMutex
	eng *engine.Engine
}

// NewMemory returns a Log that applies commands in memory to a new engine
// of the given config.
func NewMemory(cfg engine.Config) *Memory { return &Memory{eng: newLogEngine(cfg)} }

// SetAvailableHook implements Log.
func (m *Memory) SetAvailableHook(fn func(api.QueueKey)) { m.eng.SetAvailableHook(fn) }

// Apply implements Log.
func (m *Memory) Apply(ctx context.Context, cmd *engine.Command) (api.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.eng.Apply(cmd)
}

// Read implements Log.
func (m *Memory) Read(fn func(e *engine.Engine)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(m.eng)
}

// Close implements Log.
func (m *Memory) Close() error { return nil }
