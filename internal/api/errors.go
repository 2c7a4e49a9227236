package api

import (
	"fmt"
	"net/http"
)

// Fault says whose fault an error is, as SQS reports it in the Query
// protocol's <Type> element and in the x-amzn-query-error header.
type Fault string

// The two faults.
const (
	FaultSender   Fault = "Sender"
	FaultReceiver Fault = "Receiver"
)

// Error is an error answered to a client, in the form SQS gives it.
type Error struct {
	// Code names the error: the model's shape name (QueueDoesNotExist), or
	// for a common error that the model lacks, its Query code
	// (InvalidParameterValue). The AWS JSON __type is JSONType(), which
	// differs from Code for a few common errors.
	Code string
	// QueryCode is the code of the same error in the AWS Query protocol and
	// in the x-amzn-query-error header (AWS.SimpleQueueService.NonExistentQueue).
	QueryCode string
	// Status is the HTTP status code.
	Status int
	// Fault is Sender for client errors, Receiver for server errors.
	Fault Fault
	// Message is the human-readable text, in SQS's wording where known.
	Message string
	// QueryMessage is the text in the AWS Query protocol where SQS words it
	// differently there; empty means the same as Message.
	QueryMessage string
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// SenderFault reports whether the client caused the error.
func (e *Error) SenderFault() bool { return e.Fault == FaultSender }

// JSONType returns the error's name in the AWS JSON protocol's __type,
// without its namespace: the shape name for the model's errors, and for the
// common errors the name SQS gives them there.
func (e *Error) JSONType() string {
	if t, ok := jsonTypes[e.Code]; ok {
		return t
	}
	return e.Code
}

// MessageIn returns the error's message as the given protocol words it:
// QueryMessage in the Query protocol where set, Message otherwise.
func (e *Error) MessageIn(query bool) string {
	if query && e.QueryMessage != "" {
		return e.QueryMessage
	}
	return e.Message
}

// errorKind is the fixed part of an error: everything but its message.
type errorKind struct {
	code, queryCode string
	status          int
	fault           Fault
}

func (k errorKind) with(format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: k.code, QueryCode: k.queryCode, Status: k.status, Fault: k.fault, Message: msg}
}

// The errors of the SQS model, with the Query codes and HTTP statuses of
// shared/reference/sqs-2012-11-05.query-protocol.service.json, and the common
// errors every AWS service may answer with. The model's InvalidAddress and
// MessageNotInflight are left out: AWS was not found answering them (a
// queue URL or name of no queue is NonExistentQueue; a visibility change
// of a message not in flight is InvalidParameterValue), and neither does
// fifoq's API (only its copy of LocalStack's developer endpoint answers
// InvalidAddress, as LocalStack does: see the server's devapi.go).
var (
	kindBatchEntryIdsNotDistinct     = errorKind{"BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", http.StatusBadRequest, FaultSender}
	kindBatchRequestTooLong          = errorKind{"BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong", http.StatusBadRequest, FaultSender}
	kindEmptyBatchRequest            = errorKind{"EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", http.StatusBadRequest, FaultSender}
	kindInvalidAttributeName         = errorKind{"InvalidAttributeName", "InvalidAttributeName", http.StatusBadRequest, FaultSender}
	kindInvalidAttributeValue        = errorKind{"InvalidAttributeValue", "InvalidAttributeValue", http.StatusBadRequest, FaultSender}
	kindInvalidBatchEntryId          = errorKind{"InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId", http.StatusBadRequest, FaultSender}
	kindInvalidIdFormat              = errorKind{"InvalidIdFormat", "InvalidIdFormat", http.StatusBadRequest, FaultSender}
	kindInvalidMessageContents       = errorKind{"InvalidMessageContents", "InvalidMessageContents", http.StatusBadRequest, FaultSender}
	kindInvalidSecurity              = errorKind{"InvalidSecurity", "InvalidSecurity", http.StatusForbidden, FaultSender}
	kindOverLimit                    = errorKind{"OverLimit", "OverLimit", http.StatusForbidden, FaultSender}
	kindPurgeQueueInProgress         = errorKind{"PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress", http.StatusForbidden, FaultSender}
	kindQueueDeletedRecently         = errorKind{"QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently", http.StatusBadRequest, FaultSender}
	kindQueueDoesNotExist            = errorKind{"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest, FaultSender}
	kindQueueNameExists              = errorKind{"QueueNameExists", "QueueAlreadyExists", http.StatusBadRequest, FaultSender}
	kindReceiptHandleIsInvalid       = errorKind{"ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", http.StatusBadRequest, FaultSender}
	kindRequestThrottled             = errorKind{"RequestThrottled", "RequestThrottled", http.StatusBadRequest, FaultSender}
	kindResourceNotFound             = errorKind{"ResourceNotFoundException", "ResourceNotFoundException", http.StatusNotFound, FaultSender}
	kindTooManyEntriesInBatchRequest = errorKind{"TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", http.StatusBadRequest, FaultSender}
	kindUnsupportedOperation         = errorKind{"UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", http.StatusBadRequest, FaultSender}

	kindInvalidParameterValue       = errorKind{"InvalidParameterValue", "InvalidParameterValue", http.StatusBadRequest, FaultSender}
	kindInvalidParameterCombination = errorKind{"InvalidParameterCombination", "InvalidParameterCombination", http.StatusBadRequest, FaultSender}
	kindMissingParameter            = errorKind{"MissingParameter", "MissingParameter", http.StatusBadRequest, FaultSender}
	kindInvalidAction               = errorKind{"InvalidAction", "InvalidAction", http.StatusBadRequest, FaultSender}
	kindInvalidQueryParameter       = errorKind{"InvalidQueryParameter", "InvalidQueryParameter", http.StatusBadRequest, FaultSender}
	kindMalformedQueryString        = errorKind{"MalformedQueryString", "MalformedQueryString", http.StatusNotFound, FaultSender}
	kindSerialization               = errorKind{"SerializationException", "SerializationException", http.StatusBadRequest, FaultSender}
	kindRequestEntityTooLarge       = errorKind{"RequestEntityTooLarge", "RequestEntityTooLarge", http.StatusRequestEntityTooLarge, FaultSender}
	kindAccessDenied                = errorKind{"AccessDenied", "AccessDenied", http.StatusForbidden, FaultSender}
	kindInternalFailure             = errorKind{"InternalFailure", "InternalFailure", http.StatusInternalServerError, FaultReceiver}
	kindServiceUnavailable          = errorKind{"ServiceUnavailable", "ServiceUnavailable", http.StatusServiceUnavailable, FaultReceiver}
	// An AWS JSON request whose X-Amz-Target names no operation (400, as an
	// AWS JSON service was seen answering it: aws/aws-sdk-net issue #1536;
	// no SQS recording), and an AWS Query request without an Action, which
	// SQS answers 404 with a bare <UnknownOperationException/> document
	// (recorded at a queue's URL by LocalStack's AWS-validated tests).
	kindUnknownOperation      = errorKind{"UnknownOperationException", "UnknownOperationException", http.StatusBadRequest, FaultSender}
	kindUnknownOperationQuery = errorKind{"UnknownOperationException", "UnknownOperationException", http.StatusNotFound, FaultSender}
)

// jsonTypes are the AWS JSON __type names of the common errors whose name
// there is not their Query code, keyed by Code. SQS answers them in JSON
// under these names and with the Query code in x-amzn-query-error, as
// recorded in LocalStack's AWS-validated snapshots (boto3's QueryErrorCode):
// test_send_receive_max_number_of_messages (InvalidParameterValue) and
// test_posting_to_fifo_requires_deduplicationid_group_id (MissingParameter).
// AccessDenied, unrecorded in JSON, takes the name the API reference's
// Common Errors page gives it. (That page also gives MalformedQueryString
// its 404, above.)
var jsonTypes = map[string]string{
	"InvalidParameterValue": "InvalidParameterValueException",
	"MissingParameter":      "MissingRequiredParameterException",
	"AccessDenied":          "AccessDeniedException",
}

// ErrBatchEntryIdsNotDistinct: two entries of a batch share an Id.
func ErrBatchEntryIdsNotDistinct(id string) *Error {
	return kindBatchEntryIdsNotDistinct.with("Id %s repeated.", id)
}

// ErrBatchRequestTooLong: the entries of a batch add up to more than the maximum size.
func ErrBatchRequestTooLong(total, max int) *Error {
	return kindBatchRequestTooLong.with("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", max, total)
}

// ErrEmptyBatchRequestFor: a batch without entries, naming the entry shape
// of the action (SendMessageBatchRequestEntry, DeleteMessageBatchRequestEntry, ...).
func ErrEmptyBatchRequestFor(entry string) *Error {
	return kindEmptyBatchRequest.with("There should be at least one %s in the request.", entry)
}

// ErrInvalidAttributeName: an unknown queue or message attribute name.
func ErrInvalidAttributeName(name string) *Error {
	return kindInvalidAttributeName.with("Unknown Attribute %s.", name)
}

// ErrInvalidAttributeValue: a queue attribute whose value is out of range or malformed.
func ErrInvalidAttributeValue(format string, args ...any) *Error {
	return kindInvalidAttributeValue.with(format, args...)
}

// ErrSSEConflict: a request that enables both SSE-KMS
// (KmsMasterKeyId) and SSE-SQS (SqsManagedSseEnabled) on one queue.
func ErrSSEConflict() *Error {
	return kindInvalidAttributeName.with("You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.")
}

// ErrThroughputNeedsMessageGroupScope: FifoThroughputLimit
// perMessageGroupId on a queue whose DeduplicationScope is not messageGroup.
func ErrThroughputNeedsMessageGroupScope() *Error {
	return kindInvalidAttributeValue.with("The perMessageGroupId value is allowed only when the value for DeduplicationScope is messageGroup")
}

// ErrInvalidBatchEntryId: a batch entry Id that is not 1-80 alphanumerics, hyphens or underscores.
func ErrInvalidBatchEntryId() *Error {
	return kindInvalidBatchEntryId.with("A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")
}

// ErrInvalidIdFormat: a malformed identifier (deprecated by SQS in favour of ReceiptHandleIsInvalid).
func ErrInvalidIdFormat(format string, args ...any) *Error {
	return kindInvalidIdFormat.with(format, args...)
}

// ErrInvalidMessageContents: a body with characters outside the allowed set.
func ErrInvalidMessageContents() *Error {
	return kindInvalidMessageContents.with("Invalid binary character in message body or attributes. Only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF are allowed.")
}

// ErrInvalidSecurity: the request was not made over a secure transport where one is required.
func ErrInvalidSecurity(format string, args ...any) *Error {
	return kindInvalidSecurity.with(format, args...)
}

// ErrOverLimit: a limit such as the number of in-flight messages is reached.
func ErrOverLimit(format string, args ...any) *Error {
	return kindOverLimit.with(format, args...)
}

// ErrPurgeQueueInProgress: a second PurgeQueue within 60 seconds.
func ErrPurgeQueueInProgress(queueURL string) *Error {
	return kindPurgeQueueInProgress.with("Only one PurgeQueue operation on %s is allowed every 60 seconds.", queueURL)
}

// ErrQueueDeletedRecently: a queue created again within 60 seconds of its deletion.
func ErrQueueDeletedRecently() *Error {
	return kindQueueDeletedRecently.with("You must wait 60 seconds after deleting a queue before you can create another with the same name.")
}

// ErrQueueDoesNotExist: the named queue does not exist (or is not visible to the caller).
func ErrQueueDoesNotExist() *Error {
	e := kindQueueDoesNotExist.with("The specified queue does not exist.")
	// The Query protocol keeps the wording of its WSDL days (recorded in
	// test_non_existent_queue/queue-does-not-exist-query).
	e.QueryMessage = "The specified queue does not exist for this wsdl version."
	return e
}

// ErrQueueNameExists: CreateQueue for an existing name with different attributes or tags.
func ErrQueueNameExists(attribute string) *Error {
	return kindQueueNameExists.with("A queue already exists with the same name and a different value for attribute %s", attribute)
}

// ErrReceiptHandleIsInvalid: a receipt handle that is malformed or expired.
func ErrReceiptHandleIsInvalid(handle string) *Error {
	return kindReceiptHandleIsInvalid.with("The input receipt handle \"%s\" is not a valid receipt handle.", handle)
}

// ErrRequestThrottled: the request rate is over a limit.
func ErrRequestThrottled() *Error {
	return kindRequestThrottled.with("Request is throttled.")
}

// ErrResourceNotFound: a message move task or its queue does not exist.
func ErrResourceNotFound(format string, args ...any) *Error {
	return kindResourceNotFound.with(format, args...)
}

// ErrTooManyEntriesInBatchRequest: a batch with more than 10 entries.
func ErrTooManyEntriesInBatchRequest(n int) *Error {
	return kindTooManyEntriesInBatchRequest.with("Maximum number of entries per request are 10. You have sent %d.", n)
}

// ErrUnsupportedOperation: an action or parameter this queue type does not support.
func ErrUnsupportedOperation(format string, args ...any) *Error {
	return kindUnsupportedOperation.with(format, args...)
}

// ErrInvalidParameterValue: a parameter with a value outside its allowed set.
func ErrInvalidParameterValue(format string, args ...any) *Error {
	return kindInvalidParameterValue.with(format, args...)
}

// ErrMessageTooLong: a message (body and attributes) over the size limit,
// the absolute one or the queue's MaximumMessageSize.
func ErrMessageTooLong(max int) *Error {
	return kindInvalidParameterValue.with("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", max)
}

// ErrInvalidParameterCombination: parameters that cannot be used together.
func ErrInvalidParameterCombination(format string, args ...any) *Error {
	return kindInvalidParameterCombination.with(format, args...)
}

// ErrMissingParameter: a required parameter is absent.
func ErrMissingParameter(name string) *Error {
	return kindMissingParameter.with("The request must contain the parameter %s.", name)
}

// ErrInvalidAction: an unknown action.
func ErrInvalidAction(action string) *Error {
	return kindInvalidAction.with("The action %s is not valid for this endpoint.", action)
}

// ErrUnknownOperation: an AWS JSON request whose X-Amz-Target is missing
// or names no operation of SQS.
func ErrUnknownOperation(format string, args ...any) *Error {
	return kindUnknownOperation.with(format, args...)
}

// ErrMissingAction: an AWS Query request without an Action parameter.
func ErrMissingAction() *Error {
	return kindUnknownOperationQuery.with("The request has no Action parameter.")
}

// ErrInvalidQueryParameter: a malformed or unexpected Query protocol parameter.
func ErrInvalidQueryParameter(format string, args ...any) *Error {
	return kindInvalidQueryParameter.with(format, args...)
}

// ErrMalformedQueryString: a form body or query string that cannot be parsed.
func ErrMalformedQueryString(format string, args ...any) *Error {
	return kindMalformedQueryString.with(format, args...)
}

// ErrSerialization: an AWS JSON body that is not valid JSON or has members of the wrong type.
func ErrSerialization(format string, args ...any) *Error {
	return kindSerialization.with(format, args...)
}

// ErrRequestEntityTooLarge: a request body over the server's limit.
func ErrRequestEntityTooLarge(max int) *Error {
	return kindRequestEntityTooLarge.with("Request body is larger than %d bytes.", max)
}

// ErrAccessDenied: the caller may not perform the action on the resource.
func ErrAccessDenied(format string, args ...any) *Error {
	return kindAccessDenied.with(format, args...)
}

// ErrInternalFailure: a server-side fault; the message should carry the request id.
func ErrInternalFailure(format string, args ...any) *Error {
	return kindInternalFailure.with(format, args...)
}

// ErrServiceUnavailable: the server cannot serve the request now (disk full, no leader).
func ErrServiceUnavailable(format string, args ...any) *Error {
	return kindServiceUnavailable.with(format, args...)
}

// AsError returns err as an *Error, wrapping any other error as an InternalFailure.
func AsError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return ErrInternalFailure("%v", err)
}

// BatchError turns an error for one entry into a BatchResultErrorEntry. The
// entry carries the Query code, which SQS reports in both protocols.
func BatchError(id string, err *Error) BatchResultErrorEntry {
	return BatchResultErrorEntry{Id: id, SenderFault: err.SenderFault(), Code: err.QueryCode, Message: err.Message}
}
