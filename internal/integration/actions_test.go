package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
)

// TestQueueActions exercises the queue management actions: CreateQueue
// (idempotent, with tags), GetQueueUrl, ListQueues with paging,
// Get/SetQueueAttributes, the tag actions, the permission actions and
// DeleteQueue.
func TestQueueActions(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		url, err := c.CreateQueue(ctx, "managed", map[string]string{"VisibilityTimeout": "40"}, map[string]string{"team": "a"})
		ok(t, err)
		if want := env.URL + "/" + Account + "/managed"; url != want {
			t.Fatalf("QueueUrl = %q, want %q", url, want)
		}

		t.Run("CreateQueue is idempotent", func(t *testing.T) {
			again, err := c.CreateQueue(ctx, "managed", map[string]string{"VisibilityTimeout": "40"}, nil)
			ok(t, err)
			if again != url {
				t.Fatalf("second CreateQueue returned %q, want %q", again, url)
			}
			_, err = c.CreateQueue(ctx, "managed", map[string]string{"VisibilityTimeout": "41"}, nil)
			wantErr(t, err, "QueueAlreadyExists")
		})

		t.Run("GetQueueUrl", func(t *testing.T) {
			if got := must(c.GetQueueURL(ctx, "managed"))(t); got != url {
				t.Fatalf("GetQueueUrl = %q, want %q", got, url)
			}
			_, err := c.GetQueueURL(ctx, "no-such-queue")
			wantErr(t, err, "AWS.SimpleQueueService.NonExistentQueue")
		})

		t.Run("ListQueues", func(t *testing.T) { checkListQueuesPaging(t, c, url) })

		t.Run("Get and Set QueueAttributes", func(t *testing.T) { checkQueueAttributes(t, c, url) })

		t.Run("tags", func(t *testing.T) {
			if tags := must(c.ListTags(ctx, url))(t); !maps.Equal(tags, map[string]string{"team": "a"}) {
				t.Fatalf("tags from CreateQueue = %v", tags)
			}
			ok(t, c.Tag(ctx, url, map[string]string{"env": "test", "team": "b"}))
			if tags := must(c.ListTags(ctx, url))(t); !maps.Equal(tags, map[string]string{"team": "b", "env": "test"}) {
				t.Fatalf("tags after TagQueue = %v", tags)
			}
			ok(t, c.Untag(ctx, url, "team"))
			if tags := must(c.ListTags(ctx, url))(t); !maps.Equal(tags, map[string]string{"env": "test"}) {
				t.Fatalf("tags after UntagQueue = %v", tags)
			}
		})

		t.Run("permissions", func(t *testing.T) { checkPermissions(t, c, url) })

		t.Run("DeleteQueue", func(t *testing.T) {
			gone := mustCreate(t, c, "gone", nil)
			ok(t, c.DeleteQueue(ctx, gone))
			_, err := c.GetQueueURL(ctx, "gone")
			wantErr(t, err, "AWS.SimpleQueueService.NonExistentQueue")
			_, err = c.GetAttrs(ctx, gone, "All")
			wantErr(t, err, "AWS.SimpleQueueService.NonExistentQueue")
			_, err = c.Send(ctx, gone, SendIn{Body: "x"})
			wantErr(t, err, "AWS.SimpleQueueService.NonExistentQueue")
			wantErr(t, c.DeleteQueue(ctx, gone), "AWS.SimpleQueueService.NonExistentQueue")
		})
	})
}

// policyStatement returns the statement with the Sid from a policy document.
func policyStatement(t *testing.T, policy, sid string) map[string]any {
	t.Helper()
	var doc struct {
		Version   string
		Statement []map[string]any
	}
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		t.Fatalf("Policy attribute is not a JSON policy: %v: %q", err, policy)
	}
	// The version of the policy AddPermission starts, as SQS starts it.
	if doc.Version != "2008-10-17" {
		t.Errorf("Policy Version = %q, want 2008-10-17", doc.Version)
	}
	for _, s := range doc.Statement {
		if s["Sid"] == sid {
			return s
		}
	}
	return nil
}

// TestQueueDoesNotExistTyped checks the error of a deleted queue as each SDK
// surfaces it: the typed *types.QueueDoesNotExist in v2, the Query code
// AWS.SimpleQueueService.NonExistentQueue in v1.
func TestQueueDoesNotExistTyped(t *testing.T) {
	t.Parallel()
	env := Start(t)
	ctx := ctxT(t)
	url := mustCreate(t, v2Client{env.V2}, "doomed", nil)
	if _, err := env.V2.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}

	_, err := env.V2.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("doomed")})
	var typed *types.QueueDoesNotExist
	if !errors.As(err, &typed) {
		t.Errorf("v2 GetQueueUrl of a deleted queue: %T %v, want *types.QueueDoesNotExist", err, err)
	}
	_, err = env.V2.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	if !errors.As(err, &typed) {
		t.Errorf("v2 SendMessage to a deleted queue: %T %v, want *types.QueueDoesNotExist", err, err)
	}

	_, err = env.V1.GetQueueUrl(&sqsv1.GetQueueUrlInput{QueueName: awsv1.String("doomed")})
	var aerr awserr.Error
	if !errors.As(err, &aerr) || aerr.Code() != sqsv1.ErrCodeQueueDoesNotExist {
		t.Errorf("v1 GetQueueUrl of a deleted queue: %v, want code %s", err, sqsv1.ErrCodeQueueDoesNotExist)
	}
	if sqsv1.ErrCodeQueueDoesNotExist != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("aws-sdk-go's ErrCodeQueueDoesNotExist is %q: the pinned SDK changed", sqsv1.ErrCodeQueueDoesNotExist)
	}
}

// checkListQueuesPaging checks ListQueues by prefix, in pages of two, and
// of every queue, with url the one queue made before.
func checkListQueuesPaging(t *testing.T, c Client, url string) {
	ctx := ctxT(t)
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, mustCreate(t, c, fmt.Sprintf("page-%d", i), nil))
	}
	mustCreate(t, c, "other-page", nil)
	slices.Sort(want)
	all, next, err := c.ListQueues(ctx, "page-", 0, "")
	ok(t, err)
	slices.Sort(all)
	if !slices.Equal(all, want) || next != "" {
		t.Fatalf("ListQueues(prefix page-) = %q next %q, want %q", all, next, want)
	}
	var paged []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("paging did not end; so far %q", paged)
		}
		urls, next, err := c.ListQueues(ctx, "page-", 2, token)
		ok(t, err)
		if len(urls) > 2 {
			t.Fatalf("page of MaxResults 2 has %d queues", len(urls))
		}
		paged = append(paged, urls...)
		if next == "" {
			break
		}
		token = next
	}
	slices.Sort(paged)
	if !slices.Equal(paged, want) {
		t.Fatalf("paged ListQueues = %q, want %q", paged, want)
	}
	everything, _, err := c.ListQueues(ctx, "", 0, "")
	ok(t, err)
	if len(everything) != 7 || !slices.Contains(everything, url) {
		t.Fatalf("ListQueues() = %q, want the 7 queues", everything)
	}
}

// checkQueueAttributes sets a standard queue's attributes and reads them
// back, all and some, and checks two refused values.
func checkQueueAttributes(t *testing.T, c Client, url string) {
	ctx := ctxT(t)
	ok(t, c.SetAttrs(ctx, url, map[string]string{"VisibilityTimeout": "45", "MessageRetentionPeriod": "120", "DelaySeconds": "3"}))
	all := must(c.GetAttrs(ctx, url, "All"))(t)
	want := map[string]string{
		"VisibilityTimeout":                     "45",
		"MessageRetentionPeriod":                "120",
		"DelaySeconds":                          "3",
		"MaximumMessageSize":                    "1048576", // SQS's default since its 2025 change
		"ReceiveMessageWaitTimeSeconds":         "0",
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"QueueArn":                              "arn:aws:sqs:" + Region + ":" + Account + ":managed",
	}
	for k, v := range want {
		if all[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, all[k], v)
		}
	}
	for _, k := range []string{"CreatedTimestamp", "LastModifiedTimestamp"} {
		if all[k] == "" {
			t.Errorf("attribute %s missing from All", k)
		}
	}
	if _, has := all["FifoQueue"]; has {
		t.Errorf("All of a standard queue includes FifoQueue")
	}
	some := must(c.GetAttrs(ctx, url, "VisibilityTimeout", "DelaySeconds"))(t)
	if len(some) != 2 || some["VisibilityTimeout"] != "45" || some["DelaySeconds"] != "3" {
		t.Errorf("GetQueueAttributes(VisibilityTimeout, DelaySeconds) = %v", some)
	}
	wantErr(t, c.SetAttrs(ctx, url, map[string]string{"VisibilityTimeout": "43201"}), "InvalidAttributeValue")
	wantErr(t, c.SetAttrs(ctx, url, map[string]string{"NoSuchAttribute": "1"}), "InvalidAttributeName")
}

// checkPermissions adds a permission, finds its statement in the queue's
// Policy, and removes it.
func checkPermissions(t *testing.T, c Client, url string) {
	ctx := ctxT(t)
	arn := queueARN(t, c, url)
	ok(t, c.AddPermission(ctx, url, "let-them-send", []string{"111122223333"}, []string{"SendMessage", "ReceiveMessage"}))
	stmt := policyStatement(t, must(c.GetAttrs(ctx, url, "Policy"))(t)["Policy"], "let-them-send")
	if stmt == nil {
		t.Fatal("Policy has no statement with Sid let-them-send")
	}
	if stmt["Effect"] != "Allow" || stmt["Resource"] != arn {
		t.Errorf("statement = %v, want Effect Allow on %s", stmt, arn)
	}
	if p, _ := json.Marshal(stmt["Principal"]); !strings.Contains(string(p), "111122223333") {
		t.Errorf("statement Principal %s does not name account 111122223333", p)
	}
	actions := fmt.Sprint(stmt["Action"])
	for _, a := range []string{"SQS:SendMessage", "SQS:ReceiveMessage"} {
		if !strings.Contains(actions, a) {
			t.Errorf("statement Action %s lacks %s", actions, a)
		}
	}
	ok(t, c.RemovePermission(ctx, url, "let-them-send"))
	if policy := must(c.GetAttrs(ctx, url, "Policy"))(t)["Policy"]; policy != "" && policyStatement(t, policy, "let-them-send") != nil {
		t.Fatalf("statement still in Policy after RemovePermission: %s", policy)
	}
	wantErr(t, c.RemovePermission(ctx, url, "let-them-send"), "InvalidParameterValue")
}
