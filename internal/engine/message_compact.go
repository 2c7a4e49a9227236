package engine

import (
	"encoding/hex"
	"unique"

	"github.com/fifoq/fifoq/internal/api"
)

// A queued message's fixed-size fields are kept in their binary form, and
// its rarely used ones behind one pointer, so that a backlog of millions
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

// istr is an interned string: a message's group id and sender are shared
// by many messages, and as a handle each costs 8 bytes in place of a
// string's 16. The zero value is "".
type istr struct{ h unique.Handle[string] }

// intern returns the istr of s.
func intern(s string) istr {
	if s == "" {
		return istr{}
	}
	return istr{unique.Make(s)}
}

// String returns the string.
func (s istr) String() string {
	if s == (istr{}) {
		return ""
	}
	return s.h.Value()
}

// messageID returns the MessageId.
func (m *message) messageID() msgID {
	if m.ext != nil && m.ext.otherID != nil {
		return msgID{other: m.ext.otherID}
	}
	return msgID{uuid: m.uuid}
}

// msgExt holds the fields most messages leave empty. It is never changed
// in place once a message holds it (a snapshot view may share it): a
// change replaces it.
type msgExt struct {
	// The message attributes are in attrs, or, if storedAttrs is not 0,
	// the first storedAttrs bytes of the payload a BodyStore keeps for
	// the message (see keepBody).
	attrs       map[string]api.MessageAttributeValue
	storedAttrs uint32
	md5Attrs    string  // MD5 of all of the attributes
	traceHeader string  // AWSTraceHeader system attribute
	dlqSource   string  // DeadLetterQueueSourceArn
	otherID     *string // the MessageId if it is not a canonical UUID (see msgID)
	// sentBefore is how long before its enqueue time (message.enqueuedAt)
	// the message was sent, ns: 0 unless it was moved, which starts a new
	// enqueue time and keeps the sent time.
	sentBefore int64
}

// newMsgExt returns the msgExt of the given fields, nil if all are empty.
// id is the message's MessageId: only one that is not a canonical UUID
// goes here. x.otherID is ignored.
func newMsgExt(id msgID, x msgExt) *msgExt {
	if len(x.attrs) == 0 {
		x.attrs = nil
	}
	x.otherID = id.other
	if x.attrs == nil && x.storedAttrs == 0 && x.md5Attrs == "" && x.traceHeader == "" && x.dlqSource == "" && x.otherID == nil && x.sentBefore == 0 {
		return nil
	}
	return &x
}

// setExt sets m's MessageId and rarely used fields.
func (m *message) setExt(id msgID, x msgExt) {
	m.uuid = id.uuid
	m.ext = newMsgExt(id, x)
}

// attrs returns the message attributes kept in m; not those kept in a
// BodyStore (see payloadOf).
func (m *message) attrs() map[string]api.MessageAttributeValue {
	if m.ext == nil {
		return nil
	}
	return m.ext.attrs
}

// storedAttrs returns the length of the attributes' encoding at the start
// of m's payload in its BodyStore: 0 if there is none.
func (m *message) storedAttrs() uint32 {
	if m.ext == nil {
		return 0
	}
	return m.ext.storedAttrs
}

func (m *message) md5Attrs() string {
	if m.ext == nil {
		return ""
	}
	return m.ext.md5Attrs
}

func (m *message) traceHeader() string {
	if m.ext == nil {
		return ""
	}
	return m.ext.traceHeader
}

func (m *message) dlqSource() string {
	if m.ext == nil {
		return ""
	}
	return m.ext.dlqSource
}

// sentAt returns the SentTimestamp, ns: the enqueue time, unless the
// message was moved since it was sent.
func (m *message) sentAt() int64 {
	if m.ext == nil {
		return m.enqueuedAt
	}
	return m.enqueuedAt - m.ext.sentBefore
}

// setEnqueuedAt starts a new retention period at t for a message being
// moved, keeping its sent time, and replaces m.ext if that changes it.
func (m *message) setEnqueuedAt(t int64) {
	sent := m.sentAt()
	m.enqueuedAt = t
	if m.sentAt() != sent {
		m.changeExt(func(x *msgExt) { x.sentBefore = t - sent })
	}
}

// setDLQSource sets DeadLetterQueueSourceArn, replacing m.ext.
func (m *message) setDLQSource(arn string) {
	m.changeExt(func(x *msgExt) { x.dlqSource = arn })
}

// changeExt replaces m.ext with a copy changed by change: an ext is never
// changed in place, since a snapshot view may share it.
func (m *message) changeExt(change func(*msgExt)) {
	var x msgExt
	if m.ext != nil {
		x = *m.ext
	}
	change(&x)
	m.ext = newMsgExt(m.messageID(), x)
}

// bodyMD5 returns MD5OfBody, in hex.
func (m *message) bodyMD5() string { return hex.EncodeToString(m.md5Body[:]) }
