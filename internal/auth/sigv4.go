package auth

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/fifoq/fifoq/internal/api"
)

// MaxClockSkew is how far X-Amz-Date may be from the server's clock, either
// way, as in AWS.
const MaxClockSkew = 15 * time.Minute

// maxPresignedExpirySeconds is the largest X-Amz-Expires: 7 days.
const maxPresignedExpirySeconds = 7 * 24 * 60 * 60

// Verifier checks the Signature Version 4 signature of requests against the
// configured credentials and tells whose account a request acts for.
type Verifier struct {
	// Store holds the access keys. Empty means that no credentials are
	// configured and every request is accepted.
	Store *Store
	// Now is the clock against which X-Amz-Date is checked; nil is time.Now.
	Now func() time.Time
	// DefaultAccount is the account of requests when no credentials are
	// configured and the access key does not name one.
	DefaultAccount string
	// Region is the server's region. Signatures are checked with whatever
	// region their credential scope names, as fifoq serves one endpoint
	// for every region a client may be configured with; those that name
	// this one are checked a little faster (see signerFor).
	Region string

	// regionSigner signs for the scopes of Region (see signerFor).
	regionSignerOnce sync.Once
	regionSigner     *v4.Signer
}

// signerFor returns the SDK signer with which to check a signature whose
// scope names region. Deriving the signing key from the secret is a
// quarter of a check (BenchmarkVerify), and the SDK's signer keeps the last
// key it derived for each region and service, for the access key and day
// it was derived for. The store never changes the secret of an access key,
// so a kept key is right. But a region is the client's to name, and the
// signer would keep one key per region for ever: only the server's own
// region, the one its clients are configured with, goes to the signer
// that keeps keys; any other gets a fresh one, as every check did before.
func (v *Verifier) signerFor(region string) *v4.Signer {
	if region == "" || region != v.Region {
		return v4.NewSigner()
	}
	v.regionSignerOnce.Do(func() { v.regionSigner = v4.NewSigner() })
	return v.regionSigner
}

// Verify authenticates r, whose body has already been read into body, and
// returns the account of the caller. A failure is an *api.Error with SQS's
// code and HTTP status: MissingAuthenticationToken, IncompleteSignature,
// InvalidClientTokenId, SignatureDoesNotMatch or RequestExpired.
//
// With no credentials configured it accepts every request, signed or not:
// the account is the access key when that is 12 digits (the convention of
// test suites that exercise several accounts), else DefaultAccount.
func (v *Verifier) Verify(r *http.Request, body []byte) (account string, err error) {
	cred, _, err := v.VerifyKey(r, body)
	return cred.Account, err
}

// VerifyKey is Verify, returning the credential that signed r (its secret
// included: do not log it) and the signature, which identifies the
// request. With no credentials configured the credential is an admin key
// of the account Verify would answer, and the signature is "".
func (v *Verifier) VerifyKey(r *http.Request, body []byte) (cred Credential, signature string, err error) {
	if v.Store.Empty() {
		return Credential{Account: v.unverifiedAccount(r), Admin: true}, "", nil
	}
	p, apiErr := v.parse(r)
	if apiErr != nil {
		return Credential{}, "", apiErr
	}
	cred, apiErr = v.check(r, body, p)
	if apiErr != nil {
		return Credential{}, "", apiErr
	}
	return cred, p.Signature, nil
}

// parse finds the signature of r, in its Authorization header or its query.
func (v *Verifier) parse(r *http.Request) (*sigParts, *api.Error) {
	authz := r.Header.Values(headerAuthz)
	query := r.URL.Query()
	presigned := query.Has(queryAlgorithm) || query.Has(queryCredential) || query.Has(querySignature)
	switch {
	case len(authz) > 0 && presigned:
		return nil, api.ErrIncompleteSignature("Only one authentication method is allowed: the request has both an Authorization header and X-Amz-* query parameters.")
	case len(authz) > 1:
		return nil, api.ErrIncompleteSignature("The request has more than one Authorization header.")
	case len(authz) == 1:
		p, err := parseAuthorization(authz[0])
		if err != nil {
			return nil, err
		}
		amzDate := r.Header.Get(headerAmzDate)
		if amzDate == "" {
			// fifoq cannot verify a signature dated by the Date header
			// instead: every AWS SDK sends X-Amz-Date.
			return nil, api.ErrIncompleteSignature("Authorization header requires existence of a 'X-Amz-Date' header.")
		}
		if p.Date, err = parseAmzDate(amzDate); err != nil {
			return nil, err
		}
		p.AmzDate = amzDate
		if !slices.Contains(p.SignedHeaders, "x-amz-date") {
			return nil, api.ErrIncompleteSignature("'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization.")
		}
		return p, nil
	case presigned:
		return parsePresigned(query)
	}
	return nil, api.ErrMissingAuthenticationToken()
}

// check verifies a parsed signature and returns the credential that made it.
// The order of the checks is the order of what a client gets wrong first:
// the key, then the scope, then the clock, and last the signature itself,
// the only check that needs the secret.
func (v *Verifier) check(r *http.Request, body []byte, p *sigParts) (Credential, *api.Error) {
	// fifoq issues no temporary credentials, so no session token can be
	// valid; a key that comes with one is not a fifoq key.
	if r.Header.Get(headerSessionToken) != "" || (p.Presigned && r.URL.Query().Get(querySessionToken) != "") {
		return Credential{}, api.ErrInvalidClientTokenId()
	}
	cred, ok := v.Store.Lookup(p.Scope.AccessKeyID)
	if !ok {
		return Credential{}, api.ErrInvalidClientTokenId()
	}
	if err := checkScope(p); err != nil {
		return Credential{}, err
	}
	if err := v.checkTime(p); err != nil {
		return Credential{}, err
	}

	declared := r.Header.Get(headerContentSHA)
	if p.Presigned && declared == "" {
		declared = r.URL.Query().Get(queryContentSHA)
	}
	hash, apiErr := payloadHash(declared, body)
	if apiErr != nil {
		return Credential{}, apiErr
	}
	expected, err := expectedSignature(v.signerFor(p.Scope.Region), r, p, cred, hash)
	if err != nil {
		// The SDK signer fails only on what we gave it; say so without
		// anything of the request's or the key's.
		return Credential{}, api.ErrInternalFailure("Could not compute the request signature: %v", err)
	}
	if !signaturesEqual(expected, p.Signature) {
		return Credential{}, api.ErrSignatureDoesNotMatch()
	}
	return cred, nil
}

// checkScope checks the credential scope against the request: the date must
// be X-Amz-Date's, the service sqs and the terminator aws4_request. Any
// region is accepted (see Verifier.Region).
func checkScope(p *sigParts) *api.Error {
	s := p.Scope
	if day := p.AmzDate[:8]; s.Date != day {
		return api.ErrCredentialScope("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from 'X-Amz-Date'.", sigClip(s.Date), day)
	}
	if s.Service != sigService {
		return api.ErrCredentialScope("Credential should be scoped to correct service: '%s'. ", sigService)
	}
	if s.Terminator != sigTerminator {
		return api.ErrCredentialScope("Credential should be scoped with a valid terminator: '%s', not '%s'. ", sigTerminator, sigClip(s.Terminator))
	}
	return nil
}

// checkTime checks the request's date against the clock. A header signature
// is good for MaxClockSkew either side of X-Amz-Date. A presigned request is
// good from MaxClockSkew before X-Amz-Date until X-Amz-Expires after it, or
// like a header signature when it has no X-Amz-Expires.
func (v *Verifier) checkTime(p *sigParts) *api.Error {
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	if p.Date.After(now.Add(MaxClockSkew)) {
		return api.ErrSignatureNotYetCurrent(p.Date, now, MaxClockSkew)
	}
	if p.Presigned && p.HasExpires {
		if now.After(p.Date.Add(p.Expires)) {
			return api.ErrRequestExpired()
		}
		return nil
	}
	if p.Date.Before(now.Add(-MaxClockSkew)) {
		return api.ErrSignatureExpired(p.Date, now, MaxClockSkew)
	}
	return nil
}

// unverifiedAccount is the account of a request when no credentials are
// configured: the access key it claims when that is an account id.
func (v *Verifier) unverifiedAccount(r *http.Request) string {
	if id := claimedAccessKeyID(r); api.IsAccountID(id) {
		return id
	}
	return v.DefaultAccount
}

// claimedAccessKeyID is the access key id a request names, read leniently
// from the Authorization header's Credential or the X-Amz-Credential query
// parameter, without checking anything else.
func claimedAccessKeyID(r *http.Request) string {
	cred := claimedCredential(r)
	if i := strings.IndexAny(cred, "/, "); i >= 0 {
		cred = cred[:i]
	}
	return cred
}

// claimedCredential is the Credential a request's signature names
// ("KEY/DATE/REGION/SERVICE/aws4_request"), read leniently from the
// Authorization header or the X-Amz-Credential query parameter, up to the
// first comma or space; "" if it names none.
func claimedCredential(r *http.Request) string {
	var cred string
	if h := r.Header.Get(headerAuthz); h != "" {
		_, after, ok := strings.Cut(h, "Credential=")
		if !ok {
			return ""
		}
		cred = after
	} else {
		cred = r.URL.Query().Get(queryCredential)
	}
	if i := strings.IndexAny(cred, ", "); i >= 0 {
		cred = cred[:i]
	}
	return cred
}

// RequestRegion returns the region a request's signature is scoped to
// (the third part of its Credential), or "" if it names none or a value
// that cannot be a region (api.IsRegionName). A client's region is the one
// it signs for: an SQS client configured for eu-west-1 talks to that
// region's queues. It is read leniently, like the access key of an
// unverified request: where credentials are configured, Verify has
// checked the signature, and so the scope, before the region is used.
func RequestRegion(r *http.Request) string {
	// KEY/DATE/REGION/...: the third part, cut without allocating, as
	// every request pays for it.
	cred := claimedCredential(r)
	for range 2 {
		i := strings.IndexByte(cred, '/')
		if i < 0 {
			return ""
		}
		cred = cred[i+1:]
	}
	region, _, _ := strings.Cut(cred, "/")
	if !api.IsRegionName(region) {
		return ""
	}
	return region
}
