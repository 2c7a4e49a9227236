package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// shapeCase is one success answer whose shape AWS was recorded giving: the
// members a JSON answer carries (all of them, so that an empty member that
// should be left out is caught) and what the Query answer's result element
// holds.
type shapeCase struct {
	name   string
	source string
	// setup prepares the scene on a fresh server, through the JSON
	// protocol, and returns the request to replay.
	setup  func(t *testing.T, env *Env) (action string, p params)
	keys   []string // the JSON answer's members, in any order
	query  []string // fragments the Query answer must contain
	absent []string // fragments it must not contain
}

// TestRecordedAnswerShapes checks which members SQS's success answers carry
// when a list or map is empty: in AWS JSON the member is left out, not
// written as [] or {} (botocore keeps an empty list or map it is sent, so a
// member missing from a recorded JSON answer was missing on the wire); in
// AWS Query every list is flattened, so an empty one leaves no element, and
// a result with no members is an empty result element.
func TestRecordedAnswerShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range slices.Concat(answerShapeCases(), batchAnswerShapeCases()) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t.Run("json", func(t *testing.T) { checkJSONShape(t, tc) })
			t.Run("query", func(t *testing.T) { checkQueryShape(t, tc) })
		})
	}
}

// answerShapeCases are the answers with an empty list or map that
// TestRecordedAnswerShapes checks.
func answerShapeCases() []shapeCase {
	return []shapeCase{
		{
			name: "send batch without failures",
			source: "localstack test_sqs.snapshot.json: test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size" +
				"[sqs]/[sqs_query]/send_oversized_message_batch (Successful only, no Failed)",
			setup: func(t *testing.T, env *Env) (string, params) {
				q := shapeQueue(t, env, "shape-send-batch")
				return "SendMessageBatch", params{"QueueUrl": q, "Entries": []params{
					{"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "b"},
				}}
			},
			keys:   []string{"Successful"},
			query:  []string{"<SendMessageBatchResultEntry><Id>1</Id>", "<SendMessageBatchResultEntry><Id>2</Id>"},
			absent: []string{"BatchResultErrorEntry"},
		},
		{
			name:   "receive from an empty queue",
			source: "localstack test_sqs.snapshot.json: test_receive_empty_queue[sqs]/[sqs_query]/empty_short_poll_resp (no Messages)",
			setup: func(t *testing.T, env *Env) (string, params) {
				return "ReceiveMessage", params{"QueueUrl": shapeQueue(t, env, "shape-receive"), "MaxNumberOfMessages": 1}
			},
			keys:  []string{},
			query: []string{"<ReceiveMessageResult/>"},
		},
		{
			name:   "list queues matching none",
			source: "localstack test_sqs.py test_list_queues (aws validated): no QueueUrls when no queue matches the prefix",
			setup: func(t *testing.T, env *Env) (string, params) {
				shapeQueue(t, env, "shape-list")
				return "ListQueues", params{"QueueNamePrefix": "nonexisting-queue-"}
			},
			keys:  []string{},
			query: []string{"<ListQueuesResult/>"},
		},
		{
			name:   "tags after untagging all",
			source: "localstack test_sqs.snapshot.json: test_tag_untag_queue[sqs]/[sqs_query]/get-tag-after-untag (no Tags)",
			setup: func(t *testing.T, env *Env) (string, params) {
				q := shapeQueue(t, env, "shape-tags")
				shapeDo(t, env, "TagQueue", params{"QueueUrl": q, "Tags": map[string]string{"tag1": "value1"}})
				shapeDo(t, env, "UntagQueue", params{"QueueUrl": q, "TagKeys": []string{"tag1"}})
				return "ListQueueTags", params{"QueueUrl": q}
			},
			keys:  []string{},
			query: []string{"<ListQueueTagsResult/>"},
		},
		{
			name: "policy after its last permission is removed",
			source: "localstack test_sqs.snapshot.json: test_sqs_permission_lifecycle[sqs]/[sqs_query]/" +
				"get-queue-policy-attribute-after-removal (no Attributes)",
			setup: func(t *testing.T, env *Env) (string, params) {
				q := shapeQueue(t, env, "shape-policy")
				shapeDo(t, env, "AddPermission", params{"QueueUrl": q, "Label": "crossaccountpermission",
					"AWSAccountIds": []string{Account}, "Actions": []string{"ReceiveMessage"}})
				shapeDo(t, env, "RemovePermission", params{"QueueUrl": q, "Label": "crossaccountpermission"})
				return "GetQueueAttributes", params{"QueueUrl": q, "AttributeNames": []string{"Policy"}}
			},
			keys:  []string{},
			query: []string{"<GetQueueAttributesResult/>"},
		},
		{
			// No recording shows these two lists empty. The model requires
			// queueUrls, but it requires SendMessageBatch's Failed too, which
			// AWS was recorded leaving out, so "required" does not keep an
			// empty list in. Code written against AWS tests for the member
			// ("queueUrls" in the answer) to tell whether a queue is a DLQ.
			name:   "dead-letter sources of a queue that is no DLQ",
			source: "inferred from test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size (required Failed left out)",
			setup: func(t *testing.T, env *Env) (string, params) {
				return "ListDeadLetterSourceQueues", params{"QueueUrl": shapeQueue(t, env, "shape-dlq")}
			},
			keys:  []string{},
			query: []string{"<ListDeadLetterSourceQueuesResult/>"},
		},
		{
			name:   "move tasks of a dead-letter queue that never had one",
			source: "inferred from the recorded empty lists above (no Results)",
			setup: func(t *testing.T, env *Env) (string, params) {
				shapeQueue(t, env, "shape-moves-dlq")
				dlqARN := "arn:aws:sqs:" + Region + ":" + Account + ":shape-moves-dlq"
				shapeDo(t, env, "CreateQueue", params{"QueueName": "shape-moves-src",
					"Attributes": map[string]string{"RedrivePolicy": redrivePolicy(dlqARN, 3)}})
				return "ListMessageMoveTasks", params{"SourceArn": dlqARN}
			},
			keys:  []string{},
			query: []string{"<ListMessageMoveTasksResult/>"},
		},
	}
}

// batchAnswerShapeCases are the batch answers TestRecordedAnswerShapes
// checks, all of whose entries succeeded or all failed.
func batchAnswerShapeCases() []shapeCase {
	return []shapeCase{
		{
			// No recording shows these two answers; SQS's JSON answers leave
			// out every empty list recorded (the cases above), and the
			// batch actions share one result shape, so theirs follow.
			name:   "delete batch without failures",
			source: "inferred from test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size (no Failed)",
			setup: func(t *testing.T, env *Env) (string, params) {
				q, handles := shapeReceived(t, env, "shape-delete-batch", 2)
				return "DeleteMessageBatch", params{"QueueUrl": q, "Entries": []params{
					{"Id": "a", "ReceiptHandle": handles[0]}, {"Id": "b", "ReceiptHandle": handles[1]},
				}}
			},
			keys:   []string{"Successful"},
			query:  []string{"<DeleteMessageBatchResultEntry><Id>a</Id></DeleteMessageBatchResultEntry>"},
			absent: []string{"BatchResultErrorEntry"},
		},
		{
			name:   "visibility batch without failures",
			source: "inferred from test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size (no Failed)",
			setup: func(t *testing.T, env *Env) (string, params) {
				q, handles := shapeReceived(t, env, "shape-visibility-batch", 1)
				return "ChangeMessageVisibilityBatch", params{"QueueUrl": q, "Entries": []params{
					{"Id": "a", "ReceiptHandle": handles[0], "VisibilityTimeout": 5},
				}}
			},
			keys:   []string{"Successful"},
			query:  []string{"<ChangeMessageVisibilityBatchResultEntry><Id>a</Id></ChangeMessageVisibilityBatchResultEntry>"},
			absent: []string{"BatchResultErrorEntry"},
		},
		{
			name:   "delete batch whose every entry failed",
			source: "inferred from the recorded empty lists above (no Successful)",
			setup: func(t *testing.T, env *Env) (string, params) {
				q := shapeQueue(t, env, "shape-all-failed")
				return "DeleteMessageBatch", params{"QueueUrl": q, "Entries": []params{{"Id": "a", "ReceiptHandle": "garbage"}}}
			},
			keys:   []string{"Failed"},
			query:  []string{"<BatchResultErrorEntry><Id>a</Id>"},
			absent: []string{"DeleteMessageBatchResultEntry"},
		},
	}
}

// checkJSONShape checks the members of the case's AWS JSON answer.
func checkJSONShape(t *testing.T, tc shapeCase) {
	env := Start(t)
	action, p := tc.setup(t, env)
	a := postJSON(t, env, action, jsonBody(t, p))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s: %s", a.status, a.code, a.body)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &members); err != nil {
		t.Fatalf("answer %q: %v", a.body, err)
	}
	got := make([]string, 0, len(members))
	for k := range members {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(tc.keys))
	if !slices.Equal(got, want) {
		t.Errorf("answer members %v, recorded %v (%s): %s", got, want, tc.source, a.body)
	}
}

// checkQueryShape checks the fragments of the case's AWS Query answer.
func checkQueryShape(t *testing.T, tc shapeCase) {
	env := Start(t)
	action, p := tc.setup(t, env)
	a := postForm(t, env, formBody(action, p))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s: %s", a.status, a.code, a.body)
	}
	for _, f := range tc.query {
		if !strings.Contains(string(a.body), f) {
			t.Errorf("answer lacks %q (%s): %s", f, tc.source, a.body)
		}
	}
	for _, f := range tc.absent {
		if strings.Contains(string(a.body), f) {
			t.Errorf("answer has %q (%s): %s", f, tc.source, a.body)
		}
	}
}

// TestRecordedQueryResponseEnvelope checks the frame of a Query answer as
// AWS writes it: the XML declaration, the <Action>Response element in the
// 2012-11-05 namespace, the <Action>Result element, and the request id in
// ResponseMetadata, the same id as the x-amzn-RequestId header. The error
// frame is the one AWS was seen sending in aws/aws-sdk-php issue 630
// (an EmptyBatchRequest answer quoted whole): <ErrorResponse> with Error
// (Type, Code, Message, an empty Detail) and RequestId beside Error.
func TestRecordedQueryResponseEnvelope(t *testing.T) {
	t.Parallel()
	env := Start(t)
	r := rawPost(t, env, map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
		formBody("CreateQueue", params{"QueueName": "envelope"}))
	id := r.header.Get("X-Amzn-Requestid")
	want := `<?xml version="1.0"?><CreateQueueResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">` +
		`<CreateQueueResult><QueueUrl>` + env.URL + `/` + Account + `/envelope</QueueUrl></CreateQueueResult>` +
		`<ResponseMetadata><RequestId>` + id + `</RequestId></ResponseMetadata></CreateQueueResponse>`
	if r.status != http.StatusOK || id == "" || string(r.body) != want {
		t.Errorf("HTTP %d, request id %q:\n%s\nwant\n%s", r.status, id, r.body, want)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/xml" {
		t.Errorf("Content-Type %q, want text/xml", ct)
	}

	r = rawPost(t, env, map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
		formBody("DeleteMessageBatch", params{"QueueUrl": env.URL + "/" + Account + "/envelope", "Entries": []params{}}))
	id = r.header.Get("X-Amzn-Requestid")
	want = `<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error>` +
		`<Type>Sender</Type><Code>AWS.SimpleQueueService.EmptyBatchRequest</Code>` +
		`<Message>There should be at least one DeleteMessageBatchRequestEntry in the request.</Message><Detail/></Error>` +
		`<RequestId>` + id + `</RequestId></ErrorResponse>`
	if r.status != http.StatusBadRequest || id == "" || string(r.body) != want {
		t.Errorf("HTTP %d, request id %q:\n%s\nwant\n%s", r.status, id, r.body, want)
	}
}

// shapeDo sends one JSON request that must succeed, to set a scene.
func shapeDo(t *testing.T, env *Env, action string, p params) []byte {
	t.Helper()
	a := postJSON(t, env, action, jsonBody(t, p))
	if a.status != http.StatusOK {
		t.Fatalf("%s: HTTP %d %s: %s", action, a.status, a.code, a.body)
	}
	return a.body
}

// shapeQueue creates a standard queue and returns its URL.
func shapeQueue(t *testing.T, env *Env, name string) string {
	t.Helper()
	var out struct{ QueueUrl string }
	if err := json.Unmarshal(shapeDo(t, env, "CreateQueue", params{"QueueName": name}), &out); err != nil {
		t.Fatal(err)
	}
	return out.QueueUrl
}

// shapeReceived creates a queue holding n received messages and returns
// their receipt handles.
func shapeReceived(t *testing.T, env *Env, name string, n int) (string, []string) {
	t.Helper()
	q := shapeQueue(t, env, name)
	for i := 0; i < n; i++ {
		shapeDo(t, env, "SendMessage", params{"QueueUrl": q, "MessageBody": "m"})
	}
	var handles []string
	for tries := 0; len(handles) < n && tries < 10; tries++ {
		var out struct {
			Messages []struct{ ReceiptHandle string }
		}
		if err := json.Unmarshal(shapeDo(t, env, "ReceiveMessage", params{"QueueUrl": q, "MaxNumberOfMessages": 10}), &out); err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			handles = append(handles, m.ReceiptHandle)
		}
	}
	if len(handles) != n {
		t.Fatalf("received %d messages of %d", len(handles), n)
	}
	return q, handles
}

// TestRecordedEncodedBodyRoundTrip: a body holding a quote, an XML entity
// written out and a carriage return comes back unchanged through both
// protocols; in Query the answer's XML must escape the carriage return, or
// the client's XML parser turns it into a newline (localstack test_sqs.py
// test_send_receive_message_encoded_content, aws validated on both).
func TestRecordedEncodedBodyRoundTrip(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		q := mustCreate(t, c, "encoded", nil)
		const body = "\"&quot;&quot;\r"
		mustSend(t, c, q, SendIn{Body: body})
		got := mustReceive(t, c, q, 1)
		if len(got) != 1 || got[0].Body != body {
			t.Fatalf("received %q, sent %q", bodies(got), body)
		}
	})
}
