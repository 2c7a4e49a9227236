// Package elasticmq converts the queues of an ElasticMQ configuration file
// into the queues: section of fifoq's config file (fifoq config
// from-elasticmq).
//
// ElasticMQ is configured in HOCON (Typesafe Config). This package reads
// the subset of HOCON such files are written in, not the whole language:
// objects, with or without braces around the root; fields as key = value,
// key : value or key { ... }, separated by newlines or commas; quoted keys
// and dotted key paths (a.b = 1), duplicate keys merged as HOCON merges
// them; quoted strings with JSON's escapes, unquoted strings ("10
// seconds" is one value), numbers, true, false and null; arrays; and
// comments after # or //. Not read: includes (except ElasticMQ's own
// include classpath("application.conf"), which holds its defaults and no
// queues, and is passed over), substitutions (${...} is refused where a
// queue setting uses it), +=, triple-quoted strings and the concatenation
// of a quoted string with more text. Each refusal names the file and line.
//
// Of the file only the queues { NAME { ... } } block is converted, key by
// key as ElasticMQ reads it (server/config/ElasticMQServerConfig.scala):
// defaultVisibilityTimeout, delay and receiveMessageWait (durations: a
// number with a unit, "10 seconds", "20s", or a bare number of
// milliseconds, truncated to whole seconds) become VisibilityTimeout,
// DelaySeconds and ReceiveMessageWaitTimeSeconds; fifo = true becomes
// FifoQueue: true and, as in ElasticMQ, adds .fifo to a name that lacks
// it; contentBasedDeduplication becomes ContentBasedDeduplication;
// deadLettersQueue { name, maxReceiveCount } becomes dead_letter; tags
// become tags. copyTo and moveTo have no SQS equivalent: they are left out
// with a warning and a comment in the output. The result is checked with
// fifoq's own config loader, so what Convert returns loads.
package elasticmq

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/config"
)

// Result is an ElasticMQ file converted.
type Result struct {
	// Queues are the file's queues as fifoq declares them, in file order.
	Queues []config.Queue
	// YAML is fifoq's config file declaring Queues: a queues: section.
	YAML []byte
	// Warnings say, as "FILE:LINE: text", what of the file was left out
	// or converted with a loss.
	Warnings []string
}

// queueKeys are the settings of an ElasticMQ queue this package converts.
var queueKeys = []string{"defaultVisibilityTimeout", "delay", "receiveMessageWait", "fifo",
	"contentBasedDeduplication", "deadLettersQueue", "copyTo", "moveTo", "tags"}

// converter holds what one conversion has found so far.
type converter struct {
	file     string
	warnings []string
}

func (c *converter) errAt(line int, format string, args ...any) error {
	return &Error{File: c.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (c *converter) warn(line int, format string, args ...any) {
	c.warnings = append(c.warnings, (&Error{File: c.file, Line: line, Msg: fmt.Sprintf(format, args...)}).Error())
}

// converted is one queue converted, with what the output says about it.
type converted struct {
	q     config.Queue
	line  int
	notes []string // comments above the queue's entry in the output
	dlqAt int      // line of deadLettersQueue
}

// Convert converts the queues of an ElasticMQ configuration file, named
// file in errors and warnings, whose contents are src. Every error is an
// *Error.
func Convert(file string, src []byte) (*Result, error) {
	root, err := parseHOCON(file, src)
	if err != nil {
		return nil, err
	}
	c := &converter{file: file}
	qf := root.get("queues")
	if qf == nil {
		return nil, c.errAt(0, "no queues { ... } block: nothing to convert")
	}
	if qf.val.kind != kindObject {
		return nil, c.errAt(qf.line, "queues must be an object, queues { NAME { ... } }")
	}
	var queues []*converted
	byName := map[string]*converted{}
	for _, name := range qf.val.obj.keys {
		cq, err := c.queue(name, qf.val.obj.get(name))
		if err != nil {
			return nil, err
		}
		if first, dup := byName[cq.q.Name]; dup {
			return nil, c.errAt(cq.line, "queue %s is declared twice (first on line %d); fifo = true adds .fifo to a name", cq.q.Name, first.line)
		}
		byName[cq.q.Name] = cq
		queues = append(queues, cq)
	}
	for _, cq := range queues {
		if err := c.check(cq, byName); err != nil {
			return nil, err
		}
	}
	c.awsSettings(root)
	res := &Result{Warnings: c.warnings}
	for _, cq := range queues {
		res.Queues = append(res.Queues, cq.q)
	}
	// The links between queues (a cycle of dead-letter queues), checked as
	// fifoq checks a file's.
	if _, err := config.Declare(file, res.Queues); err != nil {
		return nil, c.errAt(0, "%s", declareMsg(err))
	}
	if res.YAML, err = render(file, queues); err != nil {
		return nil, err
	}
	// What is written must load: a failure here is this package's bug,
	// said as such rather than left for fifoq serve to find.
	if _, err := config.Parse(file+" (converted)", res.YAML, func(string) (string, bool) { return "", false }); err != nil {
		return nil, c.errAt(0, "the converted file does not load (a bug of the converter): %v", err)
	}
	return res, nil
}

// awsSettings warns about ElasticMQ's aws { accountId, region }, which
// are fifoq's settings rather than its queues'.
func (c *converter) awsSettings(root *object) {
	aws := root.get("aws")
	if aws == nil || aws.val.kind != kindObject {
		return
	}
	for _, key := range aws.val.obj.keys {
		f := aws.val.obj.get(key)
		if !isScalar(f.val) {
			continue
		}
		switch {
		case key == "accountId" && f.val.text != "000000000000":
			c.warn(f.line, "aws.accountId is %s: give fifoq the same account (account: %q in its config file, or --account) so that queue URLs and ARNs keep naming it", f.val.text, f.val.text)
		case key == "region":
			c.warn(f.line, "aws.region is %s: fifoq writes its own region (region: in its config file, or --region; default us-east-1) into queue ARNs", f.val.text)
		}
	}
}

func isScalar(v *value) bool {
	return v.kind == kindString || v.kind == kindNumber || v.kind == kindBool
}

// queue converts one entry of queues { }.
func (c *converter) queue(name string, f *field) (*converted, error) {
	cq := &converted{line: f.line, q: config.Queue{Name: name, Attributes: map[string]string{}, Tags: map[string]string{}}}
	if f.val.kind != kindObject {
		return nil, c.errAt(f.line, "queue %s: want an object, %s { ... }, not %s", name, name, describe(f.val))
	}
	o := f.val.obj
	// An unquoted orders.fifo { } is the path orders { fifo { } } in
	// HOCON, which ElasticMQ cannot read either.
	if ff := o.get("fifo"); ff != nil && ff.val.kind == kindObject {
		return nil, c.errAt(ff.line, "queue %s: fifo is an object: an unquoted key with a dot is a path in HOCON; quote the queue's name, \"%s.fifo\" { ... }", name, name)
	}
	fifo := false
	if ff := o.get("fifo"); ff != nil {
		var err error
		if fifo, err = c.boolean(ff, name, "fifo"); err != nil {
			return nil, err
		}
	}
	switch {
	case fifo && !api.IsFIFOName(name):
		cq.q.Name = name + ".fifo"
		cq.notes = append(cq.notes, fmt.Sprintf("ElasticMQ's queue %s, fifo = true: named %s, as ElasticMQ names it", name, cq.q.Name))
	case !fifo && api.IsFIFOName(name):
		c.warn(f.line, "queue %s: a name ending in .fifo without fifo = true; a queue of that name can only be a FIFO queue in SQS and fifoq, so it is converted as one", name)
		fifo = true
	}
	if fifo {
		cq.q.Attributes[api.AttrFifoQueue] = "true"
	}
	for _, key := range o.keys {
		fld := o.get(key)
		if !slices.Contains(queueKeys, key) {
			c.warn(fld.line, "queue %s: %s is not an ElasticMQ queue setting this converter knows: left out", name, key)
			continue
		}
		var err error
		switch key {
		case "defaultVisibilityTimeout":
			err = c.durationAttr(cq, fld, key, api.AttrVisibilityTimeout)
		case "delay":
			err = c.durationAttr(cq, fld, key, api.AttrDelaySeconds)
		case "receiveMessageWait":
			err = c.durationAttr(cq, fld, key, api.AttrReceiveMessageWaitTimeSeconds)
		case "contentBasedDeduplication":
			var on bool
			if on, err = c.boolean(fld, name, key); err == nil && on {
				if fifo {
					cq.q.Attributes[api.AttrContentBasedDeduplication] = "true"
				} else {
					c.warn(fld.line, "queue %s: contentBasedDeduplication on a standard queue means nothing (SQS refuses it): left out", name)
				}
			}
		case "deadLettersQueue":
			err = c.deadLetter(cq, fld)
		case "copyTo", "moveTo":
			err = c.copyMove(cq, fld, key)
		case "tags":
			err = c.tags(cq, fld)
		}
		if err != nil {
			return nil, err
		}
	}
	return cq, nil
}

// check checks a converted queue alone with fifoq's own rules, and its
// dead-letter queue against the file's queues, each error at the line of
// the queue in the ElasticMQ file.
func (c *converter) check(cq *converted, byName map[string]*converted) error {
	if d := cq.q.DeadLetter; d != nil {
		if _, ok := byName[d.Queue]; !ok {
			hint := ""
			if _, ok := byName[d.Queue+".fifo"]; ok {
				hint = fmt.Sprintf(" (%s.fifo is: fifo = true named it so; write name = \"%s.fifo\")", d.Queue, d.Queue)
			}
			return c.errAt(cq.dlqAt, "queue %s: its dead-letter queue %s is not declared in this file%s", cq.q.Name, d.Queue, hint)
		}
	}
	if _, err := config.Declare(c.file, []config.Queue{cq.q}); err != nil {
		return c.errAt(cq.line, "%s", declareMsg(err))
	}
	return nil
}

// declareMsg is the text of an error of config.Declare without its file
// name, which the caller's error gives with a line.
func declareMsg(err error) string {
	var ce *config.Error
	if errors.As(err, &ce) {
		msg := ce.Msg
		if ce.Err != nil {
			msg += ": " + ce.Err.Error()
		}
		return msg
	}
	return err.Error()
}

// boolean reads a boolean as Typesafe Config's getBoolean does: true or
// false, or the strings true, yes, on, false, no, off.
func (c *converter) boolean(f *field, queue, key string) (bool, error) {
	if f.val.kind == kindBool || f.val.kind == kindString {
		switch f.val.text {
		case "true", "yes", "on":
			return true, nil
		case "false", "no", "off":
			return false, nil
		}
	}
	return false, c.errAt(f.line, "queue %s: %s must be true or false, not %s", queue, key, describe(f.val))
}

// durationAttr converts a duration setting into a whole-seconds attribute.
func (c *converter) durationAttr(cq *converted, f *field, key, attr string) error {
	secs, exact, err := duration(f.val)
	if err != nil {
		return c.errAt(f.line, "queue %s: %s: %v", cq.q.Name, key, err)
	}
	if !exact {
		why := ""
		if f.val.kind == kindNumber {
			why = "; a number without a unit is milliseconds in HOCON: write " + f.val.text + " seconds if seconds were meant"
		}
		c.warn(f.line, "queue %s: %s = %s is not a whole number of seconds: %s %d, as ElasticMQ reads it%s", cq.q.Name, key, f.val.text, attr, secs, why)
	}
	// Said here with the range and the ElasticMQ key, rather than as the
	// SQS validator's bare InvalidAttributeValue later.
	if limit := durationLimits[attr]; secs < 0 || secs > limit {
		return c.errAt(f.line, "queue %s: %s = %s is %d seconds, out of the range of %s (0 to %d seconds)", cq.q.Name, key, f.val.text, secs, attr, limit)
	}
	cq.q.Attributes[attr] = strconv.FormatInt(secs, 10)
	return nil
}

// durationLimits are the largest values of the attributes durations become.
var durationLimits = map[string]int64{
	api.AttrVisibilityTimeout:             api.MaxVisibilityTimeout,
	api.AttrDelaySeconds:                  api.MaxDelaySeconds,
	api.AttrReceiveMessageWaitTimeSeconds: api.MaxWaitTimeSeconds,
}

// durationText splits a duration into its number and unit: "10 seconds",
// "20s", "1.5 minutes".
var durationText = regexp.MustCompile(`^([+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)$`)

// unitNanos gives each unit of Typesafe Config's durations in nanoseconds.
var unitNanos = map[string]float64{
	"ns": 1, "nano": 1, "nanos": 1, "nanosecond": 1, "nanoseconds": 1,
	"us": 1e3, "micro": 1e3, "micros": 1e3, "microsecond": 1e3, "microseconds": 1e3,
	"ms": 1e6, "milli": 1e6, "millis": 1e6, "millisecond": 1e6, "milliseconds": 1e6,
	"s": 1e9, "second": 1e9, "seconds": 1e9,
	"m": 60e9, "minute": 60e9, "minutes": 60e9,
	"h": 3600e9, "hour": 3600e9, "hours": 3600e9,
	"d": 86400e9, "day": 86400e9, "days": 86400e9,
}

// maxSeconds bounds the durations converted: beyond it no SQS attribute
// could take the value anyway, and float arithmetic would lose digits.
const maxSeconds = 1 << 40

// duration reads a duration as Typesafe Config's getDuration(key,
// SECONDS) does: a number is milliseconds; a string is a number and a
// unit; the result is truncated to whole seconds. exact tells whether
// nothing was truncated.
func duration(v *value) (secs int64, exact bool, err error) {
	var num, unit string
	switch v.kind {
	case kindNumber:
		num, unit = v.text, "ms"
	case kindString:
		m := durationText.FindStringSubmatch(strings.TrimSpace(v.text))
		if m == nil {
			return 0, false, fmt.Errorf("%q is not a duration (a number and a unit, as 10 seconds or 20s)", v.text)
		}
		num, unit = m[1], m[2]
		if unit == "" {
			unit = "ms"
		}
	default:
		return 0, false, fmt.Errorf("want a duration, as 10 seconds, not %s", describe(v))
	}
	nanos, ok := unitNanos[unit]
	if !ok {
		return 0, false, fmt.Errorf("%q: unknown unit %q (ns, us, ms, s, m, h, d or their names)", v.text, unit)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%q is not a duration: %v", v.text, err)
	}
	s := n * nanos / 1e9
	if math.IsNaN(s) || math.Abs(s) > maxSeconds {
		return 0, false, fmt.Errorf("%s is out of range", v.text)
	}
	t := math.Trunc(s)
	return int64(t), t == s, nil
}

// deadLetter converts deadLettersQueue { name, maxReceiveCount }, both of
// which ElasticMQ requires.
func (c *converter) deadLetter(cq *converted, f *field) error {
	cq.dlqAt = f.line
	if f.val.kind != kindObject {
		return c.errAt(f.line, "queue %s: deadLettersQueue must be an object, { name = ..., maxReceiveCount = ... }, not %s", cq.q.Name, describe(f.val))
	}
	o := f.val.obj
	name, count := o.get("name"), o.get("maxReceiveCount")
	if name == nil || count == nil {
		return c.errAt(f.line, "queue %s: deadLettersQueue needs both name and maxReceiveCount", cq.q.Name)
	}
	for _, k := range o.keys {
		if k != "name" && k != "maxReceiveCount" {
			c.warn(o.get(k).line, "queue %s: deadLettersQueue.%s is not an ElasticMQ setting: left out", cq.q.Name, k)
		}
	}
	if !isScalar(name.val) || name.val.text == "" {
		return c.errAt(name.line, "queue %s: deadLettersQueue.name must be a queue's name, not %s", cq.q.Name, describe(name.val))
	}
	n, err := strconv.Atoi(count.val.text)
	if (count.val.kind != kindNumber && count.val.kind != kindString) || err != nil {
		return c.errAt(count.line, "queue %s: deadLettersQueue.maxReceiveCount must be a whole number, not %s", cq.q.Name, describe(count.val))
	}
	if n < 1 || n > api.MaxMaxReceiveCount {
		return c.errAt(count.line, "queue %s: deadLettersQueue.maxReceiveCount %d is out of range (1 to %d)", cq.q.Name, n, api.MaxMaxReceiveCount)
	}
	cq.q.DeadLetter = &config.DeadLetter{Queue: name.val.text, MaxReceiveCount: n}
	return nil
}

// copyMove leaves out copyTo and moveTo, which SQS has nothing like,
// saying so on the standard error and in the output. ElasticMQ reads an
// empty name (as its own persisted-queues file writes) as none.
func (c *converter) copyMove(cq *converted, f *field, key string) error {
	if !isScalar(f.val) {
		return c.errAt(f.line, "queue %s: %s must be a queue's name, not %s", cq.q.Name, key, describe(f.val))
	}
	if f.val.text == "" {
		return nil
	}
	to := f.val.text
	what := fmt.Sprintf("copies every message sent to this queue to %s as well", to)
	instead := "send to both queues from the application"
	if key == "moveTo" {
		what = fmt.Sprintf("sends every message sent to this queue to %s instead", to)
		instead = "send to " + to + " from the application"
	}
	msg := fmt.Sprintf("%s = %s, which %s, is not converted: SQS and fifoq have nothing like it; %s", key, to, what, instead)
	c.warn(f.line, "queue %s: %s", cq.q.Name, msg)
	cq.notes = append(cq.notes, "ElasticMQ's "+msg+".")
	return nil
}

// tags converts tags { KEY = VALUE }.
func (c *converter) tags(cq *converted, f *field) error {
	if f.val.kind != kindObject {
		return c.errAt(f.line, "queue %s: tags must be an object, tags { KEY = VALUE }, not %s", cq.q.Name, describe(f.val))
	}
	for _, k := range f.val.obj.keys {
		t := f.val.obj.get(k)
		if !isScalar(t.val) {
			return c.errAt(t.line, "queue %s: tag %s must be a string, not %s", cq.q.Name, k, describe(t.val))
		}
		cq.q.Tags[k] = t.val.text
	}
	return nil
}

// describe names a value in an error.
func describe(v *value) string {
	switch v.kind {
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	case kindNull:
		return "null"
	case kindSubst:
		return v.text + " (substitutions are not supported by this converter)"
	}
	return strconv.Quote(v.text)
}

// attrOrder is the order attributes are written in.
var attrOrder = []string{api.AttrFifoQueue, api.AttrContentBasedDeduplication, api.AttrVisibilityTimeout,
	api.AttrDelaySeconds, api.AttrReceiveMessageWaitTimeSeconds}

// render writes fifoq's config file of the queues.
func render(file string, queues []*converted) ([]byte, error) {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	// Attribute values as YAML's own types, as fifoq.example.yaml writes
	// them: FifoQueue: true, VisibilityTimeout: 30.
	typed := func(s string) *yaml.Node {
		n := str(s)
		if s == "true" || s == "false" {
			n.Tag = "!!bool"
		} else if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			n.Tag = "!!int"
		}
		return n
	}
	mapping := func(pairs ...*yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.MappingNode, Content: pairs}
	}
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, cq := range queues {
		q := cq.q
		entry := mapping(str("name"), str(q.Name))
		entry.HeadComment = strings.Join(cq.notes, "\n")
		if len(q.Attributes) > 0 {
			attrs := mapping()
			for _, a := range attrOrder {
				if v, ok := q.Attributes[a]; ok {
					attrs.Content = append(attrs.Content, str(a), typed(v))
				}
			}
			entry.Content = append(entry.Content, str("attributes"), attrs)
		}
		if d := q.DeadLetter; d != nil {
			entry.Content = append(entry.Content, str("dead_letter"), mapping(
				str("queue"), str(d.Queue),
				str("max_receive_count"), typed(strconv.Itoa(d.MaxReceiveCount))))
		}
		if len(q.Tags) > 0 {
			tags := mapping()
			for _, k := range slices.Sorted(maps.Keys(q.Tags)) {
				tags.Content = append(tags.Content, str(k), str(q.Tags[k]))
			}
			entry.Content = append(entry.Content, str("tags"), tags)
		}
		list.Content = append(list.Content, entry)
	}
	if len(list.Content) == 0 {
		list.Style = yaml.FlowStyle // queues: []
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping(str("queues"), list)}}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# fifoq's queues, converted from the ElasticMQ config %s\n# by \"fifoq config from-elasticmq\". Use it as fifoq serve --config FILE,\n# or copy its queues into your fifoq config file.\n", strings.ReplaceAll(file, "\n", " "))
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("write the converted config: %v", err)}
	}
	if err := enc.Close(); err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("write the converted config: %v", err)}
	}
	return out.Bytes(), nil
}
