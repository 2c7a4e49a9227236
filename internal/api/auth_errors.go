package api

import (
	"net/http"
	"strconv"
	"time"
)

// The errors of request authentication, common to every AWS service. They
// have no AWS.SimpleQueueService prefix: SQS answers them with the same
// code in both protocols.
var (
	kindIncompleteSignature        = errorKind{"IncompleteSignature", "IncompleteSignature", http.StatusBadRequest, FaultSender}
	kindInvalidClientTokenId       = errorKind{"InvalidClientTokenId", "InvalidClientTokenId", http.StatusForbidden, FaultSender}
	kindMissingAuthenticationToken = errorKind{"MissingAuthenticationToken", "MissingAuthenticationToken", http.StatusForbidden, FaultSender}
	kindRequestExpired             = errorKind{"RequestExpired", "RequestExpired", http.StatusBadRequest, FaultSender}
	kindSignatureDoesNotMatch      = errorKind{"SignatureDoesNotMatch", "SignatureDoesNotMatch", http.StatusForbidden, FaultSender}
)

// amzDateFormat is the ISO 8601 basic format of X-Amz-Date, in which SQS
// quotes times in its signature errors.
const amzDateFormat = "20060102T150405Z"

// ErrIncompleteSignature: the Authorization header or the presigned query
// parameters lack a part of a SigV4 signature or have one in the wrong form.
func ErrIncompleteSignature(format string, args ...any) *Error {
	return kindIncompleteSignature.with(format, args...)
}

// ErrInvalidClientTokenId: the access key is not known, or the request
// carries a session token, which fifoq does not issue.
func ErrInvalidClientTokenId() *Error {
	return kindInvalidClientTokenId.with("The security token included in the request is invalid.")
}

// ErrMissingAuthenticationToken: the request is not signed at all.
func ErrMissingAuthenticationToken() *Error {
	return kindMissingAuthenticationToken.with("Request is missing Authentication Token")
}

// ErrRequestExpired: a presigned request used after its X-Amz-Expires.
func ErrRequestExpired() *Error {
	return kindRequestExpired.with("Request has expired.")
}

// ErrSignatureDoesNotMatch: the signature is not the one the request's
// secret key gives.
func ErrSignatureDoesNotMatch() *Error {
	return kindSignatureDoesNotMatch.with("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
}

// ErrCredentialScope: the credential scope of a signature names another
// service, date or terminator than the request's. SQS reports these as
// SignatureDoesNotMatch with a message that says which part is wrong.
func ErrCredentialScope(format string, args ...any) *Error {
	return kindSignatureDoesNotMatch.with(format, args...)
}

// ErrSignatureExpired: a header-signed request whose X-Amz-Date is more than
// skew before now. SQS answers SignatureDoesNotMatch (403), not
// RequestExpired, and AWS SDKs recognise the message to correct their clock.
func ErrSignatureExpired(signed, now time.Time, skew time.Duration) *Error {
	return kindSignatureDoesNotMatch.with("Signature expired: %s is now earlier than %s (%s - %s.)",
		signed.UTC().Format(amzDateFormat), now.Add(-skew).UTC().Format(amzDateFormat),
		now.UTC().Format(amzDateFormat), skewText(skew))
}

// ErrSignatureNotYetCurrent: a request whose X-Amz-Date is more than skew
// after now.
func ErrSignatureNotYetCurrent(signed, now time.Time, skew time.Duration) *Error {
	return kindSignatureDoesNotMatch.with("Signature not yet current: %s is still later than %s (%s + %s.)",
		signed.UTC().Format(amzDateFormat), now.Add(skew).UTC().Format(amzDateFormat),
		now.UTC().Format(amzDateFormat), skewText(skew))
}

// skewText writes a skew as AWS does in its messages: "15 min".
func skewText(skew time.Duration) string {
	if skew%time.Minute == 0 {
		return strconv.FormatInt(int64(skew/time.Minute), 10) + " min"
	}
	return skew.String()
}
