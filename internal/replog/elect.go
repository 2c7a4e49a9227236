package replog

import (
	"log/slog"
	"time"

	"github.com/hashicorp/raft"
)

// A cluster of one has no leader to hear from, yet Raft waits for its
// heartbeat timeout (HeartbeatTimeout plus a random part of it: 100 to 200
// ms) before it stands for election, and a start waits for that. Raft
// resets a follower's heartbeat timer when the timeout is lowered while it
// runs; lowering it at start makes the node stand at once.

// Timeouts of a cluster of one. The lease, which a leader of one always
// holds, must not exceed the lowered heartbeat timeout.
const (
	soloHeartbeat        = 100 * time.Millisecond
	soloHeartbeatLowered = 50 * time.Millisecond
	soloLeaderLease      = soloHeartbeatLowered
)

// standNow makes a node of a cluster of one stand for election now. Should
// the change be refused, the node stands after its heartbeat timeout, as
// it would without it: a slower start, worth a line in the log.
func standNow(r *raft.Raft, logger *slog.Logger) {
	rc := r.ReloadableConfig()
	rc.HeartbeatTimeout = soloHeartbeatLowered
	if err := r.ReloadConfig(rc); err != nil {
		logger.Warn("could not lower the heartbeat timeout to stand for election at once; standing after it", "err", err)
	}
}
