package engine

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// A receipt handle names one receive of one message. It encodes
//
//	version (1 byte) | queue tag (4) | message serial (8) | receipt nonce (8)
//
// in unpadded URL-safe base64; a split queue's (split.go) is of version 2,
// and adds its group's api.GroupHash (4), for a router to find the
// partition that holds the group. The queue tag binds the handle to one
// incarnation of one queue, the serial finds the message, and the nonce,
// drawn from the receiving command's entropy, tells the current receive
// from older ones and cannot be guessed.
const (
	handleVersion      = 1
	handleLen          = 1 + 4 + 8 + 8
	splitHandleVersion = 2
	splitHandleLen     = handleLen + 4
)

// queueTag identifies one incarnation of a queue: a queue deleted and
// created again under the same name gets another tag, so handles of the
// old queue are rejected rather than resolved against the new one. The
// partitions of a split queue, made at one creation time, differ by their
// numbers.
func queueTag(key api.QueueKey, createdAt int64) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key.Account))
	h.Write([]byte{0})
	h.Write([]byte(key.Name))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(createdAt, 10)))
	if key.Part != 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.FormatUint(uint64(key.Part), 10)))
	}
	return h.Sum32()
}

func encodeHandle(tag uint32, serial, nonce uint64) string {
	var b [handleLen]byte
	b[0] = handleVersion
	binary.BigEndian.PutUint32(b[1:5], tag)
	binary.BigEndian.PutUint64(b[5:13], serial)
	binary.BigEndian.PutUint64(b[13:21], nonce)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// handleOf returns the receipt handle of m's receive of nonce in q under
// tag (q's own, or one it had before a move): of version 2 in a split
// queue.
func (q *queue) handleOf(tag uint32, serial, nonce uint64, m *message) string {
	if !q.split {
		return encodeHandle(tag, serial, nonce)
	}
	return encodeSplitHandle(tag, serial, nonce, api.GroupHash(q.ms.group(m)))
}

// encodeSplitHandle encodes a handle of version 2, carrying hash.
func encodeSplitHandle(tag uint32, serial, nonce uint64, hash uint32) string {
	var b [splitHandleLen]byte
	b[0] = splitHandleVersion
	binary.BigEndian.PutUint32(b[1:5], tag)
	binary.BigEndian.PutUint64(b[5:13], serial)
	binary.BigEndian.PutUint64(b[13:21], nonce)
	binary.BigEndian.PutUint32(b[21:25], hash)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// decodeHandle parses a receipt handle of either version; ok is false if
// it is malformed.
func decodeHandle(s string) (tag uint32, serial, nonce uint64, ok bool) {
	b, ok := handleBytes(s)
	if !ok {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint32(b[1:5]), binary.BigEndian.Uint64(b[5:13]), binary.BigEndian.Uint64(b[13:21]), true
}

// handleBytes decodes a receipt handle of either version.
func handleBytes(s string) ([]byte, bool) {
	var b [splitHandleLen]byte
	switch base64.RawURLEncoding.DecodedLen(len(s)) {
	case handleLen, splitHandleLen:
	default:
		return nil, false
	}
	n, err := base64.RawURLEncoding.Decode(b[:], []byte(s))
	switch {
	case err != nil:
		return nil, false
	case n == handleLen && b[0] == handleVersion, n == splitHandleLen && b[0] == splitHandleVersion:
		return b[:n], true
	}
	return nil, false
}

// HandleGroupHash returns the api.GroupHash a receipt handle of a split
// queue carries, and false for any other handle: where a router sends a
// request naming it.
func HandleGroupHash(h string) (uint32, bool) {
	b, ok := handleBytes(h)
	if !ok || len(b) != splitHandleLen {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[21:25]), true
}

// lookup resolves a receipt handle of queue q. It returns the message (nil
// if it no longer exists in q: deleted, expired, purged or moved) and the
// nonce the handle carries, or ReceiptHandleIsInvalid if the handle is
// malformed or belongs to another queue.
//
// In a split queue (split.go), a handle handed out before the queue's
// first split carries no group hash, so a router cannot tell which
// partition holds its message: one whose message is not here answers
// IsQueueMoving's error, for the router to ask the other partitions
// (and to take the handle for one of a message gone once none has it),
// rather than a success that would leave the message in flight.
func (q *queue) lookup(handle string) (*message, uint64, error) {
	tag, serial, nonce, ok := decodeHandle(handle)
	if !ok || nonce == 0 {
		return nil, 0, api.ErrReceiptHandleIsInvalid(handle)
	}
	if tag != q.handleTag {
		// A handle handed out before the queue moved here names the
		// message by the serial it had there.
		if serial, ok = q.pastSerial(tag, serial); !ok {
			if _, hashed := HandleGroupHash(handle); q.split && !hashed {
				// Another partition may honour the tag: this one
				// forgot it once it named none of its messages
				// (trimPast), or never had it (another queue's).
				return nil, 0, errHandleElsewhere(q, false)
			}
			return nil, 0, api.ErrReceiptHandleIsInvalid(handle)
		}
	}
	m := q.handles[serial]
	if m == nil && q.split {
		if _, hashed := HandleGroupHash(handle); !hashed {
			return nil, 0, errHandleElsewhere(q, true)
		}
	}
	return m, nonce, nil
}

// errHandleExpired is SQS's answer, for FIFO queues, to a receipt handle
// whose receive is over: its visibility timeout ran out or was ended, or
// the message was received again since. The code and wording were
// recorded (LocalStack's test_fifo_delete_after_visibility_timeout:
// InvalidParameterValue, HTTP 400).
func errHandleExpired(handle string) error {
	return api.ErrInvalidParameterValue("Value %s for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.", handle)
}

// handleElsewhereMessage begins the message of errHandleElsewhere, which
// goes on to say the hashes the partition holds (HandleElsewhereSpan).
const handleElsewhereMessage = "This partition of the queue does not hold the message of the receipt handle; another may."

// unknownTagMessage ends errHandleElsewhere's message where the partition
// does not honour the handle's tag (HandleElsewhereKnowsTag).
const unknownTagMessage = " It does not know the handle's tag."

// errHandleElsewhere is partition q's answer to a receipt handle from
// before the queue's first split (it carries no group's hash) whose
// message it does not hold: the message may be in another partition, or
// gone. A router tries each partition (IsHandleElsewhere), and takes the
// message for gone only once the partitions that answered so hold every
// hash between them (HandleElsewhereSpan): a router's map may lag a split
// that made a partition it does not know of, which may hold the message.
// knowsTag says whether q honours the handle's tag: where no partition
// does, the handle is another queue's, or one whose messages all went
// long ago, and the router answers ReceiptHandleIsInvalid, as a queue
// never split answers a tag it does not know.
func errHandleElsewhere(q *queue, knowsTag bool) error {
	lo, hi := q.span()
	unknown := ""
	if !knowsTag {
		unknown = unknownTagMessage
	}
	return api.ErrServiceUnavailable("%s It holds the group hashes [%d, %d).%s", handleElsewhereMessage, lo, hi, unknown)
}

// HandleElsewhereKnowsTag reports whether err, an IsHandleElsewhere
// answer, is of a partition that honours the handle's tag. An answer of a
// member from before the distinction is taken to know it: the message is
// then taken for gone rather than the handle refused, as it was.
func HandleElsewhereKnowsTag(err error) bool {
	var ae *api.Error
	return IsHandleElsewhere(err) && errors.As(err, &ae) && !strings.HasSuffix(ae.Message, unknownTagMessage)
}

// IsHandleElsewhere reports whether err is a partition's answer to a
// handle from before its queue's first split whose message it does not
// hold: another partition may hold it, and if none does, the message is
// gone (ErrMessageNotAvailable).
func IsHandleElsewhere(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == "ServiceUnavailable" && strings.HasPrefix(ae.Message, handleElsewhereMessage)
}

// HandleElsewhereSpan returns the group hashes [lo, hi) that the partition
// answering err holds, if err is its IsHandleElsewhere answer.
func HandleElsewhereSpan(err error) (lo, hi uint64, ok bool) {
	var ae *api.Error
	if !IsHandleElsewhere(err) || !errors.As(err, &ae) {
		return 0, 0, false
	}
	_, err = fmt.Sscanf(strings.TrimPrefix(ae.Message, handleElsewhereMessage), " It holds the group hashes [%d, %d).", &lo, &hi)
	return lo, hi, err == nil && lo < hi && hi <= hashEnd
}

// ErrMessageNotAvailable is the answer to ChangeMessageVisibility with
// the receipt handle of a message that no longer exists.
func ErrMessageNotAvailable(handle string) error { return errNotAvailable(handle) }

// errNotAvailable is SQS's answer to ChangeMessageVisibility with the
// receipt handle of a message that no longer exists (LocalStack's
// AWS-validated test_change_visibility_on_deleted_message_raises_invalid_parameter_value).
func errNotAvailable(handle string) error {
	return api.ErrInvalidParameterValue("Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", handle)
}
