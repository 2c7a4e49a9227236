package integration

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// This file renders one protocol-neutral request into the raw bodies of
// both wire protocols, so that a bad-input case is written once and sent
// as AWS JSON and as AWS Query exactly as written, without an SDK that
// would refuse or fix it first.

// params are the members of a request as the JSON model names them.
// Values are string or int (scalars), []string (lists of strings),
// map[string]string (Attributes, Tags), []params (batch Entries) or
// map[string]params (MessageAttributes, MessageSystemAttributes). A value
// of another type is written into JSON as it is and into a form with %v,
// which is how the wrong-type cases are made.
type params map[string]any

// with returns a copy of p with the given members set; a nil value removes
// the member.
func (p params) with(kv ...any) params {
	out := maps.Clone(p)
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(out, k)
		} else {
			out[k] = kv[i+1]
		}
	}
	return out
}

// queryListNames are the flattened Query names of the string lists.
var queryListNames = map[string]string{
	"AttributeNames":              "AttributeName",
	"MessageSystemAttributeNames": "MessageSystemAttributeName",
	"MessageAttributeNames":       "MessageAttributeName",
	"TagKeys":                     "TagKey",
	"AWSAccountIds":               "AWSAccountId",
	"Actions":                     "ActionName",
}

// queryEntryNames are the flattened Query names of the batch entries.
var queryEntryNames = map[string]string{
	"SendMessageBatch":             "SendMessageBatchRequestEntry",
	"DeleteMessageBatch":           "DeleteMessageBatchRequestEntry",
	"ChangeMessageVisibilityBatch": "ChangeMessageVisibilityBatchRequestEntry",
}

// jsonBody renders p as an AWS JSON request body.
func jsonBody(t *testing.T, p params) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("render JSON: %v", err)
	}
	return string(b)
}

// formBody renders p as an AWS Query form body for action.
func formBody(action string, p params) string {
	v := url.Values{"Action": {action}, "Version": {"2012-11-05"}}
	renderForm(action, "", p, v)
	return v.Encode()
}

func renderForm(action, prefix string, p params, v url.Values) {
	for _, k := range slices.Sorted(maps.Keys(p)) {
		switch val := p[k].(type) {
		case []string:
			name := prefix + queryListNames[k]
			if queryListNames[k] == "" {
				name = prefix + k
			}
			if len(val) == 0 {
				v.Set(name, "")
			}
			for i, s := range val {
				v.Set(fmt.Sprintf("%s.%d", name, i+1), s)
			}
		case map[string]string:
			name, key := prefix+"Attribute", "Name"
			if k == "Tags" || k == "tags" {
				name, key = prefix+"Tag", "Key"
			}
			if len(val) == 0 {
				v.Set(name, "")
			}
			for i, mk := range slices.Sorted(maps.Keys(val)) {
				v.Set(fmt.Sprintf("%s.%d.%s", name, i+1, key), mk)
				v.Set(fmt.Sprintf("%s.%d.Value", name, i+1), val[mk])
			}
		case []params:
			name := prefix + queryEntryNames[action]
			if len(val) == 0 {
				v.Set(name, "")
			}
			for i, e := range val {
				renderForm(action, fmt.Sprintf("%s.%d.", name, i+1), e, v)
			}
		case map[string]params:
			name := prefix + strings.TrimSuffix(k, "s") // MessageAttribute, MessageSystemAttribute
			for i, mk := range slices.Sorted(maps.Keys(val)) {
				v.Set(fmt.Sprintf("%s.%d.Name", name, i+1), mk)
				for _, field := range slices.Sorted(maps.Keys(val[mk])) {
					v.Set(fmt.Sprintf("%s.%d.Value.%s", name, i+1, field), fmt.Sprint(val[mk][field]))
				}
			}
		default:
			v.Set(prefix+k, fmt.Sprint(val))
		}
	}
}

// wireAnswer is a raw answer reduced to what the bad-input cases check.
type wireAnswer struct {
	status int
	// code is the error code as the SDKs report it: the Query code, which
	// AWS JSON answers carry in x-amzn-query-error.
	code string
	// jsonType is the code of an AWS JSON error's __type.
	jsonType string
	body     []byte
}

// postJSON sends an AWS JSON request for target (the action, or a whole
// X-Amz-Target value when it contains a dot; "" sends none).
func postJSON(t *testing.T, env *Env, target, body string) wireAnswer {
	t.Helper()
	h := map[string]string{"Content-Type": "application/x-amz-json-1.0"}
	if target != "" {
		if !strings.Contains(target, ".") {
			target = "AmazonSQS." + target
		}
		h["X-Amz-Target"] = target
	}
	r := rawPost(t, env, h, body)
	a := wireAnswer{status: r.status, body: r.body}
	if r.status == http.StatusOK {
		return a
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-amz-json-1.0") {
		t.Errorf("JSON error with Content-Type %q, want application/x-amz-json-1.0: %.300s", ct, r.body)
	}
	a.jsonType = jsonErrorType(t, r)
	a.code = a.jsonType
	if qe := r.header.Get("X-Amzn-Query-Error"); qe != "" {
		code, fault, _ := strings.Cut(qe, ";")
		a.code = code
		if r.status < 500 && fault != "Sender" {
			t.Errorf("x-amzn-query-error %q of a 4xx answer, want fault Sender", qe)
		}
	}
	return a
}

// postForm sends an AWS Query request with a raw form body.
func postForm(t *testing.T, env *Env, body string) wireAnswer {
	t.Helper()
	r := rawPost(t, env, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, body)
	a := wireAnswer{status: r.status, body: r.body}
	if r.status == http.StatusOK {
		return a
	}
	a.code = queryErrorCode(t, r)
	return a
}

// wantAnswer fails the test unless a is a 4xx answer with one of codes.
func wantAnswer(t *testing.T, a wireAnswer, codes []string) {
	t.Helper()
	if a.status < 400 || a.status > 499 {
		t.Fatalf("HTTP %d, want 4xx with %v: %.300s", a.status, codes, a.body)
	}
	if !slices.Contains(codes, a.code) {
		t.Fatalf("HTTP %d code %q, want one of %v: %.300s", a.status, a.code, codes, a.body)
	}
}

// wantAllEntriesFailed fails the test unless a, a 200 answer to a batch,
// reports no successful entry and every failed one with one of codes and
// SenderFault.
func wantAllEntriesFailed(t *testing.T, proto string, a wireAnswer, codes []string) {
	t.Helper()
	type failed struct {
		Code        string
		SenderFault bool
	}
	var ok int
	var fails []failed
	if proto == "json" {
		var r struct {
			Successful []json.RawMessage
			Failed     []failed
		}
		if err := json.Unmarshal(a.body, &r); err != nil {
			t.Fatalf("batch answer does not parse: %v: %.300s", err, a.body)
		}
		ok, fails = len(r.Successful), r.Failed
	} else {
		var r struct {
			Result struct {
				Successful []struct{ Id string } `xml:"SendMessageBatchResultEntry"`
				Failed     []failed              `xml:"BatchResultErrorEntry"`
			} `xml:"SendMessageBatchResult"`
		}
		if err := xml.Unmarshal(a.body, &r); err != nil {
			t.Fatalf("batch answer does not parse: %v: %.300s", err, a.body)
		}
		ok, fails = len(r.Result.Successful), r.Result.Failed
	}
	if ok > 0 || len(fails) == 0 {
		t.Fatalf("batch answered 200 with %d successful and %d failed entries, want every entry failed with %v: %.300s", ok, len(fails), codes, a.body)
	}
	for _, f := range fails {
		if !slices.Contains(codes, f.Code) || !f.SenderFault {
			t.Fatalf("batch entry failed with %q (sender fault %v), want %v: %.300s", f.Code, f.SenderFault, codes, a.body)
		}
	}
}
