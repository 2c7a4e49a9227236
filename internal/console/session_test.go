package console

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSessionCookie(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	k, err := newSessionKeeper(time.Hour, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	s, value := k.issue("111122223333", "AKIAEXAMPLE")
	got, ok := k.parse(value)
	if !ok || got != s || s.Account != "111122223333" || s.KeyID != "AKIAEXAMPLE" || s.Expires != clock.t.Add(time.Hour).Unix() {
		t.Fatalf("parse(issue()) = %+v %v, issued %+v", got, ok, s)
	}

	enc, sig, _ := strings.Cut(value, ".")
	other, _ := newSessionKeeper(time.Hour, clock.now)
	_, otherValue := other.issue("111122223333", "AKIAEXAMPLE")
	// The same signature over a payload naming another account.
	forged := func(account string) string {
		v := `{"i":"` + s.ID + `","a":"` + account + `","k":"AKIAEXAMPLE","e":9999999999}`
		return base64.RawURLEncoding.EncodeToString([]byte(v)) + "." + sig
	}
	for name, v := range map[string]string{
		"empty":              "",
		"no signature":       enc,
		"bad signature":      enc + ".AAAA",
		"another key's":      otherValue,
		"payload swapped":    forged("999999999999"),
		"signature not b64":  enc + ".!!!",
		"signature trimmed":  enc + "." + sig[:len(sig)-2],
		"payload not base64": "%%%." + sig,
	} {
		if _, ok := k.parse(v); ok {
			t.Errorf("%s cookie %q accepted", name, v)
		}
	}

	clock.t = clock.t.Add(time.Hour - time.Second)
	if _, ok := k.parse(value); !ok {
		t.Fatal("cookie refused before it expired")
	}
	clock.t = clock.t.Add(time.Second)
	if _, ok := k.parse(value); ok {
		t.Fatal("expired cookie accepted")
	}

	clock.t = time.Unix(1_700_000_000, 0)
	s2, v2 := k.issue("111122223333", "AKIAEXAMPLE")
	k.revoke(s2)
	if _, ok := k.parse(v2); ok {
		t.Fatal("signed-out cookie accepted")
	}
	if _, ok := k.parse(value); !ok {
		t.Fatal("signing one session out ended another")
	}
	// Revoked entries are dropped once their session would have expired.
	clock.t = clock.t.Add(2 * time.Hour)
	k.revoke(session{ID: "x", Expires: clock.t.Add(time.Hour).Unix()})
	if _, kept := k.revoked[s2.ID]; kept {
		t.Fatal("an expired revocation is kept")
	}
}

func TestCSRFToken(t *testing.T) {
	k, _ := newSessionKeeper(time.Hour, time.Now)
	a, b := k.csrfToken("session-a"), k.csrfToken("session-b")
	if a == b || a == k.csrfToken("") {
		t.Fatal("CSRF tokens of different sessions are equal")
	}
	if !k.checkCSRF("session-a", a) {
		t.Fatal("a session's own token refused")
	}
	for _, bad := range []string{"", b, a + "x", strings.ToUpper(a), "not base64!"} {
		if k.checkCSRF("session-a", bad) {
			t.Errorf("token %q accepted for session-a", bad)
		}
	}
	other, _ := newSessionKeeper(time.Hour, time.Now)
	if other.checkCSRF("session-a", a) {
		t.Fatal("a token of another process's key accepted")
	}
}

func TestCheckSecret(t *testing.T) {
	store, err := auth.NewStore([]auth.Credential{{AccessKeyID: "AKIAONE", SecretAccessKey: "s3cret", Account: "111122223333"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, secret string
		ok          bool
	}{
		{"AKIAONE", "s3cret", true},
		{"AKIAONE", "s3cre", false},
		{"AKIAONE", "s3cret ", false},
		{"AKIAONE", "", false},
		{"AKIATWO", "s3cret", false},
		{"", "", false},
	}
	for _, tc := range tests {
		cred, ok := checkSecret(store, tc.key, tc.secret)
		if ok != tc.ok || (ok && cred.Account != "111122223333") {
			t.Errorf("checkSecret(%q, %q) = %v %v, want %v", tc.key, tc.secret, cred, ok, tc.ok)
		}
	}
}

func TestLoginLimiter(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := newLoginLimiter(clock.now)
	for i := range loginBurst {
		if !l.allow("10.0.0.1") {
			t.Fatalf("attempt %d refused within the burst", i+1)
		}
		l.failed("10.0.0.1")
	}
	if l.allow("10.0.0.1") {
		t.Fatal("an attempt past the burst allowed")
	}
	if !l.allow("10.0.0.2") {
		t.Fatal("another client refused")
	}
	clock.t = clock.t.Add(loginRefill)
	if !l.allow("10.0.0.1") {
		t.Fatal("no attempt allowed after a refill period")
	}
	l.failed("10.0.0.1")
	if l.allow("10.0.0.1") {
		t.Fatal("two attempts allowed after one refill period")
	}
	clock.t = clock.t.Add(time.Hour)
	for i := range loginBurst {
		if !l.allow("10.0.0.1") {
			t.Fatalf("attempt %d refused after a long pause", i+1)
		}
		l.failed("10.0.0.1")
	}
}

// TestLoginLimiterFull checks the limiter under a flood of addresses: the
// table never grows past its bound, clients beyond it share one budget, a
// known client keeps its own, and successful clients are not recorded.
func TestLoginLimiterFull(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := newLoginLimiter(clock.now)
	for i := range 3 * maxLimitedClients {
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if l.allow(addr) {
			l.failed(addr)
		}
	}
	if n := len(l.clients); n > maxLimitedClients+1 {
		t.Fatalf("%d budgets kept, want at most %d", n, maxLimitedClients+1)
	}
	if l.allow("192.0.2.1") {
		t.Fatal("a new client allowed while the shared overflow budget is spent")
	}
	if !l.allow("10.0.0.0") {
		t.Fatal("a known client with tokens left refused")
	}
	clock.t = clock.t.Add(time.Hour)
	for i := range 5 {
		if !l.allow("192.0.2.1") {
			t.Fatalf("attempt %d refused after the table refilled", i+1)
		}
		l.failed("192.0.2.1")
	}
	if _, ok := l.clients["192.0.2.1"]; !ok {
		t.Fatal("after a sweep, a failing new client has no budget of its own")
	}
	before := len(l.clients)
	if !l.allow("198.51.100.7") || len(l.clients) != before {
		t.Fatal("allow recorded a client that has not failed")
	}
}

// TestClientAddr checks that IPv6 clients are limited by their /64.
func TestClientAddr(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:5555":              "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:5555": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:80":   "2001:db8:1:2::/64",
		"[::1]:9324":                  "::/64",
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		if got := clientAddr(r); got != want {
			t.Errorf("clientAddr(%s) = %q, want %q", remote, got, want)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:9324":       true,
		"127.0.0.1":            true,
		"[::1]:9324":           true,
		"localhost:9324":       true,
		"LOCALHOST.":           true,
		"app.localhost:8080":   true,
		"10.1.2.3:9324":        true,
		"evil.example.com":     false,
		"evil.example.com:80":  false,
		"localhost.evil.com":   false,
		"127.0.0.1.nip.io:932": false,
		"":                     false,
	} {
		if got := hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}
