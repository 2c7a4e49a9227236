package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/smithy-go"

	"github.com/fifoq/fifoq/internal/auth"
)

// Two accounts, each with its own access key, for the tests of request
// signing and of queue permissions.
const (
	acctA, keyA, secretA = "111111111111", "AKIAFIFOQTESTAAAAAAA", "secretA/0123456789abcdefghijklmnopqrstuv"
	acctB, keyB, secretB = "222222222222", "AKIAFIFOQTESTBBBBBBB", "secretB/0123456789abcdefghijklmnopqrstuv"
)

// authEnv starts a server that requires signatures by the keys of account
// A and account B; its V2 and V1 clients sign as A.
func authEnv(t *testing.T) *Env {
	t.Helper()
	return StartWith(t, Options{
		Credentials: []auth.Credential{
			{AccessKeyID: keyA, SecretAccessKey: secretA, Account: acctA},
			{AccessKeyID: keyB, SecretAccessKey: secretB, Account: acctB},
		},
		AccessKeyID: keyA, SecretAccessKey: secretA,
	})
}

// wrapper wraps an HTTP transport, to see or alter requests after signing.
type wrapper = func(http.RoundTripper) http.RoundTripper

// clientFor returns a client of one protocol that signs with key and
// secret through a transport wrapped by wrap (nil: none).
type clientFor = func(key, secret string, wrap wrapper) Client

// clientsAs returns a client of each protocol, "json" then "query", that
// signs with the given key.
func clientsAs(env *Env, key, secret string, wrap wrapper) []Client {
	v2, v1 := env.ClientsAs(key, secret, wrap)
	return []Client{v2Client{v2}, v1Client{v1}}
}

// eachAuthProtocol runs f in parallel subtests "json" and "query", each on
// its own server of authEnv, with a client of that protocol for account A,
// one for account B, and the constructor of clients of that protocol for
// other keys.
func eachAuthProtocol(t *testing.T, f func(t *testing.T, env *Env, a, b Client, as clientFor)) {
	t.Helper()
	t.Parallel()
	for i, name := range []string{"json", "query"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := authEnv(t)
			as := func(key, secret string, wrap wrapper) Client {
				return clientsAs(env, key, secret, wrap)[i]
			}
			f(t, env, as(keyA, secretA, nil), as(keyB, secretB, nil), as)
		})
	}
}

// wantStatusErr fails the test unless err is a server answer with exactly
// this HTTP status and one of the codes.
func wantStatusErr(t *testing.T, err error, status int, codes ...string) {
	t.Helper()
	wantErr(t, err, codes...)
	if e, _ := apiErr(err); e.Status != status {
		t.Fatalf("error %s came with HTTP %d, want %d", e.Code, e.Status, status)
	}
}

// errMessage is the message of a server answer of either SDK.
func errMessage(err error) string {
	var v1 awserr.Error
	if errors.As(err, &v1) {
		return v1.Message()
	}
	var v2 smithy.APIError
	if errors.As(err, &v2) {
		return v2.ErrorMessage()
	}
	return ""
}

// wantClockErr checks the answer to a request signed too far from the
// server's clock. SQS answers SignatureDoesNotMatch (403) with "Signature
// expired: ..." or "Signature not yet current: ..." (auth documents this in
// api.ErrSignatureExpired); other AWS services answer RequestExpired or
// RequestTimeTooSkewed, which a client would handle just as well.
func wantClockErr(t *testing.T, err error, phrase string) {
	t.Helper()
	wantErr(t, err, "SignatureDoesNotMatch", "RequestExpired", "RequestTimeTooSkewed")
	e, _ := apiErr(err)
	if e.Code == "SignatureDoesNotMatch" {
		if msg := errMessage(err); !strings.Contains(msg, phrase) {
			t.Fatalf("SignatureDoesNotMatch for a skewed clock says %q; SDKs look for %q to correct their clock", msg, phrase)
		}
		if e.Status != http.StatusForbidden {
			t.Fatalf("SignatureDoesNotMatch came with HTTP %d, want 403", e.Status)
		}
	}
}

// TestAuthSignatures checks SigV4 verification through both protocols:
// good keys pass, and each kind of bad signature gets SQS's answer.
func TestAuthSignatures(t *testing.T) {
	eachAuthProtocol(t, func(t *testing.T, env *Env, a, b Client, as clientFor) {
		ctx := ctxT(t)
		q := must(a.CreateQueue(ctx, "signed", nil, nil))(t)
		if !strings.Contains(q, "/"+acctA+"/signed") {
			t.Fatalf("account A's queue URL %q does not name account %s", q, acctA)
		}
		qb := must(b.CreateQueue(ctx, "signed", nil, nil))(t)
		if !strings.Contains(qb, "/"+acctB+"/signed") {
			t.Fatalf("account B's queue URL %q does not name account %s", qb, acctB)
		}
		mustSend(t, a, q, SendIn{Body: "good"})
		wantBodies(t, mustReceive(t, a, q, 10), "good")

		t.Run("wrong secret", func(t *testing.T) {
			c := as(keyA, secretB, nil)
			_, err := c.Send(ctx, q, SendIn{Body: "forged"})
			wantStatusErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		})
		t.Run("unknown key", func(t *testing.T) {
			c := as("AKIAFIFOQTESTUNKNOWN", secretA, nil)
			_, _, err := c.ListQueues(ctx, "", 0, "")
			wantStatusErr(t, err, http.StatusForbidden, "InvalidClientTokenId")
		})
		t.Run("body altered after signing", func(t *testing.T) {
			tamper := &tamperTransport{from: []byte("tamper-me"), to: []byte("TAMPER-ME")}
			c := as(keyA, secretA, func(next http.RoundTripper) http.RoundTripper { tamper.next = next; return tamper })
			_, err := c.Send(ctx, q, SendIn{Body: "tamper-me"})
			if tamper.hits.Load() == 0 {
				t.Fatal("the request body was not altered: the test tested nothing")
			}
			wantStatusErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		})
		t.Run("session token", func(t *testing.T) {
			// fifoq issues no temporary credentials: a request that carries a
			// session token cannot be from a fifoq key.
			c := as(keyA, secretA, mutate(func(r *http.Request) { r.Header.Set("X-Amz-Security-Token", "token") }))
			_, _, err := c.ListQueues(ctx, "", 0, "")
			wantStatusErr(t, err, http.StatusForbidden, "InvalidClientTokenId", "SignatureDoesNotMatch")
		})
		t.Run("host altered after signing", func(t *testing.T) {
			// A signature made for one endpoint must not work at another.
			c := as(keyA, secretA, mutate(func(r *http.Request) { r.Host = "sqs.us-east-1.amazonaws.com" }))
			_, err := c.Send(ctx, q, SendIn{Body: "elsewhere"})
			wantStatusErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		})
		t.Run("date altered after signing", func(t *testing.T) {
			c := as(keyA, secretA, mutate(func(r *http.Request) {
				r.Header.Set("X-Amz-Date", time.Now().UTC().Add(time.Minute).Format("20060102T150405Z"))
			}))
			_, err := c.Send(ctx, q, SendIn{Body: "redated"})
			wantStatusErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		})
		if a.Proto() == "json" {
			t.Run("action altered after signing", func(t *testing.T) {
				// The action of an AWS JSON request is a header: turning a
				// signed GetQueueAttributes into a PurgeQueue must fail.
				mustSend(t, a, q, SendIn{Body: "keep me"})
				c := as(keyA, secretA, mutate(func(r *http.Request) {
					if r.Header.Get("X-Amz-Target") == "AmazonSQS.GetQueueAttributes" {
						r.Header.Set("X-Amz-Target", "AmazonSQS.PurgeQueue")
					}
				}))
				_, err := c.GetAttrs(ctx, q, "All")
				wantStatusErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
				wantBodies(t, mustReceive(t, a, q, 10), "keep me")
				mustDelete(t, a, q, mustReceive(t, a, q, 10)...)
			})
		}
		// Nothing the refused requests carried reached the queue.
		if msgs := mustReceive(t, a, q, 10); len(msgs) != 0 {
			t.Fatalf("refused sends left messages %q", bodies(msgs))
		}
	})
}

// TestAuthClockSkew checks that a request signed 20 minutes before or after
// the server's clock is refused (SQS allows 15 minutes either way).
func TestAuthClockSkew(t *testing.T) {
	eachAuthProtocol(t, func(t *testing.T, env *Env, a, _ Client, _ clientFor) {
		ctx := ctxT(t)
		q := must(a.CreateQueue(ctx, "skew", nil, nil))(t)

		env.SignatureSkew.Set(20 * time.Minute) // the client's clock is 20 minutes slow
		_, err := a.Send(ctx, q, SendIn{Body: "late"})
		wantClockErr(t, err, "Signature expired")

		env.SignatureSkew.Set(-20 * time.Minute) // the client's clock is 20 minutes fast
		_, err = a.Send(ctx, q, SendIn{Body: "early"})
		wantClockErr(t, err, "Signature not yet current")

		env.SignatureSkew.Set(10 * time.Minute) // 10 minutes off: within the 15 allowed
		mustSend(t, a, q, SendIn{Body: "on time"})
		env.SignatureSkew.Set(0)
		wantBodies(t, mustReceive(t, a, q, 10), "on time")
	})
}

// TestAuthUnsigned sends requests without any signature: both protocols,
// POST and GET, get MissingAuthenticationToken (403), and learn nothing
// about queues.
func TestAuthUnsigned(t *testing.T) {
	t.Parallel()
	env := authEnv(t)
	q := must(v2Client{env.V2}.CreateQueue(ctxT(t), "private", nil, nil))(t)
	for _, tc := range []struct {
		name string
		req  func() *http.Request
		json bool
	}{
		{"json", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, env.URL+"/", strings.NewReader(`{"QueueUrl":"`+q+`","MessageBody":"x"}`))
			r.Header.Set("Content-Type", "application/x-amz-json-1.0")
			r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
			return r
		}, true},
		{"query POST", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, env.URL+"/", strings.NewReader("Action=SendMessage&Version=2012-11-05&MessageBody=x&QueueUrl="+url.QueryEscape(q)))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, false},
		{"query GET", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, env.URL+"/?Action=ListQueues&Version=2012-11-05", nil)
			return r
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawDo(t, env, tc.req().WithContext(ctxT(t)))
			if r.status != http.StatusForbidden {
				t.Fatalf("unsigned request: HTTP %d, want 403: %s", r.status, r.body)
			}
			code := ""
			if tc.json {
				code = jsonErrorType(t, r)
			} else {
				code = queryErrorCode(t, r)
			}
			if code != "MissingAuthenticationToken" {
				t.Fatalf("unsigned request: code %q, want MissingAuthenticationToken: %s", code, r.body)
			}
			if bytes.Contains(r.body, []byte("private")) {
				t.Fatalf("the answer to an unsigned request names a queue: %s", r.body)
			}
		})
	}
	t.Run("malformed Authorization", func(t *testing.T) {
		r := rawPost(t, env, map[string]string{
			"Content-Type":  "application/x-www-form-urlencoded",
			"Authorization": "AWS4-HMAC-SHA256 Credential=" + keyA,
			"X-Amz-Date":    time.Now().UTC().Format("20060102T150405Z"),
		}, "Action=ListQueues&Version=2012-11-05")
		if r.status < 400 || r.status > 499 {
			t.Fatalf("malformed Authorization: HTTP %d, want 4xx: %s", r.status, r.body)
		}
		if code := queryErrorCode(t, r); code != "IncompleteSignature" {
			t.Fatalf("malformed Authorization: code %q, want IncompleteSignature", code)
		}
	})
	if msgs := mustReceive(t, v2Client{env.V2}, q, 10); len(msgs) != 0 {
		t.Fatalf("unsigned sends left messages %q", bodies(msgs))
	}
}

// TestAuthCrossAccount checks queue permissions between two accounts: none
// without a grant, what AddPermission grants and nothing more, and nothing
// again after RemovePermission.
func TestAuthCrossAccount(t *testing.T) {
	eachAuthProtocol(t, func(t *testing.T, env *Env, a, b Client, _ clientFor) {
		ctx := ctxT(t)
		q := must(a.CreateQueue(ctx, "shared", nil, nil))(t)
		denied := func(t *testing.T, what string, err error) {
			t.Helper()
			if err == nil {
				t.Fatalf("%s by account B on account A's queue succeeded, want AccessDenied", what)
			}
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
		}
		bSend := func(body string) error { _, err := b.Send(ctx, q, SendIn{Body: body}); return err }
		bReceive := func() ([]Msg, error) { return b.Receive(ctx, q, RecvIn{Max: 10, Wait: i32(0)}) }

		t.Run("no grant", func(t *testing.T) {
			denied(t, "SendMessage", bSend("intruder"))
			_, err := bReceive()
			denied(t, "ReceiveMessage", err)
			_, err = b.GetAttrs(ctx, q, "All")
			denied(t, "GetQueueAttributes", err)
			denied(t, "PurgeQueue", b.Purge(ctx, q))
			denied(t, "DeleteQueue", b.DeleteQueue(ctx, q))
			denied(t, "AddPermission", b.AddPermission(ctx, q, "self-grant", []string{acctB}, []string{"SendMessage"}))
		})
		ok(t, a.AddPermission(ctx, q, "b-send-receive", []string{acctB}, []string{"SendMessage", "ReceiveMessage"}))
		t.Run("granted", func(t *testing.T) {
			ok(t, bSend("from B"))
			msgs, err := bReceive()
			ok(t, err)
			wantBodies(t, msgs, "from B")
			// DeleteMessage was not granted; the owner may delete with B's handle.
			denied(t, "DeleteMessage", b.Delete(ctx, q, msgs[0].Handle))
			ok(t, a.Delete(ctx, q, msgs[0].Handle))
			_, err = b.GetAttrs(ctx, q, "All")
			denied(t, "GetQueueAttributes (not granted)", err)
			// Granting is the owner's alone, even for a grantee.
			denied(t, "RemovePermission", b.RemovePermission(ctx, q, "b-send-receive"))
			denied(t, "SetQueueAttributes", b.SetAttrs(ctx, q, map[string]string{"VisibilityTimeout": "5"}))
		})
		ok(t, a.RemovePermission(ctx, q, "b-send-receive"))
		t.Run("revoked", func(t *testing.T) {
			denied(t, "SendMessage", bSend("after revoke"))
			_, err := bReceive()
			denied(t, "ReceiveMessage", err)
		})
		// B's own queue of the same name is B's alone.
		qb := must(b.CreateQueue(ctx, "shared", nil, nil))(t)
		if qb == q {
			t.Fatalf("accounts A and B got the same queue URL %q", q)
		}
		_, err := a.Send(ctx, qb, SendIn{Body: "A to B"})
		wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
		if msgs := mustReceive(t, a, q, 10); len(msgs) != 0 {
			t.Fatalf("account A's queue holds %q, want nothing", bodies(msgs))
		}
	})
}

// TestAuthPolicy checks hand-written queue policies: an explicit Deny binds
// the owner too, and a condition grants nothing fifoq cannot check.
func TestAuthPolicy(t *testing.T) {
	eachAuthProtocol(t, func(t *testing.T, env *Env, a, b Client, _ clientFor) {
		ctx := ctxT(t)
		q := must(a.CreateQueue(ctx, "policed", nil, nil))(t)
		arn := queueARN(t, a, q)
		policy := func(statements ...map[string]any) string {
			doc, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
			if err != nil {
				t.Fatal(err)
			}
			return string(doc)
		}

		t.Run("explicit deny binds the owner", func(t *testing.T) {
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": policy(map[string]any{
				"Sid": "no-sends", "Effect": "Deny", "Principal": map[string]any{"AWS": "arn:aws:iam::" + acctA + ":root"},
				"Action": "sqs:SendMessage", "Resource": arn,
			})}))
			_, err := a.Send(ctx, q, SendIn{Body: "denied"})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
			_, _, err = a.SendBatch(ctx, q, []BatchSend{{ID: "1", SendIn: SendIn{Body: "denied too"}}})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
			// What the Deny does not name is still the owner's.
			if _, err := a.Receive(ctx, q, RecvIn{Wait: i32(0)}); err != nil {
				t.Fatalf("owner's ReceiveMessage under a Deny of SendMessage: %v", err)
			}
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": ""}))
			mustSend(t, a, q, SendIn{Body: "allowed again"})
			wantBodies(t, mustReceive(t, a, q, 10), "allowed again")
		})

		t.Run("allow by hand-written policy", func(t *testing.T) {
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": policy(map[string]any{
				"Effect": "Allow", "Principal": map[string]any{"AWS": acctB},
				"Action": []string{"sqs:SendMessage"}, "Resource": arn,
			})}))
			if _, err := b.Send(ctx, q, SendIn{Body: "from B"}); err != nil {
				t.Fatalf("B's send under a policy allowing it: %v", err)
			}
			_, err := b.Receive(ctx, q, RecvIn{Wait: i32(0)})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": ""}))
			wantBodies(t, mustReceive(t, a, q, 10), "from B")
		})

		// SQS accepts a statement with a Condition (localstack
		// test_sqs.py::test_set_queue_policy); fifoq keeps it and evaluates
		// what it can: aws:SourceArn is absent from every request to fifoq,
		// so ArnEquals on it is false and the Allow grants nothing.
		t.Run("condition kept, never widening", func(t *testing.T) {
			conditional := policy(map[string]any{
				"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage", "Resource": arn,
				"Condition": map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": "arn:aws:sns:us-east-1:" + acctB + ":topic"}},
			})
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": conditional}))
			attrs := must(a.GetAttrs(ctx, q, "Policy"))(t)
			if p := attrs["Policy"]; p != conditional {
				t.Fatalf("stored policy = %s, want %s", p, conditional)
			}
			_, err := b.Send(ctx, q, SendIn{Body: "via condition"})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")

			// The common Deny of plain HTTP: these clients speak HTTP, so
			// it binds even the owner.
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": policy(map[string]any{
				"Effect": "Deny", "Principal": "*", "Action": "sqs:SendMessage", "Resource": arn,
				"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
			})}))
			_, err = a.Send(ctx, q, SendIn{Body: "over HTTP"})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
			ok(t, a.SetAttrs(ctx, q, map[string]string{"Policy": ""}))
			mustSend(t, a, q, SendIn{Body: "allowed again"})
			wantBodies(t, mustReceive(t, a, q, 10), "allowed again")
		})
	})
}

// emptySHA256 is the hex SHA-256 of an empty payload, the payload hash of a
// presigned GET.
var emptySHA256 = func() string { s := sha256.Sum256(nil); return hex.EncodeToString(s[:]) }()

// presign returns a URL for a Query GET of params signed in its query string
// with key and secret, valid for expires, and the headers the signature
// covers besides host (none for the SDK's signer).
func presign(t *testing.T, env *Env, params url.Values, key, secret string, expires time.Duration) (string, http.Header) {
	t.Helper()
	params.Set("X-Amz-Expires", strconv.Itoa(int(expires/time.Second)))
	req, err := http.NewRequest(http.MethodGet, env.URL+"/?"+params.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	signed, hdr, err := v4.NewSigner().PresignHTTP(context.Background(), awsv2.Credentials{AccessKeyID: key, SecretAccessKey: secret},
		req, emptySHA256, "sqs", Region, time.Now().UTC())
	if err != nil {
		t.Fatalf("presign: %v", err)
	}
	return signed, hdr
}

// getURL GETs a URL with headers and returns the answer.
func getURL(t *testing.T, env *Env, u string, hdr http.Header) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		if strings.EqualFold(k, "Host") {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return rawDo(t, env, req)
}

// TestAuthPresigned checks presigned Query GET requests: a good one acts
// for its key's account, and one with a wrong signature or past its expiry
// is refused.
func TestAuthPresigned(t *testing.T) {
	t.Parallel()
	env := authEnv(t)
	ctx := ctxT(t)
	a := v2Client{env.V2}
	must(a.CreateQueue(ctx, "presigned-a", nil, nil))(t)
	_, v1B := env.ClientsAs(keyB, secretB, nil)
	must(v1Client{v1B}.CreateQueue(ctx, "presigned-b", nil, nil))(t)
	list := url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}}

	t.Run("good signature", func(t *testing.T) {
		u, hdr := presign(t, env, list, keyA, secretA, 5*time.Minute)
		r := getURL(t, env, u, hdr)
		if r.status != http.StatusOK {
			t.Fatalf("presigned ListQueues: HTTP %d: %s", r.status, r.body)
		}
		if !bytes.Contains(r.body, []byte("/"+acctA+"/presigned-a")) {
			t.Fatalf("presigned ListQueues as A does not list A's queue: %s", r.body)
		}
		if bytes.Contains(r.body, []byte("presigned-b")) {
			t.Fatalf("presigned ListQueues as A lists B's queue: %s", r.body)
		}
	})
	t.Run("wrong signature", func(t *testing.T) {
		u, hdr := presign(t, env, list, keyA, secretA, 5*time.Minute)
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		q := pu.Query()
		sig := []byte(q.Get("X-Amz-Signature"))
		if len(sig) != 64 {
			t.Fatalf("presigned URL has signature %q", sig)
		}
		if sig[10] == '0' { // another hex digit at one place
			sig[10] = '1'
		} else {
			sig[10] = '0'
		}
		q.Set("X-Amz-Signature", string(sig))
		pu.RawQuery = q.Encode()
		r := getURL(t, env, pu.String(), hdr)
		if r.status != http.StatusForbidden {
			t.Fatalf("presigned request with a wrong signature: HTTP %d, want 403: %s", r.status, r.body)
		}
		if code := queryErrorCode(t, r); code != "SignatureDoesNotMatch" {
			t.Fatalf("presigned request with a wrong signature: code %q, want SignatureDoesNotMatch", code)
		}
	})
	t.Run("parameter added after signing", func(t *testing.T) {
		u, hdr := presign(t, env, list, keyA, secretA, 5*time.Minute)
		r := getURL(t, env, u+"&QueueNamePrefix=presigned-b", hdr)
		if r.status != http.StatusForbidden {
			t.Fatalf("presigned request with an added parameter: HTTP %d, want 403: %s", r.status, r.body)
		}
		if code := queryErrorCode(t, r); code != "SignatureDoesNotMatch" {
			t.Fatalf("presigned request with an added parameter: code %q, want SignatureDoesNotMatch", code)
		}
	})
	t.Run("expired", func(t *testing.T) {
		u, hdr := presign(t, env, list, keyA, secretA, time.Minute)
		env.SignatureSkew.Set(2 * time.Minute)
		defer env.SignatureSkew.Set(0)
		r := getURL(t, env, u, hdr)
		if r.status < 400 || r.status > 499 {
			t.Fatalf("expired presigned request: HTTP %d, want 4xx: %s", r.status, r.body)
		}
		if code := queryErrorCode(t, r); code != "RequestExpired" && code != "AccessDenied" {
			t.Fatalf("expired presigned request: code %q, want RequestExpired", code)
		}
	})
}

// TestAuthNoCredentials checks the mode without configured credentials: any
// signature is accepted, and a 12-digit access key names the caller's
// account, whose queues other accounts may not use without a grant.
func TestAuthNoCredentials(t *testing.T) {
	t.Parallel()
	for i, name := range []string{"json", "query"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := StartWith(t, Options{AccessKeyID: "123456789012", SecretAccessKey: "anything"})
			ctx := ctxT(t)
			owner := clients(env)[i]
			q := must(owner.CreateQueue(ctx, "mine", nil, nil))(t)
			if !strings.Contains(q, "/123456789012/mine") {
				t.Fatalf("queue URL %q does not name the access key's account 123456789012", q)
			}
			mustSend(t, owner, q, SendIn{Body: "hello"})

			other := clientsAs(env, "210987654321", "whatever", nil)[i]
			_, err := other.Send(ctx, q, SendIn{Body: "intruder"})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = other.Receive(ctx, q, RecvIn{Wait: i32(0)})
			wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")

			// An access key that is no account id acts for the default account.
			anon := clientsAs(env, "test", "test", nil)[i]
			qd := must(anon.CreateQueue(ctx, "default", nil, nil))(t)
			if !strings.Contains(qd, "/"+Account+"/default") {
				t.Fatalf("queue URL %q of a non-account key does not name the default account %s", qd, Account)
			}
			ok(t, owner.AddPermission(ctx, q, "other-send", []string{"210987654321"}, []string{"SendMessage"}))
			if _, err := other.Send(ctx, q, SendIn{Body: "granted"}); err != nil {
				t.Fatalf("send after AddPermission: %v", err)
			}
			wantBodies(t, mustReceive(t, owner, q, 10), "hello", "granted")
		})
	}
}

// tamperTransport replaces from with to in request bodies after the SDK
// signed them, as a man in the middle would.
type tamperTransport struct {
	next     http.RoundTripper
	from, to []byte
	// hits counts the requests altered.
	hits atomic.Int32
}

func (t *tamperTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		return t.next.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, t.from) {
		t.hits.Add(1)
		b = bytes.ReplaceAll(b, t.from, t.to)
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return t.next.RoundTrip(r)
}

// mutate returns a transport wrapper that applies f to a copy of every
// request after the SDK signed it.
func mutate(f func(*http.Request)) wrapper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			f(r)
			return next.RoundTrip(r)
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAuthPayloadAlwaysSigned checks that a signature always covers the
// body. SQS, unlike S3, does not honour X-Amz-Content-Sha256:
// UNSIGNED-PAYLOAD (the request then fails with SignatureDoesNotMatch), and
// a presigned URL does not sign a body it was not made with. Otherwise one
// captured request could be replayed, within the clock skew, as any other
// Query action: a ListQueues turned into a DeleteQueue.
func TestAuthPayloadAlwaysSigned(t *testing.T) {
	t.Parallel()
	env := authEnv(t)
	ctx := ctxT(t)
	a := v2Client{env.V2}
	q := must(a.CreateQueue(ctx, "replayed", nil, nil))(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	deleteQueue := "Action=DeleteQueue&Version=2012-11-05&QueueUrl=" + url.QueryEscape(q)

	t.Run("UNSIGNED-PAYLOAD with another body", func(t *testing.T) {
		// The signed body is as long as the one put in its place, since
		// the signature covers Content-Length.
		signed := "Action=ListQueues&Version=2012-11-05&Pad="
		signed += strings.Repeat("x", len(deleteQueue)-len(signed))
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, env.URL+"/", strings.NewReader(signed))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range form {
			req.Header.Set(k, v)
		}
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		if err := v4.NewSigner().SignHTTP(ctx, awsv2.Credentials{AccessKeyID: keyA, SecretAccessKey: secretA}, req, "UNSIGNED-PAYLOAD", "sqs", Region, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		// The body is replaced after signing, as by a man in the middle or
		// a replay of a captured request.
		req.Body = io.NopCloser(strings.NewReader(deleteQueue))
		req.ContentLength = int64(len(deleteQueue))
		r := rawDo(t, env, req)
		if r.status != http.StatusForbidden {
			t.Errorf("request signed with UNSIGNED-PAYLOAD and another body: HTTP %d, want 403 SignatureDoesNotMatch: %s", r.status, r.body)
		} else if code := queryErrorCode(t, r); code != "SignatureDoesNotMatch" {
			t.Errorf("request signed with UNSIGNED-PAYLOAD and another body: code %q, want SignatureDoesNotMatch", code)
		}
	})
	t.Run("presigned GET with a body", func(t *testing.T) {
		u, hdr := presign(t, env, url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}}, keyA, secretA, 5*time.Minute)
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, u, strings.NewReader(deleteQueue))
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range hdr {
			if !strings.EqualFold(k, "Host") {
				req.Header[k] = vs
			}
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r := rawDo(t, env, req)
		if r.status != http.StatusForbidden {
			t.Errorf("presigned ListQueues sent with a DeleteQueue body: HTTP %d, want 403: %s", r.status, r.body)
		} else if code := queryErrorCode(t, r); code != "SignatureDoesNotMatch" {
			t.Errorf("presigned ListQueues sent with a DeleteQueue body: code %q, want SignatureDoesNotMatch", code)
		}
	})
	// Whatever was answered, the queue must still be there.
	if _, err := a.GetQueueURL(ctx, "replayed"); err != nil {
		t.Fatalf("queue after the replay attempts: %v", err)
	}
}

// TestAuthCrossAccountRedrive checks the ways messages could be moved into
// another account's queue without its permission: a RedrivePolicy naming
// it as dead-letter queue (SQS requires the dead-letter queue in the same
// account) and a message move task with it as destination (which needs
// sqs:SendMessage on it).
func TestAuthCrossAccountRedrive(t *testing.T) {
	eachAuthProtocol(t, func(t *testing.T, env *Env, a, b Client, _ clientFor) {
		ctx := ctxT(t)
		victim := must(a.CreateQueue(ctx, "victim", nil, nil))(t)
		victimARN := queueARN(t, a, victim)

		_, err := b.CreateQueue(ctx, "redrive-to-a", map[string]string{"RedrivePolicy": redrivePolicy(victimARN, 1)}, nil)
		if err == nil {
			t.Errorf("CreateQueue with another account's queue as dead-letter queue succeeded")
		} else {
			wantErr(t, err, "InvalidParameterValue", "AccessDenied", "AWS.SimpleQueueService.NonExistentQueue")
		}
		src := must(b.CreateQueue(ctx, "b-src", nil, nil))(t)
		err = b.SetAttrs(ctx, src, map[string]string{"RedrivePolicy": redrivePolicy(victimARN, 1)})
		if err == nil {
			t.Errorf("SetQueueAttributes with another account's queue as dead-letter queue succeeded")
			// Show what it lets B do: put a message into A's queue.
			mustSend(t, b, src, SendIn{Body: "injected"})
			for i := 0; i < 3; i++ {
				msgs, _ := b.Receive(ctx, src, RecvIn{Max: 10, Wait: i32(0)})
				for _, m := range msgs {
					_ = b.ChangeVisibility(ctx, src, m.Handle, 0)
				}
			}
			if msgs := mustReceive(t, a, victim, 10); len(msgs) > 0 {
				t.Errorf("account B moved %q into account A's queue without permission", bodies(msgs))
			}
		} else {
			wantErr(t, err, "InvalidParameterValue", "AccessDenied", "AWS.SimpleQueueService.NonExistentQueue")
		}

		// B's own dead-letter queue, with a message in it.
		dlq := must(b.CreateQueue(ctx, "b-dlq", nil, nil))(t)
		ok(t, b.SetAttrs(ctx, src, map[string]string{"RedrivePolicy": redrivePolicy(queueARN(t, b, dlq), 1)}))
		mustSend(t, b, src, SendIn{Body: "dead"})
		eventually(t, 5*time.Second, "the message reaching B's dead-letter queue", func() bool {
			// Receive, and give the message back at once (aws-sdk-go-v2
			// does not send a VisibilityTimeout of 0 with a receive).
			msgs, _ := b.Receive(ctx, src, RecvIn{Max: 10, Wait: i32(0)})
			for _, m := range msgs {
				_ = b.ChangeVisibility(ctx, src, m.Handle, 0)
			}
			return numAttr(t, b, dlq, "ApproximateNumberOfMessages") == 1
		})
		_, err = b.StartMove(ctx, queueARN(t, b, dlq), victimARN, 10)
		wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
		_, _, err = b.ListDLQSources(ctx, victim, 0, "")
		wantStatusErr(t, err, http.StatusForbidden, "AccessDenied")
		if msgs := mustReceive(t, a, victim, 10); len(msgs) > 0 {
			t.Errorf("account B moved %q into account A's queue without permission", bodies(msgs))
		}
	})
}
