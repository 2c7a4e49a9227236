package auth

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Conditions. SQS accepts any Condition block (localstack
// test_sqs.py::test_set_queue_policy stores one with ArnEquals on
// aws:SourceArn), so fifoq stores them all and evaluates what it can know
// about a request:
//
//   - keys that no request to fifoq ever carries (aws:SourceArn,
//     aws:SourceAccount and the other keys set only when an AWS service acts
//     for a principal, the organization and VPC keys) are absent, and IAM
//     defines every operator on an absent key: false, except the negated
//     operators (StringNotEquals, ArnNotLike, ...) and ...IfExists, which
//     are true, and Null, which tests absence;
//   - aws:PrincipalAccount is the caller's account, and aws:SecureTransport
//     whether the request came over TLS, compared with the String, Arn and
//     Bool operators;
//   - anything else (other keys, numeric, date and IP operators on present
//     keys, set operators on present keys) cannot be evaluated.
//
// A statement whose conditions cannot be evaluated never grants: an Allow
// is skipped, and a Deny applies, as if its condition held. So a condition
// fifoq does not understand can only ever take access away.

// condition is one key test of a Condition block: an operator, a key and
// the values to compare it with.
type condition struct {
	operator string // as written
	key      string // lower case
	values   []string
}

// tri is a three-valued truth: a condition holds, does not, or cannot be
// told.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

// absentKeys are the global condition keys that no request to fifoq ever
// carries: fifoq has no AWS services acting for principals, no
// organizations and no VPC endpoints.
var absentKeys = map[string]bool{
	"aws:sourcearn": true, "aws:sourceaccount": true, "aws:sourceowner": true,
	"aws:sourceorgid": true, "aws:sourceorgpaths": true,
	"aws:sourcevpc": true, "aws:sourcevpce": true, "aws:vpcsourceip": true,
	"aws:principalorgid": true, "aws:principalorgpaths": true,
	"aws:principalservicename": true, "aws:principalservicenameslist": true,
	"aws:calledvia": true, "aws:calledviafirst": true, "aws:calledvialast": true,
}

// parseConditions parses a Condition element: an object of operators,
// each an object of keys, each a value or a list of values (strings,
// numbers or booleans, as IAM allows).
func parseConditions(raw json.RawMessage) ([]condition, error) {
	var blocks map[string]json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil || blocks == nil {
		return nil, fmt.Errorf("Condition must be an object, not %s", compact(raw))
	}
	var out []condition
	for _, op := range sortedMembers(blocks) {
		var keys map[string]json.RawMessage
		if json.Unmarshal(blocks[op], &keys) != nil || keys == nil {
			return nil, fmt.Errorf("Condition %s must be an object of condition keys, not %s", op, compact(blocks[op]))
		}
		for _, key := range sortedMembers(keys) {
			values, ok := conditionValues(keys[key])
			if !ok {
				return nil, fmt.Errorf("Condition %s %s must be a value or a list of values, not %s", op, key, compact(keys[key]))
			}
			out = append(out, condition{operator: op, key: strings.ToLower(key), values: values})
		}
	}
	return out, nil
}

// conditionValues decodes one value or a list of values, each a string, a
// number or a boolean, as text.
func conditionValues(raw json.RawMessage) ([]string, bool) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	if len(list) == 0 {
		return nil, false
	}
	values := make([]string, 0, len(list))
	for _, v := range list {
		var x any
		if json.Unmarshal(v, &x) != nil {
			return nil, false
		}
		switch x := x.(type) {
		case string:
			values = append(values, x)
		case bool:
			values = append(values, strconv.FormatBool(x))
		case float64:
			values = append(values, compact(v))
		default:
			return nil, false
		}
	}
	return values, true
}

// evalConditions is the conjunction of the conditions for request r.
func evalConditions(conds []condition, r *Request) tri {
	result := triTrue
	for i := range conds {
		switch conds[i].eval(r) {
		case triFalse:
			return triFalse
		case triUnknown:
			result = triUnknown
		}
	}
	return result
}

// lookup returns the value of a condition key in request r: present or
// not, or unknown.
func lookup(key string, r *Request) (string, tri) {
	switch {
	case absentKeys[key]:
		return "", triFalse
	case key == "aws:principalaccount":
		return r.Caller, triTrue
	case key == "aws:securetransport" && r.SecureTransport != nil:
		return strconv.FormatBool(*r.SecureTransport), triTrue
	}
	return "", triUnknown
}

func (c *condition) eval(r *Request) tri {
	op := strings.ToLower(c.operator)
	value, present := lookup(c.key, r)
	if present == triUnknown {
		return triUnknown
	}
	setOp := ""
	if p, rest, ok := strings.Cut(op, ":"); ok {
		setOp, op = p, rest
	}
	ifExists := strings.HasSuffix(op, "ifexists")
	op = strings.TrimSuffix(op, "ifexists")
	if op == "null" {
		if setOp != "" || ifExists {
			return triUnknown
		}
		// Null "true" holds when the key is absent, "false" when present.
		want := strconv.FormatBool(present == triFalse)
		for _, v := range c.values {
			if strings.EqualFold(v, want) {
				return triTrue
			}
		}
		return triFalse
	}
	negated := strings.Contains(op, "not")
	if present == triFalse {
		switch {
		case setOp == "forallvalues":
			return triTrue // vacuously: no value fails
		case setOp == "foranyvalue":
			return triFalse
		case setOp != "":
			return triUnknown
		case ifExists || negated:
			return triTrue
		}
		return triFalse
	}
	if setOp != "" {
		return triUnknown
	}
	var match func(pattern string) bool
	switch op {
	case "stringequals", "stringnotequals":
		match = func(p string) bool { return p == value }
	case "stringequalsignorecase", "stringnotequalsignorecase":
		match = func(p string) bool { return strings.EqualFold(p, value) }
	case "stringlike", "stringnotlike", "arnequals", "arnlike", "arnnotequals", "arnnotlike":
		match = func(p string) bool { return globMatch(p, value) }
	case "bool":
		match = func(p string) bool { return strings.EqualFold(p, value) }
	default:
		return triUnknown
	}
	for _, p := range c.values {
		if match(p) {
			if negated {
				return triFalse
			}
			return triTrue
		}
	}
	if negated {
		return triTrue
	}
	return triFalse
}
