package integration

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Recordings of the second half of LocalStack's AWS-validated snapshot
// (the copy in localemu/localemu at 3098669, tests/aws/services/sqs/
// test_sqs.snapshot.json, recorded up to December 2025) that no other
// recorded test replays; the requests are those of test_sqs.py beside it.

// sweepSnapshot names the snapshot file in sources.
const sweepSnapshot = "localstack test_sqs.snapshot.json: "

// TestRecordedSweep2Errors replays recorded error answers of the second
// half of the snapshot.
func TestRecordedSweep2Errors(t *testing.T) {
	unknown := func(name string) awsAnswer {
		return awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName", Message: "Unknown Attribute " + name + "."}
	}
	create := func(attr, value string) func(t *testing.T, s *scene) (string, params) {
		return func(t *testing.T, s *scene) (string, params) {
			return "CreateQueue", params{"QueueName": "standard", "Attributes": map[string]string{attr: value}}
		}
	}
	runRecorded(t, []recordedCase{
		{
			name:   "FifoQueue false set on a standard queue",
			source: sweepSnapshot + "test_set_unsupported_attribute_standard/invalid-attr-name-2",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "standard", nil)
				return "SetQueueAttributes", params{"QueueUrl": u, "Attributes": map[string]string{"FifoQueue": "false"}}
			},
			want: unknown("FifoQueue"),
		},
		{
			name:   "standard queue created with FifoQueue false",
			source: sweepSnapshot + "test_create_standard_queue_with_fifo_attribute_raises_error/invalid-attribute-fifo-queue",
			call:   create("FifoQueue", "false"),
			want:   unknown("FifoQueue"),
		},
		{
			name:   "standard queue created with ContentBasedDeduplication",
			source: sweepSnapshot + "test_create_standard_queue_with_fifo_attribute_raises_error/invalid-attribute-content-based-deduplication",
			call:   create("ContentBasedDeduplication", "false"),
			want:   unknown("ContentBasedDeduplication"),
		},
		{
			name:   "standard queue created with DeduplicationScope",
			source: sweepSnapshot + "test_create_standard_queue_with_fifo_attribute_raises_error/invalid-attribute-deduplication-scope",
			call:   create("DeduplicationScope", "queue"),
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName",
				Message: "You can specify the DeduplicationScope only when FifoQueue is set to true."},
		},
		{
			name:   "standard queue created with FifoThroughputLimit",
			source: sweepSnapshot + "test_create_standard_queue_with_fifo_attribute_raises_error/invalid-attribute-throughput-limit",
			call:   create("FifoThroughputLimit", "perQueue"),
			want: awsAnswer{Status: http.StatusBadRequest, Code: "InvalidAttributeName",
				Message: "You can specify the FifoThroughputLimit only when FifoQueue is set to true."},
		},
		{
			name:   "GetQueueAttributes without names of a deleted queue",
			source: sweepSnapshot + "test_non_existent_queue/queue-does-not-exist, queue-does-not-exist-query",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "deleted", nil)
				ok(t, s.c.DeleteQueue(ctxT(t), u))
				return "GetQueueAttributes", params{"QueueUrl": u}
			},
			want: awsAnswer{Status: http.StatusBadRequest, Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist",
				Message:      "The specified queue does not exist.",
				QueryMessage: "The specified queue does not exist for this wsdl version."},
		},
		{
			name:   "AddPermission with a label already on the policy",
			source: sweepSnapshot + "test_sqs_permission_lifecycle/get-queue-policy-attribute-second-account-same-label",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "perms", nil)
				ok(t, s.c.AddPermission(ctxT(t), u, "crossaccountpermission", []string{Account}, []string{"ReceiveMessage"}))
				return "AddPermission", params{"QueueUrl": u, "Label": "crossaccountpermission",
					"AWSAccountIds": []string{"668614515564"}, "Actions": []string{"ReceiveMessage"}}
			},
			want: invalidParameter("Value crossaccountpermission for parameter Label is invalid. Reason: Already exists."),
		},
		{
			name:   "RemovePermission once every label is gone",
			source: sweepSnapshot + "test_sqs_permission_lifecycle/get-queue-policy-attribute-delete-non-existent-label",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "perms", nil)
				ctx := ctxT(t)
				for _, label := range []string{"crossaccountpermission", "crossaccountpermission2"} {
					ok(t, s.c.AddPermission(ctx, u, label, []string{Account}, []string{"ReceiveMessage"}))
				}
				for _, label := range []string{"crossaccountpermission", "crossaccountpermission2"} {
					ok(t, s.c.RemovePermission(ctx, u, label))
				}
				return "RemovePermission", params{"QueueUrl": u, "Label": "crossaccountpermission2"}
			},
			want: invalidParameter("Value crossaccountpermission2 for parameter Label is invalid. Reason: can't find label."),
		},
		{
			// A policy that still has statements keeps the older recording's
			// wording: no recording of this state was found, and the two
			// recordings differ only where the policy is gone.
			name:   "RemovePermission of a label missing from a policy",
			source: muleTests + "RemovePermissionTestCases.testRemovePermission (its wording)",
			call: func(t *testing.T, s *scene) (string, params) {
				u := s.queue(t, "perms", nil)
				ok(t, s.c.AddPermission(ctxT(t), u, "crossaccountpermission", []string{Account}, []string{"ReceiveMessage"}))
				return "RemovePermission", params{"QueueUrl": u, "Label": "crossaccountpermission2"}
			},
			want: invalidParameter("Value crossaccountpermission2 for parameter Label is invalid. Reason: can't find label on existing policy."),
		},
	})
}

// sweepAttrs posts GetQueueAttributes with p and returns the attributes
// answered, and whether the answer has an Attributes member at all.
func (s *scene) sweepAttrs(t *testing.T, p params) (map[string]string, bool) {
	t.Helper()
	r := s.post(t, "GetQueueAttributes", p)
	if r.status != http.StatusOK {
		t.Fatalf("GetQueueAttributes: HTTP %d: %.400s", r.status, r.body)
	}
	if s.proto == "json" {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("GetQueueAttributes answer: %v: %.400s", err, r.body)
		}
		raw, has := body["Attributes"]
		attrs := map[string]string{}
		if has {
			if err := json.Unmarshal(raw, &attrs); err != nil {
				t.Fatalf("Attributes: %v: %s", err, raw)
			}
		}
		return attrs, has
	}
	var body struct {
		Attribute []struct{ Name, Value string } `xml:"GetQueueAttributesResult>Attribute"`
	}
	if err := xml.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("GetQueueAttributes answer: %v: %.400s", err, r.body)
	}
	attrs := map[string]string{}
	for _, a := range body.Attribute {
		attrs[a.Name] = a.Value
	}
	return attrs, len(body.Attribute) > 0
}

// TestRecordedPermissionLifecycle replays localstack
// test_sqs.snapshot.json: test_sqs_permission_lifecycle: the policy
// AddPermission writes (one statement per label, Action and a single
// principal as strings, two principals as a list), RemovePermission of
// the last label leaves the queue with no Policy at all, and a second
// label adds a second statement.
func TestRecordedPermissionLifecycle(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		ctx := ctxT(t)
		u := s.queue(t, "perms", nil)
		arn := queueARN(t, s.c, u)
		type statement struct {
			Sid, Effect string
			Principal   struct{ AWS any }
			Action      any
			Resource    string
		}
		policy := func(key string) (id, version string, stmts []statement) {
			t.Helper()
			attrs, _ := s.sweepAttrs(t, params{"QueueUrl": u, "AttributeNames": []string{"Policy"}})
			var doc struct {
				Version, Id string
				Statement   []statement
			}
			if err := json.Unmarshal([]byte(attrs["Policy"]), &doc); err != nil {
				t.Fatalf("%s: Policy %q: %v", key, attrs["Policy"], err)
			}
			return doc.Id, doc.Version, doc.Statement
		}
		root := func(account string) string { return "arn:aws:iam::" + account + ":root" }
		wantStatements := func(key string, sids ...string) []statement {
			t.Helper()
			id, version, stmts := policy(key)
			if version != "2008-10-17" || !strings.HasPrefix(id, arn+"/") {
				t.Errorf("%s: Version %q Id %q, recorded 2008-10-17 and %s/...", key, version, id, arn)
			}
			var got []string
			for _, st := range stmts {
				got = append(got, st.Sid)
				if st.Effect != "Allow" || st.Action != "SQS:ReceiveMessage" || st.Resource != arn {
					t.Errorf("%s: statement %+v", key, st)
				}
			}
			if !slices.Equal(got, sids) {
				t.Errorf("%s: statements %v, recorded %v", key, got, sids)
			}
			return stmts
		}
		noPolicy := func(key string) {
			t.Helper()
			if attrs, has := s.sweepAttrs(t, params{"QueueUrl": u, "AttributeNames": []string{"Policy"}}); has {
				t.Errorf("%s: Attributes %v, recorded none", key, attrs)
			}
		}

		ok(t, s.c.AddPermission(ctx, u, "crossaccountpermission", []string{Account, "668614515564"}, []string{"ReceiveMessage"}))
		stmts := wantStatements("get-queue-policy-attribute", "crossaccountpermission")
		if list, _ := stmts[0].Principal.AWS.([]any); len(list) != 2 || !slices.Contains(list, any(root(Account))) || !slices.Contains(list, any(root("668614515564"))) {
			t.Errorf("get-queue-policy-attribute: Principal.AWS %v, recorded both accounts' roots", stmts[0].Principal.AWS)
		}
		ok(t, s.c.RemovePermission(ctx, u, "crossaccountpermission"))
		noPolicy("get-queue-policy-attribute-after-removal")

		ok(t, s.c.AddPermission(ctx, u, "crossaccountpermission", []string{Account}, []string{"ReceiveMessage"}))
		stmts = wantStatements("get-queue-policy-attribute-first-account-same-label", "crossaccountpermission")
		if stmts[0].Principal.AWS != root(Account) {
			t.Errorf("Principal.AWS %v, recorded %q", stmts[0].Principal.AWS, root(Account))
		}
		ok(t, s.c.AddPermission(ctx, u, "crossaccountpermission2", []string{Account}, []string{"ReceiveMessage"}))
		wantStatements("get-queue-policy-attribute-second-account-different-label", "crossaccountpermission", "crossaccountpermission2")
		ok(t, s.c.RemovePermission(ctx, u, "crossaccountpermission"))
		wantStatements("get-queue-policy-attribute-delete-first-permission", "crossaccountpermission2")
		ok(t, s.c.RemovePermission(ctx, u, "crossaccountpermission2"))
		noPolicy("get-queue-policy-attribute-delete-second-permission")
	})
}

// TestRecordedDefaultQueueAttributes replays localstack
// test_sqs.snapshot.json: test_set_queue_attributes_default_values: the
// attributes All lists for a new standard queue, the KMS attributes once
// set (which turn SqsManagedSseEnabled off), and their disappearance when
// set back to their defaults (SqsManagedSseEnabled stays off).
func TestRecordedDefaultQueueAttributes(t *testing.T) {
	const source = sweepSnapshot + "test_set_queue_attributes_default_values/"
	base := []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessagesNotVisible",
		"CreatedTimestamp", "DelaySeconds", "LastModifiedTimestamp", "MaximumMessageSize", "MessageRetentionPeriod", "QueueArn",
		"ReceiveMessageWaitTimeSeconds", "SqsManagedSseEnabled", "VisibilityTimeout"}
	values := map[string]string{"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesDelayed": "0", "ApproximateNumberOfMessagesNotVisible": "0",
		"DelaySeconds": "0", "MaximumMessageSize": "1048576", "MessageRetentionPeriod": "345600", "ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "30"}
	seconds := regexp.MustCompile(`^[1-9][0-9]{9}$`)
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "defaults", nil)
		arn := queueARN(t, s.c, u)
		check := func(key, sse string, extra map[string]string) {
			t.Helper()
			got, _ := s.sweepAttrs(t, params{"QueueUrl": u, "AttributeNames": []string{"All"}})
			want := slices.Clone(base)
			for k := range extra {
				want = append(want, k)
			}
			slices.Sort(want)
			if keys := sortedKeys(got); !slices.Equal(keys, want) {
				t.Errorf("%s: attributes %v, recorded %v (%s)", key, keys, want, source+key)
			}
			for k, v := range values {
				if got[k] != v {
					t.Errorf("%s: %s = %q, recorded %q", key, k, got[k], v)
				}
			}
			for k, v := range extra {
				if got[k] != v {
					t.Errorf("%s: %s = %q, recorded %q", key, k, got[k], v)
				}
			}
			if got["SqsManagedSseEnabled"] != sse || got["QueueArn"] != arn ||
				!seconds.MatchString(got["CreatedTimestamp"]) || !seconds.MatchString(got["LastModifiedTimestamp"]) {
				t.Errorf("%s: %v", key, got)
			}
		}
		check("get-queue-attributes-initial-values", "true", nil)
		ok(t, s.c.SetAttrs(ctxT(t), u, map[string]string{"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"}))
		check("get-queue-attributes-after-update", "false", map[string]string{"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"})
		ok(t, s.c.SetAttrs(ctxT(t), u, map[string]string{"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"}))
		check("get-queue-attributes-after-set-to-defaults", "false", nil)
	})
}

// TestRecordedEmptyRedrivePolicy replays localstack test_sqs.py
// test_set_empty_redrive_policy (AWS-validated, its snapshot empty): an
// empty RedrivePolicy is taken and lists no RedrivePolicy, and it removes
// one that was set.
func TestRecordedEmptyRedrivePolicy(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		dlq := mustCreate(t, c, "dl-queue", nil)
		arn := queueARN(t, c, dlq)
		ok(t, c.SetAttrs(ctx, "dl-queue", map[string]string{"RedrivePolicy": ""}))
		if got := must(c.GetAttrs(ctx, "dl-queue", "All"))(t); got["RedrivePolicy"] != "" {
			t.Errorf("RedrivePolicy %q after setting it empty", got["RedrivePolicy"])
		}
		ok(t, c.SetAttrs(ctx, dlq, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"42"}`}))
		if got := must(c.GetAttrs(ctx, dlq, "All"))(t); !strings.Contains(got["RedrivePolicy"], arn) {
			t.Errorf("RedrivePolicy %q, want one naming %s", got["RedrivePolicy"], arn)
		}
		// A queue that is its own dead-letter queue keeps its messages
		// however often they are received (what SQS does with them is not
		// recorded; fifoq never moves a message to the queue it is in).
		ok(t, c.SetAttrs(ctx, dlq, map[string]string{"RedrivePolicy": redrivePolicy(arn, 1), "VisibilityTimeout": "0"}))
		mustSend(t, c, dlq, SendIn{Body: "loop"})
		for range 3 {
			wantBodies(t, mustReceive(t, c, dlq, 1), "loop")
		}
		ok(t, c.SetAttrs(ctx, dlq, map[string]string{"RedrivePolicy": ""}))
		if _, has := must(c.GetAttrs(ctx, dlq, "All"))(t)["RedrivePolicy"]; has {
			t.Errorf("RedrivePolicy still listed after setting it empty")
		}
	})
}

// TestRecordedListQueuesPagination replays localstack
// test_sqs.snapshot.json: test_list_queues_pagination: ListQueues answers
// the queues of a prefix in name order, MaxResults cuts the list and
// answers a NextToken, and the last page has none.
func TestRecordedListQueuesPagination(t *testing.T) {
	const source = sweepSnapshot + "test_list_queues_pagination/"
	t.Run("pages", func(t *testing.T) { listQueuesPages(t, source) })
	t.Run("members", func(t *testing.T) { listQueuesMembers(t, source) })
}

// listQueuesPages checks the pages of test_list_queues_pagination.
func listQueuesPages(t *testing.T, source string) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		var urls []string
		for i := range 10 {
			urls = append(urls, mustCreate(t, c, fmt.Sprintf("7f7df0f5-test-queue-%d", i), nil))
		}
		mustCreate(t, c, "other", nil)
		all, next, err := c.ListQueues(ctx, "7f7df0f5", 0, "")
		ok(t, err)
		if !slices.Equal(all, urls) || next != "" {
			t.Errorf("list_all: %v, NextToken %q (%s)", all, next, source+"list_all")
		}
		two, next, err := c.ListQueues(ctx, "7f7df0f5", 2, "")
		ok(t, err)
		if !slices.Equal(two, urls[:2]) || next == "" {
			t.Fatalf("list_two_max: %v, NextToken %q (%s)", two, next, source+"list_two_max")
		}
		rest, next, err := c.ListQueues(ctx, "7f7df0f5", 10, next)
		ok(t, err)
		if !slices.Equal(rest, urls[2:]) || next != "" {
			t.Errorf("list_remaining: %v, NextToken %q (%s)", rest, next, source+"list_remaining")
		}
	})
}

// listQueuesMembers checks that the last page and an unpaged list have no
// NextToken member at all.
func listQueuesMembers(t *testing.T, source string) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		for i := range 3 {
			mustCreate(t, s.c, fmt.Sprintf("7f7df0f5-test-queue-%d", i), nil)
		}
		// The Query protocol's list is flattened: one QueueUrl per queue.
		urls := "QueueUrls"
		if s.proto == "query" {
			urls = "QueueUrl"
		}
		for _, p := range []params{{"QueueNamePrefix": "7f7df0f5"}, {"QueueNamePrefix": "7f7df0f5", "MaxResults": 10}} {
			if got := s.sweepMembers(t, "ListQueues", p); !slices.Equal(got, []string{urls}) {
				t.Errorf("ListQueues %v: members %v, recorded QueueUrls only (%s)", p, got, source+"list_all, list_remaining")
			}
		}
		if got := s.sweepMembers(t, "ListQueues", params{"QueueNamePrefix": "7f7df0f5", "MaxResults": 2}); !slices.Equal(got, []string{"NextToken", urls}) {
			t.Errorf("ListQueues MaxResults 2: members %v, recorded NextToken and QueueUrls (%s)", got, source+"list_two_max")
		}
	})
}

// TestRecordedReceiveEmptyQueue replays localstack test_sqs.snapshot.json:
// test_receive_empty_queue: a receive from an empty queue, short or long
// poll, answers 200 with no Messages member at all.
func TestRecordedReceiveEmptyQueue(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		u := s.queue(t, "empty", nil)
		for key, p := range map[string]params{
			"empty_short_poll_resp_no_param": {"QueueUrl": u},
			"empty_short_poll_resp":          {"QueueUrl": u, "MaxNumberOfMessages": 1},
			"empty_long_poll_resp":           {"QueueUrl": u, "MaxNumberOfMessages": 1, "WaitTimeSeconds": 1},
		} {
			if _, long := p["WaitTimeSeconds"]; long {
				advanceWhenWaiting(t, s.env, 1, time.Second)
			}
			r := s.post(t, "ReceiveMessage", p)
			if r.status != http.StatusOK {
				t.Fatalf("%s: HTTP %d: %.400s", key, r.status, r.body)
			}
			if s.proto == "json" {
				var body map[string]any
				if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 0 {
					t.Errorf("%s: answer %s, recorded no members", key, r.body)
				}
			} else if strings.Contains(string(r.body), "<Message>") {
				t.Errorf("%s: answer %s, recorded no messages", key, r.body)
			}
		}
	})
}

// TestRecordedReceiveCountAndTimestamps replays the values of localstack
// test_sqs.snapshot.json: test_receive_message_attribute_names_filters and
// test_receive_message_message_system_attribute_names_filters: on a queue
// of visibility timeout 0 every receive counts (1, then 2), timestamps are
// epoch milliseconds, and a message received without message attributes
// has neither MessageAttributes nor MD5OfMessageAttributes.
func TestRecordedReceiveCountAndTimestamps(t *testing.T) {
	millis := regexp.MustCompile(`^[1-9][0-9]{12}$`)
	for _, list := range []string{"AttributeNames", "MessageSystemAttributeNames"} {
		t.Run(list, func(t *testing.T) {
			msgProtocols(t, func(t *testing.T, s *scene) {
				u := s.queue(t, "q", map[string]string{"VisibilityTimeout": "0"})
				mustSend(t, s.c, u, SendIn{Body: "msg", Attrs: map[string]Attr{"Foo": {DataType: "String", String: "Bar"}}})
				for i, count := range []string{"1", "2"} {
					p := params{"QueueUrl": u, list: []string{"All"}}
					if i == 1 {
						p["MessageAttributeNames"] = []string{"All"}
					}
					m := s.msgReceiveOne(t, p)
					if m.Sys["ApproximateReceiveCount"] != count || !millis.MatchString(m.Sys["SentTimestamp"]) ||
						!millis.MatchString(m.Sys["ApproximateFirstReceiveTimestamp"]) || m.Sys["SenderId"] == "" {
						t.Errorf("receive %d: %v, recorded ApproximateReceiveCount %s", i+1, m.Sys, count)
					}
					if i == 0 && (m.Attrs != nil || m.MD5Attrs != "") {
						t.Errorf("all_attributes: message attributes %v, MD5 %q, recorded none", m.Attrs, m.MD5Attrs)
					}
				}
			})
		})
	}
}

// TestRecordedMessageGroupScopeWithoutThroughput replays localstack
// test_sqs.snapshot.json: test_sqs_fifo_message_group_scope_no_throughput_setting:
// DeduplicationScope messageGroup is taken without FifoThroughputLimit,
// and then the same content in another group is no duplicate.
func TestRecordedMessageGroupScopeWithoutThroughput(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "scope.fifo", fifoAttrs("ContentBasedDeduplication", "True", "DeduplicationScope", "messageGroup"))
		first := mustSend(t, c, u, SendIn{Body: "Test", Group: "group1"})
		got := mustReceive(t, c, u, 1)
		wantBodies(t, got, "Test")
		mustDelete(t, c, u, got...)
		second := mustSend(t, c, u, SendIn{Body: "Test", Group: "group2"})
		got = mustReceive(t, c, u, 1)
		wantBodies(t, got, "Test")
		if second.ID == first.ID || got[0].ID != second.ID || got[0].MD5Body != "0cbc6611f5540bd0809a388dc95a615b" {
			t.Errorf("same-dedup-different-grp-2: %+v after sends %s and %s", got[0], first.ID, second.ID)
		}
	})
}

// TestRecordedDedupIDOf128 replays localstack test_sqs.py
// test_message_deduplication_id_success (AWS-validated, its snapshot
// empty): a MessageDeduplicationId of 128 characters is taken.
func TestRecordedDedupIDOf128(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		u := mustCreate(t, c, "dedup.fifo", fifoAttrs())
		mustSend(t, c, u, SendIn{Body: "Hello World!", Group: "test", Dedup: strings.Repeat("a", 128)})
	})
}

// TestRecordedFIFODeadLetterContentDedup replays localstack test_sqs.py
// test_dead_letter_queue_with_fifo_and_content_based_deduplication
// (AWS-validated, its snapshot empty): a FIFO message received
// maxReceiveCount times goes, on the next receive, to the FIFO DLQ with its
// MessageId, and its group in the source takes new messages.
func TestRecordedFIFODeadLetterContentDedup(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		dlq := mustCreate(t, s.c, "test-dlq.fifo", fifoAttrs("ContentBasedDeduplication", "true", "MessageRetentionPeriod", "1209600"))
		u := mustCreate(t, s.c, "test-queue.fifo", fifoAttrs("ContentBasedDeduplication", "true", "VisibilityTimeout", "60",
			"RedrivePolicy", redrivePolicy(queueARN(t, s.c, dlq), 2)))
		sent := mustSend(t, s.c, u, SendIn{Body: "foobar", Group: "1"})
		for range 3 {
			s.msgReceive(t, params{"QueueUrl": u, "VisibilityTimeout": 0})
		}
		got := mustReceive(t, s.c, dlq, 10)
		if len(got) != 1 || got[0].ID != sent.ID || got[0].Body != "foobar" {
			t.Fatalf("DLQ received %+v, want the message %s", got, sent.ID)
		}
		second := mustSend(t, s.c, u, SendIn{Body: "foobar2", Group: "1"})
		got = mustReceive(t, s.c, u, 1)
		if len(got) != 1 || got[0].ID != second.ID || got[0].Body != "foobar2" {
			t.Errorf("source queue received %+v, want foobar2", got)
		}
	})
}

// TestRecordedApproximateNotVisible replays localstack test_sqs.py
// test_approximate_number_of_messages_not_visible and
// test_fifo_approximate_number_of_messages_not_visible (AWS-validated,
// their snapshots empty): only the messages received count as not visible
// (in a FIFO queue, not the rest of their groups), until their visibility
// timeout runs out.
func TestRecordedApproximateNotVisible(t *testing.T) {
	counts := func(t *testing.T, c Client, u string) string {
		t.Helper()
		a := must(c.GetAttrs(ctxT(t), u, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"))(t)
		return a["ApproximateNumberOfMessages"] + "/" + a["ApproximateNumberOfMessagesNotVisible"] + "/" + a["ApproximateNumberOfMessagesDelayed"]
	}
	t.Run("standard", func(t *testing.T) {
		eachProtocol(t, func(t *testing.T, env *Env, c Client) {
			u := mustCreate(t, c, "q", map[string]string{"VisibilityTimeout": "60"})
			for i := 1; i <= 6; i++ {
				mustSend(t, c, u, SendIn{Body: fmt.Sprintf("message-%d", i)})
			}
			mustReceive(t, c, u, 1)
			if got := counts(t, c, u); got != "5/1/0" {
				t.Errorf("before the visibility timeout: %s, recorded 5/1/0", got)
			}
			env.Clock.Advance(61 * time.Second)
			if got := counts(t, c, u); got != "6/0/0" {
				t.Errorf("after the visibility timeout: %s, recorded 6/0/0", got)
			}
		})
	})
	t.Run("fifo", func(t *testing.T) {
		eachProtocol(t, func(t *testing.T, env *Env, c Client) {
			u := mustCreate(t, c, "q.fifo", fifoAttrs("ContentBasedDeduplication", "True", "VisibilityTimeout", "60"))
			for i := 1; i <= 6; i++ {
				mustSend(t, c, u, SendIn{Body: fmt.Sprintf("message-%d", i), Group: fmt.Sprint((i + 1) / 2)})
			}
			for _, group := range []string{"1", "2"} {
				got := mustReceive(t, c, u, 1)
				if len(got) != 1 || got[0].Sys["MessageGroupId"] != group {
					t.Fatalf("received %+v, recorded one message of group %s", got, group)
				}
			}
			if got := counts(t, c, u); got != "4/2/0" {
				t.Errorf("before the visibility timeout: %s, recorded 4/2/0", got)
			}
			env.Clock.Advance(61 * time.Second)
			if got := counts(t, c, u); got != "6/0/0" {
				t.Errorf("after the visibility timeout: %s, recorded 6/0/0", got)
			}
		})
	})
}

// TestRecordedJSONAtQueueURLContentType replays the header localstack
// test_sqs.py TestSqsQueryApi::test_send_message_via_queue_url_with_json_protocol
// (AWS-validated) asserts beside its snapshot: a JSON request posted to a
// queue's URL is answered in JSON, Content-Type application/x-amz-json-1.0.
func TestRecordedJSONAtQueueURLContentType(t *testing.T) {
	t.Parallel()
	env := Start(t)
	q := mustCreate(t, v2Client{env.V2}, "json-at-url", nil)
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, q, strings.NewReader(`{"QueueUrl":"`+q+`","WaitTimeSeconds":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	advanceWhenWaiting(t, env, 1, time.Second)
	r := rawDo(t, env, req)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/x-amz-json-1.0" || strings.TrimSpace(string(r.body)) != "{}" {
		t.Errorf("HTTP %d, Content-Type %q, body %s; recorded 200, application/x-amz-json-1.0, no members", r.status, r.header.Get("Content-Type"), r.body)
	}
}

// sweepMembers posts action with p, fails unless it answers 200, and
// returns the names of the answer's members: the JSON object's keys, or
// the Query result element's children.
func (s *scene) sweepMembers(t *testing.T, action string, p params) []string {
	t.Helper()
	r := s.post(t, action, p)
	if r.status != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %.400s", action, r.status, r.body)
	}
	if s.proto == "json" {
		var body map[string]json.RawMessage
		if len(strings.TrimSpace(string(r.body))) == 0 {
			return nil
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("%s answer: %v: %.400s", action, err, r.body)
		}
		return sortedKeys(body)
	}
	// <ActionResponse><ActionResult><Member>: the members are at depth 3;
	// ResponseMetadata's RequestId is at that depth too and is no member.
	dec := xml.NewDecoder(strings.NewReader(string(r.body)))
	depth := 0
	var names []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 3 && el.Name.Local != "RequestId" {
				names = append(names, el.Name.Local)
			}
		case xml.EndElement:
			depth--
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestRecordedSweep2AnswerMembers replays the members of recorded success
// answers: a send to a standard queue answers MD5OfMessageBody and
// MessageId only (localstack test_sqs.snapshot.json:
// test_fair_queue_with_message_group_id/send_message), a FIFO send adds
// SequenceNumber
// (test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay/send_message_result),
// AddPermission and RemovePermission answer nothing
// (test_sqs_permission_lifecycle/add-permission-response,
// remove-permission-response), and a message received without attribute
// names has Body, MD5OfBody, MessageId and ReceiptHandle only, in a FIFO
// queue too (test_sqs_fifo_message_group_scope_no_throughput_setting/same-dedup-different-grp-1).
func TestRecordedSweep2AnswerMembers(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		std := s.queue(t, "std", nil)
		fifo := mustCreate(t, s.c, "q.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
		want := func(key string, got []string, members ...string) {
			t.Helper()
			if !slices.Equal(got, members) {
				t.Errorf("%s: members %v, recorded %v", key, got, members)
			}
		}
		want("send_message", s.sweepMembers(t, "SendMessage", params{"QueueUrl": std, "MessageBody": "message", "MessageGroupId": "test"}),
			"MD5OfMessageBody", "MessageId")
		want("send_message_result", s.sweepMembers(t, "SendMessage", params{"QueueUrl": fifo, "MessageBody": "message-1", "MessageGroupId": "1", "DelaySeconds": 0}),
			"MD5OfMessageBody", "MessageId", "SequenceNumber")
		want("add-permission-response", s.sweepMembers(t, "AddPermission", params{"QueueUrl": std, "Label": "crossaccountpermission",
			"AWSAccountIds": []string{Account}, "Actions": []string{"ReceiveMessage"}}))
		want("remove-permission-response", s.sweepMembers(t, "RemovePermission", params{"QueueUrl": std, "Label": "crossaccountpermission"}))
		for _, u := range []string{std, fifo} {
			got := s.msgReceive(t, params{"QueueUrl": u})
			if len(got) != 1 || got[0].Sys != nil || got[0].Attrs != nil || got[0].MD5Attrs != "" {
				t.Errorf("receive from %s: %+v, recorded Body, MD5OfBody, MessageId and ReceiptHandle only", u, got)
			}
		}
	})
}

// TestRecordedMoveTaskThroughputLimit replays localstack
// test_sqs_move_task.snapshot.json: test_move_task_with_throughput_limit
// (and the assertion of test_sqs_move_task.py beside it): a task of
// MaxNumberOfMessagesPerSecond 1 answers a TaskHandle and takes at least
// three seconds to move four messages.
func TestRecordedMoveTaskThroughputLimit(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		ctx := ctxT(t)
		dlq, src, dest, dlqARN, destARN := s.dlqPipe(t)
		deadLetter(t, s, src, dlq, 4)
		if h := must(s.c.StartMove(ctx, dlqARN, destARN, 1))(t); h == "" {
			t.Fatalf("start-message-move-task-response: no TaskHandle")
		}
		s.env.Clock.Advance(2500 * time.Millisecond)
		if n := numAttr(t, s.c, dest, "ApproximateNumberOfMessages"); n >= 4 {
			t.Errorf("%d messages moved within 2.5 s at 1 per second, recorded at least 3 s for 4", n)
		}
		s.env.Clock.Advance(2 * time.Second)
		eventually(t, 5*time.Second, "all four messages moved", func() bool {
			return numAttr(t, s.c, dest, "ApproximateNumberOfMessages") == 4
		})
		// deadLetter names its messages message--0 to message--3.
		wantBodies(t, drainSorted(t, s.c, dest), "message--0", "message--1", "message--2", "message--3")
	})
}

// drainSorted receives every message of a standard queue and returns them
// ordered by body.
func drainSorted(t *testing.T, c Client, url string) []Msg {
	t.Helper()
	var out []Msg
	for range 10 {
		got := mustReceive(t, c, url, 10)
		if len(got) == 0 {
			break
		}
		out = append(out, got...)
	}
	slices.SortFunc(out, func(a, b Msg) int { return strings.Compare(a.Body, b.Body) })
	return out
}

// TestRecordedMoveTaskCancelAnswer replays localstack
// test_sqs_move_task.snapshot.json: test_move_task_cancel/cancel: the
// answer to CancelMessageMoveTask has ApproximateNumberOfMessagesMoved,
// 0 when nothing was moved yet.
func TestRecordedMoveTaskCancelAnswer(t *testing.T) {
	msgProtocols(t, func(t *testing.T, s *scene) {
		dlq, src, _, dlqARN, destARN := s.dlqPipe(t)
		deadLetter(t, s, src, dlq, 10)
		handle := must(s.c.StartMove(ctxT(t), dlqARN, destARN, 1))(t)
		r := s.post(t, "CancelMessageMoveTask", params{"TaskHandle": handle})
		if r.status != http.StatusOK {
			t.Fatalf("cancel: HTTP %d: %.400s", r.status, r.body)
		}
		body := strings.Join(strings.Fields(string(r.body)), "")
		if !strings.Contains(body, `"ApproximateNumberOfMessagesMoved":0`) && !strings.Contains(body, "<ApproximateNumberOfMessagesMoved>0</ApproximateNumberOfMessagesMoved>") {
			t.Errorf("cancel: %s, recorded ApproximateNumberOfMessagesMoved 0", r.body)
		}
	})
}
