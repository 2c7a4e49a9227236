package engine

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Values of the FIFO high-throughput attributes.
const (
	scopeQueue          = "queue"
	scopeMessageGroup   = "messageGroup"
	limitPerQueue       = "perQueue"
	limitPerMessageGrp  = "perMessageGroupId"
	redrivePermAllowAll = "allowAll"
	redrivePermDenyAll  = "denyAll"
	redrivePermByQueue  = "byQueue"
)

// queueAttrs holds a queue's settable attributes, in canonical form: what
// GetQueueAttributes reports and what CreateQueue compares against.
type queueAttrs struct {
	VisibilityTimeout             int
	MaximumMessageSize            int
	MessageRetentionPeriod        int
	DelaySeconds                  int
	ReceiveMessageWaitTimeSeconds int
	Policy                        string
	RedrivePolicy                 string // canonical JSON, "" if none
	RedriveAllowPolicy            string // canonical JSON, "" if none
	ContentBasedDeduplication     bool
	KmsMasterKeyId                string
	KmsDataKeyReusePeriodSeconds  int
	SqsManagedSseEnabled          bool
	DeduplicationScope            string
	FifoThroughputLimit           string

	// Parsed forms of the JSON attributes.
	redrive *redriveTarget
	allow   *api.RedriveAllowPolicy
}

// redriveTarget is a parsed RedrivePolicy.
type redriveTarget struct {
	arn             string
	key             api.QueueKey
	maxReceiveCount int
}

func defaultAttrs(fifo bool) queueAttrs {
	a := queueAttrs{
		VisibilityTimeout:            api.DefaultVisibilityTimeout,
		MaximumMessageSize:           api.DefaultMaximumMessageSize,
		MessageRetentionPeriod:       api.DefaultMessageRetentionPeriod,
		KmsDataKeyReusePeriodSeconds: api.DefaultKmsDataKeyReusePeriod,
		SqsManagedSseEnabled:         true,
	}
	if fifo {
		a.DeduplicationScope = scopeQueue
		a.FifoThroughputLimit = limitPerQueue
	}
	return a
}

// clearable reports whether setting the attribute to "" removes it.
func clearable(name string) bool {
	switch name {
	case api.AttrPolicy, api.AttrRedrivePolicy, api.AttrRedriveAllowPolicy, api.AttrKmsMasterKeyId:
		return true
	}
	return false
}

// set stores one attribute, already validated by
// api.ValidateQueueAttribute, in canonical form. FifoQueue is the caller's
// business: the queue type is decided at creation.
func (a *queueAttrs) set(name, value string) error {
	if value == "" && clearable(name) {
		switch name {
		case api.AttrPolicy:
			a.Policy = ""
		case api.AttrRedrivePolicy:
			a.RedrivePolicy, a.redrive = "", nil
		case api.AttrRedriveAllowPolicy:
			a.RedriveAllowPolicy, a.allow = "", nil
		case api.AttrKmsMasterKeyId:
			a.KmsMasterKeyId = ""
		}
		return nil
	}
	intValue := func(dst *int) error {
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return api.ErrInvalidAttributeValue("Invalid value for the parameter %s.", name)
		}
		*dst = n
		return nil
	}
	switch name {
	case api.AttrVisibilityTimeout:
		return intValue(&a.VisibilityTimeout)
	case api.AttrMaximumMessageSize:
		return intValue(&a.MaximumMessageSize)
	case api.AttrMessageRetentionPeriod:
		return intValue(&a.MessageRetentionPeriod)
	case api.AttrDelaySeconds:
		return intValue(&a.DelaySeconds)
	case api.AttrReceiveMessageWaitTimeSeconds:
		return intValue(&a.ReceiveMessageWaitTimeSeconds)
	case api.AttrKmsDataKeyReusePeriodSeconds:
		return intValue(&a.KmsDataKeyReusePeriodSeconds)
	case api.AttrPolicy:
		a.Policy = value
	case api.AttrKmsMasterKeyId:
		a.KmsMasterKeyId = value
	case api.AttrSqsManagedSseEnabled:
		a.SqsManagedSseEnabled = api.IsTrueAttr(value)
	case api.AttrContentBasedDeduplication:
		a.ContentBasedDeduplication = api.IsTrueAttr(value)
	case api.AttrDeduplicationScope:
		a.DeduplicationScope = value
	case api.AttrFifoThroughputLimit:
		a.FifoThroughputLimit = value
	case api.AttrRedrivePolicy:
		rp, err := api.ParseRedrivePolicy(value)
		if err != nil {
			return err
		}
		_, key, ok := api.ParseQueueARN(rp.DeadLetterTargetArn)
		if !ok {
			return api.ErrInvalidParameterValue("Value %s for parameter RedrivePolicy is invalid. Reason: Invalid value for deadLetterTargetArn.", value)
		}
		a.RedrivePolicy = mustJSON(rp)
		a.redrive = &redriveTarget{arn: rp.DeadLetterTargetArn, key: key, maxReceiveCount: rp.MaxReceiveCount}
	case api.AttrRedriveAllowPolicy:
		p, err := api.ParseRedriveAllowPolicy(value)
		if err != nil {
			return err
		}
		a.RedriveAllowPolicy = mustJSON(p)
		a.allow = &p
	default:
		// Read-only and unknown names, which ValidateQueueAttribute refuses.
		return api.ErrInvalidAttributeName(name)
	}
	return nil
}

// apply validates and sets the given attributes, FifoQueue excepted (the
// caller deals with it), in name order, then enforces the rules between
// attributes. On error a may be partly changed: callers apply to a copy.
func (a *queueAttrs) apply(given map[string]string, fifo bool) error {
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if name == api.AttrFifoQueue {
			continue
		}
		if err := api.ValidateQueueAttribute(name, given[name], fifo); err != nil {
			return err
		}
	}
	sse, sseGiven := given[api.AttrSqsManagedSseEnabled]
	kms, kmsGiven := given[api.AttrKmsMasterKeyId]
	if api.IsTrueAttr(sse) && kms != "" {
		return api.ErrSSEConflict()
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if name == api.AttrFifoQueue {
			continue
		}
		if err := a.set(name, given[name]); err != nil {
			return err
		}
	}
	// One server-side encryption option at a time: choosing one turns the
	// other off.
	switch {
	case kmsGiven && kms != "":
		a.SqsManagedSseEnabled = false
	case sseGiven && api.IsTrueAttr(sse):
		a.KmsMasterKeyId = ""
	}
	return a.check(fifo)
}

// check enforces the rules between attributes, after a change is applied.
func (a *queueAttrs) check(fifo bool) error {
	if fifo && a.FifoThroughputLimit == limitPerMessageGrp && a.DeduplicationScope != scopeMessageGroup {
		return api.ErrThroughputNeedsMessageGroupScope()
	}
	return nil
}

// get returns the stored value of a settable attribute in its wire form,
// and false if the attribute is unset or does not apply to the queue.
func (a *queueAttrs) get(name string, fifo bool) (string, bool) {
	itoa := strconv.Itoa
	switch name {
	case api.AttrVisibilityTimeout:
		return itoa(a.VisibilityTimeout), true
	case api.AttrMaximumMessageSize:
		return itoa(a.MaximumMessageSize), true
	case api.AttrMessageRetentionPeriod:
		return itoa(a.MessageRetentionPeriod), true
	case api.AttrDelaySeconds:
		return itoa(a.DelaySeconds), true
	case api.AttrReceiveMessageWaitTimeSeconds:
		return itoa(a.ReceiveMessageWaitTimeSeconds), true
	case api.AttrPolicy:
		return a.Policy, a.Policy != ""
	case api.AttrRedrivePolicy:
		return a.RedrivePolicy, a.RedrivePolicy != ""
	case api.AttrRedriveAllowPolicy:
		return a.RedriveAllowPolicy, a.RedriveAllowPolicy != ""
	case api.AttrKmsMasterKeyId:
		return a.KmsMasterKeyId, a.KmsMasterKeyId != ""
	case api.AttrKmsDataKeyReusePeriodSeconds:
		return itoa(a.KmsDataKeyReusePeriodSeconds), a.KmsMasterKeyId != ""
	case api.AttrSqsManagedSseEnabled:
		return strconv.FormatBool(a.SqsManagedSseEnabled), true
	case api.AttrFifoQueue:
		return "true", fifo
	case api.AttrContentBasedDeduplication:
		return strconv.FormatBool(a.ContentBasedDeduplication), fifo
	case api.AttrDeduplicationScope:
		return a.DeduplicationScope, fifo
	case api.AttrFifoThroughputLimit:
		return a.FifoThroughputLimit, fifo
	}
	return "", false
}

// settableAttrs lists the attributes get reports, in a fixed order.
var settableAttrs = []string{
	api.AttrVisibilityTimeout, api.AttrMaximumMessageSize, api.AttrMessageRetentionPeriod,
	api.AttrDelaySeconds, api.AttrReceiveMessageWaitTimeSeconds, api.AttrPolicy,
	api.AttrRedrivePolicy, api.AttrRedriveAllowPolicy, api.AttrKmsMasterKeyId,
	api.AttrKmsDataKeyReusePeriodSeconds, api.AttrSqsManagedSseEnabled, api.AttrFifoQueue,
	api.AttrContentBasedDeduplication, api.AttrDeduplicationScope, api.AttrFifoThroughputLimit,
}

// computedAttrs lists the read-only attributes.
var computedAttrs = []string{
	api.AttrApproximateNumberOfMessages, api.AttrApproximateNumberOfMessagesNotVisible,
	api.AttrApproximateNumberOfMessagesDelayed, api.AttrCreatedTimestamp,
	api.AttrLastModifiedTimestamp, api.AttrQueueArn,
}

// knownAttr reports whether GetQueueAttributes accepts the name.
func knownAttr(name string) bool {
	for _, n := range settableAttrs {
		if n == name {
			return true
		}
	}
	for _, n := range computedAttrs {
		if n == name {
			return true
		}
	}
	return false
}

// mustJSON encodes a value that cannot fail to encode.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("engine: encode " + err.Error())
	}
	return string(b)
}
