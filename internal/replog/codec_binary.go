package replog

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/engine"
)

// Version 4 of the entry format (see entryFormatVersion) keeps the frame of
// the earlier versions (version byte, command count, length-prefixed
// commands, CRC-32C) but writes each command in a compact binary layout
// instead of JSON: encoding and decoding JSON was a quarter of a durable
// server's CPU, most of it on the log's single-threaded path.
//
// A command:
//
//	varint   Time
//	string   Caller, Queue.Account, Queue.Name, action
//	strings  MessageIDs
//	uvarint  Entropy
//	varint   RecreateDelay, PurgeDelay (ns)
//	string   Region, Queue.Region (version 6 and later only)
//	uvarint  Queue.Part (version 11 and later only)
//	byte     request layout (reqJSON, reqSend, ...)
//	...      the request in that layout
//
// A string is a uvarint length and the bytes, as they are (no UTF-8
// rewriting: a command decodes to exactly the command encoded). A list, a
// map or an optional value starts with a uvarint: 0 for nil (absent), else
// 1 + the number of elements; maps are written in key order, so that the
// same command always makes the same bytes. The messaging actions, which are
// nearly all of a busy log, have binary layouts, and so has a move's install
// from version 12 (its image is large); every other request is its JSON
// (reqJSON), decoded strictly as in the earlier versions.
//
// The decoder refuses a layout it does not know, a layout that does not
// match the action, and any byte left over, like the JSON decoder refuses
// unknown fields.
const minVersionBinary = 4

// Request layouts of version 4, and (reqInstall) of version 12.
const (
	reqJSON byte = iota
	reqSend
	reqSendBatch
	reqReceive
	reqDelete
	reqDeleteBatch
	// reqInstall is a fifoq:InstallQueue's, from version 12
	// (minVersionImageBytes): the move's name, then the image as it is.
	reqInstall
)

// appendString appends a length-prefixed string.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendBytes appends a length-prefixed byte slice, nil distinct from empty.
func appendBytes(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p))+1)
	return append(b, p...)
}

// appendStrings appends a list of strings, nil distinct from empty.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// appendOptInt appends an optional int.
func appendOptInt(b []byte, p *int) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	return binary.AppendVarint(b, int64(*p))
}

// appendAttrs appends a message attribute map, in key order.
func appendAttrs(b []byte, m map[string]api.MessageAttributeValue) []byte {
	if m == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(m))+1)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		b = appendString(b, k)
		if v.StringValue == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = appendString(b, *v.StringValue)
		}
		b = appendBytes(b, v.BinaryValue)
		b = appendStrings(b, v.StringListValues)
		if v.BinaryListValues == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(v.BinaryListValues))+1)
			for _, p := range v.BinaryListValues {
				b = appendBytes(b, p)
			}
		}
		b = appendString(b, v.DataType)
	}
	return b
}

// Flags of a sent message in version 4.
const (
	sentDedupID   = 1 << iota // MessageDeduplicationIdSet
	sentGroupID               // MessageGroupIdSet
	sentFlagsMask = sentDedupID | sentGroupID
)

func sentFlags(dedup, group bool) byte {
	var f byte
	if dedup {
		f |= sentDedupID
	}
	if group {
		f |= sentGroupID
	}
	return f
}

// appendCommand appends c in the binary layout of the given entry version
// (4 or later). asJSON reports whether its request went as JSON.
func appendCommand(b []byte, c *engine.Command, version byte) (out []byte, asJSON bool, err error) {
	b = binary.AppendVarint(b, c.Time)
	b = appendString(b, c.Caller)
	b = appendString(b, c.Queue.Account)
	b = appendString(b, c.Queue.Name)
	b = appendString(b, string(c.Request.Action()))
	b = appendStrings(b, c.MessageIDs)
	b = binary.AppendUvarint(b, c.Entropy)
	b = binary.AppendVarint(b, int64(c.RecreateDelay))
	b = binary.AppendVarint(b, int64(c.PurgeDelay))
	if version >= minVersionRegions {
		b = appendString(b, c.Region)
		b = appendString(b, c.Queue.Region)
	} else if c.Region != "" || c.Queue.Region != "" {
		return nil, false, fmt.Errorf("a command in region %q on queue %s needs entry format version %d", c.Region, c.Queue, minVersionRegions)
	}
	if version >= minVersionPartitions {
		b = binary.AppendUvarint(b, uint64(c.Queue.Part))
	} else if c.Queue.Part != 0 {
		return nil, false, fmt.Errorf("a command on partition %d of queue %s needs entry format version %d", c.Queue.Part, c.Queue.Whole(), minVersionPartitions)
	}
	switch r := c.Request.(type) {
	case *api.SendMessageRequest:
		b = append(b, reqSend)
		b = appendString(b, r.QueueUrl)
		b = appendString(b, r.MessageBody)
		b = appendOptInt(b, r.DelaySeconds)
		b = appendAttrs(b, r.MessageAttributes)
		b = appendAttrs(b, r.MessageSystemAttributes)
		b = appendString(b, r.MessageDeduplicationId)
		b = appendString(b, r.MessageGroupId)
		b = append(b, sentFlags(r.MessageDeduplicationIdSet, r.MessageGroupIdSet))
	case *api.SendMessageBatchRequest:
		b = append(b, reqSendBatch)
		b = appendString(b, r.QueueUrl)
		if r.Entries == nil {
			b = append(b, 0)
			break
		}
		b = binary.AppendUvarint(b, uint64(len(r.Entries))+1)
		for i := range r.Entries {
			e := &r.Entries[i]
			b = appendString(b, e.Id)
			b = appendString(b, e.MessageBody)
			b = appendOptInt(b, e.DelaySeconds)
			b = appendAttrs(b, e.MessageAttributes)
			b = appendAttrs(b, e.MessageSystemAttributes)
			b = appendString(b, e.MessageDeduplicationId)
			b = appendString(b, e.MessageGroupId)
			b = append(b, sentFlags(e.MessageDeduplicationIdSet, e.MessageGroupIdSet))
		}
	case *api.ReceiveMessageRequest:
		b = append(b, reqReceive)
		b = appendString(b, r.QueueUrl)
		b = appendStrings(b, r.AttributeNames)
		b = appendStrings(b, r.MessageSystemAttributeNames)
		b = appendStrings(b, r.MessageAttributeNames)
		b = appendOptInt(b, r.MaxNumberOfMessages)
		b = appendOptInt(b, r.VisibilityTimeout)
		b = appendOptInt(b, r.WaitTimeSeconds)
		b = appendString(b, r.ReceiveRequestAttemptId)
	case *api.DeleteMessageRequest:
		b = append(b, reqDelete)
		b = appendString(b, r.QueueUrl)
		b = appendString(b, r.ReceiptHandle)
	case *api.DeleteMessageBatchRequest:
		b = append(b, reqDeleteBatch)
		b = appendString(b, r.QueueUrl)
		if r.Entries == nil {
			b = append(b, 0)
			break
		}
		b = binary.AppendUvarint(b, uint64(len(r.Entries))+1)
		for _, e := range r.Entries {
			b = appendString(b, e.Id)
			b = appendString(b, e.ReceiptHandle)
		}
	case *engine.InstallQueueRequest:
		if version < minVersionImageBytes {
			return appendJSONRequest(b, c.Request)
		}
		b = append(b, reqInstall)
		b = appendString(b, r.Move)
		b = appendBytes(b, r.Image)
	default:
		return appendJSONRequest(b, c.Request)
	}
	return b, false, nil
}

// appendJSONRequest appends req as JSON (reqJSON): the layout of every
// request that has no binary one in the entry's version.
func appendJSONRequest(b []byte, req api.Request) (out []byte, asJSON bool, err error) {
	js, err := json.Marshal(req)
	if err != nil {
		return nil, false, fmt.Errorf("encode %s request: %w", req.Action(), err)
	}
	b = append(b, reqJSON)
	return appendBytes(b, js), true, nil
}

// reader decodes version 4's fields from a command's bytes; the first
// error sticks, and every read after it returns zero values.
type reader struct {
	p   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("bad %s at %d bytes from the end", what, len(r.p))
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.p)
	if k <= 0 {
		r.fail(what)
		return 0
	}
	r.p = r.p[k:]
	return v
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.p)
	if k <= 0 {
		r.fail(what)
		return 0
	}
	r.p = r.p[k:]
	return v
}

func (r *reader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.p) == 0 {
		r.fail(what)
		return 0
	}
	c := r.p[0]
	r.p = r.p[1:]
	return c
}

// raw returns the next n bytes, not copied.
func (r *reader) raw(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.p)) {
		r.fail(what)
		return nil
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b
}

func (r *reader) string(what string) string {
	return string(r.raw(r.uvarint(what), what))
}

// count reads a list's or a map's header: nil, or its length. A length
// cannot exceed the bytes left, each element taking at least one.
func (r *reader) count(what string) (n int, isNil bool) {
	v := r.uvarint(what)
	if r.err != nil || v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(r.p)) {
		r.fail(what)
		return 0, true
	}
	return int(v - 1), false
}

func (r *reader) bytes(what string) []byte {
	n, isNil := r.count(what)
	if isNil {
		return nil
	}
	return append([]byte{}, r.raw(uint64(n), what)...)
}

func (r *reader) strings(what string) []string {
	n, isNil := r.count(what)
	if isNil {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string(what)
	}
	return ss
}

func (r *reader) optInt(what string) *int {
	switch r.byte(what) {
	case 0:
		return nil
	case 1:
		v := int(r.varint(what))
		return &v
	}
	r.fail(what)
	return nil
}

func (r *reader) attrs(what string) map[string]api.MessageAttributeValue {
	n, isNil := r.count(what)
	if isNil {
		return nil
	}
	m := make(map[string]api.MessageAttributeValue, n)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		k := r.string(what)
		if i > 0 && k <= prev {
			// Keys are written in order, each once.
			r.fail(what + " (key order)")
		}
		prev = k
		var v api.MessageAttributeValue
		switch r.byte(what) {
		case 0:
		case 1:
			s := r.string(what)
			v.StringValue = &s
		default:
			r.fail(what)
		}
		v.BinaryValue = r.bytes(what)
		v.StringListValues = r.strings(what)
		if c, isNil := r.count(what); !isNil {
			v.BinaryListValues = make([][]byte, c)
			for j := range v.BinaryListValues {
				v.BinaryListValues[j] = r.bytes(what)
			}
		}
		v.DataType = r.string(what)
		m[k] = v
	}
	return m
}

func (r *reader) sent(what string) (dedup, group bool) {
	f := r.byte(what)
	if f&^sentFlagsMask != 0 {
		r.fail(what)
	}
	return f&sentDedupID != 0, f&sentGroupID != 0
}

// layoutOf is the request layout an entry of the given version (4 or
// later) uses for an action.
func layoutOf(a api.Action, version byte) byte {
	switch a {
	case engine.ActionInstallQueue:
		if version >= minVersionImageBytes {
			return reqInstall
		}
	case api.ActionSendMessage:
		return reqSend
	case api.ActionSendMessageBatch:
		return reqSendBatch
	case api.ActionReceiveMessage:
		return reqReceive
	case api.ActionDeleteMessage:
		return reqDelete
	case api.ActionDeleteMessageBatch:
		return reqDeleteBatch
	}
	return reqJSON
}

// decodeBinaryCommand decodes one command of a version 4 entry.
func decodeBinaryCommand(b []byte, version byte) (*engine.Command, error) {
	r := &reader{p: b}
	c := &engine.Command{}
	c.Time = r.varint("time")
	c.Caller = r.string("caller")
	c.Queue.Account = r.string("queue account")
	c.Queue.Name = r.string("queue name")
	action := api.Action(r.string("action"))
	c.MessageIDs = r.strings("message ids")
	c.Entropy = r.uvarint("entropy")
	c.RecreateDelay = time.Duration(r.varint("recreate delay"))
	c.PurgeDelay = time.Duration(r.varint("purge delay"))
	if version >= minVersionRegions {
		c.Region = r.string("region")
		c.Queue.Region = r.string("queue region")
	}
	if version >= minVersionPartitions {
		part := r.uvarint("queue partition")
		if part > math.MaxUint32 {
			return nil, fmt.Errorf("queue partition %d out of range", part)
		}
		c.Queue.Part = uint32(part)
	}
	layout := r.byte("request layout")
	if r.err != nil {
		return nil, r.err
	}
	if want := layoutOf(action, version); layout != want {
		return nil, fmt.Errorf("%s request in layout %d, not %d", action, layout, want)
	}
	switch layout {
	case reqSend:
		q := &api.SendMessageRequest{}
		q.QueueUrl = r.string("queue url")
		q.MessageBody = r.string("message body")
		q.DelaySeconds = r.optInt("delay")
		q.MessageAttributes = r.attrs("message attributes")
		q.MessageSystemAttributes = r.attrs("message system attributes")
		q.MessageDeduplicationId = r.string("deduplication id")
		q.MessageGroupId = r.string("group id")
		q.MessageDeduplicationIdSet, q.MessageGroupIdSet = r.sent("sent flags")
		c.Request = q
	case reqSendBatch:
		q := &api.SendMessageBatchRequest{}
		q.QueueUrl = r.string("queue url")
		if n, isNil := r.count("entries"); !isNil {
			q.Entries = make([]api.SendMessageBatchRequestEntry, n)
			for i := range q.Entries {
				e := &q.Entries[i]
				e.Id = r.string("entry id")
				e.MessageBody = r.string("message body")
				e.DelaySeconds = r.optInt("delay")
				e.MessageAttributes = r.attrs("message attributes")
				e.MessageSystemAttributes = r.attrs("message system attributes")
				e.MessageDeduplicationId = r.string("deduplication id")
				e.MessageGroupId = r.string("group id")
				e.MessageDeduplicationIdSet, e.MessageGroupIdSet = r.sent("sent flags")
			}
		}
		c.Request = q
	case reqReceive:
		q := &api.ReceiveMessageRequest{}
		q.QueueUrl = r.string("queue url")
		q.AttributeNames = r.strings("attribute names")
		q.MessageSystemAttributeNames = r.strings("system attribute names")
		q.MessageAttributeNames = r.strings("message attribute names")
		q.MaxNumberOfMessages = r.optInt("max messages")
		q.VisibilityTimeout = r.optInt("visibility timeout")
		q.WaitTimeSeconds = r.optInt("wait time")
		q.ReceiveRequestAttemptId = r.string("attempt id")
		c.Request = q
	case reqDelete:
		q := &api.DeleteMessageRequest{}
		q.QueueUrl = r.string("queue url")
		q.ReceiptHandle = r.string("receipt handle")
		c.Request = q
	case reqDeleteBatch:
		q := &api.DeleteMessageBatchRequest{}
		q.QueueUrl = r.string("queue url")
		if n, isNil := r.count("entries"); !isNil {
			q.Entries = make([]api.DeleteMessageBatchRequestEntry, n)
			for i := range q.Entries {
				q.Entries[i].Id = r.string("entry id")
				q.Entries[i].ReceiptHandle = r.string("receipt handle")
			}
		}
		c.Request = q
	case reqInstall:
		q := &engine.InstallQueueRequest{}
		q.Move = r.string("move")
		q.Image = r.bytes("image")
		c.Request = q
	case reqJSON:
		if action == engine.ActionSetMeta && !readsSetMeta(version) || isMoveAction(action) && version < minVersionMoves ||
			isOutboxAction(action) && version < minVersionOutbox || isPartitionAction(action) && version < minVersionPartitions ||
			action == engine.ActionHoldDepartures && version < minVersionHold {
			return nil, fmt.Errorf("action %s in a version %d entry", action, version)
		}
		req, ok := engine.NewInternalRequest(action)
		if !ok {
			req, ok = api.NewRequest(action)
		}
		if !ok {
			return nil, fmt.Errorf("unknown action %q", action)
		}
		js := r.bytes("request")
		if r.err != nil {
			return nil, r.err
		}
		if err := decodeStrict(js, req); err != nil {
			return nil, fmt.Errorf("%s request: %w", action, err)
		}
		if err := setSentIDs(req, nil); err != nil {
			return nil, fmt.Errorf("%s request: %w", action, err)
		}
		if f, ok := req.(*engine.FenceQueueRequest); ok && f.Spanning && version < minVersionOutbox {
			return nil, fmt.Errorf("a fence spanning redrives in a version %d entry", version)
		}
		c.Request = req
		if version < minVersionPartitions && needsPartitions(c) {
			return nil, fmt.Errorf("a %s request of partitions in a version %d entry", action, version)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s command: %w", action, r.err)
	}
	if len(r.p) != 0 {
		return nil, fmt.Errorf("%s command: %d trailing bytes", action, len(r.p))
	}
	return c, nil
}
