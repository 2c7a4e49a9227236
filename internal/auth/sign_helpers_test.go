package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	signerv2 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	signerv1 "github.com/aws/aws-sdk-go/aws/signer/v4"
)

// The requests below are signed with aws-sdk-go v1's signer, a second,
// independent implementation of the one fifoq verifies with, except where
// no SDK signs what a test needs.

// signedJSONRequest is a CreateQueue in AWS JSON, signed for sqs in us-east-1.
func signedJSONRequest(t testing.TB, cred Credential, at time.Time, body string) *http.Request {
	t.Helper()
	return signedRequestFor(t, cred, at, body, "sqs", "us-east-1")
}

// signedRequestFor signs a JSON request for a service and region.
func signedRequestFor(t testing.TB, cred Credential, at time.Time, body, service, region string) *http.Request {
	t.Helper()
	return signV1Request(t, cred, at, body, service, region, nil)
}

// signedRequestWith signs a JSON request after mutate has set its headers.
func signedRequestWith(t testing.TB, cred Credential, at time.Time, body string, mutate func(*http.Request)) *http.Request {
	t.Helper()
	return signV1Request(t, cred, at, body, "sqs", "us-east-1", mutate)
}

func signV1Request(t testing.TB, cred Credential, at time.Time, body, service, region string, mutate func(*http.Request)) *http.Request {
	t.Helper()
	r := jsonRequest(t, body)
	if mutate != nil {
		mutate(r)
	}
	signer := signerv1.NewSigner(credsv1.NewStaticCredentials(cred.AccessKeyID, cred.SecretAccessKey, ""))
	if _, err := signer.Sign(r, strings.NewReader(body), service, region, at); err != nil {
		t.Fatal(err)
	}
	return r
}

// jsonRequest is an unsigned AWS JSON request to localhost:9324, as the
// server would see it.
func jsonRequest(t testing.TB, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://localhost:9324/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
	return r
}

// presignedRequest presigns a GET with aws-sdk-go-v2's signer, which sets
// no X-Amz-Expires.
func presignedRequest(t testing.TB, cred Credential, at time.Time, target string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	signed, _, err := signerv2.NewSigner().PresignHTTP(context.Background(),
		awsv2.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey},
		r, sha256Hex(""), "sqs", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(signed, "X-Amz-Expires") {
		t.Fatalf("presigned URL has X-Amz-Expires: %s", signed)
	}
	r, err = http.NewRequest(http.MethodGet, signed, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = "localhost:9324"
	return r
}

// signedWithExtraHeaders signs a JSON request whose signature also covers
// extra, which AWS's Go and Python signers never sign (User-Agent, Expect).
// It uses a SigV4 signer written here from AWS's documentation of the
// algorithm, independent of every SDK.
func signedWithExtraHeaders(t testing.TB, cred Credential, at time.Time, body string, extra map[string]string) *http.Request {
	t.Helper()
	r := jsonRequest(t, body)
	for k, v := range extra {
		r.Header.Set(k, v)
	}
	amzDate := at.UTC().Format(amzDateFormat)
	r.Header.Set("X-Amz-Date", amzDate)

	headers := map[string]string{"host": r.Host}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	slices.Sort(names)
	var canonicalHeaders strings.Builder
	for _, k := range names {
		canonicalHeaders.WriteString(k + ":" + strings.TrimSpace(headers[k]) + "\n")
	}
	signedHeaders := strings.Join(names, ";")
	canonical := strings.Join([]string{"POST", "/", "", canonicalHeaders.String(), signedHeaders, sha256Hex(body)}, "\n")

	scope := amzDate[:8] + "/us-east-1/sqs/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + sha256Hex(canonical)
	key := []byte("AWS4" + cred.SecretAccessKey)
	for _, part := range []string{amzDate[:8], "us-east-1", "sqs", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+cred.AccessKeyID+"/"+scope+", SignedHeaders="+signedHeaders+", Signature="+sig)
	return r
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
