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
}

// Memory is a Log that keeps the engine in memory only: nothing survives
// the process. Commands are applied one at a time, in the order Apply is
// called.
type Memory struct {
	mu  sync.RWMutex
	eng *engine.Engine
}

// NewMemory returns a Log that applies commands to eng in memory.
func NewMemory(eng *engine.Engine) *Memory { return &Memory{eng: eng} }

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
