package engine

import (
	"bytes"
	"encoding/json"

	"github.com/fifoq/fifoq/internal/api"
)

// AddPermission and RemovePermission edit the queue's Policy attribute, an
// IAM policy document. AddPermission appends a statement whose Sid is the
// label:
//
//	{"Sid": LABEL, "Effect": "Allow",
//	 "Principal": {"AWS": "arn:aws:iam::ACCOUNT:root" or a list of them},
//	 "Action": "SQS:ACTION" or a list of them, "Resource": QUEUE_ARN}
//
// A policy set through SetQueueAttributes is kept as it is, statements and
// members the engine does not know included.

func (e *Engine) addPermission(cmd *Command, r *api.AddPermissionRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	doc, stmts, err := parsePolicy(q)
	if err != nil {
		return nil, err
	}
	for _, s := range stmts {
		if sid, _ := s.(map[string]any)["Sid"].(string); sid == r.Label {
			return nil, api.ErrInvalidParameterValue("Value %s for parameter Label is invalid. Reason: Already exists.", r.Label)
		}
	}
	// The policy must stay within SQS's quotas, or the server's policy
	// parser would refuse the stored policy and every grant in it.
	if len(stmts) >= api.MaxPolicyStatements || len(r.AWSAccountIds) > api.MaxPolicyPrincipals || len(r.Actions) > api.MaxPolicyActions {
		return nil, api.ErrOverLimit("The queue policy would exceed its limits: %d statements, %d principals and %d actions per statement.",
			api.MaxPolicyStatements, api.MaxPolicyPrincipals, api.MaxPolicyActions)
	}
	principals := make([]string, len(r.AWSAccountIds))
	for i, id := range r.AWSAccountIds {
		principals[i] = "arn:aws:iam::" + id + ":root"
	}
	actions := make([]string, len(r.Actions))
	for i, a := range r.Actions {
		actions[i] = "SQS:" + a
	}
	stmts = append(stmts, map[string]any{
		"Sid":       r.Label,
		"Effect":    "Allow",
		"Principal": map[string]any{"AWS": oneOrList(principals)},
		"Action":    oneOrList(actions),
		"Resource":  q.arn,
	})
	doc["Statement"] = stmts
	policy := mustJSON(doc)
	if len(policy) > api.MaxPolicyBytes {
		return nil, api.ErrOverLimit("The queue policy would be %d bytes; at most %d are allowed.", len(policy), api.MaxPolicyBytes)
	}
	q.attrs.Policy = policy
	q.modifiedAt = now
	return api.Empty{}, nil
}

func (e *Engine) removePermission(cmd *Command, r *api.RemovePermissionRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	doc, stmts, err := parsePolicy(q)
	if err != nil {
		return nil, err
	}
	kept := make([]any, 0, len(stmts))
	for _, s := range stmts {
		if sid, _ := s.(map[string]any)["Sid"].(string); sid != r.Label {
			kept = append(kept, s)
		}
	}
	if len(kept) == len(stmts) {
		return nil, api.ErrInvalidParameterValue("Value %s for parameter Label is invalid. Reason: can't find label on existing policy.", r.Label)
	}
	if len(kept) == 0 {
		q.attrs.Policy = ""
	} else {
		doc["Statement"] = kept
		q.attrs.Policy = mustJSON(doc)
	}
	q.modifiedAt = now
	return api.Empty{}, nil
}

// parsePolicy decodes the queue's policy, or starts the one AddPermission
// creates, and returns its statements as a list (IAM also allows a single
// statement object).
func parsePolicy(q *queue) (map[string]any, []any, error) {
	if q.attrs.Policy == "" {
		return map[string]any{
			"Version": "2012-10-17",
			"Id":      q.arn + "/SQSDefaultPolicy",
		}, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(q.attrs.Policy)))
	dec.UseNumber() // keep numbers exactly as written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, nil, api.ErrInvalidAttributeValue("The queue's Policy is not a valid policy document.")
	}
	var stmts []any
	switch s := doc["Statement"].(type) {
	case nil:
	case []any:
		stmts = s
	case map[string]any:
		stmts = []any{s}
	default:
		return nil, nil, api.ErrInvalidAttributeValue("The queue's Policy is not a valid policy document.")
	}
	for _, s := range stmts {
		if _, ok := s.(map[string]any); !ok {
			return nil, nil, api.ErrInvalidAttributeValue("The queue's Policy is not a valid policy document.")
		}
	}
	return doc, stmts, nil
}

// oneOrList renders a single value as a string and several as a list, the
// way SQS writes principals and actions.
func oneOrList(v []string) any {
	if len(v) == 1 {
		return v[0]
	}
	return v
}
