package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
)

// cookieName is the session cookie's name.
const cookieName = "fifoq_console"

// session is what a session cookie says: who signed in, as which account,
// until when. It is signed, not encrypted: it holds nothing secret.
type session struct {
	ID      string `json:"i"` // random, names the session for CSRF tokens and sign-out
	Account string `json:"a"`
	KeyID   string `json:"k"`
	Expires int64  `json:"e"` // Unix seconds
}

// sessionKeeper issues and checks session cookies, signed with HMAC-SHA256
// under a key drawn at start: a restart signs everybody out, and nothing
// needs to be stored but the sessions signed out before they expired.
type sessionKeeper struct {
	key []byte
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	revoked map[string]int64 // session id -> expiry, Unix seconds
}

func newSessionKeeper(ttl time.Duration, now func() time.Time) (*sessionKeeper, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("console session key: %w", err)
	}
	return &sessionKeeper{key: key, ttl: ttl, now: now, revoked: map[string]int64{}}, nil
}

func (k *sessionKeeper) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, k.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// issue starts a session and returns it with its cookie value.
func (k *sessionKeeper) issue(account, keyID string) (session, string) {
	id := make([]byte, 16)
	rand.Read(id) // never fails (crypto/rand panics rather)
	s := session{ID: hex.EncodeToString(id), Account: account, KeyID: keyID, Expires: k.now().Add(k.ttl).Unix()}
	payload, _ := json.Marshal(s)
	enc := base64.RawURLEncoding.EncodeToString(payload)
	return s, enc + "." + base64.RawURLEncoding.EncodeToString(k.mac("session", enc))
}

// parse checks a cookie value: well formed, signed by us, not expired and
// not signed out.
func (k *sessionKeeper) parse(value string) (session, bool) {
	enc, sig, ok := strings.Cut(value, ".")
	if !ok {
		return session{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, k.mac("session", enc)) {
		return session{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return session{}, false
	}
	var s session
	if err := json.Unmarshal(payload, &s); err != nil || s.ID == "" {
		return session{}, false
	}
	if k.now().Unix() >= s.Expires {
		return session{}, false
	}
	k.mu.Lock()
	_, out := k.revoked[s.ID]
	k.mu.Unlock()
	return s, !out
}

// revoke signs a session out before it expires.
func (k *sessionKeeper) revoke(s session) {
	now := k.now().Unix()
	k.mu.Lock()
	defer k.mu.Unlock()
	for id, exp := range k.revoked {
		if exp <= now {
			delete(k.revoked, id)
		}
	}
	k.revoked[s.ID] = s.Expires
}

// csrfToken is the token state-changing calls of a session must carry:
// a page of another origin cannot read it, so it cannot forge them. The
// session id "" stands for the page before sign-in (the sign-in call) and
// for the console without credentials.
func (k *sessionKeeper) csrfToken(sessionID string) string {
	return base64.RawURLEncoding.EncodeToString(k.mac("csrf", sessionID))
}

func (k *sessionKeeper) checkCSRF(sessionID, token string) bool {
	got, err := base64.RawURLEncoding.DecodeString(token)
	return err == nil && hmac.Equal(got, k.mac("csrf", sessionID))
}

// setCookie sets or, with value "", clears the session cookie.
func (k *sessionKeeper) setCookie(w http.ResponseWriter, r *http.Request, value string) {
	c := &http.Cookie{
		Name:     cookieName,
		Value:    value,
		Path:     Path,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
		MaxAge:   int(k.ttl / time.Second),
	}
	if value == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// checkSecret reports whether secret is the secret access key of keyID in
// store. It compares digests in constant time, and does the same work
// for an unknown key id, so that timing tells neither the secret nor
// which key ids exist.
func checkSecret(store *auth.Store, keyID, secret string) (auth.Credential, bool) {
	cred, known := store.Lookup(keyID)
	want := sha256.Sum256([]byte(cred.SecretAccessKey))
	got := sha256.Sum256([]byte(secret))
	match := subtle.ConstantTimeCompare(want[:], got[:]) == 1
	return cred, known && match && secret != ""
}

// Sign-in attempts are limited per client address: loginBurst failures at
// once, then one per loginRefill, so that secrets cannot be guessed at
// the speed of the network.
const (
	loginBurst  = 10
	loginRefill = 6 * time.Second
	// maxLimitedClients bounds the table; past it, clients whose budget
	// is full again are forgotten.
	maxLimitedClients = 10_000
)

type loginLimiter struct {
	now       func() time.Time
	mu        sync.Mutex
	clients   map[string]*loginBudget
	lastSweep time.Time
}

type loginBudget struct {
	tokens float64
	at     time.Time
}

// overflowClient keys the budget that clients share while the table is
// full: an attacker with many addresses then competes with itself for one
// budget, instead of growing the table or evicting other clients' records.
const overflowClient = "overflow"

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, clients: map[string]*loginBudget{}}
}

// refilled returns b's tokens at time now.
func refilled(b *loginBudget, now time.Time) float64 {
	return min(loginBurst, b.tokens+now.Sub(b.at).Seconds()/loginRefill.Seconds())
}

// budget returns the client's budget, refilled up to now, making one for a
// client without; the caller holds mu. A full table is swept of budgets
// that have refilled completely at most once per loginRefill, so a flood
// of new addresses cannot make every attempt scan the whole table; while
// it is still full, new clients share the overflow budget.
func (l *loginLimiter) budget(client string) *loginBudget {
	now := l.now()
	b := l.clients[client]
	if b == nil && len(l.clients) >= maxLimitedClients {
		if now.Sub(l.lastSweep) >= loginRefill {
			l.lastSweep = now
			for c, o := range l.clients {
				if refilled(o, now) >= loginBurst {
					delete(l.clients, c)
				}
			}
		}
		if len(l.clients) >= maxLimitedClients {
			client = overflowClient
			b = l.clients[client]
		}
	}
	if b == nil {
		b = &loginBudget{tokens: loginBurst, at: now}
		l.clients[client] = b
	}
	b.tokens = refilled(b, now)
	b.at = now
	return b
}

// allow reports whether the client may try to sign in now. It records
// nothing: only failures make a client known.
func (l *loginLimiter) allow(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[client]
	if b == nil && len(l.clients) >= maxLimitedClients {
		b = l.clients[overflowClient]
	}
	return b == nil || refilled(b, l.now()) >= 1
}

// failed charges a failed attempt to the client.
func (l *loginLimiter) failed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.budget(client)
	b.tokens = max(b.tokens-1, 0)
}

// clientAddr is the request's remote address as the limiter keys it: an
// IPv4 address, or the /64 network of an IPv6 address, since one IPv6
// client commonly holds a whole /64 and could otherwise try from as many
// addresses as it likes.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// hostAllowed reports whether the console may answer a request for host
// without credentials: an IP address or a loopback name. A DNS rebinding
// attack needs a host name of the attacker's, which this refuses.
func hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil
}
