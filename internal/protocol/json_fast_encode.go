package protocol

import (
	"slices"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// appendFastResult appends the AWS JSON body of the result of a
// SendMessage, SendMessageBatch, ReceiveMessage or DeleteMessageBatch
// without reflection: the bytes encodeJSONResult would produce for it. It
// covers results whose strings need no escaping and whose messages carry
// no message attributes; for any other result, or a result that is not
// the action's, it returns false and the caller encodes with
// encodeJSONResult. Encoding a receive's messages by reflection (their
// Attributes maps above all) was a fifth of the server's work for one.
func appendFastResult(dst []byte, action api.Action, resp api.Response) ([]byte, bool) {
	switch r := resp.(type) {
	case *api.SendMessageResult:
		if action != api.ActionSendMessage || r == nil {
			return dst, false
		}
		return appendSendMessageResult(dst, r)
	case *api.SendMessageBatchResult:
		if action != api.ActionSendMessageBatch || r == nil {
			return dst, false
		}
		return appendBatchResult(dst, r.Successful, r.Failed, appendSendMessageBatchResultEntry)
	case *api.DeleteMessageBatchResult:
		if action != api.ActionDeleteMessageBatch || r == nil {
			return dst, false
		}
		return appendBatchResult(dst, r.Successful, r.Failed, appendBatchResultEntry)
	case *api.ReceiveMessageResult:
		if action != api.ActionReceiveMessage || r == nil {
			return dst, false
		}
		return appendReceiveMessageResult(dst, r)
	}
	return dst, false
}

// jsonObject appends the members of one object, keeping track of the
// comma and of whether a string needed escaping (ok false).
type jsonObject struct {
	dst   []byte
	first bool
	ok    bool
}

func newJSONObject(dst []byte) jsonObject {
	return jsonObject{dst: append(dst, '{'), first: true, ok: true}
}

// name appends a member's name (a constant that needs no escaping).
func (o *jsonObject) name(name string) {
	if !o.first {
		o.dst = append(o.dst, ',')
	}
	o.first = false
	o.dst = append(o.dst, '"')
	o.dst = append(o.dst, name...)
	o.dst = append(o.dst, '"', ':')
}

// str appends a string member.
func (o *jsonObject) str(name, v string) {
	o.name(name)
	o.value(v)
}

// value appends a string value.
func (o *jsonObject) value(v string) {
	var ok bool
	o.dst, ok = appendPlainString(o.dst, v)
	o.ok = o.ok && ok
}

// strOmitEmpty appends a string member unless it is empty (omitempty).
func (o *jsonObject) strOmitEmpty(name, v string) {
	if v != "" {
		o.str(name, v)
	}
}

func (o *jsonObject) end() ([]byte, bool) {
	return append(o.dst, '}'), o.ok
}

// appendPlainString appends s as a JSON string when it holds nothing
// encoding/json would escape (with HTML escaping off): no control
// characters, quotes or backslashes, no invalid UTF-8, no U+2028 or
// U+2029. ok is false otherwise.
func appendPlainString(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return dst, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			return dst, false
		}
		i += size
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}

func appendSendMessageResult(dst []byte, r *api.SendMessageResult) ([]byte, bool) {
	o := newJSONObject(dst)
	o.strOmitEmpty("MD5OfMessageBody", r.MD5OfMessageBody)
	o.strOmitEmpty("MD5OfMessageAttributes", r.MD5OfMessageAttributes)
	o.strOmitEmpty("MD5OfMessageSystemAttributes", r.MD5OfMessageSystemAttributes)
	o.strOmitEmpty("MessageId", r.MessageId)
	o.strOmitEmpty("SequenceNumber", r.SequenceNumber)
	return o.end()
}

// appendBatchResult appends a batchResult: either list left out when empty.
func appendBatchResult[T any](dst []byte, successful []T, failed []api.BatchResultErrorEntry, entry func([]byte, *T) ([]byte, bool)) ([]byte, bool) {
	o := newJSONObject(dst)
	appendList(&o, "Successful", successful, entry)
	appendList(&o, "Failed", failed, appendBatchResultErrorEntry)
	return o.end()
}

// appendList appends a member holding a list of objects, each appended by
// entry; an empty list is left out, as encoding/json's omitempty does.
func appendList[T any](o *jsonObject, name string, items []T, entry func([]byte, *T) ([]byte, bool)) {
	if len(items) == 0 {
		return
	}
	o.name(name)
	o.dst = append(o.dst, '[')
	for i := range items {
		if i > 0 {
			o.dst = append(o.dst, ',')
		}
		var ok bool
		o.dst, ok = entry(o.dst, &items[i])
		o.ok = o.ok && ok
	}
	o.dst = append(o.dst, ']')
}

func appendSendMessageBatchResultEntry(dst []byte, e *api.SendMessageBatchResultEntry) ([]byte, bool) {
	o := newJSONObject(dst)
	o.str("Id", e.Id)
	o.str("MessageId", e.MessageId)
	o.str("MD5OfMessageBody", e.MD5OfMessageBody)
	o.strOmitEmpty("MD5OfMessageAttributes", e.MD5OfMessageAttributes)
	o.strOmitEmpty("MD5OfMessageSystemAttributes", e.MD5OfMessageSystemAttributes)
	o.strOmitEmpty("SequenceNumber", e.SequenceNumber)
	return o.end()
}

func appendBatchResultEntry(dst []byte, e *api.BatchResultEntry) ([]byte, bool) {
	o := newJSONObject(dst)
	o.str("Id", e.Id)
	return o.end()
}

func appendBatchResultErrorEntry(dst []byte, e *api.BatchResultErrorEntry) ([]byte, bool) {
	o := newJSONObject(dst)
	o.str("Id", e.Id)
	o.name("SenderFault")
	if e.SenderFault {
		o.dst = append(o.dst, "true"...)
	} else {
		o.dst = append(o.dst, "false"...)
	}
	o.str("Code", e.Code)
	o.strOmitEmpty("Message", e.Message)
	return o.end()
}

func appendReceiveMessageResult(dst []byte, r *api.ReceiveMessageResult) ([]byte, bool) {
	o := newJSONObject(dst)
	appendList(&o, "Messages", r.Messages, appendMessage)
	return o.end()
}

func appendMessage(dst []byte, m *api.Message) ([]byte, bool) {
	if len(m.MessageAttributes) > 0 {
		return dst, false // typed values and base64: left to encoding/json
	}
	o := newJSONObject(dst)
	o.strOmitEmpty("MessageId", m.MessageId)
	o.strOmitEmpty("ReceiptHandle", m.ReceiptHandle)
	o.strOmitEmpty("MD5OfBody", m.MD5OfBody)
	o.strOmitEmpty("Body", m.Body)
	if len(m.Attributes) > 0 {
		o.name("Attributes")
		// encoding/json writes a map's members in the byte order of
		// their names.
		var buf [16]string
		names := buf[:0]
		for k := range m.Attributes {
			names = append(names, k)
		}
		slices.Sort(names)
		inner := newJSONObject(o.dst)
		for _, k := range names {
			if !inner.first {
				inner.dst = append(inner.dst, ',')
			}
			inner.first = false
			inner.value(k)
			inner.dst = append(inner.dst, ':')
			inner.value(m.Attributes[k])
		}
		var ok bool
		o.dst, ok = inner.end()
		o.ok = o.ok && ok
	}
	o.strOmitEmpty("MD5OfMessageAttributes", m.MD5OfMessageAttributes)
	return o.end()
}
