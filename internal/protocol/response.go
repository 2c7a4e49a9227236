package protocol

import (
	"net/http"
	"reflect"
	"strconv"

	"github.com/fifoq/fifoq/internal/api"
)

// resultTypes maps each action to the type of its result. Actions whose
// model output is empty answer with api.Empty.
var resultTypes = map[api.Action]reflect.Type{
	api.ActionAddPermission:                reflect.TypeFor[api.Empty](),
	api.ActionCancelMessageMoveTask:        reflect.TypeFor[api.CancelMessageMoveTaskResult](),
	api.ActionChangeMessageVisibility:      reflect.TypeFor[api.Empty](),
	api.ActionChangeMessageVisibilityBatch: reflect.TypeFor[api.ChangeMessageVisibilityBatchResult](),
	api.ActionCreateQueue:                  reflect.TypeFor[api.CreateQueueResult](),
	api.ActionDeleteMessage:                reflect.TypeFor[api.Empty](),
	api.ActionDeleteMessageBatch:           reflect.TypeFor[api.DeleteMessageBatchResult](),
	api.ActionDeleteQueue:                  reflect.TypeFor[api.Empty](),
	api.ActionGetQueueAttributes:           reflect.TypeFor[api.GetQueueAttributesResult](),
	api.ActionGetQueueUrl:                  reflect.TypeFor[api.GetQueueUrlResult](),
	api.ActionListDeadLetterSourceQueues:   reflect.TypeFor[api.ListDeadLetterSourceQueuesResult](),
	api.ActionListMessageMoveTasks:         reflect.TypeFor[api.ListMessageMoveTasksResult](),
	api.ActionListQueueTags:                reflect.TypeFor[api.ListQueueTagsResult](),
	api.ActionListQueues:                   reflect.TypeFor[api.ListQueuesResult](),
	api.ActionPurgeQueue:                   reflect.TypeFor[api.Empty](),
	api.ActionReceiveMessage:               reflect.TypeFor[api.ReceiveMessageResult](),
	api.ActionRemovePermission:             reflect.TypeFor[api.Empty](),
	api.ActionSendMessage:                  reflect.TypeFor[api.SendMessageResult](),
	api.ActionSendMessageBatch:             reflect.TypeFor[api.SendMessageBatchResult](),
	api.ActionSetQueueAttributes:           reflect.TypeFor[api.Empty](),
	api.ActionStartMessageMoveTask:         reflect.TypeFor[api.StartMessageMoveTaskResult](),
	api.ActionTagQueue:                     reflect.TypeFor[api.Empty](),
	api.ActionUntagQueue:                   reflect.TypeFor[api.Empty](),
}

// resultOf returns resp as a value (not a pointer) of the action's result
// type. A nil pointer of that type is its zero value; nil stands for
// api.Empty, for the actions without a result only. ok is false when resp
// is of another type: a bug of the caller.
func resultOf(action api.Action, resp api.Response) (any, bool) {
	want, known := resultTypes[action]
	if !known {
		return nil, false
	}
	if resp == nil {
		return api.Empty{}, want == reflect.TypeFor[api.Empty]()
	}
	v := reflect.ValueOf(resp)
	if v.Kind() == reflect.Pointer {
		if v.Type().Elem() != want {
			return nil, false
		}
		if v.IsNil() {
			return reflect.Zero(want).Interface(), true
		}
		return v.Elem().Interface(), true
	}
	if v.Type() != want {
		return nil, false
	}
	return resp, true
}

// WriteResponse writes the result of a successful action in protocol p,
// with status 200 and the request id in the x-amzn-RequestId header.
// resp may be the action's result type or a pointer to it; for actions
// without a result, api.Empty, a pointer to it, or nil. A response of the wrong type for the
// action is a bug of the caller and is answered as an InternalFailure.
func WriteResponse(w http.ResponseWriter, p Protocol, action api.Action, resp api.Response, requestID string) {
	var jb *jsonBuffer
	if p == JSON {
		jb = newJSONBuffer()
		defer jb.free() // after writeBody, which has copied the body out
		var ok bool
		if jb.fast, ok = appendFastResult(jb.fast[:0], action, resp); ok {
			writeBody(w, http.StatusOK, jsonContentType, requestID, jb.fast)
			return
		}
	}
	result, ok := resultOf(action, resp)
	if !ok {
		WriteError(w, p, api.ErrInternalFailure("Internal failure: the result of %s has the wrong type %T; request id %s.", action, resp, requestID), requestID)
		return
	}
	var body []byte
	var err error
	var contentType string
	if p == Query {
		body, err = encodeQueryResponse(action, result, requestID)
		contentType = xmlContentType
	} else {
		body, err = jb.encodeResult(result)
		contentType = jsonContentType
	}
	if err != nil {
		WriteError(w, p, api.ErrInternalFailure("Internal failure encoding the result of %s: %v; request id %s.", action, err, requestID), requestID)
		return
	}
	writeBody(w, http.StatusOK, contentType, requestID, body)
}

// unknownOperation is the code of the error for a request that names no
// operation.
const unknownOperation = "UnknownOperationException"

// WriteError writes err in protocol p with err.Status: in AWS JSON, the body
// {"__type":"com.amazonaws.sqs#<JSONType>","message":...} and the header
// x-amzn-query-error "<QueryCode>;<Fault>", with which SDKs in Query
// compatible mode report the Query code; in AWS Query, an ErrorResponse
// document. A nil err is reported as an InternalFailure.
func WriteError(w http.ResponseWriter, p Protocol, err *api.Error, requestID string) {
	if err == nil {
		err = api.ErrInternalFailure("Internal failure: an error without details; request id %s.", requestID)
	}
	status, fault := errorStatus(err)
	queryCode := err.QueryCode
	if queryCode == "" {
		queryCode = err.Code
	}
	if p == Query {
		if err.Code == unknownOperation {
			// SQS answers a Query request without an action with a bare
			// document of this name, not an ErrorResponse (recorded by
			// LocalStack's AWS-validated test_get_without_query_returns_unknown_operation).
			writeBody(w, status, xmlContentType, requestID, []byte("<"+unknownOperation+"/>"))
			return
		}
		writeBody(w, status, xmlContentType, requestID, encodeQueryError(err.MessageIn(true), queryCode, fault, requestID))
		return
	}
	w.Header().Set(headerQueryError, queryCode+";"+string(fault))
	writeBody(w, status, jsonContentType, requestID, encodeJSONError(err))
}

// errorStatus returns the HTTP status and fault of err, filling in what a
// hand-made *api.Error may lack: a status outside 400-599 becomes 500, a
// missing fault follows from the status.
func errorStatus(err *api.Error) (int, api.Fault) {
	status := err.Status
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	fault := err.Fault
	if fault == "" {
		fault = api.FaultSender
		if status >= 500 {
			fault = api.FaultReceiver
		}
	}
	return status, fault
}

// writeBody writes a complete response.
func writeBody(w http.ResponseWriter, status int, contentType, requestID string, body []byte) {
	// The three values share one allocation (each slice capped, so that
	// an Add elsewhere copies rather than overwrites its neighbour);
	// the keys are already in canonical form.
	vals := [...]string{contentType, strconv.Itoa(len(body)), requestID}
	shared := vals[:]
	h := w.Header()
	h["Content-Type"] = shared[0:1:1]
	h["Content-Length"] = shared[1:2:2]
	h[headerRequestID] = shared[2:3:3]
	w.WriteHeader(status)
	// A failed write means the client is gone; there is no one to tell.
	_, _ = w.Write(body)
}
