package config

import (
	"fmt"
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/auth"
)

// Queue is a queue the file declares.
type Queue struct {
	// Name is the queue's name.
	Name string
	// Account owns the queue; "" for the default account.
	Account string
	// Attributes are the queue attributes the file sets, as SQS strings:
	// those of attributes:, and Policy from policy:. The RedrivePolicy of
	// DeadLetter is not among them: it needs the region (see Apply).
	Attributes map[string]string
	// Tags are the tags the file sets.
	Tags map[string]string
	// DeadLetter is the dead_letter: link, or nil.
	DeadLetter *DeadLetter
	// Line is the line of the queue's entry.
	Line int

	// lines holds the line of each attribute and of the name, tags,
	// dead_letter and policy keys, for errors about them.
	lines map[string]int
}

// DeadLetter is a queue's dead-letter link in the file's friendly form:
// it becomes the RedrivePolicy attribute, with the dead-letter queue's ARN.
type DeadLetter struct {
	// Queue is the dead-letter queue's name, in the same account.
	Queue string
	// MaxReceiveCount is the number of receives after which a message
	// moves to the dead-letter queue.
	MaxReceiveCount int
	// Line is the line of the dead_letter: key.
	Line int
}

// The keys of a queue's entry and of its dead_letter link.
var (
	queueKeys      = []string{"name", "account", "attributes", "tags", "dead_letter", "policy"}
	deadLetterKeys = []string{"queue", "max_receive_count"}
)

// jsonAttrs are the attributes whose value is a JSON document, which the
// file may write as a YAML mapping.
var jsonAttrs = []string{api.AttrPolicy, api.AttrRedrivePolicy, api.AttrRedriveAllowPolicy}

// line is the line of a part of the queue's entry, or of the entry.
func (q *Queue) line(part string) int {
	if n, ok := q.lines[part]; ok {
		return n
	}
	return q.Line
}

// queues reads the queues: list.
func (l *loader) queues(n *yaml.Node) error {
	return l.list(n, "queues", func(i int, item *yaml.Node) error {
		q, err := l.queue(i, item)
		if err != nil {
			return err
		}
		l.f.Queues = append(l.f.Queues, *q)
		return nil
	})
}

// queue reads and checks one entry of queues:.
func (l *loader) queue(i int, item *yaml.Node) (*Queue, error) {
	q := &Queue{Line: item.Line, Attributes: map[string]string{}, Tags: map[string]string{}, lines: map[string]int{}}
	what := fmt.Sprintf("queues[%d]", i)
	var policy *yaml.Node
	err := l.fields(item, what, queueKeys, func(key string, k, v *yaml.Node) error {
		q.lines[key] = k.Line
		var err error
		switch key {
		case "name":
			q.Name, err = l.str(v, what+".name")
		case "account":
			q.Account, err = l.str(v, what+".account")
			if err == nil && !api.IsAccountID(q.Account) {
				err = l.errAt(v, "%s.account: %q is not an account id (12 digits)", what, q.Account)
			}
		case "attributes":
			err = l.fields(v, what+".attributes", nil, func(name string, k, v *yaml.Node) error {
				q.lines["attributes."+name] = k.Line
				var val string
				var err error
				if slices.Contains(jsonAttrs, name) {
					val, err = l.jsonDocument(v, "attribute "+name)
				} else {
					val, err = l.sqsValue(v, "attribute "+name)
				}
				q.Attributes[name] = val
				return err
			})
		case "tags":
			err = l.fields(v, what+".tags", nil, func(tag string, k, v *yaml.Node) error {
				q.lines["tags."+tag] = k.Line
				val, err := l.sqsValue(v, "tag "+tag)
				q.Tags[tag] = val
				return err
			})
		case "dead_letter":
			q.DeadLetter, err = l.deadLetter(what+".dead_letter", k, v)
		case "policy":
			policy = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, ok := q.lines["name"]; !ok {
		return nil, l.errAt(item, "%s: name is missing", what)
	}
	if policy != nil {
		if _, dup := q.Attributes[api.AttrPolicy]; dup {
			return nil, l.errAt(policy, "queue %s: policy: and attributes: Policy both give the policy (line %d); keep one", q.Name, q.line("attributes.Policy"))
		}
		doc, err := l.jsonDocument(policy, "policy")
		if err != nil {
			return nil, err
		}
		q.Attributes[api.AttrPolicy] = doc
		q.lines["attributes."+api.AttrPolicy] = q.lines["policy"]
	}
	if q.DeadLetter != nil {
		if _, dup := q.Attributes[api.AttrRedrivePolicy]; dup {
			return nil, &Error{File: l.file, Line: q.DeadLetter.Line, Msg: fmt.Sprintf("queue %s: dead_letter: and attributes: RedrivePolicy both give the dead-letter queue (line %d); keep one", q.Name, q.line("attributes.RedrivePolicy"))}
		}
	}
	if err := l.checkQueue(q); err != nil {
		return nil, err
	}
	return q, nil
}

// deadLetter reads a dead_letter: link.
func (l *loader) deadLetter(what string, k, v *yaml.Node) (*DeadLetter, error) {
	d := &DeadLetter{Line: k.Line}
	var haveQueue, haveCount bool
	err := l.fields(v, what, deadLetterKeys, func(key string, _, v *yaml.Node) error {
		switch key {
		case "queue":
			haveQueue = true
			s, err := l.str(v, what+".queue")
			d.Queue = s
			return err
		case "max_receive_count":
			haveCount = true
			n, err := l.integer(v, what+".max_receive_count")
			if err != nil {
				return err
			}
			if n < 1 || n > api.MaxMaxReceiveCount {
				return l.errAt(v, "%s.max_receive_count: %d is out of range (1 to %d)", what, n, api.MaxMaxReceiveCount)
			}
			d.MaxReceiveCount = int(n)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case !haveQueue:
		return nil, l.errAt(v, "%s: queue is missing (the dead-letter queue's name)", what)
	case !haveCount:
		return nil, l.errAt(v, "%s: max_receive_count is missing", what)
	}
	return d, nil
}

// checkQueue checks what one entry can be checked for alone, with the
// SQS API's own validators, each error at the line of the part at fault.
func (l *loader) checkQueue(q *Queue) error {
	at := func(part string, format string, args ...any) error {
		return &Error{File: l.file, Line: q.line(part), Msg: fmt.Sprintf("queue %s: ", q.Name) + fmt.Sprintf(format, args...)}
	}
	wrap := func(part string, err error) error {
		return &Error{File: l.file, Line: q.line(part), Msg: "queue " + q.Name, Err: err}
	}
	// The name decides the queue type, and FifoQueue must agree with it,
	// as in CreateQueue. FifoQueue: false on a standard queue says what the
	// name says already; SQS would refuse the attribute, so it is dropped.
	// FifoQueue is read as SQS reads it, in any letter case ("True").
	fifoName := api.IsFIFOName(q.Name)
	fifoAttr, given := q.Attributes[api.AttrFifoQueue]
	fifoValue, isBool := api.ParseBoolAttr(fifoAttr)
	switch {
	case fifoName && !given:
		return at("name", "a name ending in .fifo is a FIFO queue's: add FifoQueue: true to its attributes")
	case fifoName && !(isBool && fifoValue):
		return at("attributes."+api.AttrFifoQueue, "FifoQueue is %q, but a queue whose name ends in .fifo is a FIFO queue; the type cannot change", fifoAttr)
	case !fifoName && given && isBool && fifoValue:
		return at("attributes."+api.AttrFifoQueue, "FifoQueue: true needs a name that ends in .fifo")
	case !fifoName && given && isBool:
		delete(q.Attributes, api.AttrFifoQueue)
	}
	if err := api.Validate(&api.CreateQueueRequest{QueueName: q.Name, Attributes: fifoOnly(fifoName)}); err != nil {
		return wrap("name", err)
	}
	for _, name := range slices.Sorted(maps.Keys(q.Attributes)) {
		if err := api.ValidateQueueAttribute(name, q.Attributes[name], fifoName); err != nil {
			return wrap("attributes."+name, err)
		}
	}
	if doc := q.Attributes[api.AttrPolicy]; doc != "" {
		if _, err := auth.ParsePolicy(doc); err != nil {
			return wrap("attributes."+api.AttrPolicy, err)
		}
	}
	if len(q.Tags) > 0 {
		if err := api.Validate(&api.TagQueueRequest{QueueUrl: "/" + placeholderAccount + "/" + q.Name, Tags: q.Tags}); err != nil {
			return wrap("tags", err)
		}
	}
	// The rules between attributes of one request (SSE-KMS with SSE-SQS,
	// high throughput with its deduplication scope).
	if err := api.Validate(&api.CreateQueueRequest{QueueName: q.Name, Attributes: q.Attributes}); err != nil {
		return wrap("attributes", err)
	}
	if d := q.DeadLetter; d != nil {
		switch {
		case d.Queue == q.Name:
			return at("dead_letter", "a queue cannot be its own dead-letter queue")
		case api.IsFIFOName(d.Queue) != fifoName:
			return at("dead_letter", "dead-letter queue %s must be of the same type as the queue (both FIFO or both standard)", d.Queue)
		}
		if err := api.Validate(&api.CreateQueueRequest{QueueName: d.Queue, Attributes: fifoOnly(fifoName)}); err != nil {
			return wrap("dead_letter", fmt.Errorf("dead-letter queue name %q: %w", d.Queue, err))
		}
	}
	return nil
}

// fifoOnly is the attributes of a CreateQueue that checks a name alone.
func fifoOnly(fifo bool) map[string]string {
	if fifo {
		return map[string]string{api.AttrFifoQueue: "true"}
	}
	return nil
}
