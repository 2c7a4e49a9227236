package api

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The rules of the queue actions: creation, lookup, attributes, tags,
// permissions, listings and message move tasks.

// SQS's wording of queue name and list size errors.
const (
	reasonQueueName       = "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
	reasonFIFOQueueName   = "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length."
	reasonMaxResults      = "MaxResults must be an integer between 1 and 1000."
	reasonMoveTaskResults = "You must enter a number that's between 1 and 10."
	reasonMoveTaskRate    = "You must enter a number that's between 1 and 500."
)

// errMissingQueueName is the answer to a GetQueueUrl
// without a QueueName.
func errMissingQueueName() *Error {
	return ErrInvalidParameterValue("Value for parameter QueueName is invalid. Reason: Must specify a queue name.")
}

// rangeError is the "Value for parameter X is invalid. Reason: ..." form
// SQS gives list and move task limits, which does not quote the value.
func rangeError(param string, v *int, min, max int, reason string) error {
	if v == nil || (*v >= min && *v <= max) {
		return nil
	}
	return ErrInvalidParameterValue("Value for parameter %s is invalid. Reason: %s", param, reason)
}

func validateCreateQueue(r *CreateQueueRequest) error {
	// An empty name breaks the "1 to 80 in length" rule and gets the name
	// rule's wording, as moto's suite expects (no AWS recording of an empty
	// CreateQueue name was found; SQS's API reference gives the same
	// 1-to-80 rule). The request cannot tell an absent name from an empty
	// one, so both are answered so.
	if r.QueueName == "" {
		return ErrInvalidParameterValue(reasonQueueName)
	}
	// A queue is FIFO when its name ends in .fifo and FifoQueue is "true".
	// FifoQueue=true on a name without the suffix is a bad FIFO name, as SQS
	// answers; FifoQueue on any other queue that is not FIFO by both marks
	// is an unknown attribute (SQS answers FifoQueue=false so).
	// FifoQueue is a boolean of any letter case ("True"), as SQS reads it.
	if IsTrueAttr(r.Attributes[AttrFifoQueue]) && !IsFIFOName(r.QueueName) {
		return ErrInvalidParameterValue(reasonFIFOQueueName)
	}
	fifo := IsFIFOName(r.QueueName) && IsTrueAttr(r.Attributes[AttrFifoQueue])
	if err := ValidateQueueAttributes(r.Attributes, fifo); err != nil {
		return err
	}
	if fifo && r.Attributes[AttrFifoThroughputLimit] == "perMessageGroupId" &&
		r.Attributes[AttrDeduplicationScope] != "messageGroup" {
		// A new queue's DeduplicationScope is "queue" unless set here.
		return ErrThroughputNeedsMessageGroupScope()
	}
	if err := validateQueueName(r.QueueName, fifo); err != nil {
		return err
	}
	return validateTags(r.Tags, r.QueueName)
}

// validateQueueName checks a new queue's name: up to 80 characters of
// A-Z a-z 0-9 - _, the last five of a FIFO queue's being ".fifo".
func validateQueueName(name string, fifo bool) error {
	if !fifo {
		if !validSimpleName(name, MaxQueueNameLength) {
			return ErrInvalidParameterValue(reasonQueueName)
		}
		return nil
	}
	base := name[:len(name)-len(FIFOSuffix)]
	if !validSimpleName(base, MaxQueueNameLength-len(FIFOSuffix)) {
		return ErrInvalidParameterValue(reasonFIFOQueueName)
	}
	return nil
}

func validateGetQueueUrl(r *GetQueueUrlRequest) error {
	if r.QueueName == "" {
		return errMissingQueueName()
	}
	return nil
}

func validateGetQueueAttributes(r *GetQueueAttributesRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	for _, name := range r.AttributeNames {
		if !IsQueueAttributeName(name) {
			return ErrInvalidAttributeName(name)
		}
	}
	return nil
}

func validateSetQueueAttributes(r *SetQueueAttributesRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if len(r.Attributes) == 0 {
		return ErrMissingParameter("Attribute.Name")
	}
	// Values and the FIFO-only names depend on the queue's kind, which the
	// engine knows; here only names that no queue accepts are refused.
	for _, name := range slices.Sorted(maps.Keys(r.Attributes)) {
		if kind, ok := queueAttrKinds[name]; !ok || kind == attrReadOnly {
			return ErrInvalidAttributeName(name)
		}
	}
	if IsTrueAttr(r.Attributes[AttrSqsManagedSseEnabled]) && r.Attributes[AttrKmsMasterKeyId] != "" {
		return ErrSSEConflict()
	}
	return nil
}

// validateTags checks the tags of CreateQueue or TagQueue: at most 50, keys
// of 1 to 128 characters, values of at most 256. queue names the queue in
// SQS's message for too many tags. Tags are checked in ascending key order.
func validateTags(tags map[string]string, queue string) error {
	if len(tags) > MaxTagsPerQueue {
		return ErrInvalidParameterValue("Too many tags added for queue %s.", queue)
	}
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		if err := validateTagKey(key); err != nil {
			return err
		}
		if runeCount(tags[key]) > MaxTagValueLength {
			return ErrInvalidParameterValue("Tag values must be at most %d characters long.", MaxTagValueLength)
		}
	}
	return nil
}

// validateTagKey checks one tag key: 1 to 128 characters.
func validateTagKey(key string) error {
	if key == "" || runeCount(key) > MaxTagKeyLength {
		return errTagKey()
	}
	return nil
}

// errTagKey is the answer to a tag key outside 1 to 128 characters, in
// the wording moto's suite expects of UntagQueue (no AWS recording found).
func errTagKey() *Error {
	return ErrInvalidParameterValue("Tag keys must be between 1 and %d characters in length.", MaxTagKeyLength)
}

func validateTagQueue(r *TagQueueRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if len(r.Tags) == 0 {
		return ErrMissingParameter("Tags")
	}
	key, _ := ParseQueueURL(r.QueueUrl) // valid: checked above
	return validateTags(r.Tags, key.Name)
}

func validateUntagQueue(r *UntagQueueRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	// Absent keys are a missing parameter; a list sent empty (JSON [],
	// Query's bare TagKey=) is a bad key list, worded as moto's suite
	// expects (unrecorded; the wording of SQS's tag key rule).
	if r.TagKeys == nil {
		return ErrMissingParameter("TagKeys")
	}
	if len(r.TagKeys) == 0 {
		return errTagKey()
	}
	for _, key := range r.TagKeys {
		if err := validateTagKey(key); err != nil {
			return err
		}
	}
	return nil
}

// grantableActions are the actions AddPermission may grant to another
// account; ownerOnlyActions are the actions SQS lets only the queue's owner
// perform. The batch actions are not names of their own: granting
// SendMessage, DeleteMessage or ChangeMessageVisibility grants their batch
// forms.
// IsOwnerOnlyAction reports whether action (a name without the sqs: prefix)
// is one that only a queue's owner may perform: no AddPermission or queue
// policy grants it to another account.
func IsOwnerOnlyAction(action string) bool { return ownerOnlyActions[action] }

var (
	grantableActions = map[string]bool{
		"*": true, "ChangeMessageVisibility": true, "DeleteMessage": true,
		"GetQueueAttributes": true, "GetQueueUrl": true, "ListDeadLetterSourceQueues": true,
		"PurgeQueue": true, "ReceiveMessage": true, "SendMessage": true,
	}
	ownerOnlyActions = map[string]bool{
		"AddPermission": true, "CancelMessageMoveTask": true, "CreateQueue": true,
		"DeleteQueue": true, "ListMessageMoveTasks": true, "ListQueues": true,
		"ListQueueTags": true, "RemovePermission": true, "SetQueueAttributes": true,
		"StartMessageMoveTask": true, "TagQueue": true, "UntagQueue": true,
	}
)

func validateAddPermission(r *AddPermissionRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if err := validateLabel(r.Label); err != nil {
		return err
	}
	// No AWS recording names the missing parameters of AddPermission;
	// Eucalyptus's SQS, written to answer as AWS does, names the principals
	// "PrincipalId" (noting it is "the exact message AWS uses") and the
	// actions "Actions", as moto's suite also expects for the actions
	// (eucalyptus/eucalyptus clc/modules/simplequeue/.../SimpleQueueService.java
	// addPermission).
	if r.AWSAccountIds == nil {
		return ErrMissingParameter("PrincipalId")
	}
	// SQS names the principals it cannot verify, as a list (recorded by
	// MuleSoft's SQS connector tests against AWS: emarcelino/sqs-connector
	// AddPermissionTestCases.testAddPermission). A list sent empty (JSON
	// [], Query's bare AWSAccountId=) verifies nobody: "Value []", as
	// moto's suite expects (unrecorded, in the recorded form).
	var unverified []string
	for _, id := range r.AWSAccountIds {
		if !IsAccountID(id) {
			unverified = append(unverified, id)
		}
	}
	if len(unverified) > 0 || len(r.AWSAccountIds) == 0 {
		return ErrInvalidParameterValue("Value [%s] for parameter PrincipalId is invalid. Reason: Unable to verify.", strings.Join(unverified, ", "))
	}
	if len(r.Actions) == 0 {
		return ErrMissingParameter("Actions")
	}
	// A statement holds at most 7 actions (SQS's quota); the count is
	// refused before the names, in the wording moto's suite expects
	// (unrecorded).
	if len(r.Actions) > MaxPolicyActions {
		return ErrOverLimit("%d Actions were found, maximum allowed is %d.", len(r.Actions), MaxPolicyActions)
	}
	for _, action := range r.Actions {
		switch {
		case grantableActions[action]:
		case IsOwnerOnlyAction(action):
			return ErrInvalidParameterValue("Value SQS:%s for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action.", action)
		default:
			return ErrInvalidParameterValue("Value SQS:%s for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions.", action)
		}
	}
	return nil
}

// validateLabel checks a permission label: 1 to 80 characters of
// A-Z a-z 0-9 - _.
func validateLabel(label string) error {
	if label == "" {
		return ErrMissingParameter("Label")
	}
	if !validSimpleName(label, 80) {
		return ErrInvalidParameterValue("Value %s for parameter Label is invalid. Reason: Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.", label)
	}
	return nil
}

func validateRemovePermission(r *RemovePermissionRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	if r.Label == "" {
		return ErrMissingParameter("Label")
	}
	return nil
}

func validateListQueues(r *ListQueuesRequest) error {
	return rangeError("MaxResults", r.MaxResults, 1, MaxListQueuesResults, reasonMaxResults)
}

func validateListDeadLetterSourceQueues(r *ListDeadLetterSourceQueuesRequest) error {
	if err := validateQueueURL(r.QueueUrl); err != nil {
		return err
	}
	return rangeError("MaxResults", r.MaxResults, 1, MaxListQueuesResults, reasonMaxResults)
}

// validateTaskARN checks the ARN of a message move task's source or
// destination: present if required, and of the general ARN form. Whether it
// names an existing SQS queue is the engine's to check.
func validateTaskARN(param, arn string, required bool) error {
	if arn == "" {
		if required {
			return ErrMissingParameter(param)
		}
		return nil
	}
	if !validARN(arn) {
		return ErrInvalidParameterValue("You must use this format to specify the %s: arn:<partition>:<service>:<region>:<account-id>:<resource-id>", param)
	}
	return nil
}

func validateStartMessageMoveTask(r *StartMessageMoveTaskRequest) error {
	if err := validateTaskARN("SourceArn", r.SourceArn, true); err != nil {
		return err
	}
	if err := validateTaskARN("DestinationArn", r.DestinationArn, false); err != nil {
		return err
	}
	return rangeError("MaxNumberOfMessagesPerSecond", r.MaxNumberOfMessagesPerSecond, 1, MaxMoveTaskRate, reasonMoveTaskRate)
}

func validateListMessageMoveTasks(r *ListMessageMoveTasksRequest) error {
	if err := validateTaskARN("SourceArn", r.SourceArn, true); err != nil {
		return err
	}
	return rangeError("MaxResults", r.MaxResults, 1, MaxListedMoveTasks, reasonMoveTaskResults)
}

func validateCancelMessageMoveTask(r *CancelMessageMoveTaskRequest) error {
	if r.TaskHandle == "" {
		return ErrMissingParameter("TaskHandle")
	}
	return nil
}

// runeCount is the length in characters that SQS's tag limits count.
func runeCount(s string) int { return utf8.RuneCountInString(s) }
