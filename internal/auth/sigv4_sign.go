package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/fifoq/fifoq/internal/api"
)

// expectedSignature computes, with signer (the AWS SDK's own SigV4 signer,
// chosen by Verifier.signerFor), the signature that the client should have
// sent for r: the signer signs a copy of r that carries exactly what the
// client signed, at the client's time, with the client's region and
// service, and the secret we hold.
//
// Writing the canonical request ourselves would be a second implementation
// of a subtle algorithm to get wrong; reusing the SDK's makes fifoq agree
// with the clients by construction. What the SDK's signer decides on its own
// is kept in line with what the client signed:
//
//   - It always signs host (from Request.Host) and, for header signatures,
//     X-Amz-Date (from the signing time). parseSignedHeaders requires host;
//     verifyHeader requires x-amz-date; the signing time is the parsed
//     X-Amz-Date, which formats back to the same string (parseAmzDate).
//   - It signs content-length from Request.ContentLength when that is
//     positive, and never otherwise; so ContentLength is set only when the
//     client signed content-length.
//   - It leaves out User-Agent, Expect, X-Amzn-Trace-Id, Transfer-Encoding
//     and Authorization by their canonical header keys. Some clients (the
//     AWS SDK for Java v1) sign User-Agent: the signed headers are therefore
//     put into the header map under their lower-case names, which the
//     signer's exclusion list does not match, and which it lower-cases
//     anyway for the canonical request.
//   - When presigning it would move X-Amz-* headers into the query string;
//     DisableHeaderHoisting keeps the client's signed headers where they were.
//   - It escapes the path a second time (every service but S3 does, and so
//     do the clients); the copy carries the path as the client escaped it.
func expectedSignature(signer *v4.Signer, r *http.Request, p *sigParts, cred Credential, payloadHash string) (string, error) {
	u := &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	if p.Presigned {
		q := r.URL.Query()
		q.Del(querySignature)
		u.RawQuery = q.Encode()
	}
	req := &http.Request{
		Method: r.Method,
		URL:    u,
		Host:   r.Host,
		Header: make(http.Header, len(p.SignedHeaders)),
	}
	for _, name := range p.SignedHeaders {
		switch name {
		case "host":
			continue // from req.Host
		case "content-length":
			req.ContentLength = r.ContentLength
			continue
		case "x-amz-date":
			if !p.Presigned {
				continue // the signer writes it from the signing time
			}
		}
		values := r.Header.Values(name)
		if len(values) == 0 {
			// Signed but absent: the client signed an empty value, or the
			// header was removed on the way; either way the canonical
			// request has "name:" and the signature decides.
			values = []string{""}
		}
		req.Header[name] = values
	}

	creds := aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey}
	ctx := context.Background()
	if p.Presigned {
		signed, _, err := signer.PresignHTTP(ctx, creds, req, payloadHash, p.Scope.Service, p.Scope.Region, p.Date,
			func(o *v4.SignerOptions) { o.DisableHeaderHoisting = true })
		if err != nil {
			return "", fmt.Errorf("presign: %w", err)
		}
		const marker = "&" + querySignature + "="
		i := strings.LastIndex(signed, marker)
		if i < 0 {
			return "", fmt.Errorf("presign: no %s in the signed URL", querySignature)
		}
		return signed[i+len(marker):], nil
	}
	if err := signer.SignHTTP(ctx, creds, req, payloadHash, p.Scope.Service, p.Scope.Region, p.Date); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	const marker = "Signature="
	authz := req.Header.Get(headerAuthz)
	i := strings.LastIndex(authz, marker)
	if i < 0 {
		return "", fmt.Errorf("sign: no %s in the Authorization header", marker)
	}
	return authz[i+len(marker):], nil
}

// signaturesEqual compares the expected signature with the client's in
// constant time, so that the time taken says nothing about how many leading
// bytes of a forged signature were right. Both are hex; the client's may be
// in either case.
func signaturesEqual(expected, provided string) bool {
	want, err := hex.DecodeString(expected)
	if err != nil {
		return false
	}
	got, err := hex.DecodeString(provided)
	if err != nil {
		return false
	}
	return hmac.Equal(want, got)
}

// payloadHash is the payload line of the canonical request: the
// X-Amz-Content-Sha256 the client declared, if any, else the body's SHA-256.
// A declared hash must be the body's (compared without regard to case, then
// used as sent). UNSIGNED-PAYLOAD is refused: SQS signs every body, and a
// request whose body is not covered by its signature could be rewritten in
// flight (a captured SendMessage replayed with another message).
func payloadHash(declared string, body []byte) (string, *api.Error) {
	sum := sha256.Sum256(body)
	actual := hex.EncodeToString(sum[:])
	switch {
	case declared == "":
		return actual, nil
	case len(declared) == len(actual) && hmac.Equal([]byte(strings.ToLower(declared)), []byte(actual)):
		return declared, nil
	}
	return "", api.ErrSignatureDoesNotMatch()
}
