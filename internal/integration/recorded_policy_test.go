package integration

import (
	"encoding/json"
	"net/http"
	"testing"
)

// Recorded answers about queue policies: AddPermission, RemovePermission
// and the Policy attribute.
//
// Sources besides LocalStack's snapshots: MuleSoft's SQS connector runs its
// automation tests against AWS itself (us-east-1, a real account id), so
// its assertions on AWS's error answers are recordings too:
// emarcelino/sqs-connector,
// src/test/java/org/mule/modules/sqs/automation/testcases/*TestCases.java.

// muleTests names that test suite in sources.
const muleTests = "mulesoft sqs-connector (run against AWS) "

// TestRecordedPermissionErrors replays AWS's recorded errors of
// AddPermission and RemovePermission.
func TestRecordedPermissionErrors(t *testing.T) {
	runRecorded(t, []recordedCase{
		{
			// MuleSoft's older recording of this request answered "can't
			// find label on existing policy."; the newer one (2024) of the
			// same state, a queue whose last label was removed, is shorter.
			name: "remove a label no longer on the policy",
			source: "localstack test_sqs.snapshot.json: test_sqs_permission_lifecycle/get-queue-policy-attribute-delete-non-existent-label; " +
				muleTests + "RemovePermissionTestCases.testRemovePermission",
			call: func(t *testing.T, s *scene) (string, params) {
				q := s.queue(t, "perms", nil)
				ctx := ctxT(t)
				ok(t, s.c.AddPermission(ctx, q, "fooPermission", []string{"055970264539"}, []string{"SendMessage", "ReceiveMessage", "DeleteMessage"}))
				ok(t, s.c.RemovePermission(ctx, q, "fooPermission"))
				return "RemovePermission", params{"QueueUrl": q, "Label": "fooPermission"}
			},
			want: invalidParameter("Value fooPermission for parameter Label is invalid. Reason: can't find label."),
		},
		{
			// The label already exists, yet the principal is what SQS
			// answers about: principals are checked first.
			name:   "principal that is no account",
			source: muleTests + "AddPermissionTestCases.testAddPermission",
			call: func(t *testing.T, s *scene) (string, params) {
				q := s.queue(t, "perms", nil)
				ok(t, s.c.AddPermission(ctxT(t), q, "fooPermission", []string{"055970264539"}, []string{"SendMessage", "ReceiveMessage"}))
				return "AddPermission", params{"QueueUrl": q, "Label": "fooPermission", "AWSAccountIds": []string{"xk3mq9"}, "Actions": []string{"SendMessage", "ReceiveMessage"}}
			},
			want: invalidParameter("Value [xk3mq9] for parameter PrincipalId is invalid. Reason: Unable to verify."),
		},
	})
}

// TestRecordedSetQueuePolicy: SQS stores a policy whose statement has an
// ArnEquals condition and a Resource that is no ARN at all, returns it from
// GetQueueAttributes (All and Policy), and an empty Policy removes it
// (localstack test_sqs.py::test_set_queue_policy and
// test_set_empty_queue_policy, AWS-validated tests that assert rather than
// snapshot). What fifoq cannot check grants nothing: another account still
// may not send.
func TestRecordedSetQueuePolicy(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "policed", nil)
		// The document of the LocalStack test, its shell placeholders left
		// in as it sends them.
		const policy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sqs:SendMessage",` +
			`"Resource":"'$sqs_queue_arn'","Condition":{"ArnEquals":{"aws:SourceArn":"'$sns_topic_arn'"}}}]}`
		ok(t, c.SetAttrs(ctx, q, map[string]string{"Policy": ""}))
		if _, has := must(c.GetAttrs(ctx, q, "All"))(t)["Policy"]; has {
			t.Fatalf("empty Policy set, yet All lists a Policy")
		}
		ok(t, c.SetAttrs(ctx, q, map[string]string{"Policy": policy}))
		for _, names := range [][]string{{"All"}, {"Policy"}} {
			var doc struct {
				Statement []struct{ Action string }
			}
			got := must(c.GetAttrs(ctx, q, names...))(t)["Policy"]
			if err := json.Unmarshal([]byte(got), &doc); err != nil || len(doc.Statement) != 1 || doc.Statement[0].Action != "sqs:SendMessage" {
				t.Errorf("GetQueueAttributes %v: Policy %q (%v)", names, got, err)
			}
		}

		// The Resource names no queue and aws:SourceArn is in no request
		// to fifoq: the statement allows nobody.
		other := clientsAs(env, "111111111111", "any", nil)[0]
		if c.Proto() == "query" {
			other = clientsAs(env, "111111111111", "any", nil)[1]
		}
		_, err := other.Send(ctx, q, SendIn{Body: "not granted"})
		wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")

		ok(t, c.SetAttrs(ctx, q, map[string]string{"Policy": ""}))
		if _, has := must(c.GetAttrs(ctx, q, "All"))(t)["Policy"]; has {
			t.Errorf("empty Policy set over a policy, yet All lists a Policy")
		}
	})
}

// TestAddPermissionPolicyDocument: the document AddPermission leaves in the
// Policy attribute. No recording of AWS's exact text was found; the shape
// (Version 2008-10-17, Id QUEUE_ARN/SQSDefaultPolicy, statements Sid,
// Effect, Principal.AWS, Action SQS:NAME, Resource, single values as
// strings and several as lists) is the one LocalStack's provider writes
// for its AWS-validated tests, and moto's test_permissions reads back.
func TestAddPermissionPolicyDocument(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, c Client) {
		ctx := ctxT(t)
		q := mustCreate(t, c, "shared", nil)
		arn := queueARN(t, c, q)
		ok(t, c.AddPermission(ctx, q, "account1", []string{"111111111111"}, []string{"*"}))
		ok(t, c.AddPermission(ctx, q, "account2", []string{"222211111111", "111111111111"}, []string{"SendMessage", "ReceiveMessage"}))
		want := `{"Version":"2008-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[` +
			`{"Sid":"account1","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:*","Resource":"` + arn + `"},` +
			`{"Sid":"account2","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::222211111111:root","arn:aws:iam::111111111111:root"]},"Action":["SQS:SendMessage","SQS:ReceiveMessage"],"Resource":"` + arn + `"}]}`
		if got := must(c.GetAttrs(ctx, q, "Policy"))(t)["Policy"]; got != want {
			t.Errorf("Policy\n  got  %s\n  want %s", got, want)
		}
		ok(t, c.RemovePermission(ctx, q, "account2"))
		want = `{"Version":"2008-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[` +
			`{"Sid":"account1","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:*","Resource":"` + arn + `"}]}`
		if got := must(c.GetAttrs(ctx, q, "Policy"))(t)["Policy"]; got != want {
			t.Errorf("Policy after RemovePermission\n  got  %s\n  want %s", got, want)
		}
	})
}
