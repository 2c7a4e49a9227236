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
// The quota of 10 conditions has no counterpart: fifoq refuses every
// condition.
const (
	maxPolicyBytes         = 8192
	maxPolicyStatements    = 20
	maxPolicyPrincipals    = 50 // in the whole policy, Principal and NotPrincipal alike
	maxActionsPerStatement = 7  // in one statement's Action or NotAction
)

// policyVersions are the policy language versions IAM defines. A policy
// without Version is read as 2008-10-17, as IAM reads it; fifoq honours
// nothing that differs between the two: the policy variables of 2012-10-17
// (${aws:username} in a Resource) are refused in both.
var policyVersions = []string{"2012-10-17", "2008-10-17"}

// knownActions are the lower-case names of the SQS actions, which an Action
// or NotAction pattern must match at least one of.
var knownActions = func() []string {
	names := make([]string, len(api.Actions))
	for i, a := range api.Actions {
		names[i] = strings.ToLower(string(a))
	}
	return names
}()

// ParsePolicy parses and validates a queue policy document (the Policy
// attribute). It accepts exactly the part of the IAM policy language that
// Evaluate honours and refuses the rest, so that no statement is silently
// weakened or widened:
//
//   - Version "2012-10-17" or "2008-10-17" (or none); Id; Statement, one
//     object or a list of them. Statement Sids, where given, are unique.
//   - Effect "Allow" or "Deny".
//   - Principal or NotPrincipal: "*", or {"AWS": P} with P one or a list of
//     "*", a 12-digit account id, or an IAM or STS ARN of an account
//     (arn:aws:iam::ACCOUNT:root, :user/..., :role/...,
//     arn:aws:sts::ACCOUNT:assumed-role/...). An ARN stands for its whole
//     account, since fifoq has accounts and no users. Service, Federated
//     and CanonicalUser principals are refused: no such caller exists here.
//   - Action or NotAction: "*" or "sqs:NAME" (prefix and name in any case),
//     NAME a glob with * and ? that matches at least one SQS action.
//   - Resource or NotResource, optional: "*" or a queue ARN, with * and ?
//     wildcards. Absent, the statement is about the queue itself.
//   - Condition: refused unless empty, since fifoq evaluates no condition
//     key; a condition that cannot be evaluated must not be ignored.
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
	if raw, ok := top["Version"]; ok {
		if v, ok := jsonString(raw); !ok || !slices.Contains(policyVersions, v) {
			return nil, invalidPolicy(`Version must be "2012-10-17" or "2008-10-17", not %s`, compact(raw))
		}
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
		s, n, err := parseStatement(raw, i+1)
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
// with the number of principals it names.
func parseStatement(m map[string]json.RawMessage, n int) (statement, int, error) {
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
			pattern, err := parseResource(r, name)
			if err != nil {
				return fail("%s", err)
			}
			s.resources = append(s.resources, pattern)
		}
	}
	if raw, ok := m["Condition"]; ok {
		if reason, refused := conditionRefusal(raw); refused {
			return fail("%s", reason)
		}
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

// conditionRefusal says why a Condition element is refused, and false for
// an empty Condition, which restricts nothing and so ignores nothing.
func conditionRefusal(raw json.RawMessage) (string, bool) {
	var blocks map[string]json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil || blocks == nil {
		return fmt.Sprintf("Condition must be an object, not %s", compact(raw)), true
	}
	if len(blocks) == 0 {
		return "", false
	}
	operator := sortedMembers(blocks)[0]
	var keys map[string]json.RawMessage
	if json.Unmarshal(blocks[operator], &keys) == nil && len(keys) > 0 {
		return fmt.Sprintf("Condition %s on %s is not supported: fifoq evaluates no condition keys, and refuses a statement it could not honour", operator, sortedMembers(keys)[0]), true
	}
	return fmt.Sprintf("Condition %s is not supported: fifoq evaluates no condition keys, and refuses a statement it could not honour", operator), true
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
	for _, t := range sortedMembers(types) {
		switch t {
		case "AWS":
		case "Service", "Federated", "CanonicalUser":
			return principalSet{}, 0, fmt.Errorf("%s principals are not supported: fifoq has no %s callers; name AWS accounts", t, t)
		default:
			return principalSet{}, 0, fmt.Errorf("unknown principal type %q", t)
		}
	}
	values, err := stringOrList(types["AWS"], name+" AWS")
	if err != nil {
		return principalSet{}, 0, err
	}
	var set principalSet
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
	return set, len(values), checkNotEveryone(set, name)
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
// "*", or the lower-case name glob that follows "sqs:".
func parseAction(a, name string) (string, error) {
	if a == "*" {
		return a, nil
	}
	service, action, ok := strings.Cut(a, ":")
	if !ok || !strings.EqualFold(service, "sqs") {
		return "", fmt.Errorf(`%s %q is not an SQS action: write "sqs:NAME" or "*"`, name, a)
	}
	if action == "" || strings.TrimLeft(action, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ*?") != "" {
		return "", fmt.Errorf("%s %q is not an SQS action name", name, a)
	}
	pattern := strings.ToLower(action)
	if !slices.ContainsFunc(knownActions, func(k string) bool { return globMatch(pattern, k) }) {
		return "", fmt.Errorf("%s %q matches no SQS action", name, a)
	}
	return pattern, nil
}

// parseResource checks one Resource or NotResource value and returns its
// pattern: "*", or an SQS queue ARN in which * and ? may stand for any
// characters. A pattern without wildcards must be a well-formed queue ARN.
func parseResource(r, name string) (string, error) {
	if r == "*" {
		return r, nil
	}
	if strings.Contains(r, "${") {
		return "", fmt.Errorf("%s %q holds a policy variable; fifoq does not substitute policy variables", name, r)
	}
	bad := fmt.Errorf(`%s %q is not "*" or an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:QUEUE, wildcards allowed)`, name, r)
	parts := strings.Split(r, ":")
	switch {
	case parts[0] != "arn" || len(parts) > 6:
		return "", bad
	case len(parts) < 6 && !strings.Contains(parts[len(parts)-1], "*"):
		// Too few parts, and none that could stand for the rest.
		return "", bad
	case len(parts) >= 3 && !strings.ContainsAny(parts[1], "*?") && !globMatch(strings.ToLower(parts[2]), "sqs"):
		return "", bad
	}
	pattern := normalizeARNService(r)
	if !strings.ContainsAny(pattern, "*?") {
		if _, _, ok := api.ParseQueueARN(pattern); !ok {
			return "", bad
		}
	}
	return pattern, nil
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
