package engine

import (
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

func (e *Engine) receiveMessage(cmd *Command, r *api.ReceiveMessageRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	limit := 1
	if r.MaxNumberOfMessages != nil {
		limit = min(max(*r.MaxNumberOfMessages, 1), api.MaxReceiveMessages)
	}
	vis := int64(q.attrs.VisibilityTimeout) * 1e9
	if r.VisibilityTimeout != nil {
		vis = int64(*r.VisibilityTimeout) * 1e9
	}
	sel := newSelection(r)
	sel.bodies = e.bodyStore()
	defer func() {
		if sel.err != nil && e.bodyErr == nil {
			e.bodyErr = sel.err
		}
	}()

	var got []*message
	if q.fifo && r.ReceiveRequestAttemptId != "" {
		if got = q.replay(r.ReceiveRequestAttemptId, now, vis); got != nil {
			res := sel.result(q, got)
			if rec := q.attempts[r.ReceiveRequestAttemptId]; rec.tag != 0 {
				for i := range res.Messages {
					res.Messages[i].ReceiptHandle = q.handleOf(rec.tag, rec.handles[i], rec.nonces[i], got[i])
				}
			}
			return res, nil
		}
	}
	if q.fifo {
		got = e.takeFIFO(q, now, limit, vis, cmd.Entropy)
	} else {
		got, err = e.takeStandard(q, now, limit, vis, cmd.Entropy)
		if err != nil {
			return nil, err
		}
	}
	if q.fifo && r.ReceiveRequestAttemptId != "" && len(got) > 0 {
		q.recordAttempt(r.ReceiveRequestAttemptId, now, got)
	}
	if vis == 0 && len(got) > 0 {
		e.wake(q.key) // received with no visibility timeout: receivable again
	}
	return sel.result(q, got), nil
}

// replay answers a retried FIFO receive: if the receive with the same
// attempt id, within ReceiveRequestAttemptIdInterval, returned messages
// that are all still in flight under that receive, none deleted and none
// with its visibility changed, it returns them again (with the same receipt
// handles) and restarts their visibility timeout. Otherwise it returns nil
// and the receive proceeds as a new one.
func (q *queue) replay(id string, now, vis int64) []*message {
	rec := q.attempts[id]
	if rec == nil || now-rec.at >= int64(api.ReceiveRequestAttemptIdInterval) {
		return nil
	}
	msgs := make([]*message, len(rec.serials))
	for i, s := range rec.serials {
		m := q.handles[s]
		if m == nil || q.ms.nonce(m) != rec.nonces[i] || m.state != stateInflight || m.vizChanges != 0 {
			return nil
		}
		msgs[i] = m
	}
	for _, m := range msgs {
		q.setVisibility(m, now+vis)
	}
	return msgs
}

// recordAttempt remembers what a FIFO receive with an attempt id returned.
func (q *queue) recordAttempt(id string, now int64, msgs []*message) {
	rec := &attemptRecord{id: id, at: now, serials: make([]uint64, len(msgs)), nonces: make([]uint64, len(msgs))}
	for i, m := range msgs {
		rec.serials[i], rec.nonces[i] = m.serial, q.ms.nonce(m)
	}
	q.attempts[id] = rec
	q.attemptLog.Push(rec)
	q.dropDeadAttempts()
	q.noteDue(now + int64(api.ReceiveRequestAttemptIdInterval))
}

// selection is what a ReceiveMessage asks to see of each message: which
// system attributes (MessageSystemAttributeNames or the deprecated
// AttributeNames) and which message attributes (MessageAttributeNames:
// All, "*", ".*", names and "prefix.*" patterns).
type selection struct {
	// bodies is where the bodies are kept, if not in the messages; err the
	// first error reading one back.
	bodies BodyStore
	err    error

	sysAll      bool
	sys         map[string]bool
	attrAll     bool
	attrNames   map[string]bool
	attrPrefixs []string
}

// newSelection reads what r selects. Where a request names system
// attributes both ways, one list wins rather than their union: SQS was
// recorded returning all attributes for MessageSystemAttributeNames=All
// with AttributeNames=SenderId over AWS JSON, and only SenderId over Query
// (localstack test_sqs.snapshot.json:
// test_message_system_attribute_names_with_attribute_names/different_values).
// The engine applies the JSON rule, MessageSystemAttributeNames first; the
// Query decoder keeps only AttributeNames when a form has both.
//
// Message attribute names filter and are never refused: "All", "*" and
// ".*" select every attribute, "Hel.*" every name that starts with "Hel"
// (Hello and Help.Me), any other name itself only, and a name that is not
// there, or could not be one (AWS., ..foo), selects nothing (localstack
// test_sqs.snapshot.json: test_receive_message_message_attribute_names_filters).
func newSelection(r *api.ReceiveMessageRequest) *selection {
	s := &selection{}
	sysNames := r.MessageSystemAttributeNames
	if len(sysNames) == 0 {
		sysNames = r.AttributeNames
	}
	for _, n := range sysNames {
		if n == api.MsgAttrAll {
			s.sysAll = true
			continue
		}
		if s.sys == nil {
			s.sys = map[string]bool{}
		}
		s.sys[n] = true
	}
	for _, n := range r.MessageAttributeNames {
		switch {
		case n == "All" || n == "*" || n == ".*":
			s.attrAll = true
		case strings.HasSuffix(n, ".*"):
			s.attrPrefixs = append(s.attrPrefixs, strings.TrimSuffix(n, ".*"))
		default:
			if s.attrNames == nil {
				s.attrNames = map[string]bool{}
			}
			s.attrNames[n] = true
		}
	}
	return s
}

func (s *selection) wantSys(name string) bool { return s.sysAll || s.sys[name] }

// wantsAttrs says whether the receive asked for any message attribute.
func (s *selection) wantsAttrs() bool {
	return s.attrAll || len(s.attrNames) > 0 || len(s.attrPrefixs) > 0
}

func (s *selection) wantAttr(name string) bool {
	if s.attrAll || s.attrNames[name] {
		return true
	}
	for _, p := range s.attrPrefixs {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (s *selection) result(q *queue, msgs []*message) *api.ReceiveMessageResult {
	res := &api.ReceiveMessageResult{}
	if len(msgs) > 0 {
		res.Messages = make([]api.Message, len(msgs))
		for i, m := range msgs {
			res.Messages[i] = s.render(q, m)
		}
	}
	return res
}

// render builds the received form of a message, with the receipt handle of
// its current receive.
func (s *selection) render(q *queue, m *message) api.Message {
	var p payload
	var attrs map[string]api.MessageAttributeValue
	var err error
	if s.wantsAttrs() {
		p, attrs, err = payloadOf(s.bodies, q.ms, m)
	} else {
		p, err = readPayload(s.bodies, q.ms, m)
	}
	if err != nil && s.err == nil {
		s.err = err
	}
	out := api.Message{
		MessageId:     q.ms.messageID(m, p.head).String(),
		ReceiptHandle: q.handleOf(q.handleTag, m.serial, q.ms.nonce(m), m),
		MD5OfBody:     p.head.bodyMD5(),
		Body:          p.body,
	}
	sys := map[string]string{}
	add := func(name, value string, present bool) {
		if present && s.wantSys(name) {
			sys[name] = value
		}
	}
	ms := func(ns int64) string { return strconv.FormatInt(ns/1e6, 10) }
	add(api.MsgAttrSenderId, q.ms.sender(m), true)
	add(api.MsgAttrSentTimestamp, ms(q.ms.sentAt(m)), true)
	receives := q.ms.receives(m)
	add(api.MsgAttrApproximateReceiveCount, strconv.Itoa(int(receives)), true)
	add(api.MsgAttrApproximateFirstReceiveTimestamp, ms(q.ms.firstRecvAt(m)), receives > 0)
	add(api.MsgAttrSequenceNumber, strconv.FormatUint(m.seq, 10), q.fifo)
	add(api.MsgAttrMessageDeduplicationId, p.head.dedupID, q.fifo)
	add(api.MsgAttrMessageGroupId, q.ms.group(m), m.group != 0)
	add(api.MsgAttrAWSTraceHeader, q.ms.traceHeader(m), q.ms.traceHeader(m) != "")
	add(api.MsgAttrDeadLetterQueueSourceArn, q.ms.dlqSource(m), q.ms.dlqSource(m) != "")
	if len(sys) > 0 {
		out.Attributes = sys
	}
	if len(attrs) > 0 {
		picked := map[string]api.MessageAttributeValue{}
		for name, v := range attrs {
			if s.wantAttr(name) {
				picked[name] = v
			}
		}
		switch {
		case len(picked) == len(attrs):
			out.MessageAttributes, out.MD5OfMessageAttributes = picked, q.ms.md5Attrs(m)
		case len(picked) > 0:
			out.MessageAttributes, out.MD5OfMessageAttributes = picked, api.MD5OfMessageAttributes(picked)
		}
	}
	return out
}
