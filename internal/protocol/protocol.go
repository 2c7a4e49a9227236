package protocol

import (
	"mime"
	"net/http"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Protocol identifies a wire protocol.
type Protocol int

// The two wire protocols of SQS.
const (
	// JSON is the AWS JSON 1.0 protocol, spoken by current AWS SDKs.
	JSON Protocol = iota + 1
	// Query is the AWS Query protocol (form in, XML out), spoken by older
	// SDKs and hand-written clients.
	Query
)

// String returns the protocol's name.
func (p Protocol) String() string {
	switch p {
	case JSON:
		return "json"
	case Query:
		return "query"
	}
	return "unknown"
}

// Header names and values of the AWS JSON protocol.
const (
	headerTarget     = "X-Amz-Target"
	headerRequestID  = "X-Amzn-Requestid"
	headerQueryError = "X-Amzn-Query-Error"
	jsonContentType  = "application/x-amz-json-1.0"
	formContentType  = "application/x-www-form-urlencoded"
	// targetPrefix is the service part of X-Amz-Target: the model's targetPrefix.
	targetPrefix = "AmazonSQS."
)

// Detect says which protocol a request speaks: Query for a form body,
// whatever its other headers; JSON when it carries an X-Amz-Target header or
// an AWS JSON Content-Type; Query otherwise (a GET with a query string, or
// a POST without a Content-Type). A form body wins over X-Amz-Target because
// clients of the Query protocol send both: Debian's Perl client
// (libamazon-sqs-simple-perl 2.07) sends every request as a form with
// "x-amz-target: AmazonSQSv20121105.<Action>".
func Detect(r *http.Request) Protocol {
	if mediaType(r.Header.Get("Content-Type")) == formContentType {
		return Query
	}
	if r.Header.Get(headerTarget) != "" {
		return JSON
	}
	switch mediaType(r.Header.Get("Content-Type")) {
	case jsonContentType, "application/x-amz-json-1.1":
		return JSON
	}
	return Query
}

// Decode decodes a request whose body has already been read into the typed
// request of its action. It returns the action as soon as it is known, even
// when decoding fails afterwards, so that the caller can log or meter it;
// the error is always a client error (4xx) that names the offending
// parameter or member. Decode never panics, whatever its input.
func Decode(p Protocol, r *http.Request, body []byte) (api.Action, api.Request, *api.Error) {
	switch p {
	case JSON:
		return decodeJSON(r, body)
	case Query:
		return decodeQuery(r, body)
	}
	return "", nil, api.ErrInvalidParameterValue("Unknown wire protocol %d.", int(p))
}

// mediaType returns the lower-case media type of a Content-Type header,
// without its parameters. A header that does not parse is cut at its first
// ';' so that a malformed parameter does not hide a well-formed type.
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	if plainMediaType(contentType) {
		// No parameters and nothing to trim: both ways below come to
		// the lower-case header, without ParseMediaType's map of
		// parameters (two per request).
		return strings.ToLower(contentType)
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// plainMediaType reports whether a Content-Type is printable ASCII without
// spaces or parameters, such as "application/x-amz-json-1.0".
func plainMediaType(contentType string) bool {
	for i := 0; i < len(contentType); i++ {
		if c := contentType[i]; c <= ' ' || c >= 0x7f || c == ';' {
			return false
		}
	}
	return true
}
