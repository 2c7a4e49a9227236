package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SignRequest signs req, whose body is body, with SigV4 for the sqs
// service as an SDK client would: how fifoq's own tools (fifoq cluster,
// a node joining a cluster) call endpoints that a Verifier protects.
func SignRequest(req *http.Request, body []byte, cred Credential, region string, now time.Time) error {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	creds := aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey}
	return v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, sigService, region, now)
}
