// Package engine is fifoq's queue state machine: the queues, their messages
// and the rules of Amazon SQS for FIFO and standard queues.
//
// The engine is deterministic. It never reads a clock, draws a random number
// or does I/O: every Command carries its timestamp, its message ids and the
// entropy receipt handles are derived from, and delays, visibility timeouts,
// retention, deduplication and receive attempts are computed from command
// times. Applying the same commands to two engines leaves them in the same
// state and gives the same results, which is what lets a replicated log
// drive several replicas.
//
// Time is applied lazily: a message whose delay or visibility timeout ran
// out becomes visible when a command next touches its queue. Reads account
// for what ran out without applying it, so they never change state and may
// run concurrently. For queues no command touches, the server applies
// HousekeepRequest commands when NextHousekeeping says time has work due,
// so that expired messages and records do not stay in memory.
//
// Where a FIFO group blocks: a group is receivable while its first stored
// message is visible, and a receive takes its messages in order from there,
// stopping at the first that is not; so a message in flight (received, not
// deleted, visibility timeout running) blocks every later message of its
// group until it is deleted or becomes visible again. There is no lock
// beside the messages' own states: fifoGroup, groupLess and takeFIFO
// (fifo.go) are the whole of it. The rules of each kind of
// queue are stated, with transcripts that show them, in
// testdata/transcripts (see its README.md).
//
// Costs do not grow with backlogs. A FIFO queue keeps its message groups
// with a receivable head in a heap ordered by when the head became visible
// (as SQS serves them), so a receive finds the next group in O(log groups)
// whatever the number of stored messages; deletes, visibility changes and expiry are
// O(log in-flight messages) at most.
package engine
