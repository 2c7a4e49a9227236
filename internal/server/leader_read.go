package server

import (
	"context"
	"time"
)

// Reads at a shard's leader. A follower learns that its leader committed
// an entry only with the leader's next append, up to two of a shard's
// CommitTimeout later; and where that leader has just failed, only once
// the next is elected, a second or two later (a 300 ms heartbeat timeout,
// then an election). A read from a follower's replica would miss what a
// client was just told succeeded, so the reads that should not (a
// ListQueues, the console's views) are asked of the shard's leader, and of
// the next one while the shard elects it.

// leaderRetryGap is how long a read at a shard's leader waits before it
// asks again a shard that has no leader, or whose leader did not answer.
const leaderRetryGap = 100 * time.Millisecond

// readAtLeader has shard id's leader carry out a read: it calls ask with
// the address of the leader as this node knows it (leaderOf; for a shard
// this node holds no replica of, a replica, which may pass the read on),
// and again every leaderRetryGap as the shard elects another, until ask
// succeeds (done) or wait runs out. It stops at once, not done, when this
// node leads the shard: the read is then the caller's own, of its own
// replica. Otherwise, when wait runs out (a shard without a majority, or
// ctx ended), the caller may read a replica: as eventually consistent as
// SQS's own reads.
// asked is the address of the last member asked, "" if none.
func (s *Server) readAtLeader(ctx context.Context, id uint32, wait time.Duration, ask func(ctx context.Context, addr string) error) (done bool, asked string) {
	deadline := time.Now().Add(wait)
	for try := 0; ; try++ {
		g, held := s.groupByID(id)
		if held && g.leads() {
			return false, asked
		}
		if member, addr := s.leaderOf(id, held, g, try); addr != "" && member != s.cluster.NodeID() {
			asked = addr
			actx, cancel := context.WithDeadline(ctx, deadline)
			err := ask(actx, addr)
			cancel()
			if err == nil {
				return true, asked
			}
		}
		if !sleepUntil(ctx, deadline, leaderRetryGap) {
			return false, asked
		}
	}
}

// sleepUntil waits gap, or until deadline or the end of ctx if sooner,
// and reports whether there is time left after it.
func sleepUntil(ctx context.Context, deadline time.Time, gap time.Duration) bool {
	wait := min(gap, time.Until(deadline))
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return time.Now().Before(deadline)
	case <-ctx.Done():
		return false
	}
}
