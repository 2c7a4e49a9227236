package engine

import (
	"fmt"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// TestAddPermissionQuotas checks that AddPermission stops at SQS's policy
// quotas instead of storing a policy the server's parser would refuse.
func TestAddPermissionQuotas(t *testing.T) {
	grantable := []string{"SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility",
		"GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue"}
	h := newHarness(t)
	q := h.createQueue("q", nil)
	add := func(label string, accounts, actions int) error {
		r := &api.AddPermissionRequest{QueueUrl: q.Path(), Label: label}
		for i := 0; i < accounts; i++ {
			r.AWSAccountIds = append(r.AWSAccountIds, fmt.Sprintf("%012d", 100000000000+i))
		}
		for i := 0; i < actions; i++ {
			r.Actions = append(r.Actions, grantable[i%len(grantable)])
		}
		_, err := h.do(q, r)
		return err
	}
	wantCode(t, add("too-many-principals", api.MaxPolicyPrincipals+1, 1), "OverLimit")
	wantCode(t, add("too-many-actions", 1, api.MaxPolicyActions+1), "OverLimit")
	for i := 0; i < api.MaxPolicyStatements; i++ {
		if err := add(fmt.Sprintf("l%d", i), 1, 1); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	wantCode(t, add("one-too-many", 1, 1), "OverLimit")
}
