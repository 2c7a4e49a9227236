package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/testenv"
)

// emptyListsScript makes, through Debian's boto3 (botocore 1.29, AWS
// Query), the requests whose empty lists botocore writes as the bare
// member name (UntagQueue TagKeys=[] as TagKeys=, AddPermission
// AWSAccountIds=[] as AWSAccountIds=), and prints each error's code and
// message as a JSON line.
const emptyListsScript = `
import json, sys
import boto3
from botocore.exceptions import ClientError

sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
assert sqs.meta.service_model.protocol == "query", sqs.meta.service_model.protocol
q = sys.argv[2]
calls = [
    lambda: sqs.untag_queue(QueueUrl=q, TagKeys=[]),
    lambda: sqs.add_permission(QueueUrl=q, Label="l", AWSAccountIds=[], Actions=["SendMessage"]),
    lambda: sqs.add_permission(QueueUrl=q, Label="l", AWSAccountIds=["111111111111"], Actions=[]),
]
for call in calls:
    try:
        call()
        print(json.dumps({"code": "", "message": "no error"}))
    except ClientError as e:
        print(json.dumps({"code": e.response["Error"]["Code"], "message": e.response["Error"]["Message"]}))
`

// TestQueryEmptyListsDebianBoto3: requests with an empty list, made
// through Debian's boto3 over AWS Query, get the same error code and
// message as the same requests made over AWS JSON with aws-sdk-go-v2
// (where fifoq used to answer MissingParameter over Query, not knowing
// botocore's TagKeys= for an empty list).
func TestQueryEmptyListsDebianBoto3(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import boto3").Run(); err != nil {
		testenv.ClientMissing(t, "Debian's python3-boto3 is not installed")
	}
	env := Start(t)
	u := mustCreate(t, v2Client{env.V2}, "empty-lists", nil)
	ctx := ctxT(t)
	q := awsv2.String(u)
	_, untag := env.V2.UntagQueue(ctx, &sqsv2.UntagQueueInput{QueueUrl: q, TagKeys: []string{}})
	_, noAccounts := env.V2.AddPermission(ctx, &sqsv2.AddPermissionInput{QueueUrl: q, Label: awsv2.String("l"), AWSAccountIds: []string{}, Actions: []string{"SendMessage"}})
	_, noActions := env.V2.AddPermission(ctx, &sqsv2.AddPermissionInput{QueueUrl: q, Label: awsv2.String("l"), AWSAccountIds: []string{"111111111111"}, Actions: []string{}})
	type answer struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	var want []answer
	for _, err := range []error{untag, noAccounts, noActions} {
		var e smithy.APIError
		if !errors.As(err, &e) {
			t.Fatalf("over JSON: %v, want an error", err)
		}
		want = append(want, answer{e.ErrorCode(), e.ErrorMessage()})
	}

	path := filepath.Join(t.TempDir(), "empty_lists.py")
	if err := os.WriteFile(path, []byte(emptyListsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, python, path, env.URL, u)
	cmd.Env = testenv.ClientEnv(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python script: %v\n%s", err, out)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for i, w := range want {
		var got answer
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("python script's answer %d: %v\n%s", i, err, out)
		}
		if got != w {
			t.Errorf("request %d over Query: %+v, over JSON: %+v", i, got, w)
		}
	}
}
