package auth

import (
	"errors"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// FuzzParsePolicy checks that ParsePolicy never panics, refuses only with a
// client error of its own, and that what it accepts evaluates without panic,
// to one of the three decisions, the same way twice.
func FuzzParsePolicy(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`null`,
		`{"Version":"2012-10-17","Statement":[]}`,
		`{"Version":"2012-10-17","Id":"arn:aws:sqs:us-east-1:000000000000:q/SQSDefaultPolicy","Statement":[{"Sid":"one","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},"Action":["SQS:SendMessage","SQS:ReceiveMessage"],"Resource":"arn:aws:sqs:us-east-1:000000000000:q"}]}`,
		`{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"000000000000"},"NotAction":"sqs:?et*","NotResource":"arn:aws:SQS:*:000000000000:q*"}}`,
		`{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*","Condition":{}}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Condition":{"ArnEquals":{"aws:SourceArn":"x"}}}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:sts::111111111111:assumed-role/r/s"},"Action":"sqs:*","Resource":"arn:aws:sqs:*"}]}`,
		`{"Statement":[{"Effect":"Allow","Effect":"Deny"}]}`,
		`{"Statement":[{"Sid":"%d%s%%","Effect":"Allow","Principal":"*","Action":"sqs:é"}]}`,
	} {
		f.Add(seed)
	}
	callers := []string{"", "000000000000", "111111111111", "222222222222"}
	actions := []string{"SendMessage", "SendMessageBatch", "DeleteQueue", "ReceiveMessage", "", "*"}
	arns := []string{"arn:aws:sqs:us-east-1:000000000000:q", "arn:aws:SQS:us-east-1:000000000000:Q", "", "*"}
	f.Fuzz(func(t *testing.T, doc string) {
		p, err := ParsePolicy(doc)
		if err != nil {
			var e *api.Error
			if !errors.As(err, &e) || e.Status < 400 || e.Status > 499 || e.Code != "InvalidAttributeValue" {
				t.Fatalf("ParsePolicy refused with %#v, want an InvalidAttributeValue *api.Error", err)
			}
			if p != nil {
				t.Fatalf("ParsePolicy returned a policy with its error")
			}
			return
		}
		again, err := ParsePolicy(doc)
		if err != nil {
			t.Fatalf("ParsePolicy accepted the document once and refused it next: %v", err)
		}
		for _, caller := range callers {
			for _, action := range actions {
				for _, arn := range arns {
					d := p.Evaluate(caller, action, arn)
					if d != NoDecision && d != Allow && d != Deny {
						t.Fatalf("Evaluate = %v", d)
					}
					if d2 := again.Evaluate(caller, action, arn); d2 != d {
						t.Fatalf("Evaluate(%q, %q, %q) = %v, then %v", caller, action, arn, d, d2)
					}
					err := Authorize(p, caller, "000000000000", action, arn)
					if err != nil {
						if e, ok := err.(*api.Error); !ok || e.Code != "AccessDenied" {
							t.Fatalf("Authorize = %#v, want nil or AccessDenied", err)
						}
					}
					if (err == nil) != (d == Allow && (caller == "000000000000" || !api.IsOwnerOnlyAction(action)) ||
						d == NoDecision && caller == "000000000000") {
						t.Fatalf("Authorize(%q, %q, %q) = %v for decision %v", caller, action, arn, err, d)
					}
				}
			}
		}
	})
}
