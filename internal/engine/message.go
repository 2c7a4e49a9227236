package engine

// msgState is where a message stands in its queue's life cycle.
type msgState uint8

const (
	// stateVisible: stored and receivable (subject to FIFO group order).
	stateVisible msgState = iota
	// stateDelayed: sent with a delay that has not run out yet.
	stateDelayed
	// stateInflight: received, and its visibility timeout has not run out.
	stateInflight
)

// message is one stored message. Its fields are the message's state,
// everything a snapshot has to keep, but for those marked index (list
// links and heap positions, rebuilt from that state).
//
// The layout is chosen for a backlog of millions (see message_compact.go
// and msgstore.go): 112 bytes in a msgArena, outside the garbage-collected
// heap, so it holds no pointer but to other records. What it refers to on
// the heap, it names by index into its msgStore's tables (ext, recv,
// group, sender; 0 is none). The body is elsewhere (a BodyStore, or the
// engine's table in memory), with what only a receive or an inspection
// shows (its payload: the MessageId, MD5OfBody, deduplication id and
// attributes, see bodies.go); what only a received message needs is in
// its recvState, and the sent time of a moved message (the only one whose
// sent time is not its enqueue time) in its msgExt. The fields are
// ordered by alignment; TestMessageLayout holds the size and the absence
// of pointers.
type message struct {
	serial uint64 // engine-wide identity, the key of receipt handles
	seq    uint64 // SequenceNumber in its current queue (FIFO)

	enqueuedAt int64 // start of the retention period, ns; also the SentTimestamp unless moved (see sentAt)
	visibleAt  int64 // when a delayed or in-flight message becomes visible, ns

	prev, next   *message // index: FIFO: the group's list; standard: the tenant's visible list; a free record's next free one
	aprev, anext *message // index: the queue's arrival list (retention order)

	ref        BodyRef // where the engine's BodyStore keeps the body
	ext        uint32  // msgStore.exts: attributes, trace header, dead-letter source, other MessageId, sent time if moved
	recv       uint32  // msgStore.recvs: its receives here; 0 if it was never received here
	group      uint32  // msgStore.strs: MessageGroupId: FIFO group, or fair-queue tenant
	sender     uint32  // msgStore.strs: SenderId: the sending account
	size       int32   // message size as SQS counts it (at most 1 MiB)
	timerPos   int32   // index: position in queue.timers
	agedPos    int32   // index: position in queue.aged
	vizChanges int16   // ChangeMessageVisibility calls since the current receive (saturates)
	state      msgState
}

// recvState is what a message keeps of its receives. Most of a backlog was
// never received, and keeps none: the message record is smaller by the
// difference. It is never changed once made (a receive makes a new one),
// so that a copy of a message saved for a snapshot view (cowState.touch)
// may share it.
type recvState struct {
	firstAt int64  // ApproximateFirstReceiveTimestamp, ns (valid if receives > 0)
	at      int64  // time of the current receive, ns
	nonce   uint64 // receipt nonce of the current receive; 0 if none since a move
	// receives is the ApproximateReceiveCount (saturates): 0 since a move.
	receives int32
}

// receives returns m's ApproximateReceiveCount.
func (s *msgStore) receives(m *message) int32 { return s.recvOf(m).receives }

// firstRecvAt returns the ApproximateFirstReceiveTimestamp, ns (valid if
// receives(m) > 0).
func (s *msgStore) firstRecvAt(m *message) int64 { return s.recvOf(m).firstAt }

// receivedAt returns the time of the current receive, ns.
func (s *msgStore) receivedAt(m *message) int64 { return s.recvOf(m).at }

// nonce returns the receipt nonce of the current receive; 0 if the message
// was never received here, or not since it was moved.
func (s *msgStore) nonce(m *message) uint64 { return s.recvOf(m).nonce }

// timerLess orders messages by the time they become visible, then by serial
// so that equal times resolve the same way on every replica.
func timerLess(a, b *message) bool {
	if a.visibleAt != b.visibleAt {
		return a.visibleAt < b.visibleAt
	}
	return a.serial < b.serial
}

// agedLess orders messages by the start of their retention period.
func agedLess(a, b *message) bool {
	if a.enqueuedAt != b.enqueuedAt {
		return a.enqueuedAt < b.enqueuedAt
	}
	return a.serial < b.serial
}

func timerPos(m *message) *int32 { return &m.timerPos }
func agedPos(m *message) *int32  { return &m.agedPos }

// mix64 is the SplitMix64 finaliser: a bijective scrambling of 64 bits. The
// engine derives receipt nonces and task handles from command entropy with
// it, so they are unguessable without the entropy yet identical on replay.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// receiptNonce derives the nonce of one receive of one message: unique per
// (message, receive) and unguessable without the command's entropy.
func receiptNonce(entropy, serial uint64, receives int) uint64 {
	n := mix64(entropy ^ mix64(serial) ^ mix64(uint64(receives)<<32|0x5bd1e995))
	if n == 0 {
		n = 1 // 0 means "never received"
	}
	return n
}
