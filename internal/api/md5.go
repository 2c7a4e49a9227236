package api

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
)

// Transport type bytes of SQS's message attribute digest: every String and
// Number attribute (custom suffixes included) is encoded as a string, every
// Binary attribute as bytes.
const (
	transportString byte = 1
	transportBinary byte = 2
)

// MD5OfBody is the hex MD5 of the body's UTF-8 bytes.
func MD5OfBody(body string) string {
	// The body is copied through a buffer on the stack, not converted to
	// a []byte of its own: that copy was an allocation of the body's size
	// per message.
	var buf [2048]byte
	var sum [md5.Size]byte
	if len(body) <= len(buf) {
		sum = md5.Sum(buf[:copy(buf[:], body)])
	} else {
		h := md5.New()
		for rest := body; rest != ""; {
			n := copy(buf[:], rest)
			h.Write(buf[:n])
			rest = rest[n:]
		}
		h.Sum(sum[:0])
	}
	var out [2 * md5.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// MD5OfMessageAttributes is the hex MD5 of the message attributes, encoded
// as SQS does (names sorted; length-prefixed name, data type, transport type
// byte and value). It is "" when there are no attributes.
//
// For each attribute, in ascending order of name, the digest covers:
// a 4-byte big-endian length and the name's bytes, a 4-byte length and the
// DataType's bytes, one transport byte (1 for String and Number types, 2
// for Binary types), and a 4-byte length and the value's bytes (the UTF-8
// StringValue, or the BinaryValue). The AWS SDKs that verify this digest
// compute exactly this encoding, so any difference makes them reject the
// response. Names are compared bytewise; valid names are ASCII, so this is
// also the order of the SDKs that sort by UTF-16 code unit.
//
// The same function computes MD5OfMessageSystemAttributes, whose values
// have the same shape.
func MD5OfMessageAttributes(attrs map[string]MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(attrs))
	h := md5.New()
	var n [4]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, name := range names {
		v := attrs[name]
		field([]byte(name))
		field([]byte(v.DataType))
		if isBinaryType(v.DataType) {
			h.Write([]byte{transportBinary})
		} else {
			h.Write([]byte{transportString})
		}
		field(attributeValueBytes(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ContentDeduplicationID is the deduplication id of a message sent to a
// queue with ContentBasedDeduplication: the hex SHA-256 of its body.
func ContentDeduplicationID(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// MessageSize is the size that counts against MaximumMessageSize: the body's
// bytes plus, for every message attribute, its name, data type and value.
// Message system attributes do not count, as SQS documents.
func MessageSize(body string, attrs map[string]MessageAttributeValue) int {
	size := len(body)
	for name, v := range attrs {
		size += len(name) + len(v.DataType) + attributeValueLen(v)
	}
	return size
}

// attributeValueBytes is the value of an attribute as SQS stores it: the
// BinaryValue of a Binary type, the StringValue of any other type.
func attributeValueBytes(v MessageAttributeValue) []byte {
	if isBinaryType(v.DataType) {
		return v.BinaryValue
	}
	if v.StringValue == nil {
		return nil
	}
	return []byte(*v.StringValue)
}

// attributeValueLen is len(attributeValueBytes(v)) without the copy.
func attributeValueLen(v MessageAttributeValue) int {
	if isBinaryType(v.DataType) {
		return len(v.BinaryValue)
	}
	if v.StringValue == nil {
		return 0
	}
	return len(*v.StringValue)
}

// isBinaryType reports whether a DataType is Binary or a custom Binary type
// ("Binary.gif").
func isBinaryType(dataType string) bool {
	return dataType == "Binary" || strings.HasPrefix(dataType, "Binary.")
}
