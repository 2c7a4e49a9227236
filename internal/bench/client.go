package bench

import (
	"bytes"
	"io"
	"net/http"
)

// HTTPClient is the interface of the HTTP client the AWS SDK sends with
// (the SDK's HTTPClient option).
type HTTPClient interface {
	Do(*http.Request) (*http.Response, error)
}

// OwnRequestBodies wraps the SDK's HTTP client so that net/http sends a copy
// of each request body that only the transport holds, and the SDK cannot
// close under it.
//
// Without it, the SDK (smithy-go's ClientHandler) closes the body it built
// as soon as the response headers are back, and that body, once closed,
// answers io.EOF to WriteTo. net/http's connection writer, having sent the
// declared ContentLength, drains the body once more to check that nothing
// is left (transferWriter.writeBody); when the server has answered before
// that drain — on loopback it often has, on a busy machine more so — the
// drain meets the closed body, takes its io.EOF for a write error, and
// closes the connection while the caller may still be reading the answer
// from it. The caller then reads "use of closed network connection" (the
// SDK retries it, which a receive without a ReceiveRequestAttemptId pays
// for with its messages staying in flight until the visibility timeout),
// or at best the connection is dialled again. Against an in-memory fifoq
// this ended 60-90 of the 100-140 connections of a 10 s batch-cycle run
// with 32 workers. See aws/aws-sdk-go-v2 issues 1825, 2737 and 2935.
//
// A bytes.Reader body also lets net/http write a small request's headers
// and body at once instead of flushing the headers first.
func OwnRequestBodies(c HTTPClient) HTTPClient {
	return ownedBodies{next: c}
}

type ownedBodies struct{ next HTTPClient }

func (c ownedBodies) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	// The client owns the body it was given, as net/http's would.
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	// A shallow copy, so that the SDK's request is left as it built it.
	out := req.WithContext(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	return c.next.Do(out)
}
