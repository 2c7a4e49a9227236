package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBaseURL checks the base of the queue URLs the server answers with,
// for clients that name the port in Host, clients that leave it out, and
// proxies.
func TestBaseURL(t *testing.T) {
	local := func(addr string) net.Addr {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		name, host, localAddr string
		header                map[string]string
		want                  string
	}{
		{"host with port", "127.0.0.1:9324", "127.0.0.1:9324", nil, "http://127.0.0.1:9324"},
		{"mapped port kept", "localhost:4566", "127.0.0.1:9324", nil, "http://localhost:4566"},
		{"host without port", "127.0.0.1", "127.0.0.1:9324", nil, "http://127.0.0.1:9324"},
		{"IPv6 host without port", "[::1]", "[::1]:9324", nil, "http://[::1]:9324"},
		{"default port", "sqs.example", "10.0.0.1:80", nil, "http://sqs.example"},
		{"behind a proxy", "sqs.example", "127.0.0.1:9324", map[string]string{"X-Forwarded-Proto": "https"}, "http://sqs.example"},
		{"no host", "", "127.0.0.1:9324", nil, "http://127.0.0.1:9324"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Host = tc.host
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local(tc.localAddr)))
			if got := baseURL(r); got != tc.want {
				t.Fatalf("baseURL = %q, want %q", got, tc.want)
			}
		})
	}
}
