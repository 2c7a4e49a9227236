package console

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// The console's state-changing calls. Each is one SQS action carried out
// through the Backend as the caller's account, so the API's validation,
// limits and queue policies apply unchanged.

type sendJSON struct {
	Body            string          `json:"body"`
	GroupID         string          `json:"groupId,omitempty"`
	DeduplicationID string          `json:"deduplicationId,omitempty"`
	DelaySeconds    *int            `json:"delaySeconds,omitempty"`
	Attributes      []attributeJSON `json:"attributes,omitempty"`
}

type sentJSON struct {
	MessageID      string `json:"messageId"`
	SequenceNumber string `json:"sequenceNumber,omitempty"`
	MD5OfBody      string `json:"md5OfMessageBody"`
}

// sendMessage sends a test message.
func (c *Console) sendMessage(r *http.Request, a *actor) (any, error) {
	k, err := queueKey(r, a)
	if err != nil {
		return nil, err
	}
	var in sendJSON
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	req := &api.SendMessageRequest{
		QueueUrl:               k.Path(),
		MessageBody:            in.Body,
		MessageGroupId:         in.GroupID,
		MessageDeduplicationId: in.DeduplicationID,
		DelaySeconds:           in.DelaySeconds,
	}
	for _, at := range in.Attributes {
		if req.MessageAttributes == nil {
			req.MessageAttributes = map[string]api.MessageAttributeValue{}
		}
		if _, dup := req.MessageAttributes[at.Name]; dup {
			return nil, errBadRequest("Message attribute %q is given twice.", at.Name)
		}
		v, err := attributeValue(at)
		if err != nil {
			return nil, err
		}
		req.MessageAttributes[at.Name] = v
	}
	resp, err := c.cfg.Backend.Do(r.Context(), a.account, req)
	if err != nil {
		return nil, err
	}
	res := resp.(*api.SendMessageResult)
	return sentJSON{MessageID: res.MessageId, SequenceNumber: res.SequenceNumber, MD5OfBody: res.MD5OfMessageBody}, nil
}

// attributeValue builds a message attribute value: String and Number
// types (and their custom subtypes, "Number.int") carry text, Binary
// carries base64.
func attributeValue(at attributeJSON) (api.MessageAttributeValue, error) {
	v := api.MessageAttributeValue{DataType: at.Type}
	if strings.HasPrefix(at.Type, "Binary") {
		b, err := base64.StdEncoding.DecodeString(at.Value)
		if err != nil {
			return v, errBadRequest("The value of binary attribute %q is not base64.", at.Name)
		}
		v.BinaryValue = b
		return v, nil
	}
	s := at.Value
	v.StringValue = &s
	return v, nil
}

// purge purges a queue.
func (c *Console) purge(r *http.Request, a *actor) (any, error) {
	k, err := queueKey(r, a)
	if err != nil {
		return nil, err
	}
	if _, err := c.cfg.Backend.Do(r.Context(), a.account, &api.PurgeQueueRequest{QueueUrl: k.Path()}); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

type startMoveJSON struct {
	// DestinationArn is "" to return the messages to the queues they came
	// from.
	DestinationArn               string `json:"destinationArn,omitempty"`
	MaxNumberOfMessagesPerSecond *int   `json:"maxNumberOfMessagesPerSecond,omitempty"`
}

type taskHandleJSON struct {
	TaskHandle string `json:"taskHandle"`
}

// startMoveTask starts a redrive out of a dead-letter queue.
func (c *Console) startMoveTask(r *http.Request, a *actor) (any, error) {
	k, err := queueKey(r, a)
	if err != nil {
		return nil, err
	}
	var in startMoveJSON
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	resp, err := c.cfg.Backend.Do(r.Context(), a.account, &api.StartMessageMoveTaskRequest{
		SourceArn:                    k.ARN(c.cfg.Region),
		DestinationArn:               in.DestinationArn,
		MaxNumberOfMessagesPerSecond: in.MaxNumberOfMessagesPerSecond,
	})
	if err != nil {
		return nil, err
	}
	return taskHandleJSON{TaskHandle: resp.(*api.StartMessageMoveTaskResult).TaskHandle}, nil
}

type cancelledJSON struct {
	Moved int64 `json:"approximateNumberOfMessagesMoved"`
}

// cancelMoveTask cancels a running redrive by its task handle.
func (c *Console) cancelMoveTask(r *http.Request, a *actor) (any, error) {
	var in taskHandleJSON
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	resp, err := c.cfg.Backend.Do(r.Context(), a.account, &api.CancelMessageMoveTaskRequest{TaskHandle: in.TaskHandle})
	if err != nil {
		return nil, err
	}
	return cancelledJSON{Moved: resp.(*api.CancelMessageMoveTaskResult).ApproximateNumberOfMessagesMoved}, nil
}
