package protocol

import (
	"net/http"
	"reflect"

	"github.com/fifoq/fifoq/internal/api"
)

// decodeQuery decodes an AWS Query request. Parameter names are those of the
// Query model (shared/reference/sqs-2012-11-05.query-protocol.service.json):
// a member's locationName where it has one, its name otherwise; every list
// and map of SQS is flattened, so list elements are NAME.N and map entries
// NAME.N.KEY / NAME.N.VALUE, with N from 1; a list or map set but empty is
// the bare NAME= or, as botocore writes it, the request member's own name
// (TagKeys=, Entries=; see emptyMarker). The three message move task
// actions, which that model lacks, follow the same rules under the names of
// the JSON model (and of the Query model of aws-sdk-go v1.44.300, which has
// them). Unknown parameters are ignored, among them Version and the
// signature parameters of presigned requests.
func decodeQuery(r *http.Request, body []byte) (api.Action, api.Request, *api.Error) {
	f, err := parseForm(r, body)
	if err != nil {
		return "", nil, err
	}
	name := f.values["Action"]
	if name == "" {
		return "", nil, api.ErrMissingAction()
	}
	action := api.Action(name)
	req, ok := api.NewRequest(action)
	if !ok {
		return "", nil, api.ErrInvalidAction(name)
	}
	// A queue's URL takes only the actions on a queue: SQS refuses
	// ListQueues and CreateQueue sent there as invalid (recorded by
	// LocalStack's AWS-validated test_get_list_queues_fails and
	// test_get_create_queue_fails).
	if (action == api.ActionListQueues || action == api.ActionCreateQueue) && r.URL != nil && isQueuePath(r.URL.Path) {
		return action, nil, api.ErrInvalidAction(name)
	}
	d := &queryDecoder{}
	decodeQueryMembers(d, req, params{f: f})
	if d.err != nil {
		return action, nil, d.err
	}
	if r.URL != nil {
		setQueueURLFromPath(req, r.URL.Path)
	}
	return action, req, nil
}

// setQueueURLFromPath sets the QueueUrl of a request that lacks one to the
// path it was sent to, when that path is a queue's (isQueuePath): the
// Query protocol lets clients address a queue by posting to its URL.
func setQueueURLFromPath(req api.Request, path string) {
	if !isQueuePath(path) {
		return
	}
	v := reflect.ValueOf(req)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	field := v.Elem().FieldByName("QueueUrl")
	if field.IsValid() && field.Kind() == reflect.String && field.String() == "" {
		field.SetString(path)
	}
}

// isQueuePath reports whether path is a queue's: "/ACCOUNT/NAME", or one
// of the other emulators' forms api.ParseQueueURL reads.
func isQueuePath(path string) bool { return api.IsQueuePath(path) }

// decodeQueryMembers fills req, a zero request from api.NewRequest, from the
// parameters of p.
func decodeQueryMembers(d *queryDecoder, req api.Request, p params) {
	if decodeMessageMembers(d, req, p) || decodeQueueMembers(d, req, p) {
		return
	}
	// api.NewRequest and these switches list the same 23 actions; a test
	// checks it. Reaching here is a bug, reported as a client-visible
	// error rather than a panic.
	d.fail(api.ErrInvalidAction(string(req.Action())))
}

// decodeMessageMembers fills req if it is a request of the actions on
// messages (send, receive, delete, change visibility, single or batch),
// and reports whether it was.
func decodeMessageMembers(d *queryDecoder, req api.Request, p params) bool {
	switch r := req.(type) {
	case *api.SendMessageRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.MessageBody = p.str("MessageBody")
		r.DelaySeconds = d.integer(p, "DelaySeconds")
		r.MessageAttributes = d.attributeValues(p, "MessageAttribute", "MessageAttributes")
		r.MessageSystemAttributes = d.attributeValues(p, "MessageSystemAttribute", "MessageSystemAttributes")
		r.MessageDeduplicationId, r.MessageDeduplicationIdSet = p.lookup("MessageDeduplicationId")
		r.MessageGroupId, r.MessageGroupIdSet = p.lookup("MessageGroupId")
	case *api.SendMessageBatchRequest:
		decodeSendMessageBatch(d, r, p)
	case *api.ReceiveMessageRequest:
		decodeReceiveMessage(d, r, p)
	case *api.DeleteMessageRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.ReceiptHandle = p.str("ReceiptHandle")
	case *api.DeleteMessageBatchRequest:
		r.QueueUrl = p.str("QueueUrl")
		if d.structs(p, "DeleteMessageBatchRequestEntry", "Entries", func(e params) {
			r.Entries = append(r.Entries, api.DeleteMessageBatchRequestEntry{
				Id:            e.str("Id"),
				ReceiptHandle: e.str("ReceiptHandle"),
			})
		}) && r.Entries == nil {
			r.Entries = []api.DeleteMessageBatchRequestEntry{}
		}
	case *api.ChangeMessageVisibilityRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.ReceiptHandle = p.str("ReceiptHandle")
		r.VisibilityTimeout = d.integer(p, "VisibilityTimeout")
	case *api.ChangeMessageVisibilityBatchRequest:
		r.QueueUrl = p.str("QueueUrl")
		if d.structs(p, "ChangeMessageVisibilityBatchRequestEntry", "Entries", func(e params) {
			r.Entries = append(r.Entries, api.ChangeMessageVisibilityBatchRequestEntry{
				Id:                e.str("Id"),
				ReceiptHandle:     e.str("ReceiptHandle"),
				VisibilityTimeout: d.integer(e, "VisibilityTimeout"),
			})
		}) && r.Entries == nil {
			r.Entries = []api.ChangeMessageVisibilityBatchRequestEntry{}
		}
	default:
		return false
	}
	return true
}

func decodeSendMessageBatch(d *queryDecoder, r *api.SendMessageBatchRequest, p params) {
	r.QueueUrl = p.str("QueueUrl")
	if d.structs(p, "SendMessageBatchRequestEntry", "Entries", func(e params) {
		en := api.SendMessageBatchRequestEntry{
			Id:                      e.str("Id"),
			MessageBody:             e.str("MessageBody"),
			DelaySeconds:            d.integer(e, "DelaySeconds"),
			MessageAttributes:       d.attributeValues(e, "MessageAttribute", "MessageAttributes"),
			MessageSystemAttributes: d.attributeValues(e, "MessageSystemAttribute", "MessageSystemAttributes"),
		}
		en.MessageDeduplicationId, en.MessageDeduplicationIdSet = e.lookup("MessageDeduplicationId")
		en.MessageGroupId, en.MessageGroupIdSet = e.lookup("MessageGroupId")
		r.Entries = append(r.Entries, en)
	}) && r.Entries == nil {
		r.Entries = []api.SendMessageBatchRequestEntry{}
	}
}

func decodeReceiveMessage(d *queryDecoder, r *api.ReceiveMessageRequest, p params) {
	r.QueueUrl = p.str("QueueUrl")
	r.AttributeNames = d.stringList(p, "AttributeName", "AttributeNames")
	// MessageSystemAttributeNames is newer than the Query model; its
	// Query name follows the model's rule for AttributeNames.
	r.MessageSystemAttributeNames = d.stringList(p, "MessageSystemAttributeName", "MessageSystemAttributeNames")
	if len(r.AttributeNames) > 0 {
		// Over Query, SQS answers AttributeName.N and ignores
		// MessageSystemAttributeName.N when a form has both; over JSON
		// the other way round, which the engine applies (localstack
		// test_sqs.snapshot.json:
		// test_message_system_attribute_names_with_attribute_names).
		r.MessageSystemAttributeNames = nil
	}
	r.MessageAttributeNames = d.stringList(p, "MessageAttributeName", "MessageAttributeNames")
	r.MaxNumberOfMessages = d.integer(p, "MaxNumberOfMessages")
	r.VisibilityTimeout = d.integer(p, "VisibilityTimeout")
	r.WaitTimeSeconds = d.integer(p, "WaitTimeSeconds")
	r.ReceiveRequestAttemptId = p.str("ReceiveRequestAttemptId")
}

// decodeQueueMembers fills req if it is a request of the actions on queues
// (their lifecycle, attributes, tags, permissions and message move tasks),
// and reports whether it was.
func decodeQueueMembers(d *queryDecoder, req api.Request, p params) bool {
	switch r := req.(type) {
	case *api.CreateQueueRequest:
		r.QueueName = p.str("QueueName")
		r.Attributes = d.stringMap(p, "Attribute", "Name", "Value", "Attributes")
		r.Tags = d.stringMap(p, "Tag", "Key", "Value", "tags")
	case *api.DeleteQueueRequest:
		r.QueueUrl = p.str("QueueUrl")
	case *api.PurgeQueueRequest:
		r.QueueUrl = p.str("QueueUrl")
	case *api.GetQueueUrlRequest:
		r.QueueName = p.str("QueueName")
		r.QueueOwnerAWSAccountId = p.str("QueueOwnerAWSAccountId")
	case *api.ListQueuesRequest:
		r.QueueNamePrefix = p.str("QueueNamePrefix")
		r.NextToken = p.str("NextToken")
		r.MaxResults = d.integer(p, "MaxResults")
	case *api.ListDeadLetterSourceQueuesRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.NextToken = p.str("NextToken")
		r.MaxResults = d.integer(p, "MaxResults")
	case *api.GetQueueAttributesRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.AttributeNames = d.stringList(p, "AttributeName", "AttributeNames")
	case *api.SetQueueAttributesRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.Attributes = d.stringMap(p, "Attribute", "Name", "Value", "Attributes")
	case *api.TagQueueRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.Tags = d.stringMap(p, "Tag", "Key", "Value", "Tags")
	case *api.UntagQueueRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.TagKeys = d.stringList(p, "TagKey", "TagKeys")
	case *api.ListQueueTagsRequest:
		r.QueueUrl = p.str("QueueUrl")
	case *api.AddPermissionRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.Label = p.str("Label")
		r.AWSAccountIds = d.stringList(p, "AWSAccountId", "AWSAccountIds")
		r.Actions = d.stringList(p, "ActionName", "Actions")
	case *api.RemovePermissionRequest:
		r.QueueUrl = p.str("QueueUrl")
		r.Label = p.str("Label")
	case *api.StartMessageMoveTaskRequest:
		r.SourceArn = p.str("SourceArn")
		r.DestinationArn = p.str("DestinationArn")
		r.MaxNumberOfMessagesPerSecond = d.integer(p, "MaxNumberOfMessagesPerSecond")
	case *api.CancelMessageMoveTaskRequest:
		r.TaskHandle = p.str("TaskHandle")
	case *api.ListMessageMoveTasksRequest:
		r.SourceArn = p.str("SourceArn")
		r.MaxResults = d.integer(p, "MaxResults")
	default:
		return false
	}
	return true
}
