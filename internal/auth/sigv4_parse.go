package auth

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// SigV4 names, as AWS spells them.
const (
	sigAlgorithm       = "AWS4-HMAC-SHA256"
	sigTerminator      = "aws4_request"
	sigService         = "sqs"
	amzDateFormat      = "20060102T150405Z"
	headerAuthz        = "Authorization"
	headerAmzDate      = "X-Amz-Date"
	headerContentSHA   = "X-Amz-Content-Sha256"
	headerSessionToken = "X-Amz-Security-Token"

	queryAlgorithm     = "X-Amz-Algorithm"
	queryCredential    = "X-Amz-Credential"
	queryDate          = "X-Amz-Date"
	queryExpires       = "X-Amz-Expires"
	querySignedHeaders = "X-Amz-SignedHeaders"
	querySignature     = "X-Amz-Signature"
	querySessionToken  = "X-Amz-Security-Token"
	queryContentSHA    = "X-Amz-Content-Sha256"
)

// credentialScope is the Credential of a signature:
// ACCESS_KEY_ID/YYYYMMDD/REGION/SERVICE/aws4_request.
type credentialScope struct {
	AccessKeyID, Date, Region, Service, Terminator string
}

// sigParts is a SigV4 signature as the client presented it, in the
// Authorization header or in presigned query parameters.
type sigParts struct {
	Presigned bool
	Scope     credentialScope
	// SignedHeaders are the lower-case names of the signed headers, in the
	// client's (ascending) order.
	SignedHeaders []string
	// Signature is the client's signature, in hex as sent.
	Signature string
	// AmzDate is X-Amz-Date as sent and Date its value.
	AmzDate string
	Date    time.Time
	// Expires is X-Amz-Expires of a presigned request, if HasExpires.
	Expires    time.Duration
	HasExpires bool
}

// parseAuthorization parses an Authorization header of the form
//
//	AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex
//
// It does not look at X-Amz-Date, which is a header of its own. Every error
// is an IncompleteSignature.
func parseAuthorization(value string) (*sigParts, *api.Error) {
	value = strings.TrimSpace(value)
	algorithm, rest, _ := strings.Cut(value, " ")
	if algorithm != sigAlgorithm {
		return nil, api.ErrIncompleteSignature("Unsupported AWS 'algorithm': '%s'. fifoq accepts Signature Version 4 (%s) only.", sigClip(algorithm), sigAlgorithm)
	}
	var credential, signedHeaders, signature *string
	for _, piece := range strings.Split(rest, ",") {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			continue
		}
		key, val, ok := strings.Cut(piece, "=")
		if !ok {
			return nil, api.ErrIncompleteSignature("'%s' not a valid key=value pair (missing equal-sign) in Authorization header.", sigClip(piece))
		}
		var slot **string
		switch strings.TrimSpace(key) {
		case "Credential":
			slot = &credential
		case "SignedHeaders":
			slot = &signedHeaders
		case "Signature":
			slot = &signature
		default:
			continue // other parameters are not part of SigV4; ignore them as AWS does
		}
		if *slot != nil {
			return nil, api.ErrIncompleteSignature("Authorization header has '%s' more than once.", strings.TrimSpace(key))
		}
		v := strings.TrimSpace(val)
		*slot = &v
	}
	var missing []string
	for _, p := range []struct {
		name string
		v    *string
	}{{"Credential", credential}, {"Signature", signature}, {"SignedHeaders", signedHeaders}} {
		if p.v == nil || *p.v == "" {
			missing = append(missing, "Authorization header requires '"+p.name+"' parameter.")
		}
	}
	if len(missing) > 0 {
		return nil, api.ErrIncompleteSignature("%s", strings.Join(missing, " "))
	}
	scope, err := parseCredentialScope(*credential)
	if err != nil {
		return nil, err
	}
	names, err := parseSignedHeaders(*signedHeaders)
	if err != nil {
		return nil, err
	}
	return &sigParts{Scope: scope, SignedHeaders: names, Signature: *signature}, nil
}

// parsePresigned parses the SigV4 query parameters of a presigned request.
// Every error is an IncompleteSignature.
func parsePresigned(q url.Values) (*sigParts, *api.Error) {
	required := []string{queryAlgorithm, queryCredential, querySignature, queryDate, querySignedHeaders}
	var missing []string
	for _, name := range required {
		if q.Get(name) == "" {
			missing = append(missing, "'"+name+"'")
		}
	}
	if len(missing) > 0 {
		return nil, api.ErrIncompleteSignature("AWS query-string parameters must include %s. Re-examine the query-string parameters.", strings.Join(missing, ", "))
	}
	for _, name := range append(required, queryExpires, querySessionToken, queryContentSHA) {
		if len(q[name]) > 1 {
			return nil, api.ErrIncompleteSignature("The query-string parameter '%s' appears more than once.", name)
		}
	}
	if alg := q.Get(queryAlgorithm); alg != sigAlgorithm {
		return nil, api.ErrIncompleteSignature("Unsupported AWS 'algorithm': '%s'. fifoq accepts Signature Version 4 (%s) only.", sigClip(alg), sigAlgorithm)
	}
	scope, err := parseCredentialScope(q.Get(queryCredential))
	if err != nil {
		return nil, err
	}
	names, err := parseSignedHeaders(q.Get(querySignedHeaders))
	if err != nil {
		return nil, err
	}
	date, err := parseAmzDate(q.Get(queryDate))
	if err != nil {
		return nil, err
	}
	p := &sigParts{
		Presigned:     true,
		Scope:         scope,
		SignedHeaders: names,
		Signature:     q.Get(querySignature),
		AmzDate:       q.Get(queryDate),
		Date:          date,
	}
	if vs, ok := q[queryExpires]; ok {
		secs, perr := strconv.ParseInt(vs[0], 10, 64)
		if perr != nil || secs < 0 || secs > maxPresignedExpirySeconds || !sigAllDigits(vs[0]) {
			return nil, api.ErrIncompleteSignature("X-Amz-Expires must be a whole number of seconds from 0 to %d (7 days), not '%s'.", maxPresignedExpirySeconds, sigClip(vs[0]))
		}
		p.Expires, p.HasExpires = time.Duration(secs)*time.Second, true
	}
	return p, nil
}

// parseCredentialScope splits a Credential into its five parts.
func parseCredentialScope(s string) (credentialScope, *api.Error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return credentialScope{}, api.ErrIncompleteSignature("Credential must have exactly 5 slash-delimited elements (ACCESS_KEY_ID/YYYYMMDD/REGION/%s/%s), found %d.", sigService, sigTerminator, len(parts))
	}
	for i, name := range []string{"access key id", "date", "region", "service", "terminator"} {
		if parts[i] == "" {
			return credentialScope{}, api.ErrIncompleteSignature("Credential has an empty %s.", name)
		}
	}
	return credentialScope{AccessKeyID: parts[0], Date: parts[1], Region: parts[2], Service: parts[3], Terminator: parts[4]}, nil
}

// parseSignedHeaders splits SignedHeaders. The names must be lower case,
// ascending and distinct, as the canonical request lists them, and include
// host: a signature that does not cover the host could be replayed against
// another endpoint.
func parseSignedHeaders(s string) ([]string, *api.Error) {
	names := strings.Split(s, ";")
	for i, name := range names {
		if !sigIsLowerToken(name) {
			return nil, api.ErrIncompleteSignature("SignedHeaders must be lower-case header names separated by ';', not '%s'.", sigClip(s))
		}
		if i > 0 && names[i-1] >= name {
			return nil, api.ErrIncompleteSignature("SignedHeaders must list header names once each in ascending order, not '%s'.", sigClip(s))
		}
	}
	if !slices.Contains(names, "host") {
		return nil, api.ErrIncompleteSignature("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
	}
	return names, nil
}

// parseAmzDate parses X-Amz-Date, which must be in ISO 8601 basic format
// exactly as signers write it: the signature is computed over the string.
func parseAmzDate(s string) (time.Time, *api.Error) {
	t, err := time.Parse(amzDateFormat, s)
	if err != nil || t.Format(amzDateFormat) != s {
		return time.Time{}, api.ErrIncompleteSignature("X-Amz-Date must be in the ISO 8601 basic format YYYYMMDD'T'HHMMSS'Z', not '%s'.", sigClip(s))
	}
	return t, nil
}

// sigIsLowerToken reports whether s is a non-empty HTTP header name (RFC 9110
// token) without upper-case letters.
func sigIsLowerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0:
		default:
			return false
		}
	}
	return true
}

func sigAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// sigClip makes a client-supplied string fit to quote in an error message:
// at most 64 characters, so that a huge header does not become a huge
// error, and no control characters or invalid UTF-8, which the wire
// encodings of errors could not carry.
func sigClip(s string) string {
	const max = 64
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("...")
			break
		}
		if r == utf8.RuneError || unicode.IsControl(r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
