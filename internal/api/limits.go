package api

import "time"

// Limits that SQS documents. The engine and the validators read them from
// here so that there is one place to change when SQS changes them.
const (
	// MaxQueueNameLength counts the ".fifo" suffix.
	MaxQueueNameLength = 80
	// FIFOSuffix ends the name of every FIFO queue.
	FIFOSuffix = ".fifo"

	// MaxMessageSizeLimit is the largest message SQS accepts since 2025 (1 MiB),
	// the upper bound of the MaximumMessageSize attribute.
	MaxMessageSizeLimit = 1 << 20
	// MinMaximumMessageSize is the lower bound of the MaximumMessageSize attribute.
	MinMaximumMessageSize = 1024
	// DefaultMaximumMessageSize is the MaximumMessageSize of a new queue:
	// 1 MiB, what SQS answers for a queue created with defaults since its
	// 2025 change (262,144 before).
	DefaultMaximumMessageSize = MaxMessageSizeLimit

	// MaxBatchEntries is the largest number of entries of a batch action.
	MaxBatchEntries = 10
	// MaxBatchEntryIdLength bounds a batch entry's Id.
	MaxBatchEntryIdLength = 80
	// MaxReceiveMessages is the largest MaxNumberOfMessages.
	MaxReceiveMessages = 10

	// MaxVisibilityTimeout is 12 hours, in seconds; DefaultVisibilityTimeout 30 s.
	MaxVisibilityTimeout     = 43200
	DefaultVisibilityTimeout = 30
	// MinMessageRetentionPeriod is 60 s, MaxMessageRetentionPeriod 14 days,
	// DefaultMessageRetentionPeriod 4 days.
	MinMessageRetentionPeriod     = 60
	MaxMessageRetentionPeriod     = 1209600
	DefaultMessageRetentionPeriod = 345600
	// MaxDelaySeconds is 15 minutes.
	MaxDelaySeconds = 900
	// MaxWaitTimeSeconds bounds WaitTimeSeconds and ReceiveMessageWaitTimeSeconds.
	MaxWaitTimeSeconds = 20

	// MaxMessageAttributes is the largest number of message attributes of one message.
	MaxMessageAttributes = 10
	// MaxMessageAttributeNameLength bounds an attribute's name.
	MaxMessageAttributeNameLength = 256
	// MaxMessageAttributeDataTypeLength bounds an attribute's DataType.
	MaxMessageAttributeDataTypeLength = 256

	// MaxDeduplicationIdLength and MaxGroupIdLength bound the FIFO ids;
	// MaxReceiveRequestAttemptIdLength bounds the receive attempt id.
	MaxDeduplicationIdLength         = 128
	MaxGroupIdLength                 = 128
	MaxReceiveRequestAttemptIdLength = 128

	// MaxInflightFIFO and MaxInflightStandard are the in-flight message limits.
	MaxInflightFIFO     = 120000
	MaxInflightStandard = 120000

	// MaxMaxReceiveCount bounds a RedrivePolicy's maxReceiveCount.
	MaxMaxReceiveCount = 1000
	// MaxRedriveAllowSourceQueues bounds RedriveAllowPolicy's sourceQueueArns.
	MaxRedriveAllowSourceQueues = 10
	// MaxMoveTaskRate bounds MaxNumberOfMessagesPerSecond of a message move task.
	MaxMoveTaskRate = 500
	// MaxListedMoveTasks is how many tasks ListMessageMoveTasks returns at most.
	MaxListedMoveTasks = 10

	// MaxTagsPerQueue bounds the number of tags; MaxTagKeyLength and
	// MaxTagValueLength bound one tag.
	MaxTagsPerQueue   = 50
	MaxTagKeyLength   = 128
	MaxTagValueLength = 256

	// Queue policy quotas, as SQS documents them: statements per policy,
	// bytes per policy, principals and actions per statement.
	MaxPolicyStatements = 20
	MaxPolicyBytes      = 8192
	MaxPolicyPrincipals = 50
	MaxPolicyActions    = 7

	// MaxListQueuesResults bounds ListQueues' and ListDeadLetterSourceQueues' MaxResults.
	MaxListQueuesResults = 1000

	// MinKmsDataKeyReusePeriod and MaxKmsDataKeyReusePeriod bound
	// KmsDataKeyReusePeriodSeconds (accepted and stored; fifoq does no KMS).
	MinKmsDataKeyReusePeriod     = 60
	MaxKmsDataKeyReusePeriod     = 86400
	DefaultKmsDataKeyReusePeriod = 300
)

// DeduplicationInterval is how long a FIFO queue remembers a deduplication id.
const DeduplicationInterval = 5 * time.Minute

// ReceiveRequestAttemptIdInterval is how long SQS remembers a receive request attempt id.
const ReceiveRequestAttemptIdInterval = 5 * time.Minute

// PurgeInterval is the time that must pass between two PurgeQueue calls on
// a queue in SQS; fifoq's default, which fifoq serve --purge-delay changes.
const PurgeInterval = 60 * time.Second

// QueueDeletionCooldown is the time after DeleteQueue during which SQS
// refuses to create a queue of the same name; fifoq's default, which fifoq
// serve --recreate-delay changes.
const QueueDeletionCooldown = 60 * time.Second

// Queue attribute names.
const (
	AttrAll                                   = "All"
	AttrPolicy                                = "Policy"
	AttrVisibilityTimeout                     = "VisibilityTimeout"
	AttrMaximumMessageSize                    = "MaximumMessageSize"
	AttrMessageRetentionPeriod                = "MessageRetentionPeriod"
	AttrApproximateNumberOfMessages           = "ApproximateNumberOfMessages"
	AttrApproximateNumberOfMessagesNotVisible = "ApproximateNumberOfMessagesNotVisible"
	AttrApproximateNumberOfMessagesDelayed    = "ApproximateNumberOfMessagesDelayed"
	AttrCreatedTimestamp                      = "CreatedTimestamp"
	AttrLastModifiedTimestamp                 = "LastModifiedTimestamp"
	AttrQueueArn                              = "QueueArn"
	AttrDelaySeconds                          = "DelaySeconds"
	AttrReceiveMessageWaitTimeSeconds         = "ReceiveMessageWaitTimeSeconds"
	AttrRedrivePolicy                         = "RedrivePolicy"
	AttrRedriveAllowPolicy                    = "RedriveAllowPolicy"
	AttrFifoQueue                             = "FifoQueue"
	AttrContentBasedDeduplication             = "ContentBasedDeduplication"
	AttrKmsMasterKeyId                        = "KmsMasterKeyId"
	AttrKmsDataKeyReusePeriodSeconds          = "KmsDataKeyReusePeriodSeconds"
	AttrDeduplicationScope                    = "DeduplicationScope"
	AttrFifoThroughputLimit                   = "FifoThroughputLimit"
	AttrSqsManagedSseEnabled                  = "SqsManagedSseEnabled"
)

// Message system attribute names, as returned by ReceiveMessage.
const (
	MsgAttrAll                              = "All"
	MsgAttrSenderId                         = "SenderId"
	MsgAttrSentTimestamp                    = "SentTimestamp"
	MsgAttrApproximateReceiveCount          = "ApproximateReceiveCount"
	MsgAttrApproximateFirstReceiveTimestamp = "ApproximateFirstReceiveTimestamp"
	MsgAttrSequenceNumber                   = "SequenceNumber"
	MsgAttrMessageDeduplicationId           = "MessageDeduplicationId"
	MsgAttrMessageGroupId                   = "MessageGroupId"
	MsgAttrAWSTraceHeader                   = "AWSTraceHeader"
	MsgAttrDeadLetterQueueSourceArn         = "DeadLetterQueueSourceArn"
)

// Message move task statuses.
const (
	MoveTaskRunning    = "RUNNING"
	MoveTaskCompleted  = "COMPLETED"
	MoveTaskCancelling = "CANCELLING"
	MoveTaskCancelled  = "CANCELLED"
	MoveTaskFailed     = "FAILED"
)
