package auth

import (
	"net/http"
	"net/url"
	"testing"
)

// TestRequestRegion checks which region a request is taken to be made in:
// the third part of its signature's Credential, from the Authorization
// header or a presigned query; "" when it names none that can be a region.
func TestRequestRegion(t *testing.T) {
	header := func(v string) *http.Request {
		r := &http.Request{Header: http.Header{}, URL: &url.URL{}}
		r.Header.Set("Authorization", v)
		return r
	}
	for _, c := range []struct {
		r    *http.Request
		want string
	}{
		{header("AWS4-HMAC-SHA256 Credential=AKID/20261127/eu-west-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"), "eu-west-1"},
		{header("AWS4-HMAC-SHA256 Credential=AKID/20261127/elasticmq/sqs/aws4_request,SignedHeaders=host"), "elasticmq"},
		{header("AWS4-HMAC-SHA256 Credential=AKID/20261127/EU/sqs/aws4_request"), ""},
		{header("AWS4-HMAC-SHA256 Credential=AKID/20261127"), ""},
		{header("AWS4-HMAC-SHA256 Credential=AKID"), ""},
		{header("Basic dXNlcjpwYXNz"), ""},
		{&http.Request{Header: http.Header{}, URL: &url.URL{RawQuery: "X-Amz-Credential=AKID%2F20261127%2Fap-south-1%2Fsqs%2Faws4_request"}}, "ap-south-1"},
		{&http.Request{Header: http.Header{}, URL: &url.URL{}}, ""},
	} {
		if got := RequestRegion(c.r); got != c.want {
			t.Errorf("RequestRegion(%v %v) = %q, want %q", c.r.Header, c.r.URL, got, c.want)
		}
	}
}
