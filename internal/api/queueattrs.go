package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// queueAttrKind says how a queue attribute name may be used.
type queueAttrKind int

const (
	attrSettable queueAttrKind = iota + 1 // settable on every queue
	attrFIFOOnly                          // settable on FIFO queues only
	attrReadOnly                          // returned by GetQueueAttributes, never set
)

// queueAttrKinds lists every queue attribute name of the model's
// QueueAttributeName enum ("All" included, as a read-only selector).
var queueAttrKinds = map[string]queueAttrKind{
	AttrAll:                                   attrReadOnly,
	AttrPolicy:                                attrSettable,
	AttrVisibilityTimeout:                     attrSettable,
	AttrMaximumMessageSize:                    attrSettable,
	AttrMessageRetentionPeriod:                attrSettable,
	AttrApproximateNumberOfMessages:           attrReadOnly,
	AttrApproximateNumberOfMessagesNotVisible: attrReadOnly,
	AttrApproximateNumberOfMessagesDelayed:    attrReadOnly,
	AttrCreatedTimestamp:                      attrReadOnly,
	AttrLastModifiedTimestamp:                 attrReadOnly,
	AttrQueueArn:                              attrReadOnly,
	AttrDelaySeconds:                          attrSettable,
	AttrReceiveMessageWaitTimeSeconds:         attrSettable,
	AttrRedrivePolicy:                         attrSettable,
	AttrRedriveAllowPolicy:                    attrSettable,
	AttrFifoQueue:                             attrFIFOOnly,
	AttrContentBasedDeduplication:             attrFIFOOnly,
	AttrKmsMasterKeyId:                        attrSettable,
	AttrKmsDataKeyReusePeriodSeconds:          attrSettable,
	AttrDeduplicationScope:                    attrFIFOOnly,
	AttrFifoThroughputLimit:                   attrFIFOOnly,
	AttrSqsManagedSseEnabled:                  attrSettable,
}

// IsQueueAttributeName reports whether name is one of the queue attribute
// names GetQueueAttributes accepts ("All" included).
func IsQueueAttributeName(name string) bool {
	_, ok := queueAttrKinds[name]
	return ok
}

// intRange is the inclusive range of an integer queue attribute.
type intRange struct{ min, max int }

// intQueueAttrs are the integer-valued settable attributes and their ranges.
var intQueueAttrs = map[string]intRange{
	AttrDelaySeconds:                  {0, MaxDelaySeconds},
	AttrMaximumMessageSize:            {MinMaximumMessageSize, MaxMessageSizeLimit},
	AttrMessageRetentionPeriod:        {MinMessageRetentionPeriod, MaxMessageRetentionPeriod},
	AttrReceiveMessageWaitTimeSeconds: {0, MaxWaitTimeSeconds},
	AttrVisibilityTimeout:             {0, MaxVisibilityTimeout},
	AttrKmsDataKeyReusePeriodSeconds:  {MinKmsDataKeyReusePeriod, MaxKmsDataKeyReusePeriod},
}

// enumQueueAttrs are the settable attributes with a fixed set of values.
var enumQueueAttrs = map[string][]string{
	AttrDeduplicationScope:  {"messageGroup", "queue"},
	AttrFifoThroughputLimit: {"perQueue", "perMessageGroupId"},
}

// boolQueueAttrs are the settable attributes whose value is a boolean.
var boolQueueAttrs = map[string]bool{
	AttrSqsManagedSseEnabled:      true,
	AttrContentBasedDeduplication: true,
}

// ParseBoolAttr reads a boolean queue attribute value as SQS does: "true"
// or "false" in any letter case ("True", "TRUE"), nothing else. ok is
// false for any other text.
func ParseBoolAttr(value string) (v, ok bool) {
	switch {
	case strings.EqualFold(value, "true"):
		return true, true
	case strings.EqualFold(value, "false"):
		return false, true
	}
	return false, false
}

// IsTrueAttr reports whether a boolean queue attribute value is true in
// any letter case, the test SQS makes of FifoQueue.
func IsTrueAttr(value string) bool {
	v, ok := ParseBoolAttr(value)
	return ok && v
}

// ErrModifyQueueType is SQS's answer to a SetQueueAttributes that gives a
// FIFO queue a FifoQueue other than true: a queue's type is fixed when it
// is created.
func ErrModifyQueueType() *Error {
	return ErrInvalidAttributeValue("Invalid value for the parameter %s. Reason: Modifying queue type is not supported.", AttrFifoQueue)
}

// ValidateQueueAttribute checks one settable queue attribute's name and value
// for a queue of the given kind (fifo). It returns InvalidAttributeName for a
// name that is unknown or read-only, and InvalidAttributeValue for a bad value.
//
// The FIFO-only attributes on a standard queue are InvalidAttributeName, with
// SQS's wording for each. FifoQueue is valid only as "true" on a FIFO queue:
// SQS answers "Unknown Attribute FifoQueue." when a standard queue is given
// the attribute, whatever its value. Booleans are "true" or "false" in any
// letter case, as SQS reads them. Integers are plain decimal digits (no
// sign, no spaces, no fraction). Empty Policy, RedrivePolicy,
// RedriveAllowPolicy and KmsMasterKeyId values are valid: they remove the
// setting.
func ValidateQueueAttribute(name, value string, fifo bool) error {
	kind, ok := queueAttrKinds[name]
	if !ok || kind == attrReadOnly {
		return ErrInvalidAttributeName(name)
	}
	if kind == attrFIFOOnly && !fifo {
		switch name {
		case AttrDeduplicationScope, AttrFifoThroughputLimit:
			return kindInvalidAttributeName.with("You can specify the %s only when FifoQueue is set to true.", name)
		}
		return ErrInvalidAttributeName(name)
	}
	if r, ok := intQueueAttrs[name]; ok {
		if n, ok := parsePlainInt(value); !ok || n < r.min || n > r.max {
			return invalidAttributeValue(name)
		}
		return nil
	}
	if boolQueueAttrs[name] {
		if _, ok := ParseBoolAttr(value); !ok {
			return invalidAttributeValue(name)
		}
		return nil
	}
	if values, ok := enumQueueAttrs[name]; ok {
		for _, v := range values {
			if value == v {
				return nil
			}
		}
		return invalidAttributeValue(name)
	}
	switch name {
	case AttrFifoQueue:
		v, ok := ParseBoolAttr(value)
		switch {
		case ok && v:
			return nil
		case ok:
			// "false" makes a standard queue, which has no FifoQueue attribute.
			return ErrInvalidAttributeName(name)
		}
		return invalidAttributeValue(name)
	case AttrPolicy:
		if value != "" && !isJSONObject(value) {
			return invalidAttributeValue(name)
		}
	case AttrRedrivePolicy:
		if value != "" {
			if _, err := ParseRedrivePolicy(value); err != nil {
				return err
			}
		}
	case AttrRedriveAllowPolicy:
		if value != "" {
			if _, err := ParseRedriveAllowPolicy(value); err != nil {
				return err
			}
		}
	case AttrKmsMasterKeyId:
		// Any key id or alias; fifoq stores it and does no KMS.
	}
	return nil
}

// ValidateQueueAttributes checks every attribute of a CreateQueue or
// SetQueueAttributes request for a queue of the given kind, in ascending
// name order so that the first error is always the same one, and then the
// rules that tie attributes of the same request together: SSE-KMS and
// SSE-SQS cannot both be enabled. Rules that compare a new value with the
// queue's current ones (FifoThroughputLimit perMessageGroupId needs
// DeduplicationScope messageGroup) are the engine's.
func ValidateQueueAttributes(attrs map[string]string, fifo bool) error {
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		if err := ValidateQueueAttribute(name, attrs[name], fifo); err != nil {
			return err
		}
	}
	if IsTrueAttr(attrs[AttrSqsManagedSseEnabled]) && attrs[AttrKmsMasterKeyId] != "" {
		return ErrSSEConflict()
	}
	return nil
}

// invalidAttributeValue is SQS's answer to a malformed queue attribute value.
func invalidAttributeValue(name string) *Error {
	return ErrInvalidAttributeValue("Invalid value for the parameter %s.", name)
}

// parsePlainInt parses a non-negative decimal integer made only of the
// digits 0-9; it refuses signs, spaces, fractions and overflowing values.
// Leading zeros are accepted, as Java's Integer.parseInt accepts them.
func parsePlainInt(s string) (int, bool) {
	if s == "" || !isASCIIDigits(s) {
		return 0, false
	}
	digits := strings.TrimLeft(s, "0")
	if len(digits) > 10 {
		return 0, false
	}
	n, err := strconv.Atoi("0" + digits)
	return n, err == nil
}

// isJSONObject reports whether s is a single well-formed JSON object.
func isJSONObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}
