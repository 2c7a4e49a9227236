package engine

import (
	"encoding/hex"

	"github.com/fifoq/fifoq/internal/api"
)

// A queued message's fixed-size fields are kept in their binary form, and
// its rarely used ones in a msgExt its record names by index, so that a backlog of millions
// costs little beyond the bodies: the hex and UUID strings that results
// carry are formatted when a message is received or inspected.

// msgID is a MessageId. The server makes them canonical lowercase UUIDs,
// which are kept as their 16 bytes; any other id (one a test or an older
// version chose) is kept as it is, in other.
type msgID struct {
	uuid  [16]byte
	other *string
}

// makeMsgID returns the msgID of s.
func makeMsgID(s string) msgID {
	if u, ok := parseUUID(s); ok {
		return msgID{uuid: u}
	}
	return msgID{other: &s}
}

// makeMsgIDBytes is makeMsgID of a byte slice, which it does not keep.
func makeMsgIDBytes(b []byte) msgID {
	if u, ok := parseUUID(b); ok {
		return msgID{uuid: u}
	}
	s := string(b)
	return msgID{other: &s}
}

// String returns the MessageId.
func (id msgID) String() string {
	if id.other != nil {
		return *id.other
	}
	return string(id.appendTo(make([]byte, 0, 36)))
}

// appendTo appends the MessageId to b.
func (id msgID) appendTo(b []byte) []byte {
	if id.other != nil {
		return append(b, *id.other...)
	}
	u := id.uuid[:]
	b = hex.AppendEncode(b, u[0:4])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[4:6])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[6:8])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[8:10])
	b = append(b, '-')
	return hex.AppendEncode(b, u[10:16])
}

// len returns the length of the MessageId.
func (id msgID) len() int {
	if id.other != nil {
		return len(*id.other)
	}
	return 36
}

// parseUUID parses a UUID in the canonical form xxxxxxxx-xxxx-xxxx-xxxx-
// xxxxxxxxxxxx with lowercase hex digits: the only form that formats back
// to the same string.
func parseUUID[S string | []byte](s S) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i--
			continue
		}
		hi, ok1 := lowerHex(s[i])
		lo, ok2 := lowerHex(s[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, j == 16
}

// parseMD5 parses 32 lowercase hex digits.
func parseMD5[S string | []byte](s S) (d [16]byte, ok bool) {
	if len(s) != 32 {
		return d, false
	}
	for i := range 16 {
		hi, ok1 := lowerHex(s[2*i])
		lo, ok2 := lowerHex(s[2*i+1])
		if !ok1 || !ok2 {
			return d, false
		}
		d[i] = hi<<4 | lo
	}
	return d, true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// messageID returns the MessageId of m, whose payload's head (or
// msgExt.head) is h.
func (s *msgStore) messageID(m *message, h msgHead) msgID {
	if x := s.ext(m); x.otherID != nil {
		return msgID{other: x.otherID}
	}
	return msgID{uuid: h.uuid}
}

// msgExt holds the fields most messages leave empty. It is never changed
// in place once a message holds it (a snapshot view may share it): a
// change replaces it.
type msgExt struct {
	// The message attributes are in attrs, or, if storedAttrs is not 0,
	// the storedAttrs bytes after the head of the payload a BodyStore
	// keeps for the message (see keepBody).
	attrs       map[string]api.MessageAttributeValue
	storedAttrs uint32
	md5Attrs    string  // MD5 of all of the attributes
	traceHeader string  // AWSTraceHeader system attribute
	dlqSource   string  // DeadLetterQueueSourceArn
	otherID     *string // the MessageId if it is not a canonical UUID (see msgID)
	// head is the MessageId and MD5OfBody of a message whose payload
	// begins without them: one restored from a snapshot of format 3. nil
	// for every other message, whose payload begins with them.
	head *msgHead
	// sentBefore is how long before its enqueue time (message.enqueuedAt)
	// the message was sent, ns: 0 unless it was moved, which starts a new
	// enqueue time and keeps the sent time.
	sentBefore int64
}

// newMsgExt returns x as a message keeps it: nil if all its fields are
// empty. id is the message's MessageId: only one that is not a canonical
// UUID goes into it (otherID), replacing x.otherID.
func newMsgExt(id msgID, x msgExt) *msgExt {
	if len(x.attrs) == 0 {
		x.attrs = nil
	}
	x.otherID = id.other
	if x.attrs == nil && x.storedAttrs == 0 && x.md5Attrs == "" && x.traceHeader == "" && x.dlqSource == "" && x.otherID == nil && x.head == nil && x.sentBefore == 0 {
		return nil
	}
	return &x
}

// attrs returns the message attributes kept in m; not those kept in a
// BodyStore (see payloadOf).
func (s *msgStore) attrs(m *message) map[string]api.MessageAttributeValue { return s.ext(m).attrs }

// storedAttrs returns the length of the attributes' encoding at the start
// of m's payload in its BodyStore: 0 if there is none.
func (s *msgStore) storedAttrs(m *message) uint32 { return s.ext(m).storedAttrs }

func (s *msgStore) md5Attrs(m *message) string    { return s.ext(m).md5Attrs }
func (s *msgStore) traceHeader(m *message) string { return s.ext(m).traceHeader }
func (s *msgStore) dlqSource(m *message) string   { return s.ext(m).dlqSource }

// sentAt returns the SentTimestamp, ns: the enqueue time, unless the
// message was moved since it was sent.
func (s *msgStore) sentAt(m *message) int64 { return m.enqueuedAt - s.ext(m).sentBefore }

// setEnqueuedAt starts a new retention period at t for a message being
// moved, keeping its sent time, and replaces its msgExt if that changes it.
func (s *msgStore) setEnqueuedAt(m *message, t int64) {
	sent := s.sentAt(m)
	m.enqueuedAt = t
	if s.sentAt(m) != sent {
		s.changeExt(m, func(x *msgExt) { x.sentBefore = t - sent })
	}
}

// setDLQSource sets DeadLetterQueueSourceArn, replacing m's msgExt.
func (s *msgStore) setDLQSource(m *message, arn string) {
	s.changeExt(m, func(x *msgExt) { x.dlqSource = arn })
}

// changeExt replaces m's msgExt with a copy changed by change: an ext is
// never changed in place, since a snapshot view may share it.
func (s *msgStore) changeExt(m *message, change func(*msgExt)) {
	x := *s.ext(m)
	change(&x)
	s.setExt(m, newMsgExt(msgID{other: x.otherID}, x))
}

// bodyMD5 returns MD5OfBody, in hex.
func (h *msgHead) bodyMD5() string { return hex.EncodeToString(h.md5[:]) }
