package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
	"github.com/fifoq/fifoq/internal/replog"
)

// mapAfter is a shard map that names a queue's shard only once mapped is
// set. Its embedded Shards is nil: awaitMapped asks only Running and Of.
type mapAfter struct {
	Shards
	mapped atomic.Bool
}

func (m *mapAfter) Running() bool { return true }

func (m *mapAfter) Of(api.QueueKey) uint32 {
	if m.mapped.Load() {
		return 2
	}
	return 0
}

// followerOfFirst is this node's view of the first group as a follower,
// silent (its leader not heard from) while silent is set. Its embedded
// RaftLog is nil: awaitMapped asks only these.
type followerOfFirst struct {
	RaftLog
	silent atomic.Bool
}

func (f *followerOfFirst) Clustered() bool    { return true }
func (f *followerOfFirst) Leading() bool      { return false }
func (f *followerOfFirst) LeaderSilent() bool { return f.silent.Load() }

// TestAwaitMappedWaitsOutASilentLeader: a follower of the first group
// gives a queue its map does not name mapWait, and, while it has not heard
// from the group's leader, waits on: the queue's record may be on the
// next leader, which it learns of only once one is elected. Up to
// mapWait+consoleReadWait in all.
func TestAwaitMappedWaitsOutASilentLeader(t *testing.T) {
	q := api.QueueKey{Account: "000000000000", Name: "fresh.fifo"}
	for _, tc := range []struct {
		name     string
		silent   bool
		mapAfter time.Duration // 0: never
		min, max time.Duration
	}{
		{name: "a leader heard from, never mapped", min: mapWait, max: mapWait + consoleReadWait*5/6},
		{name: "a silent leader, mapped once the next is elected", silent: true, mapAfter: mapWait + 500*time.Millisecond,
			min: mapWait + 500*time.Millisecond, max: mapWait + consoleReadWait},
		{name: "a silent leader, never mapped", silent: true, min: mapWait + consoleReadWait, max: 2 * (mapWait + consoleReadWait)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards, first := &mapAfter{}, &followerOfFirst{}
			first.silent.Store(tc.silent)
			s := &Server{shards: shards, first: &group{log: replog.NewMemory(engine.Config{Region: DefaultRegion}), raft: first}}
			if tc.mapAfter > 0 {
				timer := time.AfterFunc(tc.mapAfter, func() { first.silent.Store(false); shards.mapped.Store(true) })
				defer timer.Stop()
			}
			start := time.Now()
			consoleBackend{s: s}.awaitMapped(context.Background(), []api.QueueKey{q})
			if took := time.Since(start); took < tc.min || took > tc.max {
				t.Fatalf("awaitMapped returned after %v, want %v to %v", took.Round(time.Millisecond), tc.min, tc.max)
			}
		})
	}
}
