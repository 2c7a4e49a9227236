package integration

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestClientsSpeakTheirProtocols checks that the two SDK clients really
// exercise the two wire protocols: if an SDK upgrade silently moved the v1
// client to AWS JSON, every "query" subtest would test JSON twice.
func TestClientsSpeakTheirProtocols(t *testing.T) {
	t.Parallel()
	env := Start(t)
	ctx := ctxT(t)
	for _, c := range clients(env) {
		q := mustCreate(t, c, "proto-"+c.Proto(), nil)
		mustSend(t, c, q, SendIn{Body: "hello"})
		if _, _, err := c.ListQueues(ctx, "", 0, ""); err != nil {
			t.Fatalf("%s ListQueues: %v", c.Proto(), err)
		}
	}

	v2 := env.V2Wire.Requests()
	if len(v2) < 3 {
		t.Fatalf("v2 client made %d requests, want 3", len(v2))
	}
	for _, r := range v2 {
		target := r.Header.Get("X-Amz-Target")
		if !strings.HasPrefix(target, "AmazonSQS.") {
			t.Errorf("v2 request X-Amz-Target = %q, want AmazonSQS.<Action>", target)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
			t.Errorf("v2 request Content-Type = %q, want application/x-amz-json-1.0", ct)
		}
		if !json.Valid(r.Body) {
			t.Errorf("v2 request body is not JSON: %q", r.Body)
		}
	}

	v1 := env.V1Wire.Requests()
	if len(v1) < 3 {
		t.Fatalf("v1 client made %d requests, want 3", len(v1))
	}
	actions := map[string]bool{}
	for _, r := range v1 {
		if target := r.Header.Get("X-Amz-Target"); target != "" {
			t.Errorf("v1 request has X-Amz-Target %q: it speaks AWS JSON, not Query", target)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			t.Errorf("v1 request Content-Type = %q, want application/x-www-form-urlencoded", ct)
		}
		form, err := url.ParseQuery(string(r.Body))
		if err != nil {
			t.Fatalf("v1 request body is not a form: %v: %q", err, r.Body)
		}
		if form.Get("Version") != "2012-11-05" {
			t.Errorf("v1 request Version = %q, want 2012-11-05", form.Get("Version"))
		}
		actions[form.Get("Action")] = true
	}
	for _, a := range []string{"CreateQueue", "SendMessage", "ListQueues"} {
		if !actions[a] {
			t.Errorf("v1 client sent no form with Action=%s (saw %v)", a, actions)
		}
	}
}
