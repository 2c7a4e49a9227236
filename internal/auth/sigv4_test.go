package auth

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/api"
)

// testStore is a store with the test key and a key of another account.
func testStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore([]Credential{
		{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount},
		{AccessKeyID: "AKIAOTHERACCOUNT01", SecretAccessKey: "another-secret", Account: "210987654321"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// verifierAt is a verifier of store whose clock reads now.
func verifierAt(store *Store, now time.Time) *Verifier {
	return &Verifier{Store: store, Now: func() time.Time { return now }, DefaultAccount: "000000000000", Region: "us-east-1"}
}

// wantAPIError checks that err is an *api.Error with code and status, and
// that it does not carry the secret.
func wantAPIError(t *testing.T, err error, code string, status int) *api.Error {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want an *api.Error %s", err, err, code)
	}
	if e.Code != code || e.QueryCode != code || e.Status != status || e.Fault != api.FaultSender {
		t.Fatalf("error %s/%s %d %s (%q), want %s %d Sender", e.Code, e.QueryCode, e.Status, e.Fault, e.Message, code, status)
	}
	if strings.Contains(e.Message, testSecret) || strings.Contains(e.Message, "another-secret") {
		t.Fatalf("error message carries a secret: %q", e.Message)
	}
	return e
}

// TestVerifyRealClients verifies requests signed by real clients, then the
// same requests changed in one respect each, which must fail with SQS's code.
func TestVerifyRealClients(t *testing.T) {
	captured := allSigned(t)
	store := testStore(t)

	for _, c := range captured {
		t.Run(c.name, func(t *testing.T) {
			at := c.signedAt(t)
			presigned := c.r.URL.Query().Get("X-Amz-Signature") != ""
			signed := signedHeaderNames(t, c)

			checkVerifiesAsSent(t, store, c, at, presigned)

			cases := commonTampers(t, at)
			if presigned {
				cases = append(cases, presignedTampers(at)...)
			} else {
				cases = append(cases, headerSignedTampers(c, at, signed)...)
			}
			cases = append(cases, unsignedHeaderChanges(signed)...)

			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					checkTamper(t, store, c, at, tc)
				})
			}
		})
	}
}

// tamper is one change to a captured request (or to the verifier that
// checks it) and the error code and status SQS answers it with; code ""
// is a change that must still verify.
type tamper struct {
	name   string
	change func(r *http.Request, body *[]byte, v *Verifier)
	code   string
	status int
}

// sdm is a tamper that SQS answers with SignatureDoesNotMatch, the answer
// to most of them.
func sdm(name string, change func(r *http.Request, body *[]byte, v *Verifier)) tamper {
	return tamper{name, change, "SignatureDoesNotMatch", http.StatusForbidden}
}

// checkVerifiesAsSent checks that request c, unchanged, verifies as the
// test account at the signing time, now, and at the limits of the skew or
// of the presigned expiry (300 s in every test here).
func checkVerifiesAsSent(t *testing.T, store *Store, c capturedRequest, at time.Time, presigned bool) {
	t.Helper()
	latest := at.Add(MaxClockSkew)
	if presigned {
		latest = at.Add(300 * time.Second)
	}
	for _, now := range []time.Time{at, time.Now(), latest, at.Add(-MaxClockSkew)} {
		r, body := c.clone()
		account, err := verifierAt(store, now).Verify(r, body)
		if err != nil {
			t.Fatalf("clock %s: %v", now.Format(time.RFC3339), err)
		}
		if account != testAccount {
			t.Fatalf("account %q, want %q", account, testAccount)
		}
	}
}

// commonTampers are the changes that must fail for every request, signed in
// its header or presigned in its query; at is its signing time and t the
// test that builds the stores the changes use.
func commonTampers(t *testing.T, at time.Time) []tamper {
	return []tamper{
		sdm("method", func(r *http.Request, _ *[]byte, _ *Verifier) { r.Method = http.MethodPut }),
		sdm("path", func(r *http.Request, _ *[]byte, _ *Verifier) { r.URL.Path += "x"; r.URL.RawPath = "" }),
		sdm("query added", func(r *http.Request, _ *[]byte, _ *Verifier) { r.URL.RawQuery = addQuery(r.URL.RawQuery, "Extra=1") }),
		sdm("host", func(r *http.Request, _ *[]byte, _ *Verifier) { r.Host = "attacker.example:9324" }),
		sdm("signature", func(r *http.Request, _ *[]byte, _ *Verifier) { replaceSignature(r, flipLastHex) }),
		sdm("signature not hex", func(r *http.Request, _ *[]byte, _ *Verifier) {
			replaceSignature(r, func(s string) string { return s[:len(s)-1] + "z" })
		}),
		sdm("secret", func(_ *http.Request, _ *[]byte, v *Verifier) {
			v.Store = mustStore(t, Credential{AccessKeyID: testKeyID, SecretAccessKey: testSecret + "x", Account: testAccount})
		}),
		sdm("clock past the skew", func(_ *http.Request, _ *[]byte, v *Verifier) {
			v.Now = func() time.Time { return at.Add(-MaxClockSkew - time.Second) }
		}),
		{"unknown key", func(_ *http.Request, _ *[]byte, v *Verifier) {
			v.Store = mustStore(t, Credential{AccessKeyID: "AKIASOMEONEELSE", SecretAccessKey: testSecret, Account: testAccount})
		}, "InvalidClientTokenId", http.StatusForbidden},
		{"session token", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Set("X-Amz-Security-Token", "FwoGZXIvYXdzEtoken")
		}, "InvalidClientTokenId", http.StatusForbidden},
	}
}

// presignedTampers are the changes that must fail for a request presigned
// at (signed in its query, with a 300 s expiry).
func presignedTampers(at time.Time) []tamper {
	return []tamper{
		sdm("query value", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "ReceiveMessage", "DeleteQueue", 1)
		}),
		{"expired", func(_ *http.Request, _ *[]byte, v *Verifier) {
			v.Now = func() time.Time { return at.Add(5*time.Minute + time.Second) }
		}, "RequestExpired", http.StatusBadRequest},
		{"no signature", func(r *http.Request, _ *[]byte, _ *Verifier) {
			q := r.URL.Query()
			q.Del("X-Amz-Signature")
			q.Set("X-Amz-Algorithm", "AWS4-HMAC-SHA256")
			r.URL.RawQuery = q.Encode()
		}, "IncompleteSignature", http.StatusBadRequest},
		{"expiry over a week", func(r *http.Request, _ *[]byte, _ *Verifier) {
			q := r.URL.Query()
			q.Set("X-Amz-Expires", "604801")
			r.URL.RawQuery = q.Encode()
		}, "IncompleteSignature", http.StatusBadRequest},
		{"no signature at all", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.URL.RawQuery = "Action=ReceiveMessage"
		}, "MissingAuthenticationToken", http.StatusForbidden},
		{"token in the query", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.URL.RawQuery = addQuery(r.URL.RawQuery, "X-Amz-Security-Token=abc")
		}, "InvalidClientTokenId", http.StatusForbidden},
		{"header auth too", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
		}, "IncompleteSignature", http.StatusBadRequest},
	}
}

// headerSignedTampers are the changes that must fail for request c, signed
// at time at in its Authorization header over the headers named in signed:
// its body, its date, its Authorization header, and each signed header the
// transport leaves alone.
func headerSignedTampers(c capturedRequest, at time.Time, signed []string) []tamper {
	cases := []tamper{
		sdm("body", func(_ *http.Request, body *[]byte, _ *Verifier) { *body = append(*body, ' ') }),
		sdm("date", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Set("X-Amz-Date", sameDayShift(at).Format(amzDateFormat))
		}),
		sdm("date of another day", func(r *http.Request, _ *[]byte, v *Verifier) {
			r.Header.Set("X-Amz-Date", at.Add(24*time.Hour).Format(amzDateFormat))
			v.Now = func() time.Time { return at.Add(24 * time.Hour) }
		}),
		sdm("clock before the skew", func(_ *http.Request, _ *[]byte, v *Verifier) {
			v.Now = func() time.Time { return at.Add(MaxClockSkew + time.Second) }
		}),
		sdm("declared payload hash", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Set("X-Amz-Content-Sha256", strings.Repeat("ab", 32))
		}),
		{"no Authorization", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Del("Authorization")
		}, "MissingAuthenticationToken", http.StatusForbidden},
		{"Authorization cut short", func(r *http.Request, _ *[]byte, _ *Verifier) {
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:strings.Index(a, ",")])
		}, "IncompleteSignature", http.StatusBadRequest},
		{"no X-Amz-Date", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Del("X-Amz-Date")
		}, "IncompleteSignature", http.StatusBadRequest},
		{"two Authorization headers", func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Add("Authorization", r.Header.Get("Authorization"))
		}, "IncompleteSignature", http.StatusBadRequest},
	}
	if slices.Contains(signed, "content-length") {
		cases = append(cases, sdm("signed content-length", func(r *http.Request, _ *[]byte, _ *Verifier) { r.ContentLength++ }))
	}
	if len(c.body) > 0 {
		cases = append(cases, sdm("body truncated", func(_ *http.Request, body *[]byte, _ *Verifier) { *body = (*body)[:len(*body)/2] }))
	}
	for _, name := range signed {
		switch name {
		case "host", "x-amz-date", "content-length":
			continue // changed by the cases above, or by the transport
		}
		cases = append(cases, sdm("signed header "+name, func(r *http.Request, _ *[]byte, _ *Verifier) {
			r.Header.Set(name, r.Header.Get(name)+"x")
		}))
	}
	return cases
}

// unsignedHeaderChanges are changes to the headers the client did not sign
// (of those a proxy might touch), which must still verify.
func unsignedHeaderChanges(signed []string) []tamper {
	var cases []tamper
	for _, name := range []string{"User-Agent", "X-Forwarded-For", "Accept-Encoding"} {
		if !slices.Contains(signed, strings.ToLower(name)) {
			cases = append(cases, tamper{"unsigned header " + name, func(r *http.Request, _ *[]byte, _ *Verifier) {
				r.Header.Set(name, "changed")
			}, "", 0})
		}
	}
	return cases
}

// checkTamper verifies request c changed by tc, with the clock at c's
// signing time at: it must verify as the test account if tc.code is "",
// and otherwise fail with tc's code and status and no account.
func checkTamper(t *testing.T, store *Store, c capturedRequest, at time.Time, tc tamper) {
	t.Helper()
	r, body := c.clone()
	v := verifierAt(store, at)
	tc.change(r, &body, v)
	account, err := v.Verify(r, body)
	if tc.code == "" {
		if err != nil || account != testAccount {
			t.Fatalf("got %q, %v; want %q", account, err, testAccount)
		}
		return
	}
	wantAPIError(t, err, tc.code, tc.status)
	if account != "" {
		t.Fatalf("account %q with an error", account)
	}
}

// TestVerifySkewMessages checks SQS's wording of a stale or future signature.
func TestVerifySkewMessages(t *testing.T) {
	cs := newCaptureServer(t)
	c := signV2(t, cs)[1]
	at := c.signedAt(t)
	store := testStore(t)

	r, body := c.clone()
	_, err := verifierAt(store, at.Add(20*time.Minute)).Verify(r, body)
	e := wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
	want := "Signature expired: " + at.Format(amzDateFormat) + " is now earlier than " +
		at.Add(5*time.Minute).Format(amzDateFormat) + " (" + at.Add(20*time.Minute).Format(amzDateFormat) + " - 15 min.)"
	if e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}

	r, body = c.clone()
	_, err = verifierAt(store, at.Add(-20*time.Minute)).Verify(r, body)
	e = wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
	if !strings.HasPrefix(e.Message, "Signature not yet current: "+at.Format(amzDateFormat)+" is still later than ") {
		t.Errorf("message %q", e.Message)
	}
}

// TestVerifyAccounts checks that each key acts for its own account.
func TestVerifyAccounts(t *testing.T) {
	store := testStore(t)
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, cred := range []Credential{
		{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount},
		{AccessKeyID: "AKIAOTHERACCOUNT01", SecretAccessKey: "another-secret", Account: "210987654321"},
	} {
		r := signedJSONRequest(t, cred, now, `{"QueueName":"q"}`)
		account, err := verifierAt(store, now).Verify(r, []byte(`{"QueueName":"q"}`))
		if err != nil || account != cred.Account {
			t.Errorf("%s: got %q, %v; want %q", cred.AccessKeyID, account, err, cred.Account)
		}
	}
}

// TestVerifyWithoutCredentials checks that with no credentials configured
// every request is accepted and a 12-digit access key names the account.
func TestVerifyWithoutCredentials(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	signed := func(key string) *http.Request {
		return signedJSONRequest(t, Credential{AccessKeyID: key, SecretAccessKey: "anything", Account: "000000000000"}, now, "{}")
	}
	presigned := func(cred string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://localhost:9324/?Action=ListQueues&X-Amz-Credential="+url.QueryEscape(cred), nil)
		return r
	}
	header := func(v string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://localhost:9324/", nil)
		r.Header.Set("Authorization", v)
		return r
	}
	unsigned, _ := http.NewRequest(http.MethodPost, "http://localhost:9324/", nil)
	tests := []struct {
		name string
		r    *http.Request
		want string
	}{
		{"unsigned", unsigned, "000000000000"},
		{"12-digit key", signed("111122223333"), "111122223333"},
		{"other key", signed("AKIAEXAMPLE"), "000000000000"},
		{"13 digits", signed("1111222233334"), "000000000000"},
		{"11 digits", signed("11112222333"), "000000000000"},
		{"presigned 12-digit key", presigned("444455556666/20250304/us-east-1/sqs/aws4_request"), "444455556666"},
		{"presigned other key", presigned("AKIAEXAMPLE/20250304/us-east-1/sqs/aws4_request"), "000000000000"},
		{"garbled header", header("AWS4-HMAC-SHA256 Credential="), "000000000000"},
		{"header with bare key", header("AWS4-HMAC-SHA256 Credential=777788889999, SignedHeaders=host"), "777788889999"},
		{"wrong scheme", header("Bearer 777788889999"), "000000000000"},
	}
	for _, store := range []*Store{nil, mustStore(t)} {
		for _, tc := range tests {
			v := verifierAt(store, now.Add(365*24*time.Hour)) // the clock does not matter either
			account, err := v.Verify(tc.r, nil)
			if err != nil || account != tc.want {
				t.Errorf("%s: got %q, %v; want %q", tc.name, account, err, tc.want)
			}
		}
	}
}

// TestVerifyPayloadHash checks the X-Amz-Content-Sha256 a client declares.
func TestVerifyPayloadHash(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	cred := Credential{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount}
	store := testStore(t)
	const body = `{"QueueName":"q"}`
	tests := []struct {
		name     string
		declared string
		sent     string
		ok       bool
	}{
		{"unsigned payload", "UNSIGNED-PAYLOAD", body, false},
		{"unsigned payload with another body", "UNSIGNED-PAYLOAD", body + "changed", false},
		{"the body's hash", sha256Hex(body), body, true},
		{"the body's hash in upper case", strings.ToUpper(sha256Hex(body)), body, true},
		{"another body's hash", sha256Hex("other"), body, false},
		{"streaming", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", body, false},
	}
	for _, tc := range tests {
		r := signedRequestWith(t, cred, now, body, func(r *http.Request) {
			r.Header.Set("X-Amz-Content-Sha256", tc.declared)
		})
		account, err := verifierAt(store, now).Verify(r, []byte(tc.sent))
		if tc.ok {
			if err != nil || account != testAccount {
				t.Errorf("%s: got %q, %v", tc.name, account, err)
			}
			continue
		}
		wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
	}
}

// TestVerifyScope checks the credential scope against the request.
func TestVerifyScope(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	store := testStore(t)
	cred := Credential{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount}
	tests := []struct {
		name, service, region string
		wantMessage           string
	}{
		{"another region", "sqs", "ap-southeast-2", ""},
		{"a made-up region", "sqs", "fifoq-local", ""},
		{"another service", "sns", "us-east-1", "Credential should be scoped to correct service: 'sqs'. "},
	}
	for _, tc := range tests {
		r := signedRequestFor(t, cred, now, "{}", tc.service, tc.region)
		account, err := verifierAt(store, now).Verify(r, []byte("{}"))
		if tc.wantMessage == "" {
			if err != nil || account != testAccount {
				t.Errorf("%s: got %q, %v", tc.name, account, err)
			}
			continue
		}
		if e := wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden); e.Message != tc.wantMessage {
			t.Errorf("%s: message %q, want %q", tc.name, e.Message, tc.wantMessage)
		}
	}

	// The scope's date must be X-Amz-Date's.
	r := signedJSONRequest(t, cred, now, "{}")
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/20250304/", "/20250305/", 1))
	_, err := verifierAt(store, now).Verify(r, []byte("{}"))
	e := wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
	if !strings.HasPrefix(e.Message, "Date in Credential scope does not match") {
		t.Errorf("message %q", e.Message)
	}
	// And the terminator aws4_request.
	r = signedJSONRequest(t, cred, now, "{}")
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/aws4_request", "/aws5_request", 1))
	_, err = verifierAt(store, now).Verify(r, []byte("{}"))
	wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
}

// TestVerifyPresignedWithoutExpires checks that a presigned request without
// X-Amz-Expires is good for the clock skew, like a header signature.
func TestVerifyPresignedWithoutExpires(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	store := testStore(t)
	cred := Credential{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount}
	r := presignedRequest(t, cred, now, "http://localhost:9324/?Action=ListQueues")
	for _, tc := range []struct {
		at   time.Time
		code string
	}{
		{now, ""},
		{now.Add(MaxClockSkew), ""},
		{now.Add(MaxClockSkew + time.Second), "SignatureDoesNotMatch"},
		{now.Add(-MaxClockSkew - time.Second), "SignatureDoesNotMatch"},
	} {
		account, err := verifierAt(store, tc.at).Verify(r.Clone(r.Context()), nil)
		if tc.code == "" {
			if err != nil || account != testAccount {
				t.Errorf("at %s: got %q, %v", tc.at, account, err)
			}
			continue
		}
		wantAPIError(t, err, tc.code, http.StatusForbidden)
	}
}

// TestVerifySignedUserAgent checks a signature that covers headers the SDK's
// signer leaves out by default, as the AWS SDK for Java v1 signs User-Agent.
func TestVerifySignedUserAgent(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	store := testStore(t)
	cred := Credential{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount}
	r := signedWithExtraHeaders(t, cred, now, "{}", map[string]string{"user-agent": "aws-sdk-java/1.12", "expect": "100-continue"})
	if !strings.Contains(r.Header.Get("Authorization"), "SignedHeaders=content-type;expect;host;user-agent;x-amz-date;x-amz-target,") {
		t.Fatalf("the test request does not sign what it should: %s", r.Header.Get("Authorization"))
	}
	if account, err := verifierAt(store, now).Verify(r, []byte("{}")); err != nil || account != testAccount {
		t.Fatalf("got %q, %v", account, err)
	}
	r.Header.Set("User-Agent", "changed")
	_, err := verifierAt(store, now).Verify(r, []byte("{}"))
	wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
}

func mustStore(t *testing.T, creds ...Credential) *Store {
	t.Helper()
	s, err := NewStore(creds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signedHeaderNames lists the headers a captured request signed.
func signedHeaderNames(t *testing.T, c capturedRequest) []string {
	t.Helper()
	var list string
	if a := c.r.Header.Get("Authorization"); a != "" {
		_, after, ok := strings.Cut(a, "SignedHeaders=")
		if !ok {
			t.Fatalf("%s: no SignedHeaders in %q", c.name, a)
		}
		list, _, _ = strings.Cut(after, ",")
	} else {
		list = c.r.URL.Query().Get("X-Amz-SignedHeaders")
	}
	return strings.Split(list, ";")
}

// replaceSignature rewrites the signature of a header-signed or presigned request.
func replaceSignature(r *http.Request, f func(string) string) {
	if a := r.Header.Get("Authorization"); a != "" {
		i := strings.LastIndex(a, "Signature=") + len("Signature=")
		r.Header.Set("Authorization", a[:i]+f(a[i:]))
		return
	}
	q := r.URL.Query()
	q.Set("X-Amz-Signature", f(q.Get("X-Amz-Signature")))
	r.URL.RawQuery = q.Encode()
}

// flipLastHex changes the last hex digit of a signature.
func flipLastHex(s string) string {
	last := s[len(s)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return s[:len(s)-1] + string(repl)
}

// sameDayShift moves t by a second without leaving its day.
func sameDayShift(t time.Time) time.Time {
	if s := t.Add(time.Second); s.Day() == t.Day() {
		return s
	}
	return t.Add(-time.Second)
}

func addQuery(raw, pair string) string {
	if raw == "" {
		return pair
	}
	return raw + "&" + pair
}

// TestVerifyKeepsSigningKeysApart checks the signer that keeps derived
// signing keys for the server's region (Verifier.signerFor): whichever key
// it last derived, each access key verifies only with its own secret, on
// the next day too; scopes of other regions are checked with a fresh
// signer, so that regions a client makes up leave nothing behind.
func TestVerifyKeepsSigningKeysApart(t *testing.T) {
	const otherKey, otherSecret, otherAccount = "AKIAOTHERACCOUNT01", "another-secret", "210987654321"
	day := time.Date(2026, 11, 26, 23, 59, 0, 0, time.UTC)
	now := day
	v := &Verifier{Store: testStore(t), Now: func() time.Time { return now }, DefaultAccount: "000000000000", Region: "us-east-1"}
	verify := func(keyID, secret, region string) (string, error) {
		t.Helper()
		body := []byte(`{"QueueName":"q"}`)
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
		if err := SignRequest(req, body, Credential{AccessKeyID: keyID, SecretAccessKey: secret}, region, now); err != nil {
			t.Fatal(err)
		}
		return v.Verify(req, body)
	}
	good := func(keyID, secret, region, account string) {
		t.Helper()
		got, err := verify(keyID, secret, region)
		if err != nil || got != account {
			t.Fatalf("%s in %s with its secret: account %q, error %v; want %s", keyID, region, got, err, account)
		}
	}
	bad := func(keyID, secret, region string) {
		t.Helper()
		_, err := verify(keyID, secret, region)
		wantAPIError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
	}

	good(otherKey, otherSecret, "eu-west-1", otherAccount)
	if v.regionSigner != nil {
		t.Fatal("a scope of another region made the signer that keeps keys")
	}
	good(testKeyID, testSecret, "us-east-1", testAccount)
	if v.regionSigner == nil {
		t.Fatal("a scope of the server's region did not use the signer that keeps keys")
	}
	bad(otherKey, testSecret, "us-east-1")
	good(otherKey, otherSecret, "us-east-1", otherAccount)
	bad(testKeyID, otherSecret, "us-east-1")
	good(testKeyID, testSecret, "us-east-1", testAccount)
	bad(testKeyID, otherSecret, "eu-west-1")
	now = day.Add(2 * time.Minute) // the next day
	good(testKeyID, testSecret, "us-east-1", testAccount)
	bad(otherKey, testSecret, "us-east-1")
	good(otherKey, otherSecret, "us-east-1", otherAccount)
}
