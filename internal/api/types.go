package api

// Action names one SQS API action as it appears on the wire: the suffix of
// the X-Amz-Target header (AWS JSON) or the Action parameter (AWS Query).
type Action string

// The 23 actions of the SQS API.
const (
	ActionAddPermission                Action = "AddPermission"
	ActionCancelMessageMoveTask        Action = "CancelMessageMoveTask"
	ActionChangeMessageVisibility      Action = "ChangeMessageVisibility"
	ActionChangeMessageVisibilityBatch Action = "ChangeMessageVisibilityBatch"
	ActionCreateQueue                  Action = "CreateQueue"
	ActionDeleteMessage                Action = "DeleteMessage"
	ActionDeleteMessageBatch           Action = "DeleteMessageBatch"
	ActionDeleteQueue                  Action = "DeleteQueue"
	ActionGetQueueAttributes           Action = "GetQueueAttributes"
	ActionGetQueueUrl                  Action = "GetQueueUrl"
	ActionListDeadLetterSourceQueues   Action = "ListDeadLetterSourceQueues"
	ActionListMessageMoveTasks         Action = "ListMessageMoveTasks"
	ActionListQueueTags                Action = "ListQueueTags"
	ActionListQueues                   Action = "ListQueues"
	ActionPurgeQueue                   Action = "PurgeQueue"
	ActionReceiveMessage               Action = "ReceiveMessage"
	ActionRemovePermission             Action = "RemovePermission"
	ActionSendMessage                  Action = "SendMessage"
	ActionSendMessageBatch             Action = "SendMessageBatch"
	ActionSetQueueAttributes           Action = "SetQueueAttributes"
	ActionStartMessageMoveTask         Action = "StartMessageMoveTask"
	ActionTagQueue                     Action = "TagQueue"
	ActionUntagQueue                   Action = "UntagQueue"
)

// Actions lists every action, in alphabetical order.
var Actions = []Action{
	ActionAddPermission, ActionCancelMessageMoveTask, ActionChangeMessageVisibility,
	ActionChangeMessageVisibilityBatch, ActionCreateQueue, ActionDeleteMessage,
	ActionDeleteMessageBatch, ActionDeleteQueue, ActionGetQueueAttributes,
	ActionGetQueueUrl, ActionListDeadLetterSourceQueues, ActionListMessageMoveTasks,
	ActionListQueueTags, ActionListQueues, ActionPurgeQueue, ActionReceiveMessage,
	ActionRemovePermission, ActionSendMessage, ActionSendMessageBatch,
	ActionSetQueueAttributes, ActionStartMessageMoveTask, ActionTagQueue, ActionUntagQueue,
}

// ReadOnly reports whether the action never changes state, so that it may be
// answered from the engine directly instead of going through the command log.
// ReceiveMessage is not read-only: it changes visibility and receive counts.
func (a Action) ReadOnly() bool {
	switch a {
	case ActionGetQueueUrl, ActionListQueues, ActionGetQueueAttributes,
		ActionListQueueTags, ActionListDeadLetterSourceQueues, ActionListMessageMoveTasks:
		return true
	}
	return false
}

// Request is a decoded, typed request of one action.
type Request interface {
	// Action names the action the request is for.
	Action() Action
}

// Response is the typed result of one action. Actions whose result carries
// no fields answer with Empty.
type Response interface{}

// Empty is the result of actions that answer with no fields.
type Empty struct{}

// NewRequest returns a zero request of the given action, ready to be decoded
// into, and false if the action is unknown.
func NewRequest(a Action) (Request, bool) {
	switch a {
	case ActionAddPermission:
		return &AddPermissionRequest{}, true
	case ActionCancelMessageMoveTask:
		return &CancelMessageMoveTaskRequest{}, true
	case ActionChangeMessageVisibility:
		return &ChangeMessageVisibilityRequest{}, true
	case ActionChangeMessageVisibilityBatch:
		return &ChangeMessageVisibilityBatchRequest{}, true
	case ActionCreateQueue:
		return &CreateQueueRequest{}, true
	case ActionDeleteMessage:
		return &DeleteMessageRequest{}, true
	case ActionDeleteMessageBatch:
		return &DeleteMessageBatchRequest{}, true
	case ActionDeleteQueue:
		return &DeleteQueueRequest{}, true
	case ActionGetQueueAttributes:
		return &GetQueueAttributesRequest{}, true
	case ActionGetQueueUrl:
		return &GetQueueUrlRequest{}, true
	case ActionListDeadLetterSourceQueues:
		return &ListDeadLetterSourceQueuesRequest{}, true
	case ActionListMessageMoveTasks:
		return &ListMessageMoveTasksRequest{}, true
	case ActionListQueueTags:
		return &ListQueueTagsRequest{}, true
	case ActionListQueues:
		return &ListQueuesRequest{}, true
	case ActionPurgeQueue:
		return &PurgeQueueRequest{}, true
	case ActionReceiveMessage:
		return &ReceiveMessageRequest{}, true
	case ActionRemovePermission:
		return &RemovePermissionRequest{}, true
	case ActionSendMessage:
		return &SendMessageRequest{}, true
	case ActionSendMessageBatch:
		return &SendMessageBatchRequest{}, true
	case ActionSetQueueAttributes:
		return &SetQueueAttributesRequest{}, true
	case ActionStartMessageMoveTask:
		return &StartMessageMoveTaskRequest{}, true
	case ActionTagQueue:
		return &TagQueueRequest{}, true
	case ActionUntagQueue:
		return &UntagQueueRequest{}, true
	}
	return nil, false
}

// NewResult returns a zero result of the given action, ready to be decoded
// into: a pointer to the action's result type, as the server answers it,
// or Empty for the actions whose result carries no fields.
func NewResult(a Action) Response {
	switch a {
	case ActionCancelMessageMoveTask:
		return &CancelMessageMoveTaskResult{}
	case ActionChangeMessageVisibilityBatch:
		return &ChangeMessageVisibilityBatchResult{}
	case ActionCreateQueue:
		return &CreateQueueResult{}
	case ActionDeleteMessageBatch:
		return &DeleteMessageBatchResult{}
	case ActionGetQueueAttributes:
		return &GetQueueAttributesResult{}
	case ActionGetQueueUrl:
		return &GetQueueUrlResult{}
	case ActionListDeadLetterSourceQueues:
		return &ListDeadLetterSourceQueuesResult{}
	case ActionListMessageMoveTasks:
		return &ListMessageMoveTasksResult{}
	case ActionListQueueTags:
		return &ListQueueTagsResult{}
	case ActionListQueues:
		return &ListQueuesResult{}
	case ActionReceiveMessage:
		return &ReceiveMessageResult{}
	case ActionSendMessage:
		return &SendMessageResult{}
	case ActionSendMessageBatch:
		return &SendMessageBatchResult{}
	case ActionStartMessageMoveTask:
		return &StartMessageMoveTaskResult{}
	}
	return Empty{}
}

// QueueURLOf returns the QueueUrl member of requests that name a queue by URL,
// and false for the actions that do not (CreateQueue, GetQueueUrl,
// ListQueues, and the message move task actions, which use ARNs).
func QueueURLOf(r Request) (string, bool) {
	switch r := r.(type) {
	case *AddPermissionRequest:
		return r.QueueUrl, true
	case *ChangeMessageVisibilityRequest:
		return r.QueueUrl, true
	case *ChangeMessageVisibilityBatchRequest:
		return r.QueueUrl, true
	case *DeleteMessageRequest:
		return r.QueueUrl, true
	case *DeleteMessageBatchRequest:
		return r.QueueUrl, true
	case *DeleteQueueRequest:
		return r.QueueUrl, true
	case *GetQueueAttributesRequest:
		return r.QueueUrl, true
	case *ListDeadLetterSourceQueuesRequest:
		return r.QueueUrl, true
	case *ListQueueTagsRequest:
		return r.QueueUrl, true
	case *PurgeQueueRequest:
		return r.QueueUrl, true
	case *ReceiveMessageRequest:
		return r.QueueUrl, true
	case *RemovePermissionRequest:
		return r.QueueUrl, true
	case *SendMessageRequest:
		return r.QueueUrl, true
	case *SendMessageBatchRequest:
		return r.QueueUrl, true
	case *SetQueueAttributesRequest:
		return r.QueueUrl, true
	case *TagQueueRequest:
		return r.QueueUrl, true
	case *UntagQueueRequest:
		return r.QueueUrl, true
	}
	return "", false
}

// MessageAttributeValue is a user-defined message attribute. DataType is
// String, Number or Binary, optionally followed by a custom ".suffix".
// StringListValues and BinaryListValues are reserved by SQS and rejected.
type MessageAttributeValue struct {
	StringValue      *string  `json:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
	DataType         string   `json:"DataType,omitempty"`
}

// MessageSystemAttributeValue is a system attribute set by the sender; only
// AWSTraceHeader, of DataType String, exists.
type MessageSystemAttributeValue = MessageAttributeValue

// Message is one received message.
type Message struct {
	MessageId              string                           `json:"MessageId,omitempty"`
	ReceiptHandle          string                           `json:"ReceiptHandle,omitempty"`
	MD5OfBody              string                           `json:"MD5OfBody,omitempty"`
	Body                   string                           `json:"Body,omitempty"`
	Attributes             map[string]string                `json:"Attributes,omitempty"`
	MD5OfMessageAttributes string                           `json:"MD5OfMessageAttributes,omitempty"`
	MessageAttributes      map[string]MessageAttributeValue `json:"MessageAttributes,omitempty"`
}

// BatchResultErrorEntry reports one failed entry of a batch action.
type BatchResultErrorEntry struct {
	Id          string `json:"Id"`
	SenderFault bool   `json:"SenderFault"`
	Code        string `json:"Code"`
	Message     string `json:"Message,omitempty"`
}

// AddPermissionRequest adds a permission statement to a queue's policy.
type AddPermissionRequest struct {
	QueueUrl      string   `json:"QueueUrl"`
	Label         string   `json:"Label"`
	AWSAccountIds []string `json:"AWSAccountIds"`
	Actions       []string `json:"Actions"`
}

// CancelMessageMoveTaskRequest cancels a running message move task.
type CancelMessageMoveTaskRequest struct {
	TaskHandle string `json:"TaskHandle"`
}

// CancelMessageMoveTaskResult is CancelMessageMoveTask's result.
type CancelMessageMoveTaskResult struct {
	ApproximateNumberOfMessagesMoved int64 `json:"ApproximateNumberOfMessagesMoved"`
}

// ChangeMessageVisibilityRequest changes an in-flight message's visibility timeout.
type ChangeMessageVisibilityRequest struct {
	QueueUrl          string `json:"QueueUrl"`
	ReceiptHandle     string `json:"ReceiptHandle"`
	VisibilityTimeout *int   `json:"VisibilityTimeout"`
}

// ChangeMessageVisibilityBatchRequestEntry is one entry of a ChangeMessageVisibilityBatch.
type ChangeMessageVisibilityBatchRequestEntry struct {
	Id                string `json:"Id"`
	ReceiptHandle     string `json:"ReceiptHandle"`
	VisibilityTimeout *int   `json:"VisibilityTimeout,omitempty"`
}

// ChangeMessageVisibilityBatchRequest changes the visibility of up to 10 messages.
type ChangeMessageVisibilityBatchRequest struct {
	QueueUrl string                                     `json:"QueueUrl"`
	Entries  []ChangeMessageVisibilityBatchRequestEntry `json:"Entries"`
}

// BatchResultEntry is a successful entry of ChangeMessageVisibilityBatch or
// DeleteMessageBatch: only its Id.
type BatchResultEntry struct {
	Id string `json:"Id"`
}

// ChangeMessageVisibilityBatchResult is ChangeMessageVisibilityBatch's result.
type ChangeMessageVisibilityBatchResult struct {
	Successful []BatchResultEntry      `json:"Successful"`
	Failed     []BatchResultErrorEntry `json:"Failed"`
}

// CreateQueueRequest creates a queue, or returns the URL of an identical one.
type CreateQueueRequest struct {
	QueueName  string            `json:"QueueName"`
	Attributes map[string]string `json:"Attributes,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// CreateQueueResult is CreateQueue's result.
type CreateQueueResult struct {
	QueueUrl string `json:"QueueUrl"`
}

// DeleteMessageRequest deletes a received message.
type DeleteMessageRequest struct {
	QueueUrl      string `json:"QueueUrl"`
	ReceiptHandle string `json:"ReceiptHandle"`
}

// DeleteMessageBatchRequestEntry is one entry of a DeleteMessageBatch.
type DeleteMessageBatchRequestEntry struct {
	Id            string `json:"Id"`
	ReceiptHandle string `json:"ReceiptHandle"`
}

// DeleteMessageBatchRequest deletes up to 10 messages.
type DeleteMessageBatchRequest struct {
	QueueUrl string                           `json:"QueueUrl"`
	Entries  []DeleteMessageBatchRequestEntry `json:"Entries"`
}

// DeleteMessageBatchResult is DeleteMessageBatch's result.
type DeleteMessageBatchResult struct {
	Successful []BatchResultEntry      `json:"Successful"`
	Failed     []BatchResultErrorEntry `json:"Failed"`
}

// DeleteQueueRequest deletes a queue and its messages.
type DeleteQueueRequest struct {
	QueueUrl string `json:"QueueUrl"`
}

// GetQueueAttributesRequest reads a queue's attributes.
type GetQueueAttributesRequest struct {
	QueueUrl       string   `json:"QueueUrl"`
	AttributeNames []string `json:"AttributeNames,omitempty"`
}

// GetQueueAttributesResult is GetQueueAttributes's result.
type GetQueueAttributesResult struct {
	Attributes map[string]string `json:"Attributes,omitempty"`
}

// GetQueueUrlRequest looks up a queue's URL by name.
type GetQueueUrlRequest struct {
	QueueName              string `json:"QueueName"`
	QueueOwnerAWSAccountId string `json:"QueueOwnerAWSAccountId,omitempty"`
}

// GetQueueUrlResult is GetQueueUrl's result.
type GetQueueUrlResult struct {
	QueueUrl string `json:"QueueUrl"`
}

// ListDeadLetterSourceQueuesRequest lists the queues whose RedrivePolicy
// names this queue as their dead-letter queue.
type ListDeadLetterSourceQueuesRequest struct {
	QueueUrl   string `json:"QueueUrl"`
	NextToken  string `json:"NextToken,omitempty"`
	MaxResults *int   `json:"MaxResults,omitempty"`
}

// ListDeadLetterSourceQueuesResult is ListDeadLetterSourceQueues's result.
// Its JSON member is lower-case queueUrls, as in the model.
type ListDeadLetterSourceQueuesResult struct {
	QueueUrls []string `json:"queueUrls"`
	NextToken string   `json:"NextToken,omitempty"`
}

// ListMessageMoveTasksRequest lists the latest message move tasks of a source queue.
type ListMessageMoveTasksRequest struct {
	SourceArn  string `json:"SourceArn"`
	MaxResults *int   `json:"MaxResults,omitempty"`
}

// ListMessageMoveTasksResultEntry describes one message move task.
type ListMessageMoveTasksResultEntry struct {
	TaskHandle                        string `json:"TaskHandle,omitempty"`
	Status                            string `json:"Status,omitempty"`
	SourceArn                         string `json:"SourceArn,omitempty"`
	DestinationArn                    string `json:"DestinationArn,omitempty"`
	MaxNumberOfMessagesPerSecond      *int   `json:"MaxNumberOfMessagesPerSecond,omitempty"`
	ApproximateNumberOfMessagesMoved  int64  `json:"ApproximateNumberOfMessagesMoved"`
	ApproximateNumberOfMessagesToMove *int64 `json:"ApproximateNumberOfMessagesToMove,omitempty"`
	FailureReason                     string `json:"FailureReason,omitempty"`
	StartedTimestamp                  int64  `json:"StartedTimestamp"`
}

// ListMessageMoveTasksResult is ListMessageMoveTasks's result.
type ListMessageMoveTasksResult struct {
	Results []ListMessageMoveTasksResultEntry `json:"Results"`
}

// ListQueueTagsRequest lists a queue's tags.
type ListQueueTagsRequest struct {
	QueueUrl string `json:"QueueUrl"`
}

// ListQueueTagsResult is ListQueueTags's result.
type ListQueueTagsResult struct {
	Tags map[string]string `json:"Tags,omitempty"`
}

// ListQueuesRequest lists the caller's queues.
type ListQueuesRequest struct {
	QueueNamePrefix string `json:"QueueNamePrefix,omitempty"`
	NextToken       string `json:"NextToken,omitempty"`
	MaxResults      *int   `json:"MaxResults,omitempty"`
}

// ListQueuesResult is ListQueues's result.
type ListQueuesResult struct {
	QueueUrls []string `json:"QueueUrls,omitempty"`
	NextToken string   `json:"NextToken,omitempty"`
}

// PurgeQueueRequest deletes every message of a queue.
type PurgeQueueRequest struct {
	QueueUrl string `json:"QueueUrl"`
}

// ReceiveMessageRequest receives up to 10 messages.
type ReceiveMessageRequest struct {
	QueueUrl                    string   `json:"QueueUrl"`
	AttributeNames              []string `json:"AttributeNames,omitempty"`
	MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames,omitempty"`
	MessageAttributeNames       []string `json:"MessageAttributeNames,omitempty"`
	MaxNumberOfMessages         *int     `json:"MaxNumberOfMessages,omitempty"`
	VisibilityTimeout           *int     `json:"VisibilityTimeout,omitempty"`
	WaitTimeSeconds             *int     `json:"WaitTimeSeconds,omitempty"`
	ReceiveRequestAttemptId     string   `json:"ReceiveRequestAttemptId,omitempty"`
}

// ReceiveMessageResult is ReceiveMessage's result.
type ReceiveMessageResult struct {
	Messages []Message `json:"Messages,omitempty"`
}

// RemovePermissionRequest removes a labelled statement from a queue's policy.
type RemovePermissionRequest struct {
	QueueUrl string `json:"QueueUrl"`
	Label    string `json:"Label"`
}

// SendMessageRequest sends one message.
type SendMessageRequest struct {
	QueueUrl                string                                 `json:"QueueUrl"`
	MessageBody             string                                 `json:"MessageBody"`
	DelaySeconds            *int                                   `json:"DelaySeconds,omitempty"`
	MessageAttributes       map[string]MessageAttributeValue       `json:"MessageAttributes,omitempty"`
	MessageSystemAttributes map[string]MessageSystemAttributeValue `json:"MessageSystemAttributes,omitempty"`
	MessageDeduplicationId  string                                 `json:"MessageDeduplicationId,omitempty"`
	MessageGroupId          string                                 `json:"MessageGroupId,omitempty"`
	// MessageDeduplicationIdSet and MessageGroupIdSet report that the
	// request carried the member, even empty: SQS refuses an empty id as
	// malformed, which differs from leaving it out. The decoders set them
	// (see NoteSentFIFOIDs); they are not part of the wire form.
	MessageDeduplicationIdSet bool `json:"-"`
	MessageGroupIdSet         bool `json:"-"`
}

// SendMessageResult is SendMessage's result.
type SendMessageResult struct {
	MD5OfMessageBody             string `json:"MD5OfMessageBody,omitempty"`
	MD5OfMessageAttributes       string `json:"MD5OfMessageAttributes,omitempty"`
	MD5OfMessageSystemAttributes string `json:"MD5OfMessageSystemAttributes,omitempty"`
	MessageId                    string `json:"MessageId,omitempty"`
	SequenceNumber               string `json:"SequenceNumber,omitempty"`
}

// SendMessageBatchRequestEntry is one entry of a SendMessageBatch.
type SendMessageBatchRequestEntry struct {
	Id                      string                                 `json:"Id"`
	MessageBody             string                                 `json:"MessageBody"`
	DelaySeconds            *int                                   `json:"DelaySeconds,omitempty"`
	MessageAttributes       map[string]MessageAttributeValue       `json:"MessageAttributes,omitempty"`
	MessageSystemAttributes map[string]MessageSystemAttributeValue `json:"MessageSystemAttributes,omitempty"`
	MessageDeduplicationId  string                                 `json:"MessageDeduplicationId,omitempty"`
	MessageGroupId          string                                 `json:"MessageGroupId,omitempty"`
	// MessageDeduplicationIdSet and MessageGroupIdSet: as in SendMessageRequest.
	MessageDeduplicationIdSet bool `json:"-"`
	MessageGroupIdSet         bool `json:"-"`
}

// SendMessageBatchRequest sends up to 10 messages.
type SendMessageBatchRequest struct {
	QueueUrl string                         `json:"QueueUrl"`
	Entries  []SendMessageBatchRequestEntry `json:"Entries"`
}

// SendMessageBatchResultEntry is a successful entry of SendMessageBatch.
type SendMessageBatchResultEntry struct {
	Id                           string `json:"Id"`
	MessageId                    string `json:"MessageId"`
	MD5OfMessageBody             string `json:"MD5OfMessageBody"`
	MD5OfMessageAttributes       string `json:"MD5OfMessageAttributes,omitempty"`
	MD5OfMessageSystemAttributes string `json:"MD5OfMessageSystemAttributes,omitempty"`
	SequenceNumber               string `json:"SequenceNumber,omitempty"`
}

// SendMessageBatchResult is SendMessageBatch's result.
type SendMessageBatchResult struct {
	Successful []SendMessageBatchResultEntry `json:"Successful"`
	Failed     []BatchResultErrorEntry       `json:"Failed"`
}

// SetQueueAttributesRequest changes a queue's attributes.
type SetQueueAttributesRequest struct {
	QueueUrl   string            `json:"QueueUrl"`
	Attributes map[string]string `json:"Attributes"`
}

// StartMessageMoveTaskRequest starts moving messages out of a dead-letter queue.
type StartMessageMoveTaskRequest struct {
	SourceArn                    string `json:"SourceArn"`
	DestinationArn               string `json:"DestinationArn,omitempty"`
	MaxNumberOfMessagesPerSecond *int   `json:"MaxNumberOfMessagesPerSecond,omitempty"`
}

// StartMessageMoveTaskResult is StartMessageMoveTask's result.
type StartMessageMoveTaskResult struct {
	TaskHandle string `json:"TaskHandle"`
}

// TagQueueRequest adds or replaces tags of a queue.
type TagQueueRequest struct {
	QueueUrl string            `json:"QueueUrl"`
	Tags     map[string]string `json:"Tags"`
}

// UntagQueueRequest removes tags from a queue.
type UntagQueueRequest struct {
	QueueUrl string   `json:"QueueUrl"`
	TagKeys  []string `json:"TagKeys"`
}

// Action implementations: each request names its action.

func (*AddPermissionRequest) Action() Action           { return ActionAddPermission }
func (*CancelMessageMoveTaskRequest) Action() Action   { return ActionCancelMessageMoveTask }
func (*ChangeMessageVisibilityRequest) Action() Action { return ActionChangeMessageVisibility }
func (*ChangeMessageVisibilityBatchRequest) Action() Action {
	return ActionChangeMessageVisibilityBatch
}
func (*CreateQueueRequest) Action() Action                { return ActionCreateQueue }
func (*DeleteMessageRequest) Action() Action              { return ActionDeleteMessage }
func (*DeleteMessageBatchRequest) Action() Action         { return ActionDeleteMessageBatch }
func (*DeleteQueueRequest) Action() Action                { return ActionDeleteQueue }
func (*GetQueueAttributesRequest) Action() Action         { return ActionGetQueueAttributes }
func (*GetQueueUrlRequest) Action() Action                { return ActionGetQueueUrl }
func (*ListDeadLetterSourceQueuesRequest) Action() Action { return ActionListDeadLetterSourceQueues }
func (*ListMessageMoveTasksRequest) Action() Action       { return ActionListMessageMoveTasks }
func (*ListQueueTagsRequest) Action() Action              { return ActionListQueueTags }
func (*ListQueuesRequest) Action() Action                 { return ActionListQueues }
func (*PurgeQueueRequest) Action() Action                 { return ActionPurgeQueue }
func (*ReceiveMessageRequest) Action() Action             { return ActionReceiveMessage }
func (*RemovePermissionRequest) Action() Action           { return ActionRemovePermission }
func (*SendMessageRequest) Action() Action                { return ActionSendMessage }
func (*SendMessageBatchRequest) Action() Action           { return ActionSendMessageBatch }
func (*SetQueueAttributesRequest) Action() Action         { return ActionSetQueueAttributes }
func (*StartMessageMoveTaskRequest) Action() Action       { return ActionStartMessageMoveTask }
func (*TagQueueRequest) Action() Action                   { return ActionTagQueue }
func (*UntagQueueRequest) Action() Action                 { return ActionUntagQueue }
