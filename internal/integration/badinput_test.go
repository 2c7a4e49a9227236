package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestBadInput sends every one of the 23 actions requests that are wrong
// in every way a client or an attacker can make them wrong: required
// parameters missing, members of the wrong type, values out of range or
// too large, bodies that do not parse, unknown actions and attribute names.
// Each is sent raw in both protocols and must get SQS's error code with a
// 4xx status, never a 5xx. Messages stored before the suite must come out
// of it unchanged.
func TestBadInput(t *testing.T) {
	t.Parallel()
	env := Start(t)
	// Runs before the harness shuts the server down: the requests of 8 MiB
	// make the transport dial spare connections that it never uses, and
	// the server's Shutdown would wait 5 s for them.
	t.Cleanup(env.HTTP.CloseIdleConnections)
	c := v2Client{env.V2}

	// A queue outside the kept state, whose receipt handle is well formed.
	scratch := mustCreate(t, c, "scratch", nil)
	mustSend(t, c, scratch, SendIn{Body: "scratch"})
	handle := mustReceive(t, c, scratch, 1)[0].Handle

	kept := storeKept(t, c)
	fifo, std, big := kept.queue("keep.fifo").url, kept.queue("keep-std").url, kept.queue("keep-big").url
	stdARN := kept.queue("keep-std").attrs["QueueArn"]

	cases := badInputCases(fifo, std, big, stdARN, scratch, handle)
	// The cases run one after another: each takes about a millisecond, and
	// as parallel subtests they would queue behind every other parallel
	// test of the package for a slot.
	t.Run("cases", func(t *testing.T) {
		for _, tc := range cases {
			for _, proto := range []string{"json", "query"} {
				codes := tc.codes
				switch {
				case tc.only != "" && tc.only != proto:
					continue
				case proto == "json" && tc.json != nil:
					codes = tc.json
				case proto == "query" && tc.query != nil:
					codes = tc.query
				}
				t.Run(proto+"/"+tc.action+"/"+tc.name, func(t *testing.T) {
					var a wireAnswer
					if proto == "json" {
						a = postJSON(t, env, tc.action, jsonBody(t, tc.p))
					} else {
						a = postForm(t, env, formBody(tc.action, tc.p))
					}
					if tc.entries && a.status == http.StatusOK {
						// SendMessageBatch documents per-entry results: an
						// entry may fail alone, in Failed, with the code.
						wantAllEntriesFailed(t, proto, a, codes)
						return
					}
					wantAnswer(t, a, codes)
				})
			}
		}
		for _, tc := range rawBadInputCases(std) {
			t.Run(tc.proto+"/raw/"+tc.name, func(t *testing.T) {
				var a wireAnswer
				if tc.proto == "json" {
					a = postJSON(t, env, tc.target, tc.body)
				} else {
					a = postForm(t, env, tc.body)
				}
				wantAnswer(t, a, tc.codes)
				if tc.status != 0 && a.status != tc.status {
					t.Fatalf("HTTP %d, want %d", a.status, tc.status)
				}
			})
		}
		// A receipt handle of another queue must not delete or hide a kept
		// message. SQS may accept it as a no-op or refuse it.
		for _, proto := range []string{"json", "query"} {
			t.Run(proto+"/foreign receipt handle", func(t *testing.T) {
				for _, action := range []string{"DeleteMessage", "ChangeMessageVisibility"} {
					p := params{"QueueUrl": std, "ReceiptHandle": handle}
					if action == "ChangeMessageVisibility" {
						p["VisibilityTimeout"] = 600
					}
					var a wireAnswer
					if proto == "json" {
						a = postJSON(t, env, action, jsonBody(t, p))
					} else {
						a = postForm(t, env, formBody(action, p))
					}
					if a.status != http.StatusOK {
						wantAnswer(t, a, []string{"ReceiptHandleIsInvalid", "InvalidParameterValue", "AWS.SimpleQueueService.MessageNotInflight"})
					}
				}
			})
		}
	})

	// The server is still healthy, and the kept state is as it was.
	if _, _, err := c.ListQueues(ctxT(t), "", 0, ""); err != nil {
		t.Fatalf("ListQueues after the bad input: %v", err)
	}
	checkKept(t, c, kept)
	checkKept(t, v1Client{env.V1}, &keptStore{list: kept.list}) // ListQueues through Query too
}

// badCase is a request rendered into both protocols by badinput_wire_test.go.
type badCase struct {
	name   string
	action string
	p      params
	// codes are the accepted codes in both protocols; json and query, when
	// set, replace them for one protocol; only limits the case to one.
	codes, json, query []string
	only               string
	// entries: a 200 answer whose every batch entry failed with one of
	// codes is accepted too.
	entries bool
}

// Accepted codes, by kind of mistake.
var (
	missing     = []string{"MissingParameter"}
	missingURL  = []string{"MissingParameter", "InvalidAddress"}
	missingName = []string{"InvalidParameterValue", "MissingParameter"} // SQS: "Must specify a queue name."
	missingList = []string{"MissingParameter", "AWS.SimpleQueueService.EmptyBatchRequest"}
	invalid     = []string{"InvalidParameterValue"}
	invalidAttr = []string{"InvalidAttributeValue"}
	unknownAttr = []string{"InvalidAttributeName"}
	serialize   = []string{"SerializationException"}
	// A Query integer that does not parse: fifoq answers
	// InvalidParameterValue; SQS's own code is not documented.
	badQueryInt = []string{"InvalidParameterValue", "MalformedQueryString", "InvalidQueryParameter"}
	tooMany     = []string{"AWS.SimpleQueueService.TooManyEntriesInBatchRequest"}
)

// base is a request of each action that a bad-input case spoils in one
// way, with the members the model requires. Each targets a kept queue, so
// that a spoiled request that is wrongly accepted changes what checkKept
// compares.
type base struct {
	action   string
	p        params
	required []string
	// ints are paths of integer members: "Member" or "Entries.Member".
	ints []string
}

func bases(fifo, std, stdARN string) []base {
	entry := func(kv ...any) []params { return []params{params{}.with(kv...)} }
	return []base{
		{"AddPermission", params{"QueueUrl": std, "Label": "bad-label", "AWSAccountIds": []string{"111111111111"}, "Actions": []string{"SendMessage"}}, []string{"QueueUrl", "Label", "AWSAccountIds", "Actions"}, nil},
		{"CancelMessageMoveTask", params{"TaskHandle": "bogus"}, []string{"TaskHandle"}, nil},
		{"ChangeMessageVisibility", params{"QueueUrl": std, "ReceiptHandle": "bogus", "VisibilityTimeout": 10}, []string{"QueueUrl", "ReceiptHandle", "VisibilityTimeout"}, []string{"VisibilityTimeout"}},
		{"ChangeMessageVisibilityBatch", params{"QueueUrl": std, "Entries": entry("Id", "e1", "ReceiptHandle", "bogus", "VisibilityTimeout", 10)}, []string{"QueueUrl", "Entries"}, []string{"Entries.VisibilityTimeout"}},
		{"CreateQueue", params{"QueueName": "bad-created", "Attributes": map[string]string{"VisibilityTimeout": "10"}}, []string{"QueueName"}, nil},
		{"DeleteMessage", params{"QueueUrl": std, "ReceiptHandle": "bogus"}, []string{"QueueUrl", "ReceiptHandle"}, nil},
		{"DeleteMessageBatch", params{"QueueUrl": std, "Entries": entry("Id", "e1", "ReceiptHandle", "bogus")}, []string{"QueueUrl", "Entries"}, nil},
		{"DeleteQueue", params{"QueueUrl": std}, []string{"QueueUrl"}, nil},
		{"GetQueueAttributes", params{"QueueUrl": std, "AttributeNames": []string{"All"}}, []string{"QueueUrl"}, nil},
		{"GetQueueUrl", params{"QueueName": "keep-std"}, []string{"QueueName"}, nil},
		{"ListDeadLetterSourceQueues", params{"QueueUrl": std, "MaxResults": 10}, []string{"QueueUrl"}, []string{"MaxResults"}},
		{"ListMessageMoveTasks", params{"SourceArn": stdARN, "MaxResults": 5}, []string{"SourceArn"}, []string{"MaxResults"}},
		{"ListQueueTags", params{"QueueUrl": std}, []string{"QueueUrl"}, nil},
		{"ListQueues", params{"QueueNamePrefix": "keep", "MaxResults": 10}, nil, []string{"MaxResults"}},
		{"PurgeQueue", params{"QueueUrl": std}, []string{"QueueUrl"}, nil},
		{"ReceiveMessage", params{"QueueUrl": std, "MaxNumberOfMessages": 10, "VisibilityTimeout": 0, "WaitTimeSeconds": 0}, []string{"QueueUrl"}, []string{"MaxNumberOfMessages", "VisibilityTimeout", "WaitTimeSeconds"}},
		{"RemovePermission", params{"QueueUrl": std, "Label": "bad-label"}, []string{"QueueUrl", "Label"}, nil},
		{"SendMessage", params{"QueueUrl": fifo, "MessageBody": "bad", "MessageGroupId": "g-bad", "MessageDeduplicationId": "d-bad"}, []string{"QueueUrl", "MessageBody", "MessageGroupId"}, []string{"DelaySeconds"}},
		{"SendMessageBatch", params{"QueueUrl": fifo, "Entries": entry("Id", "e1", "MessageBody", "bad", "MessageGroupId", "g-bad", "MessageDeduplicationId", "d-bad")}, []string{"QueueUrl", "Entries", "Entries.Id"}, []string{"Entries.DelaySeconds"}},
		{"SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"VisibilityTimeout": "46"}}, []string{"QueueUrl", "Attributes"}, nil},
		{"StartMessageMoveTask", params{"SourceArn": stdARN, "MaxNumberOfMessagesPerSecond": 10}, []string{"SourceArn"}, []string{"MaxNumberOfMessagesPerSecond"}},
		{"TagQueue", params{"QueueUrl": std, "Tags": map[string]string{"bad": "tag"}}, []string{"QueueUrl", "Tags"}, nil},
		{"UntagQueue", params{"QueueUrl": std, "TagKeys": []string{"env"}}, []string{"QueueUrl", "TagKeys"}, nil},
	}
}

// setPath returns p with the member at path ("Member" or "Entries.Member")
// set to v (nil removes it).
func setPath(p params, path string, v any) params {
	parent, member, nested := strings.Cut(path, ".")
	if !nested {
		return p.with(path, v)
	}
	entries := p[parent].([]params)
	out := make([]params, len(entries))
	for i, e := range entries {
		out[i] = e.with(member, v)
	}
	return p.with(parent, out)
}

// badInputScene is what the bad-input cases are made of: the test's
// queues, the standard queue's ARN, a receipt handle of the scratch queue,
// and a well-formed request of each action (bases) to spoil.
type badInputScene struct {
	fifo, std, big, stdARN, scratch, handle string
	bases                                   []base
	byAction                                map[string]base
}

// badInputCases returns every bad-input case, for requests to the given
// queues.
func badInputCases(fifo, std, big, stdARN, scratch, handle string) []badCase {
	sc := badInputScene{fifo: fifo, std: std, big: big, stdARN: stdARN, scratch: scratch, handle: handle,
		bases: bases(fifo, std, stdARN), byAction: map[string]base{}}
	for _, b := range sc.bases {
		sc.byAction[b.action] = b
	}
	if len(sc.bases) != 23 {
		panic(fmt.Sprintf("bad-input bases cover %d actions, want 23", len(sc.bases)))
	}
	return slices.Concat(sc.missingCases(), sc.wrongTypeCases(), sc.outOfRangeCases(), sc.tooLargeCases(), sc.unknownAttributeCases())
}

// missingCases: every required member missing, one at a time, and the
// required strings present but empty.
func (sc badInputScene) missingCases() []badCase {
	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	bs := sc.bases
	// Every required member missing, one at a time, and the required
	// strings present but empty.
	for _, b := range bs {
		for _, m := range b.required {
			codes := missing
			switch m {
			case "QueueUrl":
				codes = missingURL
			case "QueueName":
				codes = missingName
			case "Entries", "Tags", "TagKeys", "AWSAccountIds", "Actions", "Attributes":
				codes = missingList
			case "Entries.Id":
				// SQS answers an entry Id sent empty as malformed (localstack
				// test_sqs.snapshot.json: test_delete_message_batch_invalid_msg_id[sqs-]);
				// fifoq cannot tell an absent Id from an empty one.
				codes = []string{"MissingParameter", "AWS.SimpleQueueService.InvalidBatchEntryId"}
			}
			add(badCase{name: "missing " + m, action: b.action, p: setPath(b.p, m, nil), codes: codes})
		}
		for _, m := range []string{"QueueUrl", "MessageBody", "ReceiptHandle"} {
			if _, ok := b.p[m]; ok {
				codes := missing
				if m == "QueueUrl" {
					codes = missingURL
				}
				add(badCase{name: "empty " + m, action: b.action, p: b.p.with(m, ""), codes: codes})
			}
		}
	}
	return cases
}

// wrongTypeCases: members of the wrong type.
func (sc badInputScene) wrongTypeCases() []badCase {
	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	bs, byAction := sc.bases, sc.byAction
	// Integer members of the wrong type or beyond 32 bits.
	for _, b := range bs {
		for _, path := range b.ints {
			add(badCase{name: path + " string", action: b.action, p: setPath(b.p, path, "abc"), json: serialize, query: badQueryInt})
			add(badCase{name: path + " fraction", action: b.action, p: setPath(b.p, path, 1.5), json: serialize, query: badQueryInt})
			add(badCase{name: path + " beyond int32", action: b.action, p: setPath(b.p, path, int64(1)<<31), json: serialize, query: badQueryInt})
			add(badCase{name: path + " boolean", action: b.action, p: setPath(b.p, path, true), json: serialize, query: badQueryInt})
		}
	}
	// Other members of the wrong JSON type (Query has only strings).
	for _, w := range []struct {
		action, member string
		v              any
	}{
		{"GetQueueAttributes", "QueueUrl", 5},
		{"SendMessage", "MessageBody", []string{"a"}},
		{"SetQueueAttributes", "Attributes", []string{"VisibilityTimeout"}},
		{"SetQueueAttributes", "Attributes", map[string]any{"VisibilityTimeout": 46}},
		{"GetQueueAttributes", "AttributeNames", "All"},
		{"SendMessageBatch", "Entries", "e1"},
		{"SendMessageBatch", "Entries", map[string]any{"Id": "e1"}},
		{"TagQueue", "Tags", []string{"bad"}},
		{"AddPermission", "AWSAccountIds", "111111111111"},
		{"SendMessage", "MessageAttributes", "x"},
		{"SendMessage", "MessageAttributes", map[string]any{"a": "x"}},
		{"CreateQueue", "QueueName", nil}, // JSON null: absent
	} {
		codes := serialize
		if w.v == nil {
			codes = missingName
		}
		add(badCase{name: fmt.Sprintf("%s as %T", w.member, w.v), action: w.action, p: byAction[w.action].p.with(w.member, w.v), codes: codes, only: "json"})
	}
	return cases
}

// outOfRangeCases: values out of range, and values that name nothing.
func (sc badInputScene) outOfRangeCases() []badCase {
	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	fifo, std, stdARN, scratch, handle, byAction := sc.fifo, sc.std, sc.stdARN, sc.scratch, sc.handle, sc.byAction
	stdSend := params{"QueueUrl": std, "MessageBody": "bad"}
	recv := byAction["ReceiveMessage"].p
	// Values out of range.
	for _, r := range []struct {
		name   string
		action string
		p      params
		codes  []string
	}{
		{"MaxNumberOfMessages 0", "ReceiveMessage", recv.with("MaxNumberOfMessages", 0), invalid},
		{"MaxNumberOfMessages 11", "ReceiveMessage", recv.with("MaxNumberOfMessages", 11), invalid},
		{"MaxNumberOfMessages -1", "ReceiveMessage", recv.with("MaxNumberOfMessages", -1), invalid},
		{"WaitTimeSeconds 21", "ReceiveMessage", recv.with("WaitTimeSeconds", 21), invalid},
		{"WaitTimeSeconds -1", "ReceiveMessage", recv.with("WaitTimeSeconds", -1), invalid},
		{"VisibilityTimeout 43201", "ReceiveMessage", recv.with("VisibilityTimeout", 43201), invalid},
		{"VisibilityTimeout -1", "ReceiveMessage", recv.with("VisibilityTimeout", -1), invalid},
		{"ReceiveRequestAttemptId of 129", "ReceiveMessage", recv.with("QueueUrl", fifo, "ReceiveRequestAttemptId", repeatX(129)), invalid},
		{"VisibilityTimeout 43201", "ChangeMessageVisibility", params{"QueueUrl": scratch, "ReceiptHandle": handle, "VisibilityTimeout": 43201}, invalid},
		{"VisibilityTimeout -1", "ChangeMessageVisibility", params{"QueueUrl": scratch, "ReceiptHandle": handle, "VisibilityTimeout": -1}, invalid},
		{"garbage receipt handle", "DeleteMessage", params{"QueueUrl": std, "ReceiptHandle": "garbage"}, []string{"ReceiptHandleIsInvalid"}},
		{"garbage receipt handle", "ChangeMessageVisibility", params{"QueueUrl": std, "ReceiptHandle": "garbage", "VisibilityTimeout": 0}, []string{"ReceiptHandleIsInvalid"}},
		{"DelaySeconds 901", "SendMessage", stdSend.with("DelaySeconds", 901), invalid},
		{"DelaySeconds -1", "SendMessage", stdSend.with("DelaySeconds", -1), invalid},
		{"DelaySeconds on a FIFO queue", "SendMessage", byAction["SendMessage"].p.with("DelaySeconds", 5), invalid},
		{"dedup id on a standard queue", "SendMessage", stdSend.with("MessageDeduplicationId", "d"), invalid},
		{"FIFO send without dedup id", "SendMessage", byAction["SendMessage"].p.with("MessageDeduplicationId", nil), invalid},
		{"NUL in body", "SendMessage", stdSend.with("MessageBody", "a\x00b"), []string{"InvalidMessageContents"}},
		{"U+FFFF in body", "SendMessage", stdSend.with("MessageBody", "a\uffffb"), []string{"InvalidMessageContents"}},
		{"attribute of unknown type", "SendMessage", stdSend.with("MessageAttributes", map[string]params{"a": {"DataType": "Strung", "StringValue": "v"}}), invalid},
		{"attribute without type", "SendMessage", stdSend.with("MessageAttributes", map[string]params{"a": {"StringValue": "v"}}), []string{"InvalidParameterValue", "MissingParameter"}},
		{"Number attribute not a number", "SendMessage", stdSend.with("MessageAttributes", map[string]params{"a": {"DataType": "Number", "StringValue": "abc"}}), invalid},
		{"attribute named AWS.x", "SendMessage", stdSend.with("MessageAttributes", map[string]params{"AWS.x": {"DataType": "String", "StringValue": "v"}}), invalid},
		{"unknown system attribute", "SendMessage", stdSend.with("MessageSystemAttributes", map[string]params{"Bogus": {"DataType": "String", "StringValue": "v"}}), invalid},
		{"MaxResults 0", "ListQueues", params{"MaxResults": 0}, invalid},
		{"MaxResults 1001", "ListQueues", params{"MaxResults": 1001}, invalid},
		{"garbage NextToken", "ListQueues", params{"MaxResults": 10, "NextToken": "garbage"}, invalid},
		{"MaxResults 0", "ListDeadLetterSourceQueues", params{"QueueUrl": std, "MaxResults": 0}, invalid},
		{"MaxResults 1001", "ListDeadLetterSourceQueues", params{"QueueUrl": std, "MaxResults": 1001}, invalid},
		{"MaxResults 0", "ListMessageMoveTasks", params{"SourceArn": stdARN, "MaxResults": 0}, invalid},
		{"MaxResults 11", "ListMessageMoveTasks", params{"SourceArn": stdARN, "MaxResults": 11}, invalid},
		{"rate 0", "StartMessageMoveTask", params{"SourceArn": stdARN, "MaxNumberOfMessagesPerSecond": 0}, invalid},
		{"rate 501", "StartMessageMoveTask", params{"SourceArn": stdARN, "MaxNumberOfMessagesPerSecond": 501}, invalid},
		{"SourceArn not an ARN", "StartMessageMoveTask", params{"SourceArn": "not-an-arn"}, invalid},
		{"source not a dead-letter queue", "StartMessageMoveTask", params{"SourceArn": stdARN}, []string{"InvalidParameterValue", "AWS.SimpleQueueService.UnsupportedOperation"}},
		{"unknown source queue", "StartMessageMoveTask", params{"SourceArn": "arn:aws:sqs:us-east-1:" + Account + ":nope"}, []string{"ResourceNotFoundException"}},
		{"garbage task handle", "CancelMessageMoveTask", params{"TaskHandle": "garbage"}, []string{"ResourceNotFoundException", "InvalidParameterValue"}},
		{"account id not 12 digits", "AddPermission", byAction["AddPermission"].p.with("AWSAccountIds", []string{"12345"}), invalid},
		{"owner-only action", "AddPermission", byAction["AddPermission"].p.with("Actions", []string{"DeleteQueue"}), invalid},
		{"unknown action", "AddPermission", byAction["AddPermission"].p.with("Actions", []string{"Frobnicate"}), invalid},
		{"label with a space", "AddPermission", byAction["AddPermission"].p.with("Label", "bad label"), invalid},
		{"unknown label", "RemovePermission", byAction["RemovePermission"].p, invalid},
		{"queue name with a space", "CreateQueue", params{"QueueName": "bad name"}, invalid},
		{"FIFO name without FifoQueue", "CreateQueue", params{"QueueName": "bad.fifo"}, invalid},
		{"FifoQueue on a standard name", "CreateQueue", params{"QueueName": "bad", "Attributes": map[string]string{"FifoQueue": "true"}}, []string{"InvalidParameterValue", "InvalidAttributeName"}},
		{"queue URL of no queue", "GetQueueAttributes", params{"QueueUrl": std + "-nope"}, []string{"AWS.SimpleQueueService.NonExistentQueue"}},
		{"queue URL not a URL", "PurgeQueue", params{"QueueUrl": "::not a url"}, []string{"InvalidAddress", "AWS.SimpleQueueService.NonExistentQueue"}},
		{"queue URL too deep", "DeleteQueue", params{"QueueUrl": std + "/extra"}, []string{"InvalidAddress", "AWS.SimpleQueueService.NonExistentQueue"}},
		{"empty batch", "SendMessageBatch", params{"QueueUrl": fifo, "Entries": []params{}}, []string{"AWS.SimpleQueueService.EmptyBatchRequest", "MissingParameter"}},
		{"empty batch", "DeleteMessageBatch", params{"QueueUrl": std, "Entries": []params{}}, []string{"AWS.SimpleQueueService.EmptyBatchRequest", "MissingParameter"}},
		{"empty batch", "ChangeMessageVisibilityBatch", params{"QueueUrl": std, "Entries": []params{}}, []string{"AWS.SimpleQueueService.EmptyBatchRequest", "MissingParameter"}},
		{"duplicate entry ids", "SendMessageBatch", params{"QueueUrl": fifo, "Entries": []params{
			{"Id": "same", "MessageBody": "a", "MessageGroupId": "g", "MessageDeduplicationId": "dup-a"},
			{"Id": "same", "MessageBody": "b", "MessageGroupId": "g", "MessageDeduplicationId": "dup-b"}}}, []string{"AWS.SimpleQueueService.BatchEntryIdsNotDistinct"}},
		{"entry id with a space", "DeleteMessageBatch", params{"QueueUrl": std, "Entries": []params{{"Id": "bad id", "ReceiptHandle": "h"}}}, []string{"AWS.SimpleQueueService.InvalidBatchEntryId"}},
		{"VisibilityTimeout 43201", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"VisibilityTimeout": "43201"}}, invalidAttr},
		{"MessageRetentionPeriod 59", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"MessageRetentionPeriod": "59"}}, invalidAttr},
		{"MessageRetentionPeriod 1209601", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"MessageRetentionPeriod": "1209601"}}, invalidAttr},
		{"MaximumMessageSize 1023", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"MaximumMessageSize": "1023"}}, invalidAttr},
		{"MaximumMessageSize 1 MiB + 1", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"MaximumMessageSize": "1048577"}}, invalidAttr},
		{"DelaySeconds 901", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"DelaySeconds": "901"}}, invalidAttr},
		{"ReceiveMessageWaitTimeSeconds 21", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"ReceiveMessageWaitTimeSeconds": "21"}}, invalidAttr},
		{"VisibilityTimeout abc", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"VisibilityTimeout": "abc"}}, invalidAttr},
		{"VisibilityTimeout -1", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"VisibilityTimeout": "-1"}}, invalidAttr},
		{"one good one bad value", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"VisibilityTimeout": "46", "DelaySeconds": "901"}}, invalidAttr},
		{"RedrivePolicy not JSON", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"RedrivePolicy": "{"}}, invalidAttr},
		{"RedrivePolicy to no queue", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:` + Account + `:nope","maxReceiveCount":3}`}}, []string{"InvalidParameterValue", "AWS.SimpleQueueService.NonExistentQueue"}},
		{"Policy not JSON", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"Policy": "{"}}, invalidAttr},
		{"Policy with a Condition not an object", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"Policy": `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":"aws:SecureTransport"}]}`}}, invalidAttr},
		{"VisibilityTimeout 43201", "CreateQueue", params{"QueueName": "bad-created", "Attributes": map[string]string{"VisibilityTimeout": "43201"}}, invalidAttr},
		{"MaximumMessageSize 1023", "CreateQueue", params{"QueueName": "bad-created", "Attributes": map[string]string{"MaximumMessageSize": "1023"}}, invalidAttr},
	} {
		add(badCase{name: r.name, action: r.action, p: r.p, codes: r.codes})
	}
	return cases
}

// tooLargeCases: values too large, and too many of something.
func (sc badInputScene) tooLargeCases() []badCase {
	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	fifo, std, big, byAction := sc.fifo, sc.std, sc.big, sc.byAction
	stdSend := params{"QueueUrl": std, "MessageBody": "bad"}
	fifoSend := byAction["SendMessage"].p
	// Values too large.
	for _, r := range []struct {
		name   string
		action string
		p      params
		codes  []string
	}{
		{"body over MaximumMessageSize", "SendMessage", stdSend.with("MessageBody", repeatX(262145)), invalid},
		{"body of 1 MiB + 1", "SendMessage", params{"QueueUrl": big, "MessageBody": repeatX(1<<20 + 1)}, invalid},
		{"body and attributes over 1 MiB", "SendMessage", params{"QueueUrl": big, "MessageBody": repeatX(1<<20 - 10), "MessageAttributes": map[string]params{"a": {"DataType": "String", "StringValue": repeatX(20)}}}, invalid},
		{"batch of 1 MiB + 1", "SendMessageBatch", params{"QueueUrl": big, "Entries": []params{{"Id": "a", "MessageBody": repeatX(1 << 19)}, {"Id": "b", "MessageBody": repeatX(1<<19 + 1)}}}, []string{"AWS.SimpleQueueService.BatchRequestTooLong"}},
		{"group id of 300", "SendMessage", fifoSend.with("MessageGroupId", repeatX(300)), invalid},
		{"group id of 300 in an entry", "SendMessageBatch", params{"QueueUrl": fifo, "Entries": entriesWith(1, "MessageBody", "bad", "MessageGroupId", repeatX(300), "MessageDeduplicationId", "d")}, invalid},
		{"dedup id of 129", "SendMessage", fifoSend.with("MessageDeduplicationId", repeatX(129)), invalid},
		{"group id with a space", "SendMessage", fifoSend.with("MessageGroupId", "a b"), invalid},
		{"11 message attributes", "SendMessage", stdSend.with("MessageAttributes", stringAttrs(11)), invalid},
		{"attribute name of 257", "SendMessage", stdSend.with("MessageAttributes", map[string]params{repeatX(257): {"DataType": "String", "StringValue": "v"}}), invalid},
		{"11 entries", "SendMessageBatch", params{"QueueUrl": fifo, "Entries": entriesWith(11, "MessageBody", "bad", "MessageGroupId", "g", "MessageDeduplicationId", "d")}, tooMany},
		{"11 entries", "DeleteMessageBatch", params{"QueueUrl": std, "Entries": entriesWith(11, "ReceiptHandle", "bogus")}, tooMany},
		{"11 entries", "ChangeMessageVisibilityBatch", params{"QueueUrl": std, "Entries": entriesWith(11, "ReceiptHandle", "bogus", "VisibilityTimeout", 5)}, tooMany},
		{"entry id of 81", "SendMessageBatch", params{"QueueUrl": fifo, "Entries": []params{{"Id": repeatX(81), "MessageBody": "bad", "MessageGroupId": "g", "MessageDeduplicationId": "d"}}}, []string{"AWS.SimpleQueueService.InvalidBatchEntryId"}},
		{"queue name of 81", "CreateQueue", params{"QueueName": repeatX(81)}, invalid},
		{"FIFO queue name of 81", "CreateQueue", params{"QueueName": repeatX(76) + ".fifo", "Attributes": map[string]string{"FifoQueue": "true"}}, invalid},
		{"queue name of 81", "GetQueueUrl", params{"QueueName": repeatX(81)}, []string{"InvalidParameterValue", "AWS.SimpleQueueService.NonExistentQueue"}},
		{"51 tags", "TagQueue", params{"QueueUrl": std, "Tags": tagMap(51)}, invalid},
		{"51 tags", "CreateQueue", params{"QueueName": "bad-created", "tags": tagMap(51)}, invalid},
		{"tag key of 129", "TagQueue", params{"QueueUrl": std, "Tags": map[string]string{repeatX(129): "v", "ok": "v"}}, invalid},
		{"tag value of 257", "TagQueue", params{"QueueUrl": std, "Tags": map[string]string{"k": repeatX(257)}}, invalid},
		{"label of 81", "AddPermission", byAction["AddPermission"].p.with("Label", repeatX(81)), invalid},
		{"Policy over 8 KiB", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"Policy": `{"Version":"2012-10-17","Id":"` + repeatX(8200) + `","Statement":[]}`}}, invalidAttr},
	} {
		add(badCase{name: r.name, action: r.action, p: r.p, codes: r.codes, entries: strings.HasSuffix(r.name, "in an entry")})
	}
	return cases
}

// unknownAttributeCases: attribute names SQS does not know.
func (sc badInputScene) unknownAttributeCases() []badCase {
	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	std, recv := sc.std, sc.byAction["ReceiveMessage"].p
	// Unknown attribute names.
	for _, r := range []struct {
		name   string
		action string
		p      params
	}{
		{"unknown name", "GetQueueAttributes", params{"QueueUrl": std, "AttributeNames": []string{"Bogus"}}},
		{"All and an unknown name", "GetQueueAttributes", params{"QueueUrl": std, "AttributeNames": []string{"All", "Bogus"}}},
		{"name in the wrong case", "GetQueueAttributes", params{"QueueUrl": std, "AttributeNames": []string{"visibilitytimeout"}}},
		{"unknown name", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"Bogus": "1"}}},
		{"known and unknown names", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"VisibilityTimeout": "46", "Bogus": "1"}}},
		{"read-only name", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"QueueArn": "arn:aws:sqs:us-east-1:" + Account + ":other"}}},
		{"FIFO-only name on a standard queue", "SetQueueAttributes", params{"QueueUrl": std, "Attributes": map[string]string{"ContentBasedDeduplication": "true"}}},
		{"unknown name", "CreateQueue", params{"QueueName": "bad-created", "Attributes": map[string]string{"Bogus": "1"}}},
		{"unknown system attribute name", "ReceiveMessage", recv.with("MessageSystemAttributeNames", []string{"Bogus"})},
		{"unknown deprecated attribute name", "ReceiveMessage", recv.with("AttributeNames", []string{"Bogus"})},
	} {
		add(badCase{name: r.name, action: r.action, p: r.p, codes: unknownAttr})
	}
	return cases
}

// repeatX returns n x's.
func repeatX(n int) string { return strings.Repeat("x", n) }

// stringAttrs returns n message attributes of type String.
func stringAttrs(n int) map[string]params {
	m := map[string]params{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("a%02d", i)] = params{"DataType": "String", "StringValue": "v"}
	}
	return m
}

// entriesWith returns n batch entries with distinct ids and the members kv.
func entriesWith(n int, kv ...any) []params {
	var out []params
	for i := 0; i < n; i++ {
		out = append(out, params{"Id": fmt.Sprintf("e%d", i)}.with(kv...))
	}
	return out
}

// tagMap returns n tags.
func tagMap(n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%02d", i)] = "v"
	}
	return m
}

// rawCase is a request body sent as it is.
type rawCase struct {
	name, proto string
	// target is the X-Amz-Target of a JSON case (see postJSON).
	target, body string
	codes        []string
	// status, when set, is the exact status wanted.
	status int
}

// actions are the 23 actions of the API.
var actions = []string{
	"AddPermission", "CancelMessageMoveTask", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch",
	"CreateQueue", "DeleteMessage", "DeleteMessageBatch", "DeleteQueue", "GetQueueAttributes", "GetQueueUrl",
	"ListDeadLetterSourceQueues", "ListMessageMoveTasks", "ListQueueTags", "ListQueues", "PurgeQueue",
	"ReceiveMessage", "RemovePermission", "SendMessage", "SendMessageBatch", "SetQueueAttributes",
	"StartMessageMoveTask", "TagQueue", "UntagQueue",
}

func rawBadInputCases(std string) []rawCase {
	var cases []rawCase
	form := func(action, rest string) string {
		return "Action=" + action + "&Version=2012-11-05&QueueUrl=" + std + rest
	}
	for _, a := range actions {
		cases = append(cases,
			rawCase{name: a + " broken JSON", proto: "json", target: a, body: `{"QueueUrl":"` + std + `",`, codes: serialize},
			rawCase{name: a + " JSON list", proto: "json", target: a, body: `["QueueUrl"]`, codes: serialize},
			rawCase{name: a + " JSON string", proto: "json", target: a, body: `"QueueUrl"`, codes: serialize},
			rawCase{name: a + " trailing garbage", proto: "json", target: a, body: `{"QueueUrl":"` + std + `"} x`, codes: serialize},
			rawCase{name: a + " bad percent escape", proto: "query", body: form(a, "&MessageBody=%zz"), codes: []string{"MalformedQueryString"}},
			rawCase{name: a + " truncated percent escape", proto: "query", body: form(a, "&Label=%4"), codes: []string{"MalformedQueryString"}},
			rawCase{name: a + " semicolon separator", proto: "query", body: form(a, ";Label=x"), codes: []string{"MalformedQueryString"}},
		)
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	cases = append(cases,
		// A JSON request that names no operation of SQS is an
		// UnknownOperationException, as AWS JSON services answer it.
		rawCase{name: "unknown action", proto: "json", target: "Frobnicate", body: "{}", codes: []string{"UnknownOperationException"}},
		rawCase{name: "action in the wrong case", proto: "json", target: "sendmessage", body: "{}", codes: []string{"UnknownOperationException"}},
		rawCase{name: "other service's target", proto: "json", target: "DynamoDB_20120810.ListTables", body: "{}", codes: []string{"UnknownOperationException"}},
		rawCase{name: "empty action", proto: "json", target: "AmazonSQS.", body: "{}", codes: []string{"UnknownOperationException"}},
		rawCase{name: "no target", proto: "json", target: "", body: "{}", codes: []string{"UnknownOperationException"}},
		rawCase{name: "deeply nested JSON", proto: "json", target: "SendMessage", body: `{"QueueUrl":"` + std + `","MessageBody":"x","MessageAttributes":` + deep + `}`, codes: serialize},
		rawCase{name: "invalid UTF-8 in a string", proto: "json", target: "SendMessage", body: `{"QueueUrl":"` + std + "\",\"MessageBody\":\"a\xffb\"}", codes: []string{"SerializationException", "InvalidMessageContents"}},
		rawCase{name: "lone surrogate escape", proto: "json", target: "SendMessage", body: `{"QueueUrl":"` + std + `","MessageBody":"a\ud800b"}`, codes: []string{"SerializationException", "InvalidMessageContents"}},
		rawCase{name: "request over 8 MiB", proto: "json", target: "SendMessage", body: `{"QueueUrl":"` + std + `","MessageBody":"` + strings.Repeat("x", 8<<20+1) + `"}`, codes: []string{"RequestEntityTooLarge"}, status: http.StatusRequestEntityTooLarge},
		rawCase{name: "unknown action", proto: "query", body: "Action=Frobnicate&Version=2012-11-05", codes: []string{"InvalidAction"}},
		rawCase{name: "action in the wrong case", proto: "query", body: "Action=sendmessage&Version=2012-11-05&QueueUrl=" + std + "&MessageBody=x", codes: []string{"InvalidAction"}},
		// SQS answers a Query request without an action 404
		// <UnknownOperationException/> (LocalStack's AWS-validated
		// test_get_without_query_returns_unknown_operation).
		rawCase{name: "no action", proto: "query", body: "Version=2012-11-05&QueueUrl=" + std, codes: []string{"UnknownOperationException"}, status: http.StatusNotFound},
		rawCase{name: "invalid UTF-8 in the body", proto: "query", body: form("SendMessage", "&MessageBody=a%FFb"), codes: []string{"InvalidMessageContents", "MalformedQueryString"}},
		rawCase{name: "index 0", proto: "query", body: form("GetQueueAttributes", "&AttributeName.0=All"), codes: []string{"InvalidQueryParameter", "MalformedQueryString", "InvalidParameterValue"}},
		rawCase{name: "index not a number", proto: "query", body: form("GetQueueAttributes", "&AttributeName.x=All"), codes: []string{"InvalidQueryParameter", "MalformedQueryString", "InvalidParameterValue"}},
		rawCase{name: "map given a bare value", proto: "query", body: form("SetQueueAttributes", "&Attribute=VisibilityTimeout"), codes: []string{"InvalidQueryParameter", "MissingParameter", "MalformedQueryString"}},
		rawCase{name: "attribute without a name", proto: "query", body: form("SetQueueAttributes", "&Attribute.1.Value=46"), codes: []string{"MissingParameter", "InvalidQueryParameter"}},
		rawCase{name: "request over 8 MiB", proto: "query", body: form("SendMessage", "&MessageBody="+strings.Repeat("x", 8<<20+1)), codes: []string{"RequestEntityTooLarge"}, status: http.StatusRequestEntityTooLarge},
	)
	return cases
}
