package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

func TestQueueDefaults(t *testing.T) {
	h := newHarness(t)
	created := strconv.FormatInt(t0/1e9, 10)
	tests := []struct {
		name  string
		attrs map[string]string
		want  map[string]string
	}{
		{"q", nil, map[string]string{
			"VisibilityTimeout": "30", "MaximumMessageSize": "1048576", "MessageRetentionPeriod": "345600",
			"DelaySeconds": "0", "ReceiveMessageWaitTimeSeconds": "0", "SqsManagedSseEnabled": "true",
			"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
			"CreatedTimestamp": created, "LastModifiedTimestamp": created, "QueueArn": "arn:aws:sqs:us-east-1:000000000000:q",
		}},
		{"f.fifo", map[string]string{"FifoQueue": "true"}, map[string]string{
			"VisibilityTimeout": "30", "MaximumMessageSize": "1048576", "MessageRetentionPeriod": "345600",
			"DelaySeconds": "0", "ReceiveMessageWaitTimeSeconds": "0", "SqsManagedSseEnabled": "true",
			"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
			"CreatedTimestamp": created, "LastModifiedTimestamp": created, "QueueArn": "arn:aws:sqs:us-east-1:000000000000:f.fifo",
			"FifoQueue": "true", "ContentBasedDeduplication": "false", "DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue",
		}},
		{"kms", map[string]string{"KmsMasterKeyId": "alias/aws/sqs"}, map[string]string{
			"VisibilityTimeout": "30", "MaximumMessageSize": "1048576", "MessageRetentionPeriod": "345600",
			"DelaySeconds": "0", "ReceiveMessageWaitTimeSeconds": "0", "SqsManagedSseEnabled": "false",
			"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "300",
			"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
			"CreatedTimestamp": created, "LastModifiedTimestamp": created, "QueueArn": "arn:aws:sqs:us-east-1:000000000000:kms",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := h.createQueue(tc.name, tc.attrs)
			if got := h.attrs(q); !maps.Equal(got, tc.want) {
				t.Errorf("attributes:\n got %v\nwant %v", got, tc.want)
			}
			got := h.attrs(q, "VisibilityTimeout", "QueueArn")
			if len(got) != 2 || got["VisibilityTimeout"] != "30" {
				t.Errorf("named attributes = %v", got)
			}
			if got := h.attrs(q, "VisibilityTimeout", "All"); len(got) != len(tc.want) {
				t.Errorf("All with a name returned %d attributes", len(got))
			}
		})
	}
	_, err := h.raw(api.QueueKey{Account: testAccount, Name: "q"}, &api.GetQueueAttributesRequest{AttributeNames: []string{"Nope"}})
	wantCode(t, err, "InvalidAttributeName")
}

func TestCreateQueueRules(t *testing.T) {
	tests := []struct {
		name  string
		queue string
		attrs map[string]string
		code  string
	}{
		{"fifo attribute without the suffix", "plain", map[string]string{"FifoQueue": "true"}, "InvalidParameterValue"},
		{"suffix without the fifo attribute", "plain.fifo", nil, "InvalidParameterValue"},
		{"fifo false on a fifo name", "plain.fifo", map[string]string{"FifoQueue": "false"}, "InvalidParameterValue"},
		{"fifo false on a standard queue", "plain", map[string]string{"FifoQueue": "false"}, "InvalidAttributeName"},
		{"content-based dedup on a standard queue", "plain", map[string]string{"ContentBasedDeduplication": "true"}, "InvalidAttributeName"},
		{"dedup scope on a standard queue", "plain", map[string]string{"DeduplicationScope": "queue"}, "InvalidAttributeName"},
		{"throughput limit on a standard queue", "plain", map[string]string{"FifoThroughputLimit": "perQueue"}, "InvalidAttributeName"},
		{"per group throughput needs group dedup", "f.fifo", map[string]string{"FifoQueue": "true", "FifoThroughputLimit": "perMessageGroupId"}, "InvalidAttributeValue"},
		{"bad value", "plain", map[string]string{"VisibilityTimeout": "43201"}, "InvalidAttributeValue"},
		{"read-only attribute", "plain", map[string]string{"QueueArn": "x"}, "InvalidAttributeName"},
		{"two encryptions", "plain", map[string]string{"SqsManagedSseEnabled": "true", "KmsMasterKeyId": "k"}, "InvalidAttributeName"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// raw: these are the engine's own checks, whatever api.Validate
			// catches first.
			_, err := h.raw(api.QueueKey{}, &api.CreateQueueRequest{QueueName: tc.queue, Attributes: tc.attrs})
			wantCode(t, err, tc.code)
			if len(h.e.queues) != 0 {
				t.Errorf("a refused CreateQueue created a queue")
			}
		})
	}
	t.Run("fifo attribute without the suffix, message", func(t *testing.T) {
		h := newHarness(t)
		_, err := h.raw(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "plain", Attributes: map[string]string{"FifoQueue": "true"}})
		ae := wantCode(t, err, "InvalidParameterValue")
		if ae.Message != "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length." {
			t.Errorf("message = %q", ae.Message)
		}
	})
}

func TestCreateExistingQueue(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", map[string]string{"VisibilityTimeout": "60", "DelaySeconds": "5"})
	h.createQueue("q", map[string]string{"VisibilityTimeout": "60"})
	h.createQueue("q", nil)
	_, err := h.do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "q", Attributes: map[string]string{"VisibilityTimeout": "61"}})
	if ae := wantCode(t, err, "QueueNameExists"); ae.QueryCode != "QueueAlreadyExists" {
		t.Errorf("query code %s", ae.QueryCode)
	}
	// Another account has its own namespace.
	h.caller = "111111111111"
	h.createQueue("q", map[string]string{"VisibilityTimeout": "1"})
	h.caller = testAccount

	h.must(q, &api.DeleteQueueRequest{QueueUrl: q.Path()})
	_, err = h.do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "q"})
	wantCode(t, err, "QueueDeletedRecently")
	h.advance(60 * time.Second)
	h.createQueue("q", nil)
	if a := h.attrs(q, "VisibilityTimeout"); a["VisibilityTimeout"] != "30" {
		t.Errorf("recreated queue kept old attributes: %v", a)
	}
}

func TestDeletedQueueHandles(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	h.send(q, &api.SendMessageRequest{MessageBody: "a"})
	m := h.receive(q, 1, -1)[0]
	h.must(q, &api.DeleteQueueRequest{QueueUrl: q.Path()})
	wantCode(t, h.deleteMsg(q, m.ReceiptHandle), "QueueDoesNotExist")
	h.advance(time.Minute)
	h.createQueue("q", nil)
	// A handle of the old incarnation does not resolve in the new queue.
	wantCode(t, h.deleteMsg(q, m.ReceiptHandle), "ReceiptHandleIsInvalid")
}

func TestSetQueueAttributes(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("q.fifo", nil)
	h.advance(10 * time.Second)
	h.must(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: map[string]string{
		"VisibilityTimeout": "45", "ContentBasedDeduplication": "true", "DeduplicationScope": "messageGroup",
		"FifoThroughputLimit": "perMessageGroupId", "FifoQueue": "true",
	}})
	a := h.attrs(q)
	if a["VisibilityTimeout"] != "45" || a["ContentBasedDeduplication"] != "true" || a["FifoThroughputLimit"] != "perMessageGroupId" {
		t.Errorf("attributes after set: %v", a)
	}
	if a["LastModifiedTimestamp"] != strconv.FormatInt(h.now/1e9, 10) || a["CreatedTimestamp"] == a["LastModifiedTimestamp"] {
		t.Errorf("timestamps: created %s, modified %s", a["CreatedTimestamp"], a["LastModifiedTimestamp"])
	}
	tests := []struct {
		name  string
		attrs map[string]string
		code  string
	}{
		// "Modifying queue type is not supported.", whatever the value.
		{"fifo to standard", map[string]string{"FifoQueue": "false"}, "InvalidAttributeValue"},
		{"fifo queue not a boolean", map[string]string{"FifoQueue": "yes"}, "InvalidAttributeValue"},
		{"group throughput without group dedup", map[string]string{"DeduplicationScope": "queue"}, "InvalidAttributeValue"},
		{"bad value rolls back the whole request", map[string]string{"DelaySeconds": "5", "VisibilityTimeout": "-1"}, "InvalidAttributeValue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.do(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: tc.attrs})
			wantCode(t, err, tc.code)
			if got := h.attrs(q); !maps.Equal(got, a) {
				t.Errorf("a refused request changed attributes: %v", got)
			}
		})
	}
	std := h.createQueue("std", nil)
	_, err := h.do(std, &api.SetQueueAttributesRequest{QueueUrl: std.Path(), Attributes: map[string]string{"FifoQueue": "true"}})
	wantCode(t, err, "InvalidAttributeName")
	// FifoQueue=true (any case) on a FIFO queue changes nothing and is accepted.
	h.must(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: map[string]string{"FifoQueue": "True"}})
	_, err = h.do(std, &api.SetQueueAttributesRequest{QueueUrl: std.Path(), Attributes: map[string]string{"ContentBasedDeduplication": "true"}})
	wantCode(t, err, "InvalidAttributeName")
	// Choosing one encryption turns the other off.
	h.must(std, &api.SetQueueAttributesRequest{QueueUrl: std.Path(), Attributes: map[string]string{"KmsMasterKeyId": "k"}})
	if a := h.attrs(std); a["SqsManagedSseEnabled"] != "false" || a["KmsMasterKeyId"] != "k" {
		t.Errorf("after KMS: %v", a)
	}
	h.must(std, &api.SetQueueAttributesRequest{QueueUrl: std.Path(), Attributes: map[string]string{"SqsManagedSseEnabled": "true"}})
	if a := h.attrs(std); a["SqsManagedSseEnabled"] != "true" || a["KmsMasterKeyId"] != "" {
		t.Errorf("after SSE-SQS: %v", a)
	}
}

func TestListQueuesAndGetQueueURL(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"b", "a", "c1", "c2", "c3"} {
		h.createQueue(n, nil)
	}
	h.caller = "111111111111"
	h.createQueue("other", nil)
	h.caller = testAccount

	list := func(prefix, token string, max *int) *api.ListQueuesResult {
		t.Helper()
		return h.must(api.QueueKey{}, &api.ListQueuesRequest{QueueNamePrefix: prefix, NextToken: token, MaxResults: max}).(*api.ListQueuesResult)
	}
	if got := list("", "", nil); !slices.Equal(got.QueueUrls, []string{"/000000000000/a", "/000000000000/b", "/000000000000/c1", "/000000000000/c2", "/000000000000/c3"}) || got.NextToken != "" {
		t.Errorf("ListQueues = %+v", got)
	}
	if got := list("c", "", nil); len(got.QueueUrls) != 3 {
		t.Errorf("prefix c = %v", got.QueueUrls)
	}
	var pages [][]string
	tok := ""
	for {
		res := list("", tok, intp(2))
		pages = append(pages, res.QueueUrls)
		if res.NextToken == "" {
			break
		}
		tok = res.NextToken
	}
	if fmt.Sprint(pages) != "[[/000000000000/a /000000000000/b] [/000000000000/c1 /000000000000/c2] [/000000000000/c3]]" {
		t.Errorf("pages = %v", pages)
	}
	_, err := h.do(api.QueueKey{}, &api.ListQueuesRequest{NextToken: "garbage!"})
	wantCode(t, err, "InvalidParameterValue")

	got := h.must(api.QueueKey{}, &api.GetQueueUrlRequest{QueueName: "c2"}).(*api.GetQueueUrlResult)
	if got.QueueUrl != "/000000000000/c2" {
		t.Errorf("GetQueueUrl = %s", got.QueueUrl)
	}
	got = h.must(api.QueueKey{}, &api.GetQueueUrlRequest{QueueName: "other", QueueOwnerAWSAccountId: "111111111111"}).(*api.GetQueueUrlResult)
	if got.QueueUrl != "/111111111111/other" {
		t.Errorf("GetQueueUrl with owner = %s", got.QueueUrl)
	}
	_, err = h.do(api.QueueKey{}, &api.GetQueueUrlRequest{QueueName: "other"})
	wantCode(t, err, "QueueDoesNotExist")
}

func TestTags(t *testing.T) {
	h := newHarness(t)
	q := h.must(api.QueueKey{}, &api.CreateQueueRequest{QueueName: "q", Tags: map[string]string{"team": "a"}}).(*api.CreateQueueResult)
	key := api.QueueKey{Account: testAccount, Name: "q"}
	h.must(key, &api.TagQueueRequest{QueueUrl: q.QueueUrl, Tags: map[string]string{"env": "dev", "team": "b"}})
	h.must(key, &api.UntagQueueRequest{QueueUrl: q.QueueUrl, TagKeys: []string{"env", "missing"}})
	tags := h.must(key, &api.ListQueueTagsRequest{QueueUrl: q.QueueUrl}).(*api.ListQueueTagsResult).Tags
	if !maps.Equal(tags, map[string]string{"team": "b"}) {
		t.Errorf("tags = %v", tags)
	}
	many := map[string]string{}
	for i := range 49 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	h.must(key, &api.TagQueueRequest{QueueUrl: q.QueueUrl, Tags: many})
	_, err := h.do(key, &api.TagQueueRequest{QueueUrl: q.QueueUrl, Tags: map[string]string{"one-too-many": "v"}})
	wantCode(t, err, "InvalidParameterValue")
	_, err = h.do(api.QueueKey{Account: testAccount, Name: "none"}, &api.ListQueueTagsRequest{QueueUrl: "/000000000000/none"})
	wantCode(t, err, "QueueDoesNotExist")
}

func TestPermissions(t *testing.T) {
	h := newHarness(t)
	q := h.createQueue("q", nil)
	h.must(q, &api.AddPermissionRequest{QueueUrl: q.Path(), Label: "one", AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage"}})
	h.must(q, &api.AddPermissionRequest{QueueUrl: q.Path(), Label: "two", AWSAccountIds: []string{"111111111111", "222222222222"}, Actions: []string{"ReceiveMessage", "DeleteMessage"}})
	_, err := h.do(q, &api.AddPermissionRequest{QueueUrl: q.Path(), Label: "one", AWSAccountIds: []string{"3"}, Actions: []string{"*"}})
	wantCode(t, err, "InvalidParameterValue")

	var doc struct {
		Version, Id string
		Statement   []struct {
			Sid, Effect, Resource string
			Principal             struct{ AWS any }
			Action                any
		}
	}
	if err := json.Unmarshal([]byte(h.attrs(q)["Policy"]), &doc); err != nil {
		t.Fatalf("policy: %v", err)
	}
	arn := "arn:aws:sqs:us-east-1:000000000000:q"
	// SQS's layout, member order included (Version 2008-10-17: the policy
	// AWS starts; see permissions.go).
	want := `{"Version":"2008-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[` +
		`{"Sid":"one","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:SendMessage","Resource":"` + arn + `"},` +
		`{"Sid":"two","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"],"Resource":"` + arn + `"}]}`
	if got := h.attrs(q)["Policy"]; got != want {
		t.Errorf("policy =\n%s\nwant\n%s", got, want)
	}
	if doc.Version != "2008-10-17" || doc.Id != arn+"/SQSDefaultPolicy" || len(doc.Statement) != 2 {
		t.Fatalf("policy = %+v", doc)
	}
	s0, s1 := doc.Statement[0], doc.Statement[1]
	if s0.Sid != "one" || s0.Effect != "Allow" || s0.Resource != arn || s0.Principal.AWS != "arn:aws:iam::111111111111:root" || s0.Action != "SQS:SendMessage" {
		t.Errorf("statement one = %+v", s0)
	}
	if fmt.Sprint(s1.Principal.AWS) != "[arn:aws:iam::111111111111:root arn:aws:iam::222222222222:root]" || fmt.Sprint(s1.Action) != "[SQS:ReceiveMessage SQS:DeleteMessage]" {
		t.Errorf("statement two = %+v", s1)
	}

	_, err = h.do(q, &api.RemovePermissionRequest{QueueUrl: q.Path(), Label: "nope"})
	wantCode(t, err, "InvalidParameterValue")
	h.must(q, &api.RemovePermissionRequest{QueueUrl: q.Path(), Label: "one"})
	h.must(q, &api.RemovePermissionRequest{QueueUrl: q.Path(), Label: "two"})
	if p, ok := h.attrs(q)["Policy"]; ok {
		t.Errorf("policy after removing every statement = %s", p)
	}

	// A policy set by hand is kept and extended.
	custom := `{"Version":"2012-10-17","Statement":{"Sid":"mine","Effect":"Deny","Principal":"*","Action":"SQS:*","Resource":"*","Condition":{"NumericLessThan":{"x":1.50}}}}`
	h.must(q, &api.SetQueueAttributesRequest{QueueUrl: q.Path(), Attributes: map[string]string{"Policy": custom}})
	h.must(q, &api.AddPermissionRequest{QueueUrl: q.Path(), Label: "added", AWSAccountIds: []string{"111111111111"}, Actions: []string{"*"}})
	var kept struct{ Statement []map[string]any }
	if err := json.Unmarshal([]byte(h.attrs(q)["Policy"]), &kept); err != nil || len(kept.Statement) != 2 || kept.Statement[0]["Condition"] == nil || kept.Statement[1]["Action"] != "SQS:*" {
		t.Errorf("extended policy = %s (%v)", h.attrs(q)["Policy"], err)
	}
	// Its members stay in their order, the number as written.
	if got, want := h.attrs(q)["Policy"], `{"Version":"2012-10-17","Statement":[{"Sid":"mine","Effect":"Deny","Principal":"*","Action":"SQS:*","Resource":"*","Condition":{"NumericLessThan":{"x":1.50}}},{"Sid":"added",`; !strings.HasPrefix(got, want) {
		t.Errorf("extended policy = %s", got)
	}
}

// TestCooldownsFromCommand checks that the cool-downs of DeleteQueue and
// PurgeQueue come from the command: zero is SQS's 60 s, a negative value
// turns the rule off, any other value is its length; and that a deletion
// keeps the cool-down its DeleteQueue carried.
func TestCooldownsFromCommand(t *testing.T) {
	h := newHarness(t)
	apply := func(q api.QueueKey, req api.Request, mod func(*Command)) error {
		t.Helper()
		if err := api.Validate(req); err != nil {
			t.Fatal(err)
		}
		cmd := h.command(q, req)
		mod(cmd)
		_, err := h.e.Apply(cmd)
		return err
	}
	create := func(name string) error {
		_, err := h.do(api.QueueKey{}, &api.CreateQueueRequest{QueueName: name})
		return err
	}
	recreate := func(d time.Duration) func(*Command) { return func(c *Command) { c.RecreateDelay = d } }
	purge := func(d time.Duration) func(*Command) { return func(c *Command) { c.PurgeDelay = d } }

	off := h.createQueue("off", nil)
	if err := apply(off, &api.DeleteQueueRequest{QueueUrl: off.Path()}, recreate(-1)); err != nil {
		t.Fatal(err)
	}
	if err := create("off"); err != nil {
		t.Errorf("recreate with the rule off: %v", err)
	}
	short := h.createQueue("short", nil)
	if err := apply(short, &api.DeleteQueueRequest{QueueUrl: short.Path()}, recreate(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	h.advance(4 * time.Second)
	wantCode(t, create("short"), "QueueDeletedRecently")
	// The cool-down the deletion carried survives a snapshot.
	restoreHarness(t, h)
	wantCode(t, create("short"), "QueueDeletedRecently")
	h.advance(time.Second)
	if err := create("short"); err != nil {
		t.Errorf("recreate after a 5 s cool-down: %v", err)
	}

	q := h.createQueue("p", nil)
	for range 3 {
		if err := apply(q, &api.PurgeQueueRequest{QueueUrl: q.Path()}, purge(-1)); err != nil {
			t.Errorf("purge with the rule off: %v", err)
		}
	}
	wantCode(t, apply(q, &api.PurgeQueueRequest{QueueUrl: q.Path()}, purge(0)), "PurgeQueueInProgress")
	h.advance(2 * time.Second)
	if err := apply(q, &api.PurgeQueueRequest{QueueUrl: q.Path()}, purge(2*time.Second)); err != nil {
		t.Errorf("purge after a 2 s cool-down: %v", err)
	}
}

// TestPurgeForgetsDeduplication checks that PurgeQueue drops a FIFO
// queue's deduplication ids: the same id sent again after a purge is a new
// message, delivered.
func TestPurgeForgetsDeduplication(t *testing.T) {
	h := newHarness(t)
	q := h.fifoQueue("dedup.fifo", nil)
	first := h.sendFIFO(q, "before", "g", "same-id")
	if again := h.sendFIFO(q, "dup", "g", "same-id"); again.MessageId != first.MessageId {
		t.Fatalf("a duplicate before the purge got a new id")
	}
	h.must(q, &api.PurgeQueueRequest{QueueUrl: q.Path()})
	after := h.sendFIFO(q, "after", "g", "same-id")
	if after.MessageId == first.MessageId {
		t.Fatalf("the id sent again after the purge was taken for a duplicate")
	}
	msgs := h.receive(q, 10, -1)
	if len(msgs) != 1 || msgs[0].Body != "after" {
		t.Errorf("received %v, want the message sent after the purge", msgs)
	}
}
