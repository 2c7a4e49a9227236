package protocol

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"

	"github.com/fifoq/fifoq/internal/api"
)

// The constants of AWS Query responses.
const (
	xmlContentType = "text/xml"
	// xmlNamespace is the Query model's xmlNamespace.
	xmlNamespace   = "http://queue.amazonaws.com/doc/2012-11-05/"
	xmlDeclaration = `<?xml version="1.0"?>`
)

// encodeQueryResponse encodes a result (a value of the action's result type)
// as an AWS Query response document:
//
//	<ActionResponse xmlns="..."><ActionResult>...</ActionResult>
//	<ResponseMetadata><RequestId>id</RequestId></ResponseMetadata></ActionResponse>
//
// Actions whose model output is empty (their result is api.Empty) have no
// ActionResult element, as the Query model has no resultWrapper for them.
// Member element names are those of the Query model; every list and map is
// flattened.
func encodeQueryResponse(action api.Action, result any, requestID string) ([]byte, error) {
	x := &xmlWriter{}
	x.buf.WriteString(xmlDeclaration)
	response := string(action) + "Response"
	x.buf.WriteString("<" + response + ` xmlns="` + xmlNamespace + `">`)
	if _, empty := result.(api.Empty); !empty {
		wrapper := string(action) + "Result"
		mark := x.buf.Len()
		x.open(wrapper)
		start := x.buf.Len()
		if err := encodeQueryResult(x, result); err != nil {
			return nil, err
		}
		if x.buf.Len() == start {
			x.buf.Truncate(mark)
			x.buf.WriteString("<" + wrapper + "/>")
		} else {
			x.close(wrapper)
		}
	}
	x.open("ResponseMetadata")
	x.elem("RequestId", requestID)
	x.close("ResponseMetadata")
	x.close(response)
	return x.buf.Bytes(), nil
}

// encodeQueryError encodes an AWS Query error document.
func encodeQueryError(message, queryCode string, fault api.Fault, requestID string) []byte {
	x := &xmlWriter{}
	x.buf.WriteString(xmlDeclaration)
	x.buf.WriteString(`<ErrorResponse xmlns="` + xmlNamespace + `">`)
	x.open("Error")
	x.elem("Type", string(fault))
	x.elem("Code", queryCode)
	x.elem("Message", message)
	x.buf.WriteString("<Detail/>")
	x.close("Error")
	x.elem("RequestId", requestID)
	x.close("ErrorResponse")
	return x.buf.Bytes()
}

// encodeQueryResult writes the members of a result, in the order of the model.
func encodeQueryResult(x *xmlWriter, result any) error {
	switch r := result.(type) {
	case api.CancelMessageMoveTaskResult:
		x.intElem("ApproximateNumberOfMessagesMoved", r.ApproximateNumberOfMessagesMoved)
	case api.ChangeMessageVisibilityBatchResult:
		for _, e := range r.Successful {
			x.open("ChangeMessageVisibilityBatchResultEntry")
			x.elem("Id", e.Id)
			x.close("ChangeMessageVisibilityBatchResultEntry")
		}
		encodeBatchErrors(x, r.Failed)
	case api.CreateQueueResult:
		x.elem("QueueUrl", r.QueueUrl)
	case api.DeleteMessageBatchResult:
		for _, e := range r.Successful {
			x.open("DeleteMessageBatchResultEntry")
			x.elem("Id", e.Id)
			x.close("DeleteMessageBatchResultEntry")
		}
		encodeBatchErrors(x, r.Failed)
	case api.GetQueueAttributesResult:
		x.stringMap("Attribute", "Name", "Value", r.Attributes)
	case api.GetQueueUrlResult:
		x.elem("QueueUrl", r.QueueUrl)
	case api.ListDeadLetterSourceQueuesResult:
		for _, u := range r.QueueUrls {
			x.elem("QueueUrl", u)
		}
		x.optElem("NextToken", r.NextToken)
	case api.ListMessageMoveTasksResult:
		for _, e := range r.Results {
			encodeMoveTask(x, e)
		}
	case api.ListQueueTagsResult:
		x.stringMap("Tag", "Key", "Value", r.Tags)
	case api.ListQueuesResult:
		for _, u := range r.QueueUrls {
			x.elem("QueueUrl", u)
		}
		x.optElem("NextToken", r.NextToken)
	case api.ReceiveMessageResult:
		for _, m := range r.Messages {
			encodeMessage(x, m)
		}
	case api.SendMessageResult:
		x.optElem("MD5OfMessageBody", r.MD5OfMessageBody)
		x.optElem("MD5OfMessageAttributes", r.MD5OfMessageAttributes)
		x.optElem("MD5OfMessageSystemAttributes", r.MD5OfMessageSystemAttributes)
		x.optElem("MessageId", r.MessageId)
		x.optElem("SequenceNumber", r.SequenceNumber)
	case api.SendMessageBatchResult:
		for _, e := range r.Successful {
			x.open("SendMessageBatchResultEntry")
			x.elem("Id", e.Id)
			x.elem("MessageId", e.MessageId)
			x.elem("MD5OfMessageBody", e.MD5OfMessageBody)
			x.optElem("MD5OfMessageAttributes", e.MD5OfMessageAttributes)
			x.optElem("MD5OfMessageSystemAttributes", e.MD5OfMessageSystemAttributes)
			x.optElem("SequenceNumber", e.SequenceNumber)
			x.close("SendMessageBatchResultEntry")
		}
		encodeBatchErrors(x, r.Failed)
	case api.StartMessageMoveTaskResult:
		x.elem("TaskHandle", r.TaskHandle)
	default:
		return fmt.Errorf("no Query encoding for result type %T", result)
	}
	return nil
}

// encodeBatchErrors writes the failed entries of a batch result.
func encodeBatchErrors(x *xmlWriter, failed []api.BatchResultErrorEntry) {
	for _, e := range failed {
		x.open("BatchResultErrorEntry")
		x.elem("Id", e.Id)
		x.boolElem("SenderFault", e.SenderFault)
		x.elem("Code", e.Code)
		x.optElem("Message", e.Message)
		x.close("BatchResultErrorEntry")
	}
}

// encodeMessage writes one received message.
func encodeMessage(x *xmlWriter, m api.Message) {
	x.open("Message")
	x.optElem("MessageId", m.MessageId)
	x.optElem("ReceiptHandle", m.ReceiptHandle)
	x.optElem("MD5OfBody", m.MD5OfBody)
	x.optElem("Body", m.Body)
	x.stringMap("Attribute", "Name", "Value", m.Attributes)
	x.optElem("MD5OfMessageAttributes", m.MD5OfMessageAttributes)
	for _, name := range slices.Sorted(maps.Keys(m.MessageAttributes)) {
		x.open("MessageAttribute")
		x.elem("Name", name)
		x.open("Value")
		encodeAttributeValue(x, m.MessageAttributes[name])
		x.close("Value")
		x.close("MessageAttribute")
	}
	x.close("Message")
}

// encodeAttributeValue writes the members of a MessageAttributeValue.
// Binary values are base64-encoded, as the Query protocol writes blobs.
func encodeAttributeValue(x *xmlWriter, v api.MessageAttributeValue) {
	if v.StringValue != nil {
		x.elem("StringValue", *v.StringValue)
	}
	if v.BinaryValue != nil {
		x.elem("BinaryValue", base64.StdEncoding.EncodeToString(v.BinaryValue))
	}
	for _, s := range v.StringListValues {
		x.elem("StringListValue", s)
	}
	for _, b := range v.BinaryListValues {
		x.elem("BinaryListValue", base64.StdEncoding.EncodeToString(b))
	}
	x.elem("DataType", v.DataType)
}

// encodeMoveTask writes one entry of ListMessageMoveTasks, under the element
// name of aws-sdk-go v1.44.300's Query model.
func encodeMoveTask(x *xmlWriter, e api.ListMessageMoveTasksResultEntry) {
	x.open("ListMessageMoveTasksResultEntry")
	x.optElem("TaskHandle", e.TaskHandle)
	x.optElem("Status", e.Status)
	x.optElem("SourceArn", e.SourceArn)
	x.optElem("DestinationArn", e.DestinationArn)
	if e.MaxNumberOfMessagesPerSecond != nil {
		x.intElem("MaxNumberOfMessagesPerSecond", int64(*e.MaxNumberOfMessagesPerSecond))
	}
	x.intElem("ApproximateNumberOfMessagesMoved", e.ApproximateNumberOfMessagesMoved)
	if e.ApproximateNumberOfMessagesToMove != nil {
		x.intElem("ApproximateNumberOfMessagesToMove", *e.ApproximateNumberOfMessagesToMove)
	}
	x.optElem("FailureReason", e.FailureReason)
	x.intElem("StartedTimestamp", e.StartedTimestamp)
	x.close("ListMessageMoveTasksResultEntry")
}
