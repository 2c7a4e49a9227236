package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

const (
	polOwner = "000000000000"
	polAlice = "111111111111"
	polBob   = "222222222222"
	polQueue = "arn:aws:sqs:us-east-1:000000000000:orders.fifo"
	polOther = "arn:aws:sqs:us-east-1:000000000000:audit"
)

// policy wraps statements (JSON objects) in a 2012-10-17 policy document.
func policyDoc(statements ...string) string {
	return `{"Version":"2012-10-17","Id":"test","Statement":[` + strings.Join(statements, ",") + `]}`
}

// allow is a statement allowing principal the action on the queue.
func allowStmt(principal, action string) string {
	return fmt.Sprintf(`{"Effect":"Allow","Principal":%s,"Action":%s,"Resource":%q}`, principal, action, polQueue)
}

// mustParse parses a policy the test expects to be valid.
func mustParsePolicy(t *testing.T, doc string) *Policy {
	t.Helper()
	p, err := ParsePolicy(doc)
	if err != nil {
		t.Fatalf("ParsePolicy(%s): %v", doc, err)
	}
	return p
}

func TestParsePolicyAccepts(t *testing.T) {
	stmt := func(body string) string { return policyDoc(`{"Effect":"Allow",` + body + `}`) }
	many := func(n int, format string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i)
		}
		return out
	}
	principals50 := `{"AWS":["` + strings.Join(many(50, "%012d"), `","`) + `"]}`
	sevenActions := `["sqs:SendMessage","sqs:ReceiveMessage","sqs:DeleteMessage","sqs:ChangeMessageVisibility","sqs:GetQueueAttributes","sqs:GetQueueUrl","sqs:PurgeQueue"]`
	twenty := policyDoc(many(20, `{"Sid":"s%d","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage"}`)...)
	long := policyDoc(allowStmt(`"*"`, `"sqs:SendMessage"`))
	long = long[:len(long)-2] + `,{"Sid":"` + strings.Repeat("x", maxPolicyBytes-len(long)-len(`,{"Sid":"","Effect":"Deny","Principal":"*","Action":"*"}`)) + `","Effect":"Deny","Principal":"*","Action":"*"}]}`
	if len(long) != maxPolicyBytes {
		t.Fatalf("long policy is %d bytes, want %d", len(long), maxPolicyBytes)
	}

	tests := []struct{ name, doc string }{
		{"AddPermission shape", `{"Version":"2012-10-17","Id":"arn:aws:sqs:us-east-1:000000000000:orders.fifo/SQSDefaultPolicy","Statement":[{"Sid":"one","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:SendMessage","Resource":"arn:aws:sqs:us-east-1:000000000000:orders.fifo"}]}`},
		{"AddPermission shape, lists", `{"Version":"2012-10-17","Statement":[{"Sid":"two","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"],"Resource":"arn:aws:sqs:us-east-1:000000000000:orders.fifo"}]}`},
		{"principal star", policyDoc(allowStmt(`"*"`, `"sqs:*"`))},
		{"principal AWS star", policyDoc(allowStmt(`{"AWS":"*"}`, `"sqs:*"`))},
		{"principal account id", policyDoc(allowStmt(`{"AWS":"111111111111"}`, `"sqs:*"`))},
		{"principal user ARN", policyDoc(allowStmt(`{"AWS":"arn:aws:iam::111111111111:user/x"}`, `"sqs:*"`))},
		{"principal role ARN", policyDoc(allowStmt(`{"AWS":"arn:aws:iam::111111111111:role/path/r"}`, `"sqs:*"`))},
		{"principal assumed role", policyDoc(allowStmt(`{"AWS":"arn:aws:sts::111111111111:assumed-role/r/session"}`, `"sqs:*"`))},
		{"principal other partition", policyDoc(allowStmt(`{"AWS":"arn:aws-cn:iam::111111111111:root"}`, `"sqs:*"`))},
		{"principal list of forms", policyDoc(allowStmt(`{"AWS":["111111111111","arn:aws:iam::222222222222:root","*"]}`, `"sqs:*"`))},
		{"50 principals", policyDoc(allowStmt(principals50, `"sqs:SendMessage"`))},
		{"action star", policyDoc(allowStmt(`"*"`, `"*"`))},
		{"action upper-case prefix", policyDoc(allowStmt(`"*"`, `"SQS:*"`))},
		{"action any case", policyDoc(allowStmt(`"*"`, `"Sqs:sendmessage"`))},
		{"action wildcard", policyDoc(allowStmt(`"*"`, `"sqs:Send*"`))},
		{"action question mark", policyDoc(allowStmt(`"*"`, `"sqs:?eceiveMessage"`))},
		{"action batch name", policyDoc(allowStmt(`"*"`, `"sqs:SendMessageBatch"`))},
		{"seven actions", policyDoc(allowStmt(`"*"`, sevenActions))},
		{"NotAction", policyDoc(`{"Effect":"Allow","Principal":"*","NotAction":"sqs:PurgeQueue"}`)},
		{"NotPrincipal", policyDoc(`{"Effect":"Deny","NotPrincipal":{"AWS":"000000000000"},"Action":"*"}`)},
		{"resource absent", policyDoc(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage"}`)},
		{"resource star", policyDoc(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*"}`)},
		{"resource wildcards", policyDoc(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":["arn:aws:sqs:*:000000000000:*","arn:aws:sqs:us-east-?:000000000000:orders*","arn:aws:sqs:*"]}`)},
		{"resource service in capitals", policyDoc(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"arn:aws:SQS:us-east-1:000000000000:orders.fifo"}`)},
		{"NotResource", policyDoc(`{"Effect":"Deny","Principal":"*","Action":"*","NotResource":"arn:aws:sqs:us-east-1:000000000000:orders.fifo"}`)},
		{"Version 2008-10-17", `{"Version":"2008-10-17","Statement":[` + allowStmt(`"*"`, `"*"`) + `]}`},
		{"no Version", `{"Statement":[` + allowStmt(`"*"`, `"*"`) + `]}`},
		{"single statement object", `{"Version":"2012-10-17","Statement":` + allowStmt(`"*"`, `"*"`) + `}`},
		{"empty statement list", `{"Version":"2012-10-17","Statement":[]}`},
		{"empty Condition", policyDoc(`{"Effect":"Allow","Principal":"*","Action":"*","Condition":{}}`)},
		// What SQS accepts and fifoq used to refuse: kept, and evaluated
		// so that it never grants more than it says (TestEvaluateAccepted).
		// localstack test_sqs.py::test_set_queue_policy stores a policy with
		// an ArnEquals condition and a Resource that is no ARN.
		{"localstack TEST_POLICY", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sqs:SendMessage","Resource":"'$sqs_queue_arn'","Condition":{"ArnEquals":{"aws:SourceArn":"'$sns_topic_arn'"}}}]}`},
		{"condition values of every JSON type", stmt(`"Principal":"*","Action":"*","Condition":{"NumericLessThan":{"x":[1.5,2]},"Bool":{"aws:SecureTransport":true}}`)},
		{"Service principal", stmt(`"Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage"`)},
		{"Federated principal", stmt(`"Principal":{"Federated":"cognito-identity.amazonaws.com"},"Action":"*"`)},
		{"CanonicalUser principal", stmt(`"Principal":{"CanonicalUser":"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"},"Action":"*"`)},
		{"AWS and Service principals", stmt(`"Principal":{"AWS":"111111111111","Service":"sns.amazonaws.com"},"Action":"*"`)},
		{"other service action", stmt(`"Principal":"*","Action":"sns:Publish"`)},
		{"wildcard service", stmt(`"Principal":"*","Action":"*:SendMessage"`)},
		{"unknown action", stmt(`"Principal":"*","Action":"sqs:SendMesage"`)},
		{"wildcard matching nothing", stmt(`"Principal":"*","Action":"sqs:Publish*"`)},
		{"unknown NotAction", stmt(`"Principal":"*","NotAction":"sqs:Foo"`)},
		{"S3 resource", stmt(`"Principal":"*","Action":"*","Resource":"arn:aws:s3:::bucket"`)},
		{"resource not an ARN", stmt(`"Principal":"*","Action":"*","Resource":"orders.fifo"`)},
		{"resource queue URL", stmt(`"Principal":"*","Action":"*","Resource":"https://sqs.us-east-1.amazonaws.com/000000000000/q"`)},
		{"resource without queue name", stmt(`"Principal":"*","Action":"*","Resource":"arn:aws:sqs:us-east-1:000000000000"`)},
		{"resource with empty region", stmt(`"Principal":"*","Action":"*","Resource":"arn:aws:sqs:::q"`)},
		{"resource with seven parts", stmt(`"Principal":"*","Action":"*","Resource":"arn:aws:sqs:us-east-1:000000000000:q:x"`)},
		{"NotResource not an ARN", stmt(`"Principal":"*","Action":"*","NotResource":"q"`)},
		{"condition on source ARN", stmt(`"Principal":"*","Action":"sqs:SendMessage","Condition":{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:111111111111:t"}}`)},
		{"condition on secure transport", stmt(`"Principal":"*","Action":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}`)},
		{"condition with empty operator", stmt(`"Principal":"*","Action":"*","Condition":{"StringEquals":{}}`)},
		{"condition on a Deny", policyDoc(`{"Effect":"Deny","Principal":"*","Action":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`)},
		{"policy variable", stmt(`"Principal":"*","Action":"*","Resource":"arn:aws:sqs:us-east-1:${aws:PrincipalAccount}:q"`)},
		{"statements without Sid", policyDoc(allowStmt(`"*"`, `"*"`), allowStmt(`"*"`, `"*"`))},
		{"20 statements", twenty},
		{"8192 bytes", long},
		{"spacing and escapes", "{\n  \"Version\" : \"2012-10-17\",\n  \"Statement\" : [ {\"Effect\":\"\\u0041llow\", \"Principal\":\"*\", \"Action\":\"sqs:*\"} ]\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParsePolicy(tt.doc); err != nil {
				t.Errorf("ParsePolicy(%s) = %v, want it accepted", tt.doc, err)
			}
		})
	}
}

func TestParsePolicyRefuses(t *testing.T) {
	stmt := func(body string) string { return policyDoc(`{"Effect":"Allow",` + body + `}`) }
	principals51 := make([]string, 51)
	for i := range principals51 {
		principals51[i] = fmt.Sprintf("%012d", i)
	}
	statements21 := make([]string, 21)
	for i := range statements21 {
		statements21[i] = allowStmt(`"*"`, `"*"`)
	}

	tests := []struct {
		name, doc string
		reason    string // what the message must say after "Reason: "
	}{
		{"not JSON", `{"Version":`, "the policy is not a JSON object"},
		{"JSON list", `[]`, "the policy is not a JSON object"},
		{"JSON null", `null`, "the policy is not a JSON object"},
		{"trailing data", policyDoc(allowStmt(`"*"`, `"*"`)) + `{}`, "the policy is not a JSON object"},
		{"too long", policyDoc(allowStmt(`"*"`, `"*"`)) + strings.Repeat(" ", maxPolicyBytes), "bytes long; the maximum is 8192"},
		{"duplicate top-level member", `{"Version":"2012-10-17","Statement":[],"Statement":[]}`, `member "Statement" appears twice in one object`},
		{"duplicate statement member", policyDoc(`{"Effect":"Deny","Effect":"Allow","Principal":"*","Action":"*"}`), `member "Effect" appears twice`},
		{"unknown policy element", `{"Version":"2012-10-17","Statement":[],"Extra":1}`, `unknown policy element "Extra"`},
		{"unknown Version", `{"Version":"2013-01-01","Statement":[]}`, `Version must be "2012-10-17" or "2008-10-17", not "2013-01-01"`},
		{"Version a number", `{"Version":2012,"Statement":[]}`, `Version must be`},
		{"Id a number", `{"Id":1,"Statement":[]}`, "Id must be a string, not 1"},
		{"no Statement", `{"Version":"2012-10-17"}`, "the policy has no Statement"},
		{"Statement a string", `{"Statement":"x"}`, "Statement must be an object or a list of objects"},
		{"Statement list of non-objects", `{"Statement":[1]}`, "Statement must be an object or a list of objects"},
		{"Statement list with null", `{"Statement":[null]}`, "statement 1 is not an object"},
		{"21 statements", policyDoc(statements21...), "the policy has 21 statements; the maximum is 20"},
		{"Sid a number", policyDoc(`{"Sid":1,"Effect":"Allow","Principal":"*","Action":"*"}`), "statement 1: Sid must be a string, not 1"},
		{"duplicate Sid", policyDoc(`{"Sid":"a","Effect":"Allow","Principal":"*","Action":"*"}`, `{"Sid":"a","Effect":"Deny","Principal":"*","Action":"*"}`), `Sid "a" is used by more than one statement`},
		{"unknown statement element", policyDoc(`{"Sid":"x","Effect":"Allow","Principal":"*","Action":"*","Effects":"Deny"}`), `statement 1 (Sid "x"): unknown statement element "Effects"`},
		{"Effect missing", policyDoc(`{"Principal":"*","Action":"*"}`), "statement 1: Effect is missing"},
		{"Effect lower case", policyDoc(`{"Effect":"allow","Principal":"*","Action":"*"}`), `Effect must be "Allow" or "Deny", not "allow"`},
		{"Effect a list", policyDoc(`{"Effect":["Allow"],"Principal":"*","Action":"*"}`), `Effect must be "Allow" or "Deny", not ["Allow"]`},
		{"Principal missing", stmt(`"Action":"*"`), "Principal is missing"},
		{"Principal and NotPrincipal", stmt(`"Principal":"*","NotPrincipal":{"AWS":"111111111111"},"Action":"*"`), "Principal and NotPrincipal cannot be used together"},
		{"Principal bare account", stmt(`"Principal":"111111111111","Action":"*"`), `Principal must be "*" or an object`},
		{"Principal empty object", stmt(`"Principal":{},"Action":"*"`), `Principal must be "*" or an object`},
		{"Principal a number", stmt(`"Principal":1,"Action":"*"`), `Principal must be "*" or an object such as {"AWS": "123456789012"}, not 1`},
		{"unknown principal type", stmt(`"Principal":{"Aws":"111111111111"},"Action":"*"`), `unknown principal type "Aws"`},
		{"AWS empty list", stmt(`"Principal":{"AWS":[]},"Action":"*"`), "Principal AWS must be a string or a non-empty list of strings, not []"},
		{"short account id", stmt(`"Principal":{"AWS":"12345"},"Action":"*"`), `Principal "12345" is not "*", a 12-digit account id, or an IAM ARN of an account`},
		{"group ARN", stmt(`"Principal":{"AWS":"arn:aws:iam::111111111111:group/g"},"Action":"*"`), "is not \"*\", a 12-digit account id"},
		{"wildcard account ARN", stmt(`"Principal":{"AWS":"arn:aws:iam::*:root"},"Action":"*"`), "is not \"*\", a 12-digit account id"},
		{"wildcard user ARN", stmt(`"Principal":{"AWS":"arn:aws:iam::111111111111:user/*"},"Action":"*"`), "is not \"*\", a 12-digit account id"},
		{"non-IAM ARN", stmt(`"Principal":{"AWS":"arn:aws:sns:us-east-1:111111111111:topic"},"Action":"*"`), "is not \"*\", a 12-digit account id"},
		{"51 principals", stmt(`"Principal":{"AWS":["` + strings.Join(principals51, `","`) + `"]},"Action":"*"`), "the policy names 51 principals; the maximum is 50"},
		{"NotPrincipal star", stmt(`"NotPrincipal":"*","Action":"*"`), `NotPrincipal "*" applies to no one`},
		{"NotPrincipal AWS star", stmt(`"NotPrincipal":{"AWS":["111111111111","*"]},"Action":"*"`), `NotPrincipal "*" applies to no one`},
		{"Action missing", stmt(`"Principal":"*"`), "Action is missing"},
		{"Action and NotAction", stmt(`"Principal":"*","Action":"*","NotAction":"sqs:PurgeQueue"`), "Action and NotAction cannot be used together"},
		{"action without prefix", stmt(`"Principal":"*","Action":"SendMessage"`), `Action "SendMessage" is not an action`},
		{"empty action name", stmt(`"Principal":"*","Action":"sqs:"`), `Action "sqs:" is not an action`},
		{"action with space", stmt(`"Principal":"*","Action":"sqs:Send Message"`), `Action "sqs:Send Message" is not an action`},
		{"Action empty list", stmt(`"Principal":"*","Action":[]`), "Action must be a string or a non-empty list of strings"},
		{"Action a number", stmt(`"Principal":"*","Action":5`), "Action must be a string or a non-empty list of strings, not 5"},
		{"eight actions", stmt(`"Principal":"*","Action":["sqs:SendMessage","sqs:ReceiveMessage","sqs:DeleteMessage","sqs:ChangeMessageVisibility","sqs:GetQueueAttributes","sqs:GetQueueUrl","sqs:PurgeQueue","sqs:ListDeadLetterSourceQueues"]`), "Action lists 8 actions; the maximum is 7"},
		{"Resource and NotResource", stmt(`"Principal":"*","Action":"*","Resource":"*","NotResource":"*"`), "Resource and NotResource cannot be used together"},
		{"Resource empty list", stmt(`"Principal":"*","Action":"*","Resource":[]`), "Resource must be a string or a non-empty list of strings"},
		{"condition operator not an object", stmt(`"Principal":"*","Action":"*","Condition":{"StringEquals":"x"}`), `Condition StringEquals must be an object of condition keys, not "x"`},
		{"condition value an object", stmt(`"Principal":"*","Action":"*","Condition":{"StringEquals":{"k":{"a":1}}}`), `Condition StringEquals k must be a value or a list of values`},
		{"condition value an empty list", stmt(`"Principal":"*","Action":"*","Condition":{"StringEquals":{"k":[]}}`), `Condition StringEquals k must be a value or a list of values`},
		{"Service principal a number", stmt(`"Principal":{"Service":1},"Action":"*"`), "Principal Service must be a string or a non-empty list of strings, not 1"},
		{"empty resource", stmt(`"Principal":"*","Action":"*","Resource":""`), "Resource must not be empty"},
		{"condition not an object", stmt(`"Principal":"*","Action":"*","Condition":"x"`), `Condition must be an object, not "x"`},
		{"Id null", `{"Id":null,"Statement":[]}`, "Id must be a string, not null"},
		{"Sid null", policyDoc(`{"Sid":null,"Effect":"Allow","Principal":"*","Action":"*"}`), "statement 1: Sid must be a string, not null"},
		{"Principal null", stmt(`"Principal":null,"Action":"*"`), `Principal must be "*" or an object such as {"AWS": "123456789012"}, not null`},
		{"Action null", stmt(`"Principal":"*","Action":null`), "Action must be a string or a non-empty list of strings, not null"},
		{"Resource null", stmt(`"Principal":"*","Action":"*","Resource":null`), "Resource must be a string or a non-empty list of strings, not null"},
		{"Sid with percent", policyDoc(`{"Sid":"100%s","Effect":"Allow","Principal":"*"}`), `statement 1 (Sid "100%s"): Action is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy(tt.doc)
			if err == nil {
				t.Fatalf("ParsePolicy(%s) accepted it (%+v), want %q", tt.doc, p, tt.reason)
			}
			var e *api.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, want *api.Error", err, err)
			}
			const prefix = "Invalid value for the parameter Policy. Reason: "
			if e.Code != "InvalidAttributeValue" || e.Status != http.StatusBadRequest || !e.SenderFault() ||
				!strings.HasPrefix(e.Message, prefix) || !strings.HasSuffix(e.Message, ".") {
				t.Errorf("error = %+v, want InvalidAttributeValue 400 %q...", e, prefix)
			}
			if !strings.Contains(e.Message, tt.reason) {
				t.Errorf("message %q does not say %q", e.Message, tt.reason)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	type check struct {
		caller, action, arn string
		want                Decision
	}
	tests := []struct {
		name   string
		doc    string
		checks []check
	}{
		{"AddPermission shape grants one action to one account",
			`{"Version":"2012-10-17","Statement":[{"Sid":"one","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:SendMessage","Resource":"` + polQueue + `"}]}`,
			[]check{
				{polAlice, "SendMessage", polQueue, Allow},
				{polAlice, "SendMessageBatch", polQueue, Allow},
				{polAlice, "ReceiveMessage", polQueue, NoDecision},
				{polBob, "SendMessage", polQueue, NoDecision},
				{polOwner, "SendMessage", polQueue, NoDecision},
				{polAlice, "SendMessage", polOther, NoDecision},
			}},
		{"explicit deny wins over allow, in either order",
			policyDoc(allowStmt(`"*"`, `"sqs:*"`), `{"Effect":"Deny","Principal":{"AWS":"222222222222"},"Action":"sqs:Delete*"}`, allowStmt(`{"AWS":"222222222222"}`, `"sqs:DeleteMessage"`)),
			[]check{
				{polBob, "DeleteMessage", polQueue, Deny},
				{polBob, "DeleteMessageBatch", polQueue, Deny},
				{polBob, "DeleteQueue", polQueue, Deny},
				{polBob, "SendMessage", polQueue, Allow},
				{polAlice, "DeleteMessage", polQueue, Allow},
			}},
		{"deny of the owner",
			policyDoc(`{"Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue"}`),
			[]check{
				{polOwner, "PurgeQueue", polQueue, Deny},
				{polAlice, "PurgeQueue", polQueue, Deny},
				{polOwner, "SendMessage", polQueue, NoDecision},
			}},
		{"wildcard actions",
			policyDoc(allowStmt(`{"AWS":"111111111111"}`, `"sqs:Send*"`), allowStmt(`{"AWS":"222222222222"}`, `"SQS:*"`), allowStmt(`{"AWS":"333333333333"}`, `"*"`), allowStmt(`{"AWS":"444444444444"}`, `"sqs:?eceiveMessage"`)),
			[]check{
				{polAlice, "SendMessage", polQueue, Allow},
				{polAlice, "SendMessageBatch", polQueue, Allow},
				{polAlice, "ReceiveMessage", polQueue, NoDecision},
				{polAlice, "SetQueueAttributes", polQueue, NoDecision},
				{polBob, "ReceiveMessage", polQueue, Allow},
				{polBob, "ChangeMessageVisibilityBatch", polQueue, Allow},
				{"333333333333", "PurgeQueue", polQueue, Allow},
				{"444444444444", "ReceiveMessage", polQueue, Allow},
				{"444444444444", "DeleteMessage", polQueue, NoDecision},
			}},
		{"action names compare without case",
			policyDoc(allowStmt(`"*"`, `"sqs:sendmessage"`)),
			[]check{{polAlice, "SendMessage", polQueue, Allow}, {polAlice, "sendMessage", polQueue, Allow}}},
		{"batch action names grant nothing of their own",
			policyDoc(allowStmt(`"*"`, `"sqs:SendMessageBatch"`)),
			[]check{{polAlice, "SendMessageBatch", polQueue, NoDecision}, {polAlice, "SendMessage", polQueue, NoDecision}}},
		{"principal forms name accounts",
			policyDoc(allowStmt(`{"AWS":["111111111111","arn:aws:iam::222222222222:user/someone","arn:aws:sts::333333333333:assumed-role/r/s"]}`, `"*"`)),
			[]check{
				{polAlice, "SendMessage", polQueue, Allow},
				{polBob, "SendMessage", polQueue, Allow},
				{"333333333333", "SendMessage", polQueue, Allow},
				{"444444444444", "SendMessage", polQueue, NoDecision},
				{"", "SendMessage", polQueue, NoDecision},
			}},
		{"anyone",
			policyDoc(allowStmt(`{"AWS":"*"}`, `"sqs:GetQueueUrl"`)),
			[]check{{polAlice, "GetQueueUrl", polQueue, Allow}, {"", "GetQueueUrl", polQueue, Allow}}},
		{"resources: absent, star, exact, wildcards, service case",
			policyDoc(
				`{"Sid":"absent","Effect":"Allow","Principal":{"AWS":"111111111111"},"Action":"*"}`,
				`{"Sid":"star","Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"*","Resource":"*"}`,
				`{"Sid":"prefix","Effect":"Allow","Principal":{"AWS":"333333333333"},"Action":"*","Resource":"arn:aws:sqs:us-east-?:000000000000:ord*"}`,
				`{"Sid":"service","Effect":"Allow","Principal":{"AWS":"444444444444"},"Action":"*","Resource":"arn:aws:SQS:us-east-1:000000000000:audit"}`,
				`{"Sid":"case","Effect":"Allow","Principal":{"AWS":"555555555555"},"Action":"*","Resource":"arn:aws:sqs:us-east-1:000000000000:Audit"}`,
			),
			[]check{
				{polAlice, "SendMessage", polQueue, Allow},
				{polAlice, "SendMessage", polOther, Allow},
				{polBob, "SendMessage", polOther, Allow},
				{"333333333333", "SendMessage", polQueue, Allow},
				{"333333333333", "SendMessage", polOther, NoDecision},
				{"333333333333", "SendMessage", "arn:aws:sqs:eu-west-1:000000000000:orders.fifo", NoDecision},
				{"444444444444", "SendMessage", polOther, Allow},
				{"444444444444", "SendMessage", "arn:aws:SQS:us-east-1:000000000000:audit", Allow},
				{"555555555555", "SendMessage", polOther, NoDecision},
			}},
		{"NotPrincipal, NotAction, NotResource",
			policyDoc(
				`{"Sid":"onlyOwner","Effect":"Deny","NotPrincipal":{"AWS":["000000000000","arn:aws:iam::111111111111:root"]},"Action":"sqs:ReceiveMessage"}`,
				`{"Sid":"allButPurge","Effect":"Allow","Principal":"*","NotAction":["sqs:PurgeQueue","sqs:Delete*"]}`,
				`{"Sid":"notAudit","Effect":"Deny","Principal":{"AWS":"111111111111"},"Action":"sqs:SendMessage","NotResource":"`+polOther+`"}`,
			),
			[]check{
				{polBob, "ReceiveMessage", polQueue, Deny},
				{polAlice, "ReceiveMessage", polQueue, Allow},
				{polOwner, "ReceiveMessage", polQueue, Allow},
				{polBob, "PurgeQueue", polQueue, NoDecision},
				{polBob, "DeleteMessageBatch", polQueue, NoDecision},
				{polBob, "SendMessage", polQueue, Allow},
				{polAlice, "SendMessage", polQueue, Deny},
				{polAlice, "SendMessage", polOther, Allow},
			}},
		{"empty policy decides nothing",
			`{"Version":"2012-10-17","Statement":[]}`,
			[]check{{polOwner, "SendMessage", polQueue, NoDecision}, {polAlice, "SendMessage", polQueue, NoDecision}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParsePolicy(t, tt.doc)
			for _, c := range tt.checks {
				if got := p.Evaluate(c.caller, c.action, c.arn); got != c.want {
					t.Errorf("Evaluate(%q, %s, %s) = %v, want %v", c.caller, c.action, c.arn, got, c.want)
				}
			}
		})
	}
}

func TestEvaluateNilPolicy(t *testing.T) {
	var p *Policy
	if got := p.Evaluate(polAlice, "SendMessage", polQueue); got != NoDecision {
		t.Errorf("nil policy: %v, want NoDecision", got)
	}
	if got := (&Policy{}).Evaluate(polAlice, "SendMessage", polQueue); got != NoDecision {
		t.Errorf("zero policy: %v, want NoDecision", got)
	}
}

func TestAuthorize(t *testing.T) {
	grants := mustParsePolicy(t, policyDoc(
		allowStmt(`{"AWS":"111111111111"}`, `"sqs:*"`),
		`{"Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue"}`,
		`{"Effect":"Deny","Principal":{"AWS":"222222222222"},"Action":"*"}`,
		allowStmt(`{"AWS":"222222222222"}`, `"sqs:SendMessage"`),
	))
	tests := []struct {
		name    string
		p       *Policy
		caller  string
		action  string
		allowed bool
	}{
		{"owner without policy", nil, polOwner, "DeleteQueue", true},
		{"other account without policy", nil, polAlice, "SendMessage", false},
		{"owner, nothing said", grants, polOwner, "SendMessage", true},
		{"owner, owner-only action", grants, polOwner, "SetQueueAttributes", true},
		{"owner denied by explicit deny", grants, polOwner, "PurgeQueue", false},
		{"other account allowed", grants, polAlice, "SendMessage", true},
		{"other account allowed a batch", grants, polAlice, "DeleteMessageBatch", true},
		{"other account, grantable action", grants, polAlice, "GetQueueUrl", true},
		{"other account denied by explicit deny", grants, polAlice, "PurgeQueue", false},
		{"deny over allow", grants, polBob, "SendMessage", false},
		{"other account, nothing said", grants, "333333333333", "SendMessage", false},
		{"owner-only action never cross-account: SetQueueAttributes", grants, polAlice, "SetQueueAttributes", false},
		{"owner-only action never cross-account: DeleteQueue", grants, polAlice, "DeleteQueue", false},
		{"owner-only action never cross-account: AddPermission", grants, polAlice, "AddPermission", false},
		{"owner-only action never cross-account: TagQueue", grants, polAlice, "TagQueue", false},
		{"owner-only action never cross-account: StartMessageMoveTask", grants, polAlice, "StartMessageMoveTask", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Authorize(tt.p, tt.caller, polOwner, tt.action, polQueue)
			if tt.allowed {
				if err != nil {
					t.Errorf("Authorize = %v, want nil", err)
				}
				return
			}
			var e *api.Error
			if !errors.As(err, &e) {
				t.Fatalf("Authorize = %v, want AccessDenied", err)
			}
			want := "Access to the resource " + polQueue + " is denied."
			if e.Code != "AccessDenied" || e.QueryCode != "AccessDenied" || e.Status != http.StatusForbidden || !e.SenderFault() || e.Message != want {
				t.Errorf("Authorize = %+v, want AccessDenied 403 %q", e, want)
			}
		})
	}
}

func TestAccessDenied(t *testing.T) {
	e := AccessDenied("http://localhost:9324/")
	if e.Code != "AccessDenied" || e.Status != http.StatusForbidden || e.Message != "Access to the resource http://localhost:9324/ is denied." {
		t.Errorf("AccessDenied = %+v", e)
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything:at:all", true},
		{"?", "", false},
		{"?", "a", true},
		{"?", "é", true}, // one character, two bytes
		{"??", "é", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"send*", "sendmessage", true},
		{"send*", "sendmessagebatch", true},
		{"*message", "sendmessage", true},
		{"*message", "sendmessagebatch", false},
		{"*mess*ge*", "sendmessagebatch", true},
		{"a*b*c", "abbbc", true},
		{"a*b*c", "acb", false},
		{"a**b", "ab", true},
		{"arn:aws:sqs:*:000000000000:*", "arn:aws:sqs:us-east-1:000000000000:q", true},
		{"arn:aws:sqs:*:000000000000:*", "arn:aws:sqs:us-east-1:111111111111:q", false},
		{"arn:aws:sqs:*", "arn:aws:sqs:us-east-1:000000000000:q", true},
		{"Orders", "orders", false},
		{strings.Repeat("*a", 50) + "b", strings.Repeat("a", 4000), false}, // quadratic at worst, never exponential
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestNormalizeARNService(t *testing.T) {
	tests := []struct{ in, want string }{
		{"arn:aws:sqs:us-east-1:000000000000:Q", "arn:aws:sqs:us-east-1:000000000000:Q"},
		{"arn:aws:SQS:us-east-1:000000000000:Q", "arn:aws:sqs:us-east-1:000000000000:Q"},
		{"arn:aws:Sqs", "arn:aws:sqs"},
		{"arn:*:SQS:x", "arn:*:SQS:x"}, // no definite service part
		{"arn:aws", "arn:aws"},
		{"*", "*"},
	}
	for _, tt := range tests {
		if got := normalizeARNService(tt.in); got != tt.want {
			t.Errorf("normalizeARNService(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[Decision]string{NoDecision: "NoDecision", Allow: "Allow", Deny: "Deny", 7: "Decision(?)"} {
		if got := d.String(); got != want {
			t.Errorf("Decision(%d).String() = %q, want %q", int(d), got, want)
		}
	}
}

func TestEvaluateAllocatesNothing(t *testing.T) {
	p := mustParsePolicy(t, policyDoc(
		allowStmt(`{"AWS":["111111111111","arn:aws:iam::222222222222:root"]}`, `["sqs:Send*","sqs:ReceiveMessage"]`),
		`{"Effect":"Deny","Principal":"*","Action":"sqs:PurgeQueue","Resource":"arn:aws:sqs:*:000000000000:*"}`,
	))
	allocs := testing.AllocsPerRun(100, func() {
		if p.Evaluate(polBob, "SendMessageBatch", polQueue) != Allow {
			t.Fatal("not allowed")
		}
		if Authorize(p, polOwner, polOwner, "DeleteQueue", polQueue) != nil {
			t.Fatal("owner denied")
		}
	})
	if allocs != 0 {
		t.Errorf("Evaluate and Authorize allocate %v times per call, want 0", allocs)
	}
}

// TestEvaluateAccepted: what SQS accepts and fifoq cannot know of a
// request never grants more than the policy says: a statement that names
// another queue, another service's action or a principal no fifoq caller
// is grants nothing; a condition fifoq cannot evaluate makes an Allow grant
// nothing and a Deny deny.
func TestEvaluateAccepted(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		stmt   string // with Effect EFFECT
		tls    *bool
		caller string
		allow  Decision // the decision as an Allow statement
		deny   Decision // the decision as a Deny statement
	}{
		{"Service principal", `"Principal":{"Service":"sns.amazonaws.com"},"Action":"*"`, nil, polAlice, NoDecision, NoDecision},
		{"NotPrincipal Service", `"NotPrincipal":{"Service":"sns.amazonaws.com"},"Action":"*"`, nil, polAlice, Allow, Deny},
		{"other service's action", `"Principal":"*","Action":"sns:Publish"`, nil, polAlice, NoDecision, NoDecision},
		{"wildcard service action", `"Principal":"*","Action":"*:SendMessage"`, nil, polAlice, Allow, Deny},
		{"unknown SQS action", `"Principal":"*","Action":"sqs:SendMesage"`, nil, polAlice, NoDecision, NoDecision},
		{"resource not an ARN", `"Principal":"*","Action":"*","Resource":"'$sqs_queue_arn'"`, nil, polAlice, NoDecision, NoDecision},
		{"resource another queue", `"Principal":"*","Action":"*","Resource":"` + polOther + `"`, nil, polAlice, NoDecision, NoDecision},
		{"resource another service", `"Principal":"*","Action":"*","Resource":"arn:aws:s3:::bucket"`, nil, polAlice, NoDecision, NoDecision},
		{"policy variable", `"Principal":"*","Action":"*","Resource":"arn:aws:sqs:us-east-1:${aws:PrincipalAccount}:orders.fifo"`, nil, polAlice, NoDecision, Deny},
		{"absent key, ArnEquals", `"Principal":"*","Action":"*","Condition":{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:111111111111:t"}}`, nil, polAlice, NoDecision, NoDecision},
		{"absent key, ArnNotEquals", `"Principal":"*","Action":"*","Condition":{"ArnNotEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:111111111111:t"}}`, nil, polAlice, Allow, Deny},
		{"absent key, IfExists", `"Principal":"*","Action":"*","Condition":{"StringEqualsIfExists":{"aws:SourceAccount":"111111111111"}}`, nil, polAlice, Allow, Deny},
		{"absent key, Null true", `"Principal":"*","Action":"*","Condition":{"Null":{"aws:SourceArn":"true"}}`, nil, polAlice, Allow, Deny},
		{"absent key, Null false", `"Principal":"*","Action":"*","Condition":{"Null":{"aws:SourceArn":false}}`, nil, polAlice, NoDecision, NoDecision},
		{"absent key, ForAnyValue", `"Principal":"*","Action":"*","Condition":{"ForAnyValue:StringEquals":{"aws:PrincipalOrgID":"o-1"}}`, nil, polAlice, NoDecision, NoDecision},
		{"absent key, ForAllValues", `"Principal":"*","Action":"*","Condition":{"ForAllValues:StringEquals":{"aws:PrincipalOrgID":"o-1"}}`, nil, polAlice, Allow, Deny},
		{"absent key, numeric", `"Principal":"*","Action":"*","Condition":{"NumericLessThan":{"aws:SourceAccount":5}}`, nil, polAlice, NoDecision, NoDecision},
		{"PrincipalAccount equal", `"Principal":"*","Action":"*","Condition":{"StringEquals":{"aws:PrincipalAccount":["222222222222","111111111111"]}}`, nil, polAlice, Allow, Deny},
		{"PrincipalAccount other", `"Principal":"*","Action":"*","Condition":{"StringEquals":{"aws:PrincipalAccount":"222222222222"}}`, nil, polAlice, NoDecision, NoDecision},
		{"PrincipalAccount not equal", `"Principal":"*","Action":"*","Condition":{"StringNotEquals":{"aws:PrincipalAccount":"222222222222"}}`, nil, polAlice, Allow, Deny},
		{"PrincipalAccount like", `"Principal":"*","Action":"*","Condition":{"StringLike":{"aws:PrincipalAccount":"1111*"}}`, nil, polAlice, Allow, Deny},
		{"SecureTransport false over TLS", `"Principal":"*","Action":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}`, &yes, polAlice, NoDecision, NoDecision},
		{"SecureTransport false over HTTP", `"Principal":"*","Action":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}`, &no, polAlice, Allow, Deny},
		{"SecureTransport unknown", `"Principal":"*","Action":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}`, nil, polAlice, NoDecision, Deny},
		{"unknown key", `"Principal":"*","Action":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, nil, polAlice, NoDecision, Deny},
		{"unknown operator on a known key", `"Principal":"*","Action":"*","Condition":{"NumericEquals":{"aws:PrincipalAccount":"111111111111"}}`, nil, polAlice, NoDecision, Deny},
		{"false beats unknown", `"Principal":"*","Action":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"},"ArnEquals":{"aws:SourceArn":"x"}}`, nil, polAlice, NoDecision, NoDecision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{Caller: tt.caller, Action: "SendMessage", QueueARN: polQueue, SecureTransport: tt.tls}
			for effect, want := range map[string]Decision{"Allow": tt.allow, "Deny": tt.deny} {
				p := mustParsePolicy(t, policyDoc(`{"Effect":"`+effect+`",`+tt.stmt+`}`))
				if got := p.EvaluateRequest(r); got != want {
					t.Errorf("%s: %v, want %v", effect, got, want)
				}
			}
		})
	}
	// In 2008-10-17 a policy variable is literal text, which names no queue.
	p := mustParsePolicy(t, `{"Version":"2008-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"*","Resource":"arn:aws:sqs:us-east-1:${x}:orders.fifo"}]}`)
	if got := p.Evaluate(polAlice, "SendMessage", polQueue); got != NoDecision {
		t.Errorf("2008-10-17 policy variable: %v", got)
	}
}
