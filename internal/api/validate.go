package api

import (
	"reflect"
	"strings"
)

// Validate checks the rules of a request that do not depend on any queue's
// state: required parameters, ranges, batch rules, identifier formats,
// message body characters, message attribute rules, sizes against the
// absolute limits. It returns an *Error with SQS's code.
//
// For the batch actions Validate checks only what fails the whole request
// (missing or empty Entries, more than 10 entries, missing, malformed or
// repeated entry Ids, and for SendMessageBatch the total size). What is wrong
// with one entry's content is checked by ValidateSendEntry,
// ValidateDeleteMessageBatchEntry and ValidateChangeMessageVisibilityBatchEntry,
// which the engine calls per entry and reports in the entry's Failed result.
// The exception, which only the engine can tell, is a FIFO entry without a
// group id or a needed deduplication id: that fails the whole request (see
// ValidateFIFOSendBatch).
//
// Checks run in a fixed order (members in model order, map keys sorted), so
// an invalid request always gets the same error.
func Validate(r Request) error {
	if r == nil || isNilPointer(r) {
		return ErrInternalFailure("no request to validate")
	}
	switch r := r.(type) {
	case *AddPermissionRequest:
		return validateAddPermission(r)
	case *CancelMessageMoveTaskRequest:
		return validateCancelMessageMoveTask(r)
	case *ChangeMessageVisibilityRequest:
		return validateChangeMessageVisibility(r)
	case *ChangeMessageVisibilityBatchRequest:
		return validateChangeMessageVisibilityBatch(r)
	case *CreateQueueRequest:
		return validateCreateQueue(r)
	case *DeleteMessageRequest:
		return validateDeleteMessage(r)
	case *DeleteMessageBatchRequest:
		return validateDeleteMessageBatch(r)
	case *DeleteQueueRequest:
		return validateQueueURL(r.QueueUrl)
	case *GetQueueAttributesRequest:
		return validateGetQueueAttributes(r)
	case *GetQueueUrlRequest:
		return validateGetQueueUrl(r)
	case *ListDeadLetterSourceQueuesRequest:
		return validateListDeadLetterSourceQueues(r)
	case *ListMessageMoveTasksRequest:
		return validateListMessageMoveTasks(r)
	case *ListQueueTagsRequest:
		return validateQueueURL(r.QueueUrl)
	case *ListQueuesRequest:
		return validateListQueues(r)
	case *PurgeQueueRequest:
		return validateQueueURL(r.QueueUrl)
	case *ReceiveMessageRequest:
		return validateReceiveMessage(r)
	case *RemovePermissionRequest:
		return validateRemovePermission(r)
	case *SendMessageRequest:
		return validateSendMessage(r)
	case *SendMessageBatchRequest:
		return validateSendMessageBatch(r)
	case *SetQueueAttributesRequest:
		return validateSetQueueAttributes(r)
	case *StartMessageMoveTaskRequest:
		return validateStartMessageMoveTask(r)
	case *TagQueueRequest:
		return validateTagQueue(r)
	case *UntagQueueRequest:
		return validateUntagQueue(r)
	}
	return ErrInvalidAction(string(r.Action()))
}

// isNilPointer reports whether r is a typed nil pointer, which the type
// switch would match and then dereference.
func isNilPointer(r Request) bool {
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// validateQueueURL checks a required QueueUrl member: present, and of a
// form that can name a queue.
func validateQueueURL(queueURL string) error {
	_, err := ParseQueueURL(queueURL)
	return err
}

// isBlank reports whether a required string member is absent: empty or
// made only of white space, which SQS treats as missing (a receipt handle
// of " " is a missing receipt handle).
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// optionalIntError checks an optional integer member against [min, max];
// a nil value is absent and valid. reason is SQS's wording of the range.
func optionalIntError(param string, v *int, min, max int, reason string) error {
	if v == nil || (*v >= min && *v <= max) {
		return nil
	}
	return ErrInvalidParameterValue("Value %d for parameter %s is invalid. Reason: %s", *v, param, reason)
}
