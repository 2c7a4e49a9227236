package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/fifoq/fifoq/internal/api"
)

// errorTypePrefix qualifies error codes in AWS JSON "__type" members with
// the namespace of the service's Smithy model, as SQS does.
const errorTypePrefix = "com.amazonaws.sqs#"

// batchJSON is a batch result as SQS writes it in AWS JSON: an empty
// Successful or Failed is left out, although the model marks both
// required. AWS was recorded answering a batch without failures with no
// Failed member (localstack test_sqs.snapshot.json:
// test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size/send_oversized_message_batch,
// 2024; aws/aws-sdk#657: "SendMessageBatch does not contain Failed: []
// anymore"), which is what the AWS SDK for Java v2's hasFailed() expects.
// No recording shows a batch without successes; Successful is left out
// alike, as AWS leaves out empty lists elsewhere (ListQueues' QueueUrls,
// ReceiveMessage's Messages) and as LocalStack's AWS-validated provider
// does (localstack/localstack#9710, #9998).
type batchJSON[S any] struct {
	Successful []S                         `json:"Successful,omitempty"`
	Failed     []api.BatchResultErrorEntry `json:"Failed,omitempty"`
}

// encodeJSONResult encodes a result (a value of the action's result type)
// as the body of an AWS JSON response. Empty members are omitted, except
// the lists ListDeadLetterSourceQueues (queueUrls) and ListMessageMoveTasks
// (Results) answer, which are written as [] when empty.
func encodeJSONResult(result any) ([]byte, error) {
	switch r := result.(type) {
	case api.Empty:
		return []byte("{}"), nil
	case api.ChangeMessageVisibilityBatchResult:
		result = batchJSON[api.BatchResultEntry]{r.Successful, r.Failed}
	case api.DeleteMessageBatchResult:
		result = batchJSON[api.BatchResultEntry]{r.Successful, r.Failed}
	case api.SendMessageBatchResult:
		result = batchJSON[api.SendMessageBatchResultEntry]{r.Successful, r.Failed}
	case api.ListDeadLetterSourceQueuesResult:
		r.QueueUrls = nonNil(r.QueueUrls)
		result = r
	case api.ListMessageMoveTasksResult:
		r.Results = nonNil(r.Results)
		result = r
	}
	return marshalJSON(result)
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
