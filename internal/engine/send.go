package engine

import (
	"maps"
	"strconv"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// attemptRecord remembers the messages a FIFO receive with a
// ReceiveRequestAttemptId returned, so that a retry gets them again.
type attemptRecord struct {
	id      string
	at      int64
	serials []uint64
	nonces  []uint64
	// A record made before the queue moved here (move.go) keeps the
	// handle tag and serials its receive handed out, for a retry to hand
	// out the same receipt handles: tag is 0 for the others.
	tag     uint32
	handles []uint64
}

// dedupScopePropagation is how long a change of DeduplicationScope takes
// to reach deduplication. SQS documents that a changed attribute "can take
// up to 60 seconds ... to propagate" (SetQueueAttributes), and was recorded
// deduplicating with the old scope right after the change, for old and new
// deduplication ids alike, while GetQueueAttributes already answered the
// new one (localstack test_sqs.snapshot.json:
// test_fifo_change_to_high_throughput_after_creation,
// test_fifo_change_to_regular_throughput_after_creation).
const dedupScopePropagation = 60 * time.Second

// dedupScope is the DeduplicationScope that deduplicates a send at now.
func (q *queue) dedupScope(now int64) string {
	if q.prevDedupScope != "" && now-q.dedupScopeChanged < int64(dedupScopePropagation) {
		return q.prevDedupScope
	}
	return q.attrs.DeduplicationScope
}

// pruneDedup drops up to budget deduplication records that expired by
// now, and reports how many it dropped and whether none is left expired.
// Superseded records cost nothing: a snapshot does not keep them, so the
// engine it restores never meets them (see dedupTable.dropSuperseded).
func (q *queue) pruneDedup(now int64, budget int) (int, bool) {
	n := 0
	for !q.dedup.empty() {
		if now-q.dedup.front().at < int64(api.DeduplicationInterval) {
			return n, true
		}
		if n == budget {
			return n, false
		}
		q.dedup.popFront() // shrinks the table as it empties
		n++
	}
	return n, true
}

// pruneAttempts drops up to budget receive attempt records that expired
// by now, and reports how many it dropped and whether none is left expired,
// as pruneDedup does.
func (q *queue) pruneAttempts(now int64, budget int) (int, bool) {
	n := 0
	for q.attemptLog.Len() > 0 {
		r := q.attemptLog.Front()
		if now-r.at < int64(api.ReceiveRequestAttemptIdInterval) {
			return n, true
		}
		if n == budget {
			return n, false
		}
		q.attemptLog.PopFront()
		delete(q.attempts, r.id)
		q.attemptDrops++
		n++
		q.dropDeadAttempts()
	}
	if n > 0 && cap(q.attemptLog.buf) > shrinkAbove {
		q.attempts = map[string]*attemptRecord{}
		q.attemptLog = ring[*attemptRecord]{}
		q.attemptDrops = 0
	}
	q.attempts = compactMap(q.attempts, &q.attemptDrops)
	return n, true
}

// compactMap returns m, or a copy of it once as many entries have been
// deleted from it as it holds (drops counts the deletions, and is reset
// by a copy). A Go map under steady inserts and deletes keeps growing its
// tables for a long while before it levels off (about 25 minutes at a
// steady rate, for records that live 5); a copy every window's worth of
// deletions holds it near its live size from the first window on, at an
// amortised cost of one insert per deletion. The entries, and so every
// answer, are the same.
func compactMap[K comparable, V any](m map[K]V, drops *int) map[K]V {
	if *drops < max(len(m), shrinkAbove) {
		return m
	}
	c := make(map[K]V, len(m)) // sized to the live entries, not to m's tables
	maps.Copy(c, m)
	*drops = 0
	return c
}

// dropDeadAttempts pops the attempt records at the front of the log that
// the map no longer points to, so that the front is always a live record:
// its expiry is then the queue's next one, the same in an engine restored
// from a snapshot (which keeps only live records).
func (q *queue) dropDeadAttempts() {
	for q.attemptLog.Len() > 0 && q.attempts[q.attemptLog.Front().id] != q.attemptLog.Front() {
		q.attemptLog.PopFront()
	}
}

// shrinkAbove is the capacity of a record ring above which an emptied
// ring and its map are reallocated rather than kept.
const shrinkAbove = 1024

// sendInput is one message to send: a SendMessage or a batch entry.
type sendInput struct {
	body     string
	attrs    map[string]api.MessageAttributeValue
	sysAttrs map[string]api.MessageSystemAttributeValue
	delay    *int
	dedupID  string
	groupID  string
	// batch is set for a SendMessageBatch entry, whose size error SQS
	// words differently from SendMessage's.
	batch bool
}

// sendOutput is the result of sending one message.
type sendOutput struct {
	messageID, md5Body, md5Attrs, md5SysAttrs, seq string
}

func (e *Engine) sendMessage(cmd *Command, r *api.SendMessageRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	if r.MessageGroupId != "" && !q.ownsGroup(r.MessageGroupId) {
		return nil, errQueueMoving() // another partition's group (split.go)
	}
	out, err := e.send(q, cmd, 0, sendInput{
		body: r.MessageBody, attrs: r.MessageAttributes, sysAttrs: r.MessageSystemAttributes,
		delay: r.DelaySeconds, dedupID: r.MessageDeduplicationId, groupID: r.MessageGroupId,
	}, now)
	if err != nil {
		return nil, err
	}
	return &api.SendMessageResult{
		MD5OfMessageBody: out.md5Body, MD5OfMessageAttributes: out.md5Attrs,
		MD5OfMessageSystemAttributes: out.md5SysAttrs, MessageId: out.messageID, SequenceNumber: out.seq,
	}, nil
}

// sendMessageBatch sends each entry on its own, in order: an entry that
// fails, whether it breaks a static rule (api.ValidateSendEntry) or the
// queue's, is reported in Failed and the others are sent, on both queue
// types, as SQS's SendMessageBatch documents. The exception is a FIFO
// entry without a group id, or without a deduplication id where the queue
// does not deduplicate by content: SQS fails the whole request then, and
// sends none of the entries (localstack test_sqs.snapshot.json:
// test_send_batch_missing_message_group_id_for_fifo_queue,
// test_send_batch_missing_deduplication_id_for_fifo_queue).
func (e *Engine) sendMessageBatch(cmd *Command, r *api.SendMessageBatchRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	if q.fifo {
		if err := api.ValidateFIFOSendBatch(r.Entries, q.attrs.ContentBasedDeduplication); err != nil {
			return nil, err
		}
		for i := range r.Entries {
			if g := r.Entries[i].MessageGroupId; g != "" && !q.ownsGroup(g) {
				return nil, errQueueMoving() // another partition's group (split.go)
			}
		}
	}
	res := &api.SendMessageBatchResult{Successful: []api.SendMessageBatchResultEntry{}, Failed: []api.BatchResultErrorEntry{}}
	for i, en := range r.Entries {
		var out sendOutput
		err := api.ValidateSendEntry(&r.Entries[i])
		if err == nil {
			out, err = e.send(q, cmd, i, sendInput{
				body: en.MessageBody, attrs: en.MessageAttributes, sysAttrs: en.MessageSystemAttributes,
				delay: en.DelaySeconds, dedupID: en.MessageDeduplicationId, groupID: en.MessageGroupId,
				batch: true,
			}, now)
		}
		if err != nil {
			res.Failed = append(res.Failed, api.BatchError(en.Id, api.AsError(err)))
			continue
		}
		res.Successful = append(res.Successful, api.SendMessageBatchResultEntry{
			Id: en.Id, MessageId: out.messageID, MD5OfMessageBody: out.md5Body,
			MD5OfMessageAttributes: out.md5Attrs, MD5OfMessageSystemAttributes: out.md5SysAttrs,
			SequenceNumber: out.seq,
		})
	}
	return res, nil
}

// send checks one message against the queue and stores it, or, in a FIFO
// queue, recognises it as a duplicate of a message sent within the
// deduplication interval and answers with that message's id and sequence
// number without storing anything. i is the message's index in the command.
func (e *Engine) send(q *queue, cmd *Command, i int, in sendInput, now int64) (sendOutput, error) {
	dedupID := in.dedupID
	if q.fifo {
		if in.groupID == "" {
			return sendOutput{}, api.ErrMissingParameter("MessageGroupId")
		}
		if in.delay != nil && *in.delay != 0 {
			return sendOutput{}, api.ErrInvalidParameterValue("Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.", *in.delay)
		}
		if dedupID == "" {
			if !q.attrs.ContentBasedDeduplication {
				return sendOutput{}, api.ErrMissingDeduplicationID()
			}
			dedupID = api.ContentDeduplicationID(in.body)
		}
	} else if dedupID != "" {
		return sendOutput{}, api.ErrInvalidParameterValue("Value %s for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type.", dedupID)
	}
	size := api.MessageSize(in.body, in.attrs)
	// A message of exactly MaximumMessageSize bytes is accepted (localstack
	// test_sqs.snapshot.json:
	// test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size).
	if size > q.attrs.MaximumMessageSize {
		if in.batch {
			return sendOutput{}, api.ErrBatchEntryTooLong(q.attrs.MaximumMessageSize)
		}
		return sendOutput{}, api.ErrMessageTooLong(q.attrs.MaximumMessageSize)
	}
	out := sendOutput{md5Body: api.MD5OfBody(in.body)}
	if len(in.attrs) > 0 {
		out.md5Attrs = api.MD5OfMessageAttributes(in.attrs)
	}
	if len(in.sysAttrs) > 0 {
		out.md5SysAttrs = api.MD5OfMessageAttributes(in.sysAttrs)
	}

	var key dedupKey
	if q.fifo {
		group := ""
		if q.dedupScope(now) == scopeMessageGroup {
			group = in.groupID
		}
		key = dedupKeyOf(group, dedupID)
		if r := q.dedup.get(key); r != nil && now-r.at < int64(api.DeduplicationInterval) {
			out.messageID, out.seq = q.dedup.messageID(r).String(), strconv.FormatUint(r.seq, 10)
			return out, nil
		}
	}

	e.serial++
	id := makeMsgID(newMessageID(cmd, i, e.serial))
	head := msgHead{uuid: id.uuid, dedupID: dedupID}
	head.md5, _ = parseMD5(out.md5Body) // api.MD5OfBody's lowercase hex
	m := e.ms.newMessage(in.groupID, cmd.Caller)
	m.serial, m.size, m.enqueuedAt = e.serial, int32(size), now
	trace := ""
	if v, ok := in.sysAttrs[api.MsgAttrAWSTraceHeader]; ok && v.StringValue != nil {
		trace = *v.StringValue
	}
	x := msgExt{md5Attrs: out.md5Attrs, traceHeader: trace}
	x.storedAttrs = e.keepBody(m, head, in.body, in.attrs)
	e.ms.setExt(m, newMsgExt(id, x))
	delay := q.attrs.DelaySeconds
	if in.delay != nil && !q.fifo {
		delay = *in.delay
	}
	m.visibleAt = now + int64(delay)*1e9
	if q.fifo {
		m.seq = q.nextSeq(now)
		out.seq = strconv.FormatUint(m.seq, 10)
		q.dedup.push(dedupRecord{key: key, at: now, seq: m.seq}, id)
		q.noteDue(now + int64(api.DeduplicationInterval))
	}
	q.insert(m, now)
	if m.state == stateVisible {
		e.wake(q.key)
	}
	out.messageID = id.String()
	return out, nil
}
