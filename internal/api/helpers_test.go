package api

import (
	"strings"
	"testing"
)

func intp(n int) *int { return &n }

// checkErr asserts that err is nil when code is "", and otherwise an *Error
// with the given code whose message contains msg.
func checkErr(t *testing.T, err error, code, msg string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %s %q", code, msg)
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %T %v is not an *api.Error", err, err)
	}
	if e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("got %s %q, want %s containing %q", e.Code, e.Message, code, msg)
	}
}
