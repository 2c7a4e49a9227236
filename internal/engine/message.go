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
// links and heap positions, rebuilt from that state) and gen.
//
// The layout is chosen for a backlog of millions (see message_compact.go):
// 224 bytes, a size class of the allocator, beside the body when the body
// is kept in the message (the reference to a body kept in a BodyStore took
// it from 208). The fields are ordered by size so that little is padding.
type message struct {
	serial uint64   // engine-wide identity, the key of receipt handles
	uuid   [16]byte // MessageId, if a canonical UUID (see messageID)

	body    string   // the body, unless it is kept in a BodyStore
	ref     BodyRef  // where a BodyStore keeps the body (File 0: none)
	md5Body [16]byte // MD5OfBody
	ext     *msgExt  // attributes, trace header, dead-letter source, other MessageId: nil if none
	sender  istr     // SenderId: the sending account

	group   istr   // MessageGroupId: FIFO group, or fair-queue tenant
	dedupID string // effective MessageDeduplicationId (FIFO)
	seq     uint64 // SequenceNumber in its current queue (FIFO)

	sentAt     int64 // SentTimestamp, ns; kept across moves
	enqueuedAt int64 // start of the retention period, ns

	visibleAt   int64  // when a delayed or in-flight message becomes visible, ns
	firstRecvAt int64  // ApproximateFirstReceiveTimestamp, ns (valid if receives > 0)
	receivedAt  int64  // time of the current receive, ns
	nonce       uint64 // receipt nonce of the current receive; 0 if never received here

	prev, next   *message // index: FIFO: the group's list; standard: the tenant's visible list
	aprev, anext *message // index: the queue's arrival list (retention order)

	receives   int32  // ApproximateReceiveCount (saturates)
	size       int32  // message size as SQS counts it (at most 1 MiB)
	gen        uint32 // copy-on-write generation (see cowState); not state
	timerPos   int32  // index: position in queue.timers
	agedPos    int32  // index: position in queue.aged
	vizChanges int16  // ChangeMessageVisibility calls since the current receive (saturates)
	state      msgState
}

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
