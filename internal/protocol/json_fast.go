package protocol

import "github.com/fifoq/fifoq/internal/api"

// decodeFast decodes the body of a SendMessage, SendMessageBatch,
// ReceiveMessage, DeleteMessage or DeleteMessageBatch request into req
// without reflection, when the body keeps to the plain form SDKs send:
// members named exactly as the model names them, each at most once;
// strings without escapes; integers of at most nine digits; no nulls; no
// message attributes. Such a body is valid JSON, and encoding/json would
// decode it to the same value without error. For anything else decodeFast
// leaves req untouched and returns false, and the caller decodes the body
// with encoding/json, which also words the errors. body must be valid
// UTF-8 (checkJSONText has checked it).
//
// encoding/json by reflection was a fifth of the server's work for a
// SendMessage.
func decodeFast(req api.Request, body []byte) bool {
	s := fastScanner{b: body}
	var ok bool
	switch r := req.(type) {
	case *api.SendMessageRequest:
		var v api.SendMessageRequest
		if ok = s.sendMessage(&v) && s.end(); ok {
			*r = v
		}
	case *api.SendMessageBatchRequest:
		var v api.SendMessageBatchRequest
		if ok = s.sendMessageBatch(&v) && s.end(); ok {
			*r = v
		}
	case *api.ReceiveMessageRequest:
		var v api.ReceiveMessageRequest
		if ok = s.receiveMessage(&v) && s.end(); ok {
			*r = v
		}
	case *api.DeleteMessageRequest:
		var v api.DeleteMessageRequest
		if ok = s.deleteMessage(&v) && s.end(); ok {
			*r = v
		}
	case *api.DeleteMessageBatchRequest:
		var v api.DeleteMessageBatchRequest
		if ok = s.deleteMessageBatch(&v) && s.end(); ok {
			*r = v
		}
	}
	return ok
}

// fastScanner reads the plain JSON decodeFast accepts; every method
// returns false at the first byte outside it.
type fastScanner struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (s *fastScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c if it comes next.
func (s *fastScanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (s *fastScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// rawString reads a string without escapes or control characters and
// returns its bytes, which are its value.
func (s *fastScanner) rawString() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i:j]
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string member's value.
func (s *fastScanner) str(dst *string) bool {
	v, ok := s.rawString()
	*dst = string(v)
	return ok
}

// integer reads an integer of at most nine digits (any int32 member's
// range check passes) into a new int.
func (s *fastScanner) integer(dst **int) bool {
	s.space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start, n := s.i, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 9 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) {
		// A fraction or an exponent: not an integer literal.
		if c := s.b[s.i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	if neg {
		n = -n
	}
	*dst = &n
	return true
}

// strings reads a list of strings; [] is an empty list, not a nil one, as
// encoding/json makes it.
func (s *fastScanner) strings(dst *[]string) bool {
	if !s.next('[') {
		return false
	}
	list := []string{}
	if s.next(']') {
		*dst = list
		return true
	}
	for {
		var v string
		if !s.str(&v) {
			return false
		}
		list = append(list, v)
		if s.next(']') {
			*dst = list
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// object reads an object, handing each member's name to member, which
// reads its value; seen keeps the members already read (bit i for the
// i-th name member returns), so that a repeated member falls back.
func (s *fastScanner) object(member func(name []byte) (bit uint, ok bool)) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	var seen uint
	for {
		name, ok := s.rawString()
		if !ok || !s.next(':') {
			return false
		}
		bit, ok := member(name)
		if !ok || seen&(1<<bit) != 0 {
			return false
		}
		seen |= 1 << bit
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// list reads a list of objects, calling grow for each: grow adds an
// element and reads it. [] is an empty list.
func (s *fastScanner) list(grow func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !grow() {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// sendMessage reads a SendMessageRequest's object.
func (s *fastScanner) sendMessage(v *api.SendMessageRequest) bool {
	return s.object(func(name []byte) (uint, bool) {
		switch string(name) {
		case "QueueUrl":
			return 0, s.str(&v.QueueUrl)
		case "MessageBody":
			return 1, s.str(&v.MessageBody)
		case "DelaySeconds":
			return 2, s.integer(&v.DelaySeconds)
		case "MessageDeduplicationId":
			return 3, s.str(&v.MessageDeduplicationId)
		case "MessageGroupId":
			return 4, s.str(&v.MessageGroupId)
		}
		return 0, false
	})
}

// sendMessageBatch reads a SendMessageBatchRequest's object.
func (s *fastScanner) sendMessageBatch(v *api.SendMessageBatchRequest) bool {
	return s.object(func(name []byte) (uint, bool) {
		switch string(name) {
		case "QueueUrl":
			return 0, s.str(&v.QueueUrl)
		case "Entries":
			v.Entries = []api.SendMessageBatchRequestEntry{}
			return 1, s.list(func() bool {
				v.Entries = append(v.Entries, api.SendMessageBatchRequestEntry{})
				return s.sendMessageBatchEntry(&v.Entries[len(v.Entries)-1])
			})
		}
		return 0, false
	})
}

// sendMessageBatchEntry reads one entry of a SendMessageBatch.
func (s *fastScanner) sendMessageBatchEntry(e *api.SendMessageBatchRequestEntry) bool {
	return s.object(func(name []byte) (uint, bool) {
		switch string(name) {
		case "Id":
			return 0, s.str(&e.Id)
		case "MessageBody":
			return 1, s.str(&e.MessageBody)
		case "DelaySeconds":
			return 2, s.integer(&e.DelaySeconds)
		case "MessageDeduplicationId":
			return 3, s.str(&e.MessageDeduplicationId)
		case "MessageGroupId":
			return 4, s.str(&e.MessageGroupId)
		}
		return 0, false
	})
}

// receiveMessage reads a ReceiveMessageRequest's object.
func (s *fastScanner) receiveMessage(v *api.ReceiveMessageRequest) bool {
	return s.object(func(name []byte) (uint, bool) {
		switch string(name) {
		case "QueueUrl":
			return 0, s.str(&v.QueueUrl)
		case "AttributeNames":
			return 1, s.strings(&v.AttributeNames)
		case "MessageSystemAttributeNames":
			return 2, s.strings(&v.MessageSystemAttributeNames)
		case "MessageAttributeNames":
			return 3, s.strings(&v.MessageAttributeNames)
		case "MaxNumberOfMessages":
			return 4, s.integer(&v.MaxNumberOfMessages)
		case "VisibilityTimeout":
			return 5, s.integer(&v.VisibilityTimeout)
		case "WaitTimeSeconds":
			return 6, s.integer(&v.WaitTimeSeconds)
		case "ReceiveRequestAttemptId":
			return 7, s.str(&v.ReceiveRequestAttemptId)
		}
		return 0, false
	})
}

// deleteMessage reads a DeleteMessageRequest's object.
func (s *fastScanner) deleteMessage(v *api.DeleteMessageRequest) bool {
	return s.object(func(name []byte) (uint, bool) {
		switch string(name) {
		case "QueueUrl":
			return 0, s.str(&v.QueueUrl)
		case "ReceiptHandle":
			return 1, s.str(&v.ReceiptHandle)
		}
		return 0, false
	})
}

// deleteMessageBatch reads a DeleteMessageBatchRequest's object.
func (s *fastScanner) deleteMessageBatch(v *api.DeleteMessageBatchRequest) bool {
	return s.object(func(name []byte) (uint, bool) {
		switch string(name) {
		case "QueueUrl":
			return 0, s.str(&v.QueueUrl)
		case "Entries":
			v.Entries = []api.DeleteMessageBatchRequestEntry{}
			return 1, s.list(func() bool {
				v.Entries = append(v.Entries, api.DeleteMessageBatchRequestEntry{})
				e := &v.Entries[len(v.Entries)-1]
				return s.object(func(name []byte) (uint, bool) {
					switch string(name) {
					case "Id":
						return 0, s.str(&e.Id)
					case "ReceiptHandle":
						return 1, s.str(&e.ReceiptHandle)
					}
					return 0, false
				})
			})
		}
		return 0, false
	})
}
