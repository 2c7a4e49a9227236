package server

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestReceiveOverrideHeaders: LocalStack's override headers are read as
// positive integers, held to their bounds, and ignored otherwise, as
// LocalStack ignores a value that is not an integer, or 0.
func TestReceiveOverrideHeaders(t *testing.T) {
	for _, c := range []struct {
		count, wait string
		want        receiveOverride
	}{
		{"", "", receiveOverride{}},
		{"20", "", receiveOverride{count: 20}},
		{"", "30", receiveOverride{wait: 30 * time.Second}},
		{" 7 ", "5", receiveOverride{count: 7, wait: 5 * time.Second}},
		{"100000", "300", receiveOverride{count: maxOverrideCount, wait: maxOverrideWait}},
		{"99999999999999999999", "99999999999999", receiveOverride{wait: maxOverrideWait}},
		{"0", "0", receiveOverride{}},
		{"-3", "-1", receiveOverride{}},
		{"ten", "1.5", receiveOverride{}},
	} {
		h := http.Header{}
		if c.count != "" {
			h.Set("x-localstack-sqs-override-message-count", c.count)
		}
		if c.wait != "" {
			h.Set("x-localstack-sqs-override-wait-time-seconds", c.wait)
		}
		if got := receiveOverrideOf(withReceiveOverride(context.Background(), h)); got != c.want {
			t.Errorf("count %q, wait %q: %+v, want %+v", c.count, c.wait, got, c.want)
		}
	}
}

// TestOverrideWaitFitsTimeouts: the longest wait the header may ask for
// leaves time for the answer before the server's WriteTimeout and before
// a forwarding follower gives up on the leader's answer.
func TestOverrideWaitFitsTimeouts(t *testing.T) {
	const margin = 5 * time.Second
	if maxOverrideWait+margin > WriteTimeout {
		t.Errorf("maxOverrideWait %v leaves less than %v of WriteTimeout %v", maxOverrideWait, margin, WriteTimeout)
	}
	fwd := newForwarder(nil).client.Transport.(*http.Transport).ResponseHeaderTimeout
	if maxOverrideWait+margin > fwd {
		t.Errorf("maxOverrideWait %v leaves less than %v of the forwarder's ResponseHeaderTimeout %v", maxOverrideWait, margin, fwd)
	}
}
