package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/fifoq/fifoq/internal/api"
)

// errorTypePrefix qualifies error codes in AWS JSON "__type" members with
// the namespace of the service's Smithy model, as SQS does.
const errorTypePrefix = "com.amazonaws.sqs#"

// encodeJSONResult encodes a result (a value of the action's result type)
// as the body of an AWS JSON response. Empty members are omitted, as SQS
// omits them: its recorded JSON answers carry no "Failed" when no batch
// entry failed, no "Messages" from an empty receive, no "QueueUrls" when no
// queue matched, no "Tags" or "Attributes" when there are none (localstack
// test_sqs.snapshot.json: test_send_message_batch_with_oversized_contents_
// with_updated_maximum_message_size, test_receive_empty_queue,
// test_tag_untag_queue/get-tag-after-untag, test_sqs_permission_lifecycle/
// get-queue-policy-attribute-after-removal; test_list_queues asserts it for
// QueueUrls). The batch results' Successful follows the same rule. The two
// exceptions are the lists no recording shows empty and that the model
// requires, ListDeadLetterSourceQueues' queueUrls and ListMessageMoveTasks'
// Results: they stay [] when empty.
func encodeJSONResult(result any) ([]byte, error) {
	switch r := result.(type) {
	case api.Empty:
		return []byte("{}"), nil
	case api.ChangeMessageVisibilityBatchResult:
		result = batchResult[api.BatchResultEntry]{r.Successful, r.Failed}
	case api.DeleteMessageBatchResult:
		result = batchResult[api.BatchResultEntry]{r.Successful, r.Failed}
	case api.SendMessageBatchResult:
		result = batchResult[api.SendMessageBatchResultEntry]{r.Successful, r.Failed}
	case api.ListDeadLetterSourceQueuesResult:
		r.QueueUrls = nonNil(r.QueueUrls)
		result = r
	case api.ListMessageMoveTasksResult:
		r.Results = nonNil(r.Results)
		result = r
	}
	return marshalJSON(result)
}

// batchResult is the JSON of a batch action's result: either list is left
// out when it is empty, as SQS leaves it out.
type batchResult[T any] struct {
	Successful []T                         `json:"Successful,omitempty"`
	Failed     []api.BatchResultErrorEntry `json:"Failed,omitempty"`
}

// encodeJSONError encodes the body of an AWS JSON error response.
func encodeJSONError(err *api.Error) []byte {
	body, mErr := marshalJSON(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{errorTypePrefix + err.JSONType(), err.Message})
	if mErr != nil {
		// Two strings always marshal; keep a valid body all the same.
		return []byte(`{"__type":"` + errorTypePrefix + `InternalFailure"}`)
	}
	return body
}

// marshalJSON is json.Marshal without the escaping of <, > and & meant for
// HTML, which would only inflate message bodies.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// nonNil returns s, or an empty slice if s is nil, so that it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
