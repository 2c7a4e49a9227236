package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// API is the part of the SQS API the bench uses. *sqs.Client (the AWS SDK)
// has it, and so does LeanClient.
type API interface {
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	DeleteQueue(context.Context, *sqs.DeleteQueueInput, ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// retryTeller is implemented by a client that says whether it retries a
// failed request; one that does not implement it is taken to retry, as
// the AWS SDK does.
type retryTeller interface{ Retries() bool }

// retries reports whether c retries a failed request.
func retries(c API) bool {
	t, ok := c.(retryTeller)
	return !ok || t.Retries()
}

// LeanClient speaks the SQS JSON protocol (AWS JSON 1.0) over plain
// net/http, without the AWS SDK's middleware stack, retries or signing:
// one JSON body out, one in. It measures a server with as little client
// cost as a real client can have, where the SDK's own CPU (~100 µs per
// message at batch 10 on the machine of docs/benchmarks.md) would be the
// limit. Its requests are unsigned, which fifoq accepts when it has no
// credentials configured (on loopback); it does not retry.
type LeanClient struct {
	endpoint string
	http     *http.Client
}

// NewLeanClient returns a lean client for endpoint that keeps an idle
// connection for each of workers.
func NewLeanClient(endpoint string, workers int) *LeanClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, workers)
	t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, workers)
	return &LeanClient{endpoint: strings.TrimSuffix(endpoint, "/") + "/", http: &http.Client{Transport: t}}
}

// Retries reports false: a LeanClient makes one attempt a request.
func (c *LeanClient) Retries() bool { return false }

// leanError is an error answer of the server.
type leanError struct {
	status        int
	code, message string
}

func (e *leanError) Error() string {
	return fmt.Sprintf("HTTP %d: %s: %s", e.status, e.code, e.message)
}

// call posts in as action and decodes the answer into out.
func (c *LeanClient) call(ctx context.Context, action string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		if _, code, ok := strings.Cut(e.Type, "#"); ok {
			e.Type = code
		}
		return &leanError{status: resp.StatusCode, code: e.Type, message: e.Message}
	}
	return json.Unmarshal(data, out)
}

// CreateQueue implements API.
func (c *LeanClient) CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	var out struct{ QueueUrl string }
	err := c.call(ctx, "CreateQueue", struct {
		QueueName  string
		Attributes map[string]string `json:",omitempty"`
	}{aws.ToString(in.QueueName), in.Attributes}, &out)
	if err != nil {
		return nil, err
	}
	return &sqs.CreateQueueOutput{QueueUrl: aws.String(out.QueueUrl)}, nil
}

// DeleteQueue implements API.
func (c *LeanClient) DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, _ ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error) {
	err := c.call(ctx, "DeleteQueue", struct{ QueueUrl string }{aws.ToString(in.QueueUrl)}, &struct{}{})
	if err != nil {
		return nil, err
	}
	return &sqs.DeleteQueueOutput{}, nil
}

// leanMessage is a message to send, as the JSON protocol spells it.
type leanMessage struct {
	Id                     string `json:",omitempty"`
	MessageBody            string
	MessageGroupId         string `json:",omitempty"`
	MessageDeduplicationId string `json:",omitempty"`
}

// SendMessage implements API.
func (c *LeanClient) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	var out struct{ MessageId, MD5OfMessageBody string }
	err := c.call(ctx, "SendMessage", struct {
		QueueUrl string
		leanMessage
	}{aws.ToString(in.QueueUrl), leanMessage{MessageBody: aws.ToString(in.MessageBody),
		MessageGroupId: aws.ToString(in.MessageGroupId), MessageDeduplicationId: aws.ToString(in.MessageDeduplicationId)}}, &out)
	if err != nil {
		return nil, err
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(out.MessageId), MD5OfMessageBody: aws.String(out.MD5OfMessageBody)}, nil
}

// leanBatchResult is a batch action's answer.
type leanBatchResult struct {
	Successful []struct{ Id string }
	Failed     []struct {
		Id, Code, Message string
		SenderFault       bool
	}
}

func (r *leanBatchResult) failed() []types.BatchResultErrorEntry {
	out := make([]types.BatchResultErrorEntry, len(r.Failed))
	for i, f := range r.Failed {
		out[i] = types.BatchResultErrorEntry{Id: aws.String(f.Id), Code: aws.String(f.Code), Message: aws.String(f.Message), SenderFault: f.SenderFault}
	}
	return out
}

// SendMessageBatch implements API.
func (c *LeanClient) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	entries := make([]leanMessage, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = leanMessage{Id: aws.ToString(e.Id), MessageBody: aws.ToString(e.MessageBody),
			MessageGroupId: aws.ToString(e.MessageGroupId), MessageDeduplicationId: aws.ToString(e.MessageDeduplicationId)}
	}
	var out leanBatchResult
	err := c.call(ctx, "SendMessageBatch", struct {
		QueueUrl string
		Entries  []leanMessage
	}{aws.ToString(in.QueueUrl), entries}, &out)
	if err != nil {
		return nil, err
	}
	res := &sqs.SendMessageBatchOutput{Failed: out.failed(), Successful: make([]types.SendMessageBatchResultEntry, len(out.Successful))}
	for i, s := range out.Successful {
		res.Successful[i].Id = aws.String(s.Id)
	}
	return res, nil
}

// ReceiveMessage implements API.
func (c *LeanClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	var out struct {
		Messages []struct{ MessageId, ReceiptHandle, Body string }
	}
	err := c.call(ctx, "ReceiveMessage", struct {
		QueueUrl                string
		MaxNumberOfMessages     int32
		WaitTimeSeconds         int32
		ReceiveRequestAttemptId string `json:",omitempty"`
	}{aws.ToString(in.QueueUrl), in.MaxNumberOfMessages, in.WaitTimeSeconds, aws.ToString(in.ReceiveRequestAttemptId)}, &out)
	if err != nil {
		return nil, err
	}
	res := &sqs.ReceiveMessageOutput{Messages: make([]types.Message, len(out.Messages))}
	for i, m := range out.Messages {
		res.Messages[i] = types.Message{MessageId: aws.String(m.MessageId), ReceiptHandle: aws.String(m.ReceiptHandle), Body: aws.String(m.Body)}
	}
	return res, nil
}

// DeleteMessageBatch implements API.
func (c *LeanClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	type entry struct{ Id, ReceiptHandle string }
	entries := make([]entry, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = entry{aws.ToString(e.Id), aws.ToString(e.ReceiptHandle)}
	}
	var out leanBatchResult
	err := c.call(ctx, "DeleteMessageBatch", struct {
		QueueUrl string
		Entries  []entry
	}{aws.ToString(in.QueueUrl), entries}, &out)
	if err != nil {
		return nil, err
	}
	res := &sqs.DeleteMessageBatchOutput{Failed: out.failed(), Successful: make([]types.DeleteMessageBatchResultEntry, len(out.Successful))}
	for i, s := range out.Successful {
		res.Successful[i].Id = aws.String(s.Id)
	}
	return res, nil
}

var _ API = (*LeanClient)(nil)
