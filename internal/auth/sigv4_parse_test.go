package auth

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseAuthorization(t *testing.T) {
	const good = "AWS4-HMAC-SHA256 Credential=AKID/20250304/us-east-1/sqs/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=abcdef"
	want := &sigParts{
		Scope:         credentialScope{AccessKeyID: "AKID", Date: "20250304", Region: "us-east-1", Service: "sqs", Terminator: "aws4_request"},
		SignedHeaders: []string{"content-type", "host", "x-amz-date"},
		Signature:     "abcdef",
	}
	for _, ok := range []string{
		good,
		"  " + good + "  ",
		strings.ReplaceAll(good, ", ", ","), // botocore-style spacing varies
		good + ", Extra=1",                  // unknown parameters are ignored
		strings.Replace(good, "Credential=", "Credential =", 1), // spaces around a key
	} {
		got, err := parseAuthorization(ok)
		if err != nil {
			t.Errorf("%q: %v", ok, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", ok, got, want)
		}
	}

	bad := []struct {
		value, message string
	}{
		{"", "Unsupported AWS 'algorithm': ''"},
		{"AWS AKID:c2lnbmF0dXJl", "Unsupported AWS 'algorithm': 'AWS'"},
		{"AWS4-HMAC-SHA512 Credential=a/b/c/d/e, SignedHeaders=host, Signature=00", "Unsupported AWS 'algorithm': 'AWS4-HMAC-SHA512'"},
		{"AWS4-HMAC-SHA256", "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter."},
		{"AWS4-HMAC-SHA256 Credential=AKID/20250304/us-east-1/sqs/aws4_request, Signature=00", "requires 'SignedHeaders' parameter."},
		{"AWS4-HMAC-SHA256 Credential=AKID/20250304/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=", "requires 'Signature' parameter."},
		{"AWS4-HMAC-SHA256 Credential AKID, SignedHeaders=host, Signature=00", "'Credential AKID' not a valid key=value pair (missing equal-sign)"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, Credential=a/b/c/d/e, SignedHeaders=host, Signature=00", "'Credential' more than once"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20250304/us-east-1/sqs, SignedHeaders=host, Signature=00", "exactly 5 slash-delimited elements"},
		{"AWS4-HMAC-SHA256 Credential=AKID/20250304//sqs/aws4_request, SignedHeaders=host, Signature=00", "empty region"},
		{"AWS4-HMAC-SHA256 Credential=/20250304/r/sqs/aws4_request, SignedHeaders=host, Signature=00", "empty access key id"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=content-type;x-amz-date, Signature=00", "'Host' or ':authority' must be a 'SignedHeader'"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=Host;x-amz-date, Signature=00", "lower-case header names"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=host;;x-amz-date, Signature=00", "lower-case header names"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=x-amz-date;host, Signature=00", "ascending order"},
		{"AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=host;host, Signature=00", "ascending order"},
	}
	for _, tc := range bad {
		_, err := parseAuthorization(tc.value)
		if err == nil {
			t.Errorf("%q: no error", tc.value)
			continue
		}
		if err.Code != "IncompleteSignature" || err.Status != http.StatusBadRequest {
			t.Errorf("%q: %s %d, want IncompleteSignature 400", tc.value, err.Code, err.Status)
		}
		if !strings.Contains(err.Message, tc.message) {
			t.Errorf("%q: message %q, want it to contain %q", tc.value, err.Message, tc.message)
		}
	}
}

func TestParsePresigned(t *testing.T) {
	base := url.Values{
		"X-Amz-Algorithm":     {"AWS4-HMAC-SHA256"},
		"X-Amz-Credential":    {"AKID/20250304/us-east-1/sqs/aws4_request"},
		"X-Amz-Date":          {"20250304T050607Z"},
		"X-Amz-Expires":       {"300"},
		"X-Amz-SignedHeaders": {"host"},
		"X-Amz-Signature":     {"abcdef"},
		"Action":              {"ListQueues"},
	}
	got, err := parsePresigned(base)
	if err != nil {
		t.Fatal(err)
	}
	want := &sigParts{
		Presigned:     true,
		Scope:         credentialScope{AccessKeyID: "AKID", Date: "20250304", Region: "us-east-1", Service: "sqs", Terminator: "aws4_request"},
		SignedHeaders: []string{"host"},
		Signature:     "abcdef",
		AmzDate:       "20250304T050607Z",
		Date:          time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		Expires:       300 * time.Second,
		HasExpires:    true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	with := func(key string, values ...string) url.Values {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		if values == nil {
			delete(q, key)
		} else {
			q[key] = values
		}
		return q
	}
	okCases := []url.Values{with("X-Amz-Expires"), with("X-Amz-Expires", "0"), with("X-Amz-Expires", "604800")}
	for _, q := range okCases {
		if _, err := parsePresigned(q); err != nil {
			t.Errorf("%v: %v", q, err)
		}
	}
	bad := []struct {
		q       url.Values
		message string
	}{
		{with("X-Amz-Signature"), "must include 'X-Amz-Signature'"},
		{with("X-Amz-Credential"), "must include 'X-Amz-Credential'"},
		{with("X-Amz-Date"), "must include 'X-Amz-Date'"},
		{with("X-Amz-SignedHeaders"), "must include 'X-Amz-SignedHeaders'"},
		{with("X-Amz-Algorithm"), "must include 'X-Amz-Algorithm'"},
		{with("X-Amz-Algorithm", "AWS4-ECDSA-P256-SHA256"), "Unsupported AWS 'algorithm'"},
		{with("X-Amz-Signature", "a", "b"), "'X-Amz-Signature' appears more than once"},
		{with("X-Amz-Expires", "604801"), "X-Amz-Expires must be"},
		{with("X-Amz-Expires", "-1"), "X-Amz-Expires must be"},
		{with("X-Amz-Expires", "+5"), "X-Amz-Expires must be"},
		{with("X-Amz-Expires", "5s"), "X-Amz-Expires must be"},
		{with("X-Amz-Expires", "99999999999999999999999"), "X-Amz-Expires must be"},
		{with("X-Amz-Date", "2025-03-04T05:06:07Z"), "ISO 8601 basic format"},
		{with("X-Amz-Date", "20250304T250607Z"), "ISO 8601 basic format"},
		{with("X-Amz-Credential", "AKID/20250304/us-east-1/sqs"), "exactly 5"},
		{with("X-Amz-SignedHeaders", "content-type"), "'Host'"},
	}
	for _, tc := range bad {
		_, err := parsePresigned(tc.q)
		if err == nil {
			t.Errorf("%v: no error", tc.q)
			continue
		}
		if err.Code != "IncompleteSignature" || err.Status != http.StatusBadRequest {
			t.Errorf("%v: %s %d, want IncompleteSignature 400", tc.q, err.Code, err.Status)
		}
		if !strings.Contains(err.Message, tc.message) {
			t.Errorf("%v: message %q, want it to contain %q", tc.q, err.Message, tc.message)
		}
	}
}

func TestParseAmzDate(t *testing.T) {
	if d, err := parseAmzDate("20241231T235959Z"); err != nil || !d.Equal(time.Date(2024, 12, 31, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("got %v, %v", d, err)
	}
	for _, s := range []string{"", "20241231T235959", "20241231T235959z", "20241231t235959Z", "2024123T235959Z", "20241231T235959+0000", "20241331T000000Z", "20240230T000000Z", " 20241231T235959Z"} {
		if _, err := parseAmzDate(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestSigClip(t *testing.T) {
	if got := sigClip(strings.Repeat("é", 100)); got != strings.Repeat("é", 64)+"..." {
		t.Errorf("long: %q", got)
	}
	if got := sigClip("a\x00b\xffc\nd"); got != "a?b?c?d" {
		t.Errorf("control and invalid: %q", got)
	}
}

func TestSignaturesEqual(t *testing.T) {
	const sig = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
	tests := []struct {
		provided string
		want     bool
	}{
		{sig, true},
		{strings.ToUpper(sig), true},
		{sig[:63] + "8", false},
		{sig[:62], false},
		{sig + "00", false},
		{"", false},
		{"zz" + sig[2:], false},
	}
	for _, tc := range tests {
		if got := signaturesEqual(sig, tc.provided); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.provided, got, tc.want)
		}
	}
}
