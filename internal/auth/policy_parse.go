package auth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// The quotas SQS documents for queue policies ("Amazon SQS policy quotas").
const (
	maxPolicyBytes         = 8192
	maxPolicyStatements    = 20
	maxPolicyPrincipals    = 50 // in the whole policy, Principal and NotPrincipal alike
	maxActionsPerStatement = 7  // in one statement's Action or NotAction
)

// policyVersions are the policy language versions IAM defines. A policy
// without Version is read as 2008-10-17, as IAM reads it. The one
// difference that matters here: 2012-10-17 substitutes policy variables
// (${aws:username} in a Resource), which fifoq cannot, so such a resource
// cannot be evaluated (see statement.resourceUnknown); in 2008-10-17 it is
// literal text.
var policyVersions = []string{"2012-10-17", "2008-10-17"}

// ParsePolicy parses and validates a queue policy document (the Policy
// attribute). It accepts what SQS accepts, as far as recordings show
// (localstack test_sqs.py::test_set_queue_policy stores a statement with a
// Condition and a Resource that is no ARN at all), and evaluation never
// grants more than the document says:
//
//   - Version "2012-10-17" or "2008-10-17" (or none); Id; Statement, one
//     object or a list of them. Statement Sids, where given, are unique.
//   - Effect "Allow" or "Deny".
//   - Principal or NotPrincipal: "*", or an object of principal types. AWS
//     principals are "*", 12-digit account ids, or IAM or STS ARNs of an
//     account (arn:aws:iam::ACCOUNT:root, :user/..., :role/...,
//     arn:aws:sts::ACCOUNT:assumed-role/...); an ARN stands for its whole
//     account, since fifoq has accounts and no users. Service, Federated
//     and CanonicalUser principals are kept and match no caller: no such
//     caller reaches fifoq.
//   - Action or NotAction: "*" or "SERVICE:NAME", NAME a glob with * and ?.
//     Actions of other services, and names no SQS action has, match no
//     request.
//   - Resource or NotResource, optional: any strings, globs with * and ?
//     over the queue's ARN. One that names no queue matches none. Absent,
//     the statement is about the queue itself.
//   - Condition: any operators and keys; see policy_condition.go for what
//     is evaluated. A statement whose condition cannot be evaluated never
//     allows, and always denies.
//   - SQS's quotas: 8192 bytes, 20 statements, 50 principals, 7 actions per
//     statement.
//
// Every refusal is an *api.Error InvalidAttributeValue whose message says
// what is wrong: "Invalid value for the parameter Policy. Reason: ...".
func ParsePolicy(doc string) (*Policy, error) {
	if len(doc) > maxPolicyBytes {
		return nil, invalidPolicy("the policy is %d bytes long; the maximum is %d", len(doc), maxPolicyBytes)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &top); err != nil || top == nil {
		return nil, invalidPolicy("the policy is not a JSON object")
	}
	// Duplicate members are refused rather than resolved: two readers of the
	// same document must not disagree about what it says.
	if name, ok := duplicateMember(doc); ok {
		return nil, invalidPolicy("member %q appears twice in one object", name)
	}
	for _, name := range sortedMembers(top) {
		switch name {
		case "Version", "Id", "Statement":
		default:
			return nil, invalidPolicy("unknown policy element %q", name)
		}
	}
	substitutes := false // whether policy variables are substituted
	if raw, ok := top["Version"]; ok {
		v, ok := jsonString(raw)
		if !ok || !slices.Contains(policyVersions, v) {
			return nil, invalidPolicy(`Version must be "2012-10-17" or "2008-10-17", not %s`, compact(raw))
		}
		substitutes = v == "2012-10-17"
	}
	if raw, ok := top["Id"]; ok {
		if _, ok := jsonString(raw); !ok {
			return nil, invalidPolicy("Id must be a string, not %s", compact(raw))
		}
	}
	raws, err := statementList(top["Statement"])
	if err != nil {
		return nil, err
	}
	if len(raws) > maxPolicyStatements {
		return nil, invalidPolicy("the policy has %d statements; the maximum is %d", len(raws), maxPolicyStatements)
	}
	p := &Policy{statements: make([]statement, 0, len(raws))}
	sids := map[string]bool{}
	principals := 0
	for i, raw := range raws {
		s, n, err := parseStatement(raw, i+1, substitutes)
		if err != nil {
			return nil, err
		}
		if s.sid != "" {
			if sids[s.sid] {
				return nil, invalidPolicy("Sid %q is used by more than one statement", s.sid)
			}
			sids[s.sid] = true
		}
		principals += n
		p.statements = append(p.statements, s)
	}
	if principals > maxPolicyPrincipals {
		return nil, invalidPolicy("the policy names %d principals; the maximum is %d", principals, maxPolicyPrincipals)
	}
	return p, nil
}

// statementList returns the statements of the Statement element: one object
// or a list of objects. An empty list is a policy that decides nothing.
func statementList(raw json.RawMessage) ([]map[string]json.RawMessage, error) {
	if raw == nil {
		return nil, invalidPolicy("the policy has no Statement")
	}
	var one map[string]json.RawMessage
	if json.Unmarshal(raw, &one) == nil && one != nil {
		return []map[string]json.RawMessage{one}, nil
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil || list == nil {
		return nil, invalidPolicy("Statement must be an object or a list of objects")
	}
	for i, s := range list {
		if s == nil {
			return nil, invalidPolicy("statement %d is not an object", i+1)
		}
	}
	return list, nil
}

// parseStatement parses the n-th statement (counting from 1) and returns it
// with the number of principals it names. substitutes says whether the
// policy's version substitutes policy variables.
func parseStatement(m map[string]json.RawMessage, n int, substitutes bool) (statement, int, error) {
	var s statement
	if raw, ok := m["Sid"]; ok {
		var isString bool
		if s.sid, isString = jsonString(raw); !isString {
			return s, 0, invalidPolicy("statement %d: Sid must be a string, not %s", n, compact(raw))
		}
	}
	where := fmt.Sprintf("statement %d", n)
	if s.sid != "" {
		where = fmt.Sprintf("statement %d (Sid %q)", n, s.sid)
	}
	fail := func(format string, args ...any) (statement, int, error) {
		return statement{}, 0, invalidPolicy("%s: %s", where, fmt.Sprintf(format, args...))
	}

	for _, name := range sortedMembers(m) {
		switch name {
		case "Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource", "NotResource", "Condition":
		default:
			return fail("unknown statement element %q", name)
		}
	}

	raw, ok := m["Effect"]
	if !ok {
		return fail("Effect is missing")
	}
	switch effect, _ := jsonString(raw); effect {
	case "Allow":
	case "Deny":
		s.deny = true
	default:
		return fail(`Effect must be "Allow" or "Deny", not %s`, compact(raw))
	}

	name, raw, err := oneOf(m, "Principal", "NotPrincipal", true)
	if err != nil {
		return fail("%s", err)
	}
	s.notPrincipal = name == "NotPrincipal"
	principals, count, err := parsePrincipal(raw, name)
	if err != nil {
		return fail("%s", err)
	}
	s.principals = principals

	name, raw, err = oneOf(m, "Action", "NotAction", true)
	if err != nil {
		return fail("%s", err)
	}
	s.notAction = name == "NotAction"
	actions, err := stringOrList(raw, name)
	if err != nil {
		return fail("%s", err)
	}
	if len(actions) > maxActionsPerStatement {
		return fail("%s lists %d actions; the maximum is %d", name, len(actions), maxActionsPerStatement)
	}
	for _, a := range actions {
		pattern, err := parseAction(a, name)
		if err != nil {
			return fail("%s", err)
		}
		s.actions = append(s.actions, pattern)
	}

	name, raw, err = oneOf(m, "Resource", "NotResource", false)
	if err != nil {
		return fail("%s", err)
	}
	if raw != nil {
		s.notResource = name == "NotResource"
		resources, err := stringOrList(raw, name)
		if err != nil {
			return fail("%s", err)
		}
		s.resources = make([]string, 0, len(resources))
		for _, r := range resources {
			if r == "" {
				return fail("%s must not be empty", name)
			}
			if substitutes && strings.Contains(r, "${") {
				s.resourceUnknown = true
			}
			s.resources = append(s.resources, normalizeARNService(r))
		}
	}
	if raw, ok := m["Condition"]; ok {
		conds, err := parseConditions(raw)
		if err != nil {
			return fail("%s", err)
		}
		s.conditions = conds
	}
	return s, count, nil
}

// oneOf returns which of an element and its negated form the statement
// holds, and its value. Holding both is an error, and so is holding neither
// when the element is required.
func oneOf(m map[string]json.RawMessage, name, notName string, required bool) (string, json.RawMessage, error) {
	raw, has := m[name]
	notRaw, hasNot := m[notName]
	switch {
	case has && hasNot:
		return "", nil, fmt.Errorf("%s and %s cannot be used together", name, notName)
	case hasNot:
		return notName, notRaw, nil
	case has:
		return name, raw, nil
	case required:
		return "", nil, fmt.Errorf("%s is missing", name)
	}
	return "", nil, nil
}

// parsePrincipal parses a Principal or NotPrincipal element (named name)
// and returns it with the number of principals it lists.
func parsePrincipal(raw json.RawMessage, name string) (principalSet, int, error) {
	if star, ok := jsonString(raw); ok {
		if star != "*" {
			return principalSet{}, 0, fmt.Errorf(`%s must be "*" or an object such as {"AWS": "123456789012"}, not %q`, name, star)
		}
		set := principalSet{anyone: true}
		return set, 1, checkNotEveryone(set, name)
	}
	var types map[string]json.RawMessage
	if json.Unmarshal(raw, &types) != nil || len(types) == 0 {
		return principalSet{}, 0, fmt.Errorf(`%s must be "*" or an object such as {"AWS": "123456789012"}, not %s`, name, compact(raw))
	}
	others := 0 // principals that are no AWS account: they match no caller
	for _, t := range sortedMembers(types) {
		switch t {
		case "AWS":
		case "Service", "Federated", "CanonicalUser":
			values, err := stringOrList(types[t], name+" "+t)
			if err != nil {
				return principalSet{}, 0, err
			}
			others += len(values)
		default:
			return principalSet{}, 0, fmt.Errorf("unknown principal type %q", t)
		}
	}
	var set principalSet
	raw, ok := types["AWS"]
	if !ok {
		return set, others, nil
	}
	values, err := stringOrList(raw, name+" AWS")
	if err != nil {
		return principalSet{}, 0, err
	}
	for _, v := range values {
		if v == "*" {
			set.anyone = true
			continue
		}
		account, ok := principalAccount(v)
		if !ok {
			return principalSet{}, 0, fmt.Errorf(`%s %q is not "*", a 12-digit account id, or an IAM ARN of an account`, name, v)
		}
		if !slices.Contains(set.accounts, account) {
			set.accounts = append(set.accounts, account)
		}
	}
	if set.anyone {
		set.accounts = nil
	}
	return set, len(values) + others, checkNotEveryone(set, name)
}

// checkNotEveryone refuses a NotPrincipal that names everyone: such a
// statement applies to no one, which is never what its author meant.
func checkNotEveryone(set principalSet, name string) error {
	if set.anyone && name == "NotPrincipal" {
		return fmt.Errorf(`NotPrincipal "*" applies to no one`)
	}
	return nil
}

// principalAccount returns the account an AWS principal names: a 12-digit
// account id, or an IAM or STS ARN of one (root, a user, a role, an assumed
// role or a federated user), in any partition. Wildcards are not allowed
// in a principal but as the whole "*".
func principalAccount(p string) (string, bool) {
	if api.IsAccountID(p) {
		return p, true
	}
	parts := strings.SplitN(p, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[3] != "" ||
		!api.IsAccountID(parts[4]) || strings.ContainsAny(p, "*?") {
		return "", false
	}
	resource := parts[5]
	switch parts[2] {
	case "iam":
		if resource == "root" || hasNamedPrefix(resource, "user/") || hasNamedPrefix(resource, "role/") {
			return parts[4], true
		}
	case "sts":
		if hasNamedPrefix(resource, "assumed-role/") || hasNamedPrefix(resource, "federated-user/") {
			return parts[4], true
		}
	}
	return "", false
}

// hasNamedPrefix reports whether s is prefix followed by a non-empty name.
func hasNamedPrefix(s, prefix string) bool {
	return len(s) > len(prefix) && strings.HasPrefix(s, prefix)
}

// parseAction checks one Action or NotAction value and returns its pattern:
// "*", or the lower-case "service:name" glob. Any service's actions are
// accepted; only SQS's can match an SQS request.
func parseAction(a, name string) (string, error) {
	if a == "*" {
		return a, nil
	}
	service, action, ok := strings.Cut(a, ":")
	if !ok || service == "" || action == "" || strings.ContainsAny(a, " \t\r\n") {
		return "", fmt.Errorf(`%s %q is not an action: write "SERVICE:NAME", such as "sqs:SendMessage", or "*"`, name, a)
	}
	return strings.ToLower(a), nil
}

// stringOrList decodes an element that holds one string or a non-empty list
// of strings, as IAM writes single and multiple values.
func stringOrList(raw json.RawMessage, name string) ([]string, error) {
	if one, ok := jsonString(raw); ok {
		return []string{one}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, fmt.Errorf("%s must be a string or a non-empty list of strings, not %s", name, compact(raw))
	}
	return list, nil
}

// jsonString decodes a JSON string; null and every other value are refused.
func jsonString(raw json.RawMessage) (string, bool) {
	var s *string
	if json.Unmarshal(raw, &s) != nil || s == nil {
		return "", false
	}
	return *s, true
}

// duplicateMember returns the first member name that appears twice in one
// object of a well-formed JSON document, and false if there is none.
func duplicateMember(doc string) (string, bool) {
	type frame struct {
		names     map[string]bool // nil for an array
		expectKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			// io.EOF, or trailing data json.Unmarshal already refused.
			return "", false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{names: map[string]bool{}, expectKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].names != nil && stack[n-1].expectKey {
				f := stack[n-1]
				if f.names[t] {
					return t, true
				}
				f.names[t] = true
				f.expectKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// sortedMembers returns an object's member names in order, so that the first
// error found in a document is always the same one.
func sortedMembers(m map[string]json.RawMessage) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// compact renders a JSON value for an error message, without its spacing
// and cut to a readable length.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(raw)
	}
	s := b.String()
	if len(s) > 64 {
		cut := 61
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// invalidPolicy is SQS's InvalidAttributeValue for the Policy attribute,
// with the reason the document is refused.
func invalidPolicy(format string, args ...any) *api.Error {
	return api.ErrInvalidAttributeValue("Invalid value for the parameter Policy. Reason: %s.", fmt.Sprintf(format, args...))
}
