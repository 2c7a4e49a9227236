package api

import (
	"bytes"
	"encoding/json"
)

// The rules of the message actions: send, receive, delete and visibility
// changes, single and batched.

// SQS's wording of the ranges of the message actions, and the parameter and
// entry names its messages use.
const (
	reasonDelaySeconds          = "DelaySeconds must be >= 0 and <= 900."
	reasonMaxNumberOfMessages   = "Must be between 1 and 10, if provided."
	reasonReceiveVisibility     = "Must be >= 0 and <= 43200, if provided."
	reasonWaitTimeSeconds       = "Must be >= 0 and <= 20, if provided."
	reasonChangeVisibility      = "Must be between 0 and 43200."
	reasonBatchEntryVisibility  = "VisibilityTimeout must be an integer between 0 and 43200."
	entrySendMessageBatch       = "SendMessageBatchRequestEntry"
	entryDeleteMessageBatch     = "DeleteMessageBatchRequestEntry"
	entryChangeVisibilityBatch  = "ChangeMessageVisibilityBatchRequestEntry"
	paramMessageBody            = "MessageBody"
	paramReceiptHandle          = "ReceiptHandle"
	paramVisibilityTimeout      = "VisibilityTimeout"
	paramMessageDeduplicationID = "MessageDeduplicationId"
	paramMessageGroupID         = "MessageGroupId"
)

func validateSendMessage(r *SendMessageRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	return validateMessage(r.MessageBody, r.DelaySeconds, r.MessageAttributes, r.MessageSystemAttributes,
		fifoIDs{r.MessageDeduplicationId, r.MessageGroupId, r.MessageDeduplicationIdSet, r.MessageGroupIdSet})
}

// fifoIDs are a message's deduplication and group ids, and whether the
// request carried them at all.
type fifoIDs struct {
	dedupID, groupID   string
	dedupSet, groupSet bool
}

// ValidateSendEntry checks the content of one SendMessageBatch entry, with
// the rules SendMessage applies to its message: a non-empty body of allowed
// characters, DelaySeconds 0-900, message and system attributes, a size
// within MaxMessageSizeLimit, well-formed FIFO ids. Validate has already
// checked the entry's Id. The engine calls it per entry and reports the
// error in the entry's Failed result; the queue's own MaximumMessageSize and
// the FIFO rules (group id required, no per-message delay) are the engine's
// to check.
//
// SQS names a missing body "SendMessageBatchRequestEntry.N.MessageBody"; an
// entry does not know its position, so the error names "MessageBody".
func ValidateSendEntry(e *SendMessageBatchRequestEntry) error {
	return validateMessage(e.MessageBody, e.DelaySeconds, e.MessageAttributes, e.MessageSystemAttributes,
		fifoIDs{e.MessageDeduplicationId, e.MessageGroupId, e.MessageDeduplicationIdSet, e.MessageGroupIdSet})
}

// validateMessage checks one message to send, for SendMessage and for each
// SendMessageBatch entry.
func validateMessage(body string, delay *int, attrs map[string]MessageAttributeValue,
	sysAttrs map[string]MessageSystemAttributeValue, ids fifoIDs) error {
	if body == "" {
		return ErrMissingParameter(paramMessageBody)
	}
	if err := optionalIntError("DelaySeconds", delay, 0, MaxDelaySeconds, reasonDelaySeconds); err != nil {
		return err
	}
	if err := validateMessageAttributes(attrs); err != nil {
		return err
	}
	if err := validateMessageSystemAttributes(sysAttrs); err != nil {
		return err
	}
	if !validMessageText(body) {
		return ErrInvalidMessageContents()
	}
	if size := MessageSize(body, attrs); size > MaxMessageSizeLimit {
		return ErrMessageTooLong(MaxMessageSizeLimit)
	}
	if err := validateFIFOID(paramMessageDeduplicationID, ids.dedupID, ids.dedupSet, MaxDeduplicationIdLength); err != nil {
		return err
	}
	return validateFIFOID(paramMessageGroupID, ids.groupID, ids.groupSet, MaxGroupIdLength)
}

// validateFIFOID checks a message's deduplication or group id. An id sent
// empty is malformed, not absent: SQS answers it like one too long or with
// spaces (localstack test_sqs.snapshot.json:
// test_send_message_to_standard_queue_with_invalid_message_group_id[empty],
// test_message_deduplication_id_invalid[empty]).
func validateFIFOID(param, value string, set bool, max int) error {
	if set && value == "" {
		return ErrInvalidParameterValue("Value %s for parameter %s is invalid. Reason: %s can only include alphanumeric and punctuation characters. 1 to %d in length.", value, param, param, max)
	}
	return validateFIFOToken(param, value, max)
}

func validateSendMessageBatch(r *SendMessageBatchRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	err := validateBatchIDs(entrySendMessageBatch, len(r.Entries), func(i int) string { return r.Entries[i].Id })
	if err != nil {
		return err
	}
	total := 0
	for i := range r.Entries {
		total += MessageSize(r.Entries[i].MessageBody, r.Entries[i].MessageAttributes)
	}
	if total > MaxMessageSizeLimit {
		return ErrBatchRequestTooLong(total, MaxMessageSizeLimit)
	}
	return nil
}

func validateReceiveMessage(r *ReceiveMessageRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if err := optionalIntError("MaxNumberOfMessages", r.MaxNumberOfMessages, 1, MaxReceiveMessages, reasonMaxNumberOfMessages); err != nil {
		return err
	}
	if err := optionalIntError(paramVisibilityTimeout, r.VisibilityTimeout, 0, MaxVisibilityTimeout, reasonReceiveVisibility); err != nil {
		return err
	}
	if err := optionalIntError("WaitTimeSeconds", r.WaitTimeSeconds, 0, MaxWaitTimeSeconds, reasonWaitTimeSeconds); err != nil {
		return err
	}
	if err := validateFIFOToken("ReceiveRequestAttemptId", r.ReceiveRequestAttemptId, MaxReceiveRequestAttemptIdLength); err != nil {
		return err
	}
	// The deprecated AttributeNames is typed QueueAttributeName in the model,
	// so SDKs let callers pass those names; SQS only returns message system
	// attributes for them.
	for _, name := range r.AttributeNames {
		if !isMessageSystemAttributeName(name) && !IsQueueAttributeName(name) {
			return ErrInvalidAttributeName(name)
		}
	}
	for _, name := range r.MessageSystemAttributeNames {
		if !isMessageSystemAttributeName(name) {
			return ErrInvalidAttributeName(name)
		}
	}
	// MessageAttributeNames is a filter: names that match nothing select
	// nothing, and SQS does not reject them.
	return nil
}

// isMessageSystemAttributeName reports whether name is in the model's
// MessageSystemAttributeName enum ("All" included).
func isMessageSystemAttributeName(name string) bool {
	switch name {
	case MsgAttrAll, MsgAttrSenderId, MsgAttrSentTimestamp, MsgAttrApproximateReceiveCount,
		MsgAttrApproximateFirstReceiveTimestamp, MsgAttrSequenceNumber,
		MsgAttrMessageDeduplicationId, MsgAttrMessageGroupId, MsgAttrAWSTraceHeader,
		MsgAttrDeadLetterQueueSourceArn:
		return true
	}
	return false
}

func validateDeleteMessage(r *DeleteMessageRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if isBlank(r.ReceiptHandle) {
		return ErrMissingParameter(paramReceiptHandle)
	}
	return nil
}

func validateDeleteMessageBatch(r *DeleteMessageBatchRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	return validateBatchIDs(entryDeleteMessageBatch, len(r.Entries), func(i int) string { return r.Entries[i].Id })
}

// ValidateDeleteMessageBatchEntry checks the content of one
// DeleteMessageBatch entry: its receipt handle must be present. SQS reports
// a missing one in the entry's Failed result.
func ValidateDeleteMessageBatchEntry(e *DeleteMessageBatchRequestEntry) error {
	if isBlank(e.ReceiptHandle) {
		return ErrMissingParameter(paramReceiptHandle)
	}
	return nil
}

func validateChangeMessageVisibility(r *ChangeMessageVisibilityRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if isBlank(r.ReceiptHandle) {
		return ErrMissingParameter(paramReceiptHandle)
	}
	if r.VisibilityTimeout == nil {
		return ErrMissingParameter(paramVisibilityTimeout)
	}
	return optionalIntError(paramVisibilityTimeout, r.VisibilityTimeout, 0, MaxVisibilityTimeout, reasonChangeVisibility)
}

func validateChangeMessageVisibilityBatch(r *ChangeMessageVisibilityBatchRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	return validateBatchIDs(entryChangeVisibilityBatch, len(r.Entries), func(i int) string { return r.Entries[i].Id })
}

// ValidateChangeMessageVisibilityBatchEntry checks the content of one
// ChangeMessageVisibilityBatch entry: a receipt handle and a
// VisibilityTimeout of 0 to 43200. SQS reports these problems in the entry's
// Failed result; it names a missing timeout
// "ChangeMessageVisibilityBatchRequestEntry.N.VisibilityTimeout", and an
// entry does not know its position, so the error names "VisibilityTimeout".
func ValidateChangeMessageVisibilityBatchEntry(e *ChangeMessageVisibilityBatchRequestEntry) error {
	if isBlank(e.ReceiptHandle) {
		return ErrMissingParameter(paramReceiptHandle)
	}
	if e.VisibilityTimeout == nil {
		return ErrMissingParameter(paramVisibilityTimeout)
	}
	return optionalIntError(paramVisibilityTimeout, e.VisibilityTimeout, 0, MaxVisibilityTimeout, reasonBatchEntryVisibility)
}

// validateBatchIDs checks the entries of a batch as a whole: at least one,
// at most ten, and every Id present, well formed and distinct. entry is the
// name SQS gives the entries in its messages; id returns the Id of entry i.
// No Entries member at all is an empty batch too: the Query protocol cannot
// send an empty list, so the two are one request there.
func validateBatchIDs(entry string, n int, id func(i int) string) error {
	if n == 0 {
		return ErrEmptyBatchRequestFor(entry)
	}
	if n > MaxBatchEntries {
		return ErrTooManyEntriesInBatchRequest(n)
	}
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		entryID := id(i)
		switch {
		// An empty Id is a malformed one: SQS was recorded answering
		// InvalidBatchEntryId for Id "" (localstack test_sqs.snapshot.json:
		// test_delete_message_batch_invalid_msg_id[sqs-]).
		case !validBatchEntryID(entryID):
			return ErrInvalidBatchEntryId()
		case seen[entryID]:
			return ErrBatchEntryIdsNotDistinct(entryID)
		}
		seen[entryID] = true
	}
	return nil
}

// ErrBatchEntryTooLong is the Failed result of a SendMessageBatch entry
// larger than the queue's MaximumMessageSize. SQS words it differently from
// SendMessage's ErrMessageTooLong ("cannot be validated", not "are
// invalid"), and reports it for the entry alone.
func ErrBatchEntryTooLong(max int) *Error {
	return kindInvalidParameterValue.with("One or more parameters cannot be validated. Reason: Message must be shorter than %d bytes.", max)
}

// ErrMissingDeduplicationID answers a message to a FIFO queue without
// ContentBasedDeduplication that carries no MessageDeduplicationId.
func ErrMissingDeduplicationID() *Error {
	return kindInvalidParameterValue.with("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
}

// ValidateFIFOSendBatch checks what a FIFO queue requires of every entry of
// a SendMessageBatch: a MessageGroupId, and a MessageDeduplicationId unless
// contentBasedDedup. SQS fails the whole request when one entry lacks
// either, even when the others are valid, and names the missing group id
// with InvalidParameterValue there, where SendMessage says MissingParameter.
// Entries are checked in order, the group id before the deduplication id.
func ValidateFIFOSendBatch(entries []SendMessageBatchRequestEntry, contentBasedDedup bool) error {
	for i := range entries {
		if entries[i].MessageGroupId == "" {
			return kindInvalidParameterValue.with("The request must contain the parameter %s.", paramMessageGroupID)
		}
		if entries[i].MessageDeduplicationId == "" && !contentBasedDedup {
			return ErrMissingDeduplicationID()
		}
	}
	return nil
}

// NoteSentFIFOIDs sets the MessageDeduplicationIdSet and MessageGroupIdSet
// flags of a SendMessage or SendMessageBatch request that was decoded from
// the AWS JSON body, which encoding/json leaves unable to tell an id sent
// empty from one not sent. A non-empty id was sent; only where an id is
// empty and its name occurs in the body is the body decoded a second time,
// so that the common request pays for a substring search at most. Other
// requests are left alone.
func NoteSentFIFOIDs(req Request, body []byte) error {
	mentions := func(name string) bool { return bytes.Contains(body, []byte(name)) }
	switch r := req.(type) {
	case *SendMessageRequest:
		r.MessageDeduplicationIdSet, r.MessageGroupIdSet = r.MessageDeduplicationId != "", r.MessageGroupId != ""
		if (r.MessageDeduplicationIdSet || !mentions(paramMessageDeduplicationID)) && (r.MessageGroupIdSet || !mentions(paramMessageGroupID)) {
			return nil
		}
		var sent sentFIFOIDs
		if err := json.Unmarshal(body, &sent); err != nil {
			return err
		}
		r.MessageDeduplicationIdSet, r.MessageGroupIdSet = sent.MessageDeduplicationId != nil, sent.MessageGroupId != nil
	case *SendMessageBatchRequest:
		again := false
		for i := range r.Entries {
			e := &r.Entries[i]
			e.MessageDeduplicationIdSet, e.MessageGroupIdSet = e.MessageDeduplicationId != "", e.MessageGroupId != ""
			again = again || !e.MessageDeduplicationIdSet || !e.MessageGroupIdSet
		}
		if !again || (!mentions(paramMessageDeduplicationID) && !mentions(paramMessageGroupID)) {
			return nil
		}
		var sent struct{ Entries []sentFIFOIDs }
		if err := json.Unmarshal(body, &sent); err != nil {
			return err
		}
		for i := range min(len(sent.Entries), len(r.Entries)) {
			r.Entries[i].MessageDeduplicationIdSet = sent.Entries[i].MessageDeduplicationId != nil
			r.Entries[i].MessageGroupIdSet = sent.Entries[i].MessageGroupId != nil
		}
	}
	return nil
}

// sentFIFOIDs is what NoteSentFIFOIDs decodes a second time: whether each
// id was sent at all.
type sentFIFOIDs struct {
	MessageDeduplicationId *string
	MessageGroupId         *string
}
