package auth

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// checkClientError fails unless err is an *api.Error of a client error.
func checkClientError(t *testing.T, err error) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *api.Error", err, err)
	}
	if e.Status < 400 || e.Status > 499 || e.Fault != api.FaultSender || e.Code == "" || e.Code != e.QueryCode {
		t.Fatalf("not a client error: %+v", e)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"AWS4-HMAC-SHA256 Credential=AKID/20250304/us-east-1/sqs/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=abcdef",
		"AWS4-HMAC-SHA256 Credential=AKID/20250304/us-east-1/sqs/aws4_request,SignedHeaders=host,Signature=00",
		"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, Credential=a/b/c/d/e",
		"AWS4-HMAC-SHA256 ,,,=,=",
		"AWS AKID:sig",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		p, err := parseAuthorization(value)
		if err != nil {
			checkClientError(t, err)
			if err.Code != "IncompleteSignature" {
				t.Fatalf("code %s, want IncompleteSignature", err.Code)
			}
			return
		}
		if p.Presigned || p.Signature == "" || !slices.Contains(p.SignedHeaders, "host") || !slices.IsSorted(p.SignedHeaders) {
			t.Fatalf("accepted a malformed header %q: %+v", value, p)
		}
		s := p.Scope
		if s.AccessKeyID == "" || s.Date == "" || s.Region == "" || s.Service == "" || s.Terminator == "" {
			t.Fatalf("accepted an incomplete scope %q: %+v", value, s)
		}
	})
}

func FuzzParsePresigned(f *testing.F) {
	for _, s := range []string{
		"Action=ListQueues&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20250304%2Fus-east-1%2Fsqs%2Faws4_request&X-Amz-Date=20250304T050607Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Signature=abcdef",
		"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=604801",
		"X-Amz-Signature=a&X-Amz-Signature=b",
		"%zz=1&;",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw) // what the server's r.URL.Query() gives
		p, err := parsePresigned(q)
		if err != nil {
			checkClientError(t, err)
			return
		}
		// The date must be X-Amz-Date's, read: the zero time is a date too
		// (00010101T000000Z), which the signature's check refuses as
		// skewed, not the parser.
		if !p.Presigned || p.AmzDate == "" || p.Date.Format(amzDateFormat) != p.AmzDate || !slices.Contains(p.SignedHeaders, "host") {
			t.Fatalf("accepted malformed parameters %q: %+v", raw, p)
		}
		if p.HasExpires && (p.Expires < 0 || p.Expires > maxPresignedExpirySeconds*time.Second) {
			t.Fatalf("accepted X-Amz-Expires %v", p.Expires)
		}
	})
}

// FuzzVerify runs whole requests through Verify: whatever their signature
// parts, the answer is an account only for a good signature, else a client
// error.
func FuzzVerify(f *testing.F) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	cred := Credential{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount}
	good := signedJSONRequest(f, cred, now, `{"QueueName":"q"}`)
	f.Add(good.Header.Get("Authorization"), good.Header.Get("X-Amz-Date"), "", `{"QueueName":"q"}`)
	f.Add("", "", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="+testKeyID+"%2F20250304%2Fus-east-1%2Fsqs%2Faws4_request&X-Amz-Date=20250304T050607Z&X-Amz-SignedHeaders=host&X-Amz-Signature=00", "")
	f.Add("AWS4-HMAC-SHA256 Credential="+testKeyID+"/20250304/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=zz", "20250304T050607Z", "", "")
	store, err := NewStore([]Credential{cred})
	if err != nil {
		f.Fatal(err)
	}
	v := verifierAt(store, now)
	f.Fuzz(func(t *testing.T, authz, amzDate, rawQuery, body string) {
		r := &http.Request{
			Method:        http.MethodPost,
			URL:           &url.URL{Path: "/", RawQuery: rawQuery},
			Host:          "localhost:9324",
			Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"AmazonSQS.CreateQueue"}},
			ContentLength: int64(len(body)),
		}
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		if amzDate != "" {
			r.Header.Set("X-Amz-Date", amzDate)
		}
		account, err := v.Verify(r, []byte(body))
		if err != nil {
			checkClientError(t, err)
			if account != "" {
				t.Fatalf("account %q with an error", account)
			}
			return
		}
		if account != testAccount {
			t.Fatalf("account %q", account)
		}
	})
}
