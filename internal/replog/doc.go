// Package replog is fifoq's command log: it puts state-changing commands in
// one order, makes them durable (and, in a cluster, replicated) and applies
// them to the engine, which is its state machine.
//
// Two implementations share the Log interface, so the server does not
// know which one it runs on: Memory orders commands with a mutex and keeps
// nothing on disk (`fifoq serve --in-memory`); Raft (OpenRaft) writes them
// to a write-ahead log on hashicorp/raft and raft-wal, fsynced in groups
// before any is answered, alone or in a cluster. Its segment files live on
// internal/walfs.
//
// # Files
//
// raft.go holds the Raft type and its configuration; open.go opens it
// (OpenRaft) and close.go stops it. apply.go is the write path (Apply, the
// group-commit batcher), fsm.go the state machine that applies entries,
// read.go the read path, housekeeping.go the snapshot loop. cluster.go,
// leadership.go, membership.go, transport.go, identity.go, format.go and
// clamp.go are what a member of a networked cluster adds (sessions.go is
// the one connection a peer that carries the shards' Raft traffic),
// cluster_region.go keeps its members in one region and cluster_id.go
// tells its nodes from another cluster's; bodies.go,
// snapshot_store.go, store_gate.go and recent_logs.go sit between Raft and
// the disk, and fault.go stops the node when the disk fails; codec*.go
// encode entries. region.go holds a data dir to its region, and backup.go
// takes and restores backups.
//
// # Goroutines and lock order
//
// The goroutines of a Raft log, what each owns, and where each may block:
//
//   - Raft.batchLoop (Raft.wg): the only reader of Raft.submit, and the
//     only one that takes a slot of Raft.inflight; it coalesces commands
//     into an entry, holds it (fsm.hold) and hands it to Raft. It waits for
//     the previous entry to be stored (alone) and for a free slot.
//   - the wait of one entry (commit's goroutine, Raft.wg): waits for the
//     entry's future and answers the entry if the state machine did not.
//     Raft.await starts one more goroutine per entry to read the future,
//     which stays blocked if Raft died without answering it (at most
//     maxInflightEntries of them).
//   - Raft.snapshotLoop (Raft.wg): asks Raft for snapshots by size and for
//     body store space, and removes dead body files (tidyBodies, under
//     fsm.mu for writing).
//   - cluster members only, all in Raft.wg: watchLeadership (owns
//     clusterState.lastLeader and readyTerm's changes; applies the
//     barrier of each new term), leaveOnFatal (stops Raft once the state
//     machine stopped), recordIncarnations (records what hellos taught,
//     through Apply) and keepFormat (the format this node writes; raises
//     the cluster's through Apply).
//   - the Raft port (transport.go): peerMux.acceptLoop (peerMux.wg) and
//     one sniff goroutine per accepted connection, which answers the
//     hello, calling into the log through peerChecks (Raft.Read, Raft's
//     GetConfiguration, clusterState.learnMu, faultStop.halt). Raft's
//     NetworkTransport runs its own listener and connection goroutines
//     over it; its dials run the dialer's side of the hello, with the
//     same calls. The sessions that carry many groups' streams
//     (sessions.go, the shards' Raft traffic) add one goroutine per
//     session (peerSessions.serve, in peerSessions.wg) and one per stream
//     until its group's transport takes it (route). walfs runs one
//     goroutine that prepares the next segment.
//   - hashicorp/raft's own: its main loop (leader loop: it appends entries
//     through storeGate, and on a state change runs the observers' filters,
//     Raft.raftObs included); the FSM goroutine, the only caller of
//     fsm.Apply, fsm.Snapshot and fsm.Restore (an operator's Restore too),
//     which therefore owns the applying of entries: it holds fsm.mu for
//     writing while it applies, and answers held entries' callers; the
//     snapshot goroutine, which calls snapshot.Persist and Release; and one
//     replication goroutine per follower, which opens snapshots to send
//     (snapshotStore.Open). The main loop never dials: every RPC goes out
//     from the other goroutines, which is what lets a dial's hello wait on
//     the main loop (GetConfiguration).
//   - short-lived: Close's shutdown (it closes Raft.closed when done),
//     faultStop.halt's stop (from its own goroutine, since the caller may be
//     one of the Raft goroutines the stop waits for), the wait of
//     transferLeadership, and withGCHeld's heap sampler at start.
//
// The locks, outermost first; a lock is only ever taken with those above it
// held, never below:
//
//  1. Raft.closeOnce, held by Close for up to CloseTimeout (it hands the
//     leadership over and waits for shutdown).
//  2. Raft.raiseMu (format.go): one command at a time raises the cluster's
//     entry format. It is held across a whole Apply of the raise (the
//     batcher, Raft and the FSM goroutine all work while it is held), and
//     under it formatFor reads the engine (fsm.mu) and the learned formats
//     (learnMu).
//  3. fsm.mu, the engine's lock: written by the FSM goroutine (Apply,
//     Restore), by snapshot.Release and by tidyBodies; read by Raft.Read
//     (every read of the engine, from any goroutine), fsm.Snapshot and
//     snapshot.Persist (a chunk at a time). Under it run the engine, and
//     through it the body store (bodystore.Store's mutex,
//     bodies.protectMu), the engine's available hook, which takes the
//     server's notifier mutex (internal/server), and the Observer's
//     BodyStore, BodiesMoved and SnapshotDone.
//  4. Leaf locks, under which nothing else is taken and nothing blocks:
//     fsm.heldMu (the held entries), clusterState.learnMu (what hellos
//     taught), clusterState.mu (the leadership-change channel),
//     faultStop.mu (it logs and starts the stop's goroutine under it),
//     bodies.protectMu, connSet.mu, peerSessions.mu, and the
//     sync.Once of stopped
//     (markStopped, which only closes a channel). raftDownOnce calls
//     Raft's Shutdown, which runs the observers' filters, which take
//     stopOnce: raftDownOnce before stopOnce.
//
// What must never be held while calling what:
//
//   - fsm.mu (that is, inside a Raft.Read's fn, an Observer method or the
//     engine's hook) while calling Apply, or waiting on anything of Raft's
//     (a future, Snapshot, Barrier, Restore, Shutdown's wait): the FSM
//     goroutine needs fsm.mu to go on, and the wait would never end. Nor a
//     second Raft.Read inside one: a writer waiting between the two read
//     locks blocks the second for good.
//   - the server's notifier mutex while calling Raft.Read or Apply: the
//     FSM goroutine takes it, through the engine's hook, with fsm.mu held.
//   - raiseMu on the FSM goroutine, or anywhere the pipeline waits on: its
//     holder waits for the pipeline.
//   - learnMu, or any lock a hello takes, while calling into Raft
//     (GetConfiguration, any future): Raft's RPC goroutines run hellos
//     that take learnMu and read the engine. formatAllRead and
//     recordIncarnations read the configuration first, then lock.
//   - Raft's observer filters and the FSM goroutine must not block on the
//     pipeline: the filter only closes a channel, and fsm.Apply's answer
//     only frees a slot that its entry holds and sends on buffered
//     channels; a shutdownRaft from a filter would deadlock in Raft's
//     Shutdown.
//   - faultStop.halt runs the stop on its own goroutine, never the
//     caller's: the caller may be Raft's main loop (storeGate) or the FSM
//     goroutine, and the stop waits for Raft's goroutines to end.
package replog
