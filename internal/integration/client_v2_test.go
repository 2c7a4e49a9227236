package integration

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// v2Client is Client over aws-sdk-go-v2, which speaks AWS JSON 1.0.
type v2Client struct{ c *sqs.Client }

func (v2Client) Proto() string { return "json" }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (c v2Client) CreateQueue(ctx context.Context, name string, attrs, tags map[string]string) (string, error) {
	out, err := c.c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs, Tags: tags})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

func (c v2Client) GetQueueURL(ctx context.Context, name string) (string, error) {
	out, err := c.c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

func (c v2Client) ListQueues(ctx context.Context, prefix string, max int32, token string) ([]string, string, error) {
	in := &sqs.ListQueuesInput{QueueNamePrefix: strp(prefix), NextToken: strp(token)}
	if max > 0 {
		in.MaxResults = aws.Int32(max)
	}
	out, err := c.c.ListQueues(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return out.QueueUrls, aws.ToString(out.NextToken), nil
}

func (c v2Client) DeleteQueue(ctx context.Context, url string) error {
	_, err := c.c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	return err
}

func (c v2Client) GetAttrs(ctx context.Context, url string, names ...string) (map[string]string, error) {
	in := &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)}
	for _, n := range names {
		in.AttributeNames = append(in.AttributeNames, types.QueueAttributeName(n))
	}
	out, err := c.c.GetQueueAttributes(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

func (c v2Client) SetAttrs(ctx context.Context, url string, attrs map[string]string) error {
	_, err := c.c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs})
	return err
}

func (c v2Client) Purge(ctx context.Context, url string) error {
	_, err := c.c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	return err
}

func (c v2Client) Tag(ctx context.Context, url string, tags map[string]string) error {
	_, err := c.c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: tags})
	return err
}

func (c v2Client) Untag(ctx context.Context, url string, keys ...string) error {
	_, err := c.c.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: keys})
	return err
}

func (c v2Client) ListTags(ctx context.Context, url string) (map[string]string, error) {
	out, err := c.c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	if err != nil {
		return nil, err
	}
	return out.Tags, nil
}

func (c v2Client) AddPermission(ctx context.Context, url, label string, accounts, actions []string) error {
	_, err := c.c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(url), Label: aws.String(label), AWSAccountIds: accounts, Actions: actions})
	return err
}

func (c v2Client) RemovePermission(ctx context.Context, url, label string) error {
	_, err := c.c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: aws.String(url), Label: aws.String(label)})
	return err
}

func v2Attrs(attrs map[string]Attr) map[string]types.MessageAttributeValue {
	if attrs == nil {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for n, a := range attrs {
		v := types.MessageAttributeValue{DataType: aws.String(a.DataType)}
		if isBinaryType(a.DataType) {
			v.BinaryValue = a.Binary
		} else {
			v.StringValue = aws.String(a.String)
		}
		out[n] = v
	}
	return out
}

func fromV2Attrs(attrs map[string]types.MessageAttributeValue) map[string]Attr {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]Attr, len(attrs))
	for n, v := range attrs {
		out[n] = Attr{DataType: aws.ToString(v.DataType), String: aws.ToString(v.StringValue), Binary: v.BinaryValue}
	}
	return out
}

func (c v2Client) Send(ctx context.Context, url string, in SendIn) (SendOut, error) {
	req := &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(in.Body),
		MessageGroupId:         strp(in.Group),
		MessageDeduplicationId: strp(in.Dedup),
		MessageAttributes:      v2Attrs(in.Attrs),
	}
	if in.Delay != nil {
		// The v2 SDK omits a zero DelaySeconds: it cannot send an explicit 0.
		req.DelaySeconds = *in.Delay
	}
	out, err := c.c.SendMessage(ctx, req)
	if err != nil {
		return SendOut{}, err
	}
	return SendOut{
		ID:       aws.ToString(out.MessageId),
		Seq:      aws.ToString(out.SequenceNumber),
		MD5Body:  aws.ToString(out.MD5OfMessageBody),
		MD5Attrs: aws.ToString(out.MD5OfMessageAttributes),
	}, nil
}

func v2Fails(in []types.BatchResultErrorEntry) []BatchFail {
	var out []BatchFail
	for _, f := range in {
		out = append(out, BatchFail{ID: aws.ToString(f.Id), Code: aws.ToString(f.Code), SenderFault: f.SenderFault})
	}
	return out
}

func (c v2Client) SendBatch(ctx context.Context, url string, entries []BatchSend) (map[string]SendOut, []BatchFail, error) {
	req := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{}}
	for _, e := range entries {
		re := types.SendMessageBatchRequestEntry{
			Id:                     aws.String(e.ID),
			MessageBody:            aws.String(e.Body),
			MessageGroupId:         strp(e.Group),
			MessageDeduplicationId: strp(e.Dedup),
			MessageAttributes:      v2Attrs(e.Attrs),
		}
		if e.Delay != nil {
			re.DelaySeconds = *e.Delay
		}
		req.Entries = append(req.Entries, re)
	}
	out, err := c.c.SendMessageBatch(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	ok := make(map[string]SendOut)
	for _, s := range out.Successful {
		ok[aws.ToString(s.Id)] = SendOut{
			ID:       aws.ToString(s.MessageId),
			Seq:      aws.ToString(s.SequenceNumber),
			MD5Body:  aws.ToString(s.MD5OfMessageBody),
			MD5Attrs: aws.ToString(s.MD5OfMessageAttributes),
		}
	}
	return ok, v2Fails(out.Failed), nil
}

func (c v2Client) Receive(ctx context.Context, url string, in RecvIn) ([]Msg, error) {
	req := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         in.Max,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
		ReceiveRequestAttemptId:     strp(in.AttemptID),
	}
	if in.Wait != nil {
		req.WaitTimeSeconds = *in.Wait
	}
	if in.Visibility != nil {
		req.VisibilityTimeout = *in.Visibility
	}
	out, err := c.c.ReceiveMessage(ctx, req)
	if err != nil {
		return nil, err
	}
	var msgs []Msg
	for _, m := range out.Messages {
		msgs = append(msgs, Msg{
			ID:       aws.ToString(m.MessageId),
			Body:     aws.ToString(m.Body),
			Handle:   aws.ToString(m.ReceiptHandle),
			MD5Body:  aws.ToString(m.MD5OfBody),
			MD5Attrs: aws.ToString(m.MD5OfMessageAttributes),
			Sys:      m.Attributes,
			Attrs:    fromV2Attrs(m.MessageAttributes),
		})
	}
	return msgs, nil
}

func (c v2Client) Delete(ctx context.Context, url, handle string) error {
	_, err := c.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle)})
	return err
}

func batchOK[T any](entries []T, id func(T) *string) []string {
	var out []string
	for _, e := range entries {
		out = append(out, aws.ToString(id(e)))
	}
	return out
}

func (c v2Client) DeleteBatch(ctx context.Context, url string, entries []BatchHandle) ([]string, []BatchFail, error) {
	req := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{}}
	for _, e := range entries {
		req.Entries = append(req.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(e.ID), ReceiptHandle: aws.String(e.Handle)})
	}
	out, err := c.c.DeleteMessageBatch(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return batchOK(out.Successful, func(e types.DeleteMessageBatchResultEntry) *string { return e.Id }), v2Fails(out.Failed), nil
}

func (c v2Client) ChangeVisibility(ctx context.Context, url, handle string, secs int32) error {
	_, err := c.c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle), VisibilityTimeout: secs})
	return err
}

func (c v2Client) ChangeVisibilityBatch(ctx context.Context, url string, entries []BatchHandle, secs int32) ([]string, []BatchFail, error) {
	req := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{}}
	for _, e := range entries {
		req.Entries = append(req.Entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(e.ID), ReceiptHandle: aws.String(e.Handle), VisibilityTimeout: secs})
	}
	out, err := c.c.ChangeMessageVisibilityBatch(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return batchOK(out.Successful, func(e types.ChangeMessageVisibilityBatchResultEntry) *string { return e.Id }), v2Fails(out.Failed), nil
}

func (c v2Client) ListDLQSources(ctx context.Context, url string, max int32, token string) ([]string, string, error) {
	in := &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(url), NextToken: strp(token)}
	if max > 0 {
		in.MaxResults = aws.Int32(max)
	}
	out, err := c.c.ListDeadLetterSourceQueues(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return out.QueueUrls, aws.ToString(out.NextToken), nil
}

func (c v2Client) StartMove(ctx context.Context, source, dest string, rate int32) (string, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(source), DestinationArn: strp(dest)}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(rate)
	}
	out, err := c.c.StartMessageMoveTask(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.TaskHandle), nil
}

func (c v2Client) CancelMove(ctx context.Context, handle string) (int64, error) {
	out, err := c.c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
	if err != nil {
		return 0, err
	}
	return out.ApproximateNumberOfMessagesMoved, nil
}

func (c v2Client) ListMoves(ctx context.Context, source string, max int32) ([]MoveTask, error) {
	in := &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(source)}
	if max > 0 {
		in.MaxResults = aws.Int32(max)
	}
	out, err := c.c.ListMessageMoveTasks(ctx, in)
	if err != nil {
		return nil, err
	}
	var tasks []MoveTask
	for _, r := range out.Results {
		tasks = append(tasks, MoveTask{
			Handle: aws.ToString(r.TaskHandle),
			Status: aws.ToString(r.Status),
			Source: aws.ToString(r.SourceArn),
			Dest:   aws.ToString(r.DestinationArn),
			Moved:  r.ApproximateNumberOfMessagesMoved,
			ToMove: r.ApproximateNumberOfMessagesToMove,
			Rate:   r.MaxNumberOfMessagesPerSecond,
		})
	}
	return tasks, nil
}
