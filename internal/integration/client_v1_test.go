package integration

import (
	"context"

	"github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/service/sqs"
)

// v1Client is Client over aws-sdk-go v1.44.300, whose SQS client speaks
// AWS Query (form-encoded requests, XML responses).
type v1Client struct{ c *sqs.SQS }

func (v1Client) Proto() string { return "query" }

func strpv1(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

func (c v1Client) CreateQueue(ctx context.Context, name string, attrs, tags map[string]string) (string, error) {
	out, err := c.c.CreateQueueWithContext(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: aws.StringMap(attrs), Tags: aws.StringMap(tags)})
	if err != nil {
		return "", err
	}
	return aws.StringValue(out.QueueUrl), nil
}

func (c v1Client) GetQueueURL(ctx context.Context, name string) (string, error) {
	out, err := c.c.GetQueueUrlWithContext(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", err
	}
	return aws.StringValue(out.QueueUrl), nil
}

func (c v1Client) ListQueues(ctx context.Context, prefix string, max int32, token string) ([]string, string, error) {
	in := &sqs.ListQueuesInput{QueueNamePrefix: strpv1(prefix), NextToken: strpv1(token)}
	if max > 0 {
		in.MaxResults = aws.Int64(int64(max))
	}
	out, err := c.c.ListQueuesWithContext(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return aws.StringValueSlice(out.QueueUrls), aws.StringValue(out.NextToken), nil
}

func (c v1Client) DeleteQueue(ctx context.Context, url string) error {
	_, err := c.c.DeleteQueueWithContext(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	return err
}

func (c v1Client) GetAttrs(ctx context.Context, url string, names ...string) (map[string]string, error) {
	out, err := c.c.GetQueueAttributesWithContext(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: aws.StringSlice(names)})
	if err != nil {
		return nil, err
	}
	return aws.StringValueMap(out.Attributes), nil
}

func (c v1Client) SetAttrs(ctx context.Context, url string, attrs map[string]string) error {
	_, err := c.c.SetQueueAttributesWithContext(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: aws.StringMap(attrs)})
	return err
}

func (c v1Client) Purge(ctx context.Context, url string) error {
	_, err := c.c.PurgeQueueWithContext(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	return err
}

func (c v1Client) Tag(ctx context.Context, url string, tags map[string]string) error {
	_, err := c.c.TagQueueWithContext(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: aws.StringMap(tags)})
	return err
}

func (c v1Client) Untag(ctx context.Context, url string, keys ...string) error {
	_, err := c.c.UntagQueueWithContext(ctx, &sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: aws.StringSlice(keys)})
	return err
}

func (c v1Client) ListTags(ctx context.Context, url string) (map[string]string, error) {
	out, err := c.c.ListQueueTagsWithContext(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	if err != nil {
		return nil, err
	}
	return aws.StringValueMap(out.Tags), nil
}

func (c v1Client) AddPermission(ctx context.Context, url, label string, accounts, actions []string) error {
	_, err := c.c.AddPermissionWithContext(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(url), Label: aws.String(label), AWSAccountIds: aws.StringSlice(accounts), Actions: aws.StringSlice(actions)})
	return err
}

func (c v1Client) RemovePermission(ctx context.Context, url, label string) error {
	_, err := c.c.RemovePermissionWithContext(ctx, &sqs.RemovePermissionInput{QueueUrl: aws.String(url), Label: aws.String(label)})
	return err
}

func v1Attrs(attrs map[string]Attr) map[string]*sqs.MessageAttributeValue {
	if attrs == nil {
		return nil
	}
	out := make(map[string]*sqs.MessageAttributeValue, len(attrs))
	for n, a := range attrs {
		v := &sqs.MessageAttributeValue{DataType: aws.String(a.DataType)}
		if isBinaryType(a.DataType) {
			v.BinaryValue = a.Binary
		} else {
			v.StringValue = aws.String(a.String)
		}
		out[n] = v
	}
	return out
}

func fromV1Attrs(attrs map[string]*sqs.MessageAttributeValue) map[string]Attr {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]Attr, len(attrs))
	for n, v := range attrs {
		out[n] = Attr{DataType: aws.StringValue(v.DataType), String: aws.StringValue(v.StringValue), Binary: v.BinaryValue}
	}
	return out
}

func v1Delay(d *int32) *int64 {
	if d == nil {
		return nil
	}
	return aws.Int64(int64(*d))
}

func (c v1Client) Send(ctx context.Context, url string, in SendIn) (SendOut, error) {
	out, err := c.c.SendMessageWithContext(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(in.Body),
		MessageGroupId:         strpv1(in.Group),
		MessageDeduplicationId: strpv1(in.Dedup),
		DelaySeconds:           v1Delay(in.Delay),
		MessageAttributes:      v1Attrs(in.Attrs),
	})
	if err != nil {
		return SendOut{}, err
	}
	return SendOut{
		ID:       aws.StringValue(out.MessageId),
		Seq:      aws.StringValue(out.SequenceNumber),
		MD5Body:  aws.StringValue(out.MD5OfMessageBody),
		MD5Attrs: aws.StringValue(out.MD5OfMessageAttributes),
	}, nil
}

func v1Fails(in []*sqs.BatchResultErrorEntry) []BatchFail {
	var out []BatchFail
	for _, f := range in {
		out = append(out, BatchFail{ID: aws.StringValue(f.Id), Code: aws.StringValue(f.Code), SenderFault: aws.BoolValue(f.SenderFault)})
	}
	return out
}

func (c v1Client) SendBatch(ctx context.Context, url string, entries []BatchSend) (map[string]SendOut, []BatchFail, error) {
	req := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []*sqs.SendMessageBatchRequestEntry{}}
	for _, e := range entries {
		req.Entries = append(req.Entries, &sqs.SendMessageBatchRequestEntry{
			Id:                     aws.String(e.ID),
			MessageBody:            aws.String(e.Body),
			MessageGroupId:         strpv1(e.Group),
			MessageDeduplicationId: strpv1(e.Dedup),
			DelaySeconds:           v1Delay(e.Delay),
			MessageAttributes:      v1Attrs(e.Attrs),
		})
	}
	out, err := c.c.SendMessageBatchWithContext(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	ok := make(map[string]SendOut)
	for _, s := range out.Successful {
		ok[aws.StringValue(s.Id)] = SendOut{
			ID:       aws.StringValue(s.MessageId),
			Seq:      aws.StringValue(s.SequenceNumber),
			MD5Body:  aws.StringValue(s.MD5OfMessageBody),
			MD5Attrs: aws.StringValue(s.MD5OfMessageAttributes),
		}
	}
	return ok, v1Fails(out.Failed), nil
}

func (c v1Client) Receive(ctx context.Context, url string, in RecvIn) ([]Msg, error) {
	req := &sqs.ReceiveMessageInput{
		QueueUrl:                aws.String(url),
		AttributeNames:          aws.StringSlice([]string{"All"}),
		MessageAttributeNames:   aws.StringSlice([]string{"All"}),
		ReceiveRequestAttemptId: strpv1(in.AttemptID),
	}
	if in.Max > 0 {
		req.MaxNumberOfMessages = aws.Int64(int64(in.Max))
	}
	if in.Wait != nil {
		req.WaitTimeSeconds = aws.Int64(int64(*in.Wait))
	}
	if in.Visibility != nil {
		req.VisibilityTimeout = aws.Int64(int64(*in.Visibility))
	}
	out, err := c.c.ReceiveMessageWithContext(ctx, req)
	if err != nil {
		return nil, err
	}
	var msgs []Msg
	for _, m := range out.Messages {
		msgs = append(msgs, Msg{
			ID:       aws.StringValue(m.MessageId),
			Body:     aws.StringValue(m.Body),
			Handle:   aws.StringValue(m.ReceiptHandle),
			MD5Body:  aws.StringValue(m.MD5OfBody),
			MD5Attrs: aws.StringValue(m.MD5OfMessageAttributes),
			Sys:      aws.StringValueMap(m.Attributes),
			Attrs:    fromV1Attrs(m.MessageAttributes),
		})
	}
	return msgs, nil
}

func (c v1Client) Delete(ctx context.Context, url, handle string) error {
	_, err := c.c.DeleteMessageWithContext(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle)})
	return err
}

func (c v1Client) DeleteBatch(ctx context.Context, url string, entries []BatchHandle) ([]string, []BatchFail, error) {
	req := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []*sqs.DeleteMessageBatchRequestEntry{}}
	for _, e := range entries {
		req.Entries = append(req.Entries, &sqs.DeleteMessageBatchRequestEntry{Id: aws.String(e.ID), ReceiptHandle: aws.String(e.Handle)})
	}
	out, err := c.c.DeleteMessageBatchWithContext(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var ok []string
	for _, s := range out.Successful {
		ok = append(ok, aws.StringValue(s.Id))
	}
	return ok, v1Fails(out.Failed), nil
}

func (c v1Client) ChangeVisibility(ctx context.Context, url, handle string, secs int32) error {
	_, err := c.c.ChangeMessageVisibilityWithContext(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle), VisibilityTimeout: aws.Int64(int64(secs))})
	return err
}

func (c v1Client) ChangeVisibilityBatch(ctx context.Context, url string, entries []BatchHandle, secs int32) ([]string, []BatchFail, error) {
	req := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []*sqs.ChangeMessageVisibilityBatchRequestEntry{}}
	for _, e := range entries {
		req.Entries = append(req.Entries, &sqs.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(e.ID), ReceiptHandle: aws.String(e.Handle), VisibilityTimeout: aws.Int64(int64(secs))})
	}
	out, err := c.c.ChangeMessageVisibilityBatchWithContext(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var ok []string
	for _, s := range out.Successful {
		ok = append(ok, aws.StringValue(s.Id))
	}
	return ok, v1Fails(out.Failed), nil
}

func (c v1Client) ListDLQSources(ctx context.Context, url string, max int32, token string) ([]string, string, error) {
	in := &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(url), NextToken: strpv1(token)}
	if max > 0 {
		in.MaxResults = aws.Int64(int64(max))
	}
	out, err := c.c.ListDeadLetterSourceQueuesWithContext(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return aws.StringValueSlice(out.QueueUrls), aws.StringValue(out.NextToken), nil
}

func (c v1Client) StartMove(ctx context.Context, source, dest string, rate int32) (string, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(source), DestinationArn: strpv1(dest)}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int64(int64(rate))
	}
	out, err := c.c.StartMessageMoveTaskWithContext(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.StringValue(out.TaskHandle), nil
}

func (c v1Client) CancelMove(ctx context.Context, handle string) (int64, error) {
	out, err := c.c.CancelMessageMoveTaskWithContext(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
	if err != nil {
		return 0, err
	}
	return aws.Int64Value(out.ApproximateNumberOfMessagesMoved), nil
}

func (c v1Client) ListMoves(ctx context.Context, source string, max int32) ([]MoveTask, error) {
	in := &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(source)}
	if max > 0 {
		in.MaxResults = aws.Int64(int64(max))
	}
	out, err := c.c.ListMessageMoveTasksWithContext(ctx, in)
	if err != nil {
		return nil, err
	}
	var tasks []MoveTask
	for _, r := range out.Results {
		t := MoveTask{
			Handle: aws.StringValue(r.TaskHandle),
			Status: aws.StringValue(r.Status),
			Source: aws.StringValue(r.SourceArn),
			Dest:   aws.StringValue(r.DestinationArn),
			Moved:  aws.Int64Value(r.ApproximateNumberOfMessagesMoved),
			ToMove: r.ApproximateNumberOfMessagesToMove,
		}
		if r.MaxNumberOfMessagesPerSecond != nil {
			rate := int32(*r.MaxNumberOfMessagesPerSecond)
			t.Rate = &rate
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}
