package integration

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"testing"
)

// This file is the harness of the recorded-response table: requests whose
// answers were recorded from real Amazon SQS by public projects, replayed
// against fifoq on both wire protocols. Each row names its recording in
// source, so that a reader can check the expectation against AWS's own
// answer. The rows live in recorded_*_test.go, one file per area.
//
// Recordings are cited as
//
//	localstack test_sqs.snapshot.json: <test name>/<snapshot key>
//
// for the snapshot files beside LocalStack's AWS-validated SQS tests
// (tests/aws/services/sqs/*.snapshot.json), or
//
//	moto test_sqs.py <test name> (aws_verified)
//
// for moto's tests that were verified against AWS.

// awsAnswer is an error answer that AWS was recorded giving.
type awsAnswer struct {
	// Status is the HTTP status.
	Status int
	// Code is the Query protocol's <Code>, which AWS JSON answers carry in
	// the x-amzn-query-error header (boto3 shows it as Error.Code).
	Code string
	// Type is the AWS JSON __type without its namespace (boto3 shows it as
	// Error.QueryErrorCode). Empty means the same as Code.
	Type string
	// Message is the message in both protocols; empty is not checked.
	Message string
	// QueryMessage is the Query protocol's message where AWS words it
	// differently from the JSON one; empty means the same as Message.
	QueryMessage string
}

// recordedCase is one request and the error AWS was recorded answering.
type recordedCase struct {
	// name names the case in the test's output.
	name string
	// source is the recording the expectation comes from.
	source string
	// call prepares what the request needs on the server (queues,
	// messages) through s and returns the request. Values it stores in
	// s.vars replace {name} placeholders in want's messages.
	call func(t *testing.T, s *scene) (action string, p params)
	// want is the recorded answer.
	want awsAnswer
}

// scene is what a recorded case runs against: a server of its own, the
// SDK client of the protocol under test, and placeholder values.
type scene struct {
	env   *Env
	c     Client
	proto string
	vars  map[string]string
}

// queue creates a queue and returns its URL; it sets {queue_url} and
// {queue_name} for the expected messages.
func (s *scene) queue(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	u := mustCreate(t, s.c, name, attrs)
	s.vars["queue_url"] = u
	s.vars["queue_name"] = name
	return u
}

// expand replaces {name} placeholders of msg with the scene's values.
func (s *scene) expand(msg string) string {
	for k, v := range s.vars {
		msg = strings.ReplaceAll(msg, "{"+k+"}", v)
	}
	return msg
}

// runRecorded replays cases on both protocols, each case on a server of
// its own so that cases cannot disturb each other.
func runRecorded(t *testing.T, cases []recordedCase) {
	t.Helper()
	t.Parallel()
	for _, proto := range []string{"json", "query"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					s := newScene(t, proto)
					action, p := tc.call(t, s)
					wantRecorded(t, s, s.post(t, action, p), tc.want, tc.source)
				})
			}
		})
	}
}

// newScene starts a server of its own for one case in proto.
func newScene(t *testing.T, proto string) *scene {
	t.Helper()
	env := Start(t)
	s := &scene{env: env, c: v2Client{env.V2}, proto: proto, vars: map[string]string{"endpoint": env.URL}}
	if proto == "query" {
		s.c = v1Client{env.V1}
	}
	return s
}

// post sends a request in the scene's protocol, rendered from p exactly
// as written (no SDK in between to fix or refuse it).
func (s *scene) post(t *testing.T, action string, p params) rawResponse {
	t.Helper()
	if s.proto == "json" {
		return rawPost(t, s.env, map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS." + action}, jsonBody(t, p))
	}
	return rawPost(t, s.env, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, formBody(action, p))
}

// wantRecorded fails the test unless r is the recorded error answer want,
// in the scene's protocol.
// invalidParameter is SQS's answer InvalidParameterValue with message msg,
// as AWS JSON and Query both carry it.
func invalidParameter(msg string) awsAnswer {
	return awsAnswer{Status: http.StatusBadRequest, Code: "InvalidParameterValue", Type: "InvalidParameterValueException", Message: msg}
}

func wantRecorded(t *testing.T, s *scene, r rawResponse, want awsAnswer, source string) {
	t.Helper()
	got := decodeErrorAnswer(t, s.proto, r)
	wantType := want.Type
	if wantType == "" {
		wantType = want.Code
	}
	wantMsg := want.Message
	if s.proto == "query" && want.QueryMessage != "" {
		wantMsg = want.QueryMessage
	}
	wantMsg = s.expand(wantMsg)
	if r.status != want.Status {
		t.Errorf("HTTP %d, recorded %d (%s): %.400s", r.status, want.Status, source, r.body)
	}
	if got.code != want.Code {
		t.Errorf("code %q, recorded %q (%s): %.400s", got.code, want.Code, source, r.body)
	}
	if s.proto == "json" && got.jsonType != wantType {
		t.Errorf("__type %q, recorded %q (%s): %.400s", got.jsonType, wantType, source, r.body)
	}
	if wantMsg != "" && got.message != wantMsg {
		t.Errorf("message\n  got      %q\n  recorded %q (%s)", got.message, wantMsg, source)
	}
}

// errorAnswer is an error answer decoded from either protocol.
type errorAnswer struct {
	code, jsonType, message, fault string
}

// decodeErrorAnswer decodes an error answer of proto, failing the test if
// it is not one.
func decodeErrorAnswer(t *testing.T, proto string, r rawResponse) errorAnswer {
	t.Helper()
	if r.status == http.StatusOK {
		t.Fatalf("HTTP 200, want an error: %.400s", r.body)
	}
	var out errorAnswer
	if proto == "json" {
		var body struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("JSON error body does not parse: %v: %q", err, r.body)
		}
		out.jsonType = body.Type[strings.LastIndexByte(body.Type, '#')+1:]
		out.message = body.Message
		out.code = out.jsonType
		if qe := r.header.Get("X-Amzn-Query-Error"); qe != "" {
			out.code, out.fault, _ = strings.Cut(qe, ";")
		}
		return out
	}
	if string(r.body) == "<UnknownOperationException/>" {
		// SQS's bare answer to a Query request without an action.
		out.code = "UnknownOperationException"
		return out
	}
	var body struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		Error   struct {
			Type, Code, Message string
		}
	}
	if err := xml.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("Query error body does not parse: %v: %q", err, r.body)
	}
	out.code, out.message, out.fault = body.Error.Code, body.Error.Message, body.Error.Type
	return out
}
