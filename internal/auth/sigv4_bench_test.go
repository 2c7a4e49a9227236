package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// BenchmarkVerify times the check of one request's signature, as a server
// with credentials makes it for every request: a SendMessageBatch of ten
// 256-byte messages in AWS JSON, signed in headers as the AWS SDK for Go
// signs it (no X-Amz-Content-Sha256, so the body is hashed).
func BenchmarkVerify(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"QueueUrl":"http://127.0.0.1:9324/123456789012/q.fifo","Entries":[`)
	for i := range 10 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"Id":"m%d","MessageBody":%q,"MessageGroupId":"g%d","MessageDeduplicationId":"d%d"}`, i, strings.Repeat("x", 256), i, i)
	}
	body.WriteString(`]}`)
	payload := []byte(body.String())
	now := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", bytes.NewReader(payload))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessageBatch")
	req.Header.Set("X-Amzn-Query-Mode", "true")
	req.Header.Set("Amz-Sdk-Invocation-Id", "5a1e4b8c-3d2f-4e6a-9b7c-1f0e2d3c4b5a")
	req.Header.Set("Amz-Sdk-Request", "attempt=1; max=3")
	sum := sha256.Sum256(payload)
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), sigService, "us-east-1", now); err != nil {
		b.Fatal(err)
	}
	store, err := NewStore([]Credential{{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Account: testAccount}})
	if err != nil {
		b.Fatal(err)
	}
	v := verifierAt(store, now)
	if _, err := v.Verify(req, payload); err != nil {
		b.Fatalf("the signed request does not verify: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(req, payload); err != nil {
			b.Fatal(err)
		}
	}
}
