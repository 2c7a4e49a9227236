package protocol

import (
	"bytes"
	"encoding/json"
	"sync"

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
// QueueUrls). The model's "required" does not change that: Failed is
// required in SendMessageBatchResult and was recorded absent. So every
// empty list is left out, the batch results' Successful, ListDeadLetter-
// SourceQueues' queueUrls and ListMessageMoveTasks' Results included.
func encodeJSONResult(result any) ([]byte, error) {
	jb := newJSONBuffer()
	defer jb.free()
	body, err := jb.encodeResult(result)
	return bytes.Clone(body), err
}

// encodeResult is encodeJSONResult into the buffer: the body returned is
// the buffer's until it is freed.
func (jb *jsonBuffer) encodeResult(result any) ([]byte, error) {
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
		result = struct {
			QueueUrls []string `json:"queueUrls,omitempty"`
			NextToken string   `json:"NextToken,omitempty"`
		}{r.QueueUrls, r.NextToken}
	case api.ListMessageMoveTasksResult:
		result = struct {
			Results []api.ListMessageMoveTasksResultEntry `json:"Results,omitempty"`
		}{r.Results}
	}
	return jb.marshal(result)
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
	jb := newJSONBuffer()
	defer jb.free()
	body, err := jb.marshal(v)
	return bytes.Clone(body), err
}

// jsonBuffer is an encoder with its buffer, kept in a pool so that each
// response does not build both anew.
type jsonBuffer struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	fast []byte // appendFastResult's output
}

var jsonBuffers = sync.Pool{New: func() any {
	jb := &jsonBuffer{}
	jb.enc = json.NewEncoder(&jb.buf)
	jb.enc.SetEscapeHTML(false)
	return jb
}}

// maxPooledJSON is the largest buffer returned to the pool: a rare large
// answer (a receive of ten 256 KiB messages) is not kept alive by it.
const maxPooledJSON = 64 << 10

func newJSONBuffer() *jsonBuffer {
	jb := jsonBuffers.Get().(*jsonBuffer)
	jb.buf.Reset()
	return jb
}

func (jb *jsonBuffer) free() {
	if jb.buf.Cap() <= maxPooledJSON && cap(jb.fast) <= maxPooledJSON {
		jsonBuffers.Put(jb)
	}
}

// marshal is marshalJSON into the buffer: the bytes returned are the
// buffer's until it is freed.
func (jb *jsonBuffer) marshal(v any) ([]byte, error) {
	if err := jb.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(jb.buf.Bytes(), []byte("\n")), nil
}
