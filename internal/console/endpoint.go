package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"

	"github.com/fifoq/fifoq/internal/api"
)

// csrfHeader carries the CSRF token on state-changing calls.
const csrfHeader = "X-CSRF-Token"

// maxRequestBytes bounds a console API request body: a message of the
// largest size SQS accepts, JSON-escaped, fits.
const maxRequestBytes = 8 << 20

// actor is who a console API call acts as.
type actor struct {
	account string
	keyID   string   // "" without credentials
	session *session // nil without credentials or before sign-in
}

// sessionID is the id CSRF tokens are bound to ("" without a session).
func (a *actor) sessionID() string {
	if a.session == nil {
		return ""
	}
	return a.session.ID
}

// access says who may call an endpoint.
type access int

const (
	anyone   access = iota // the sign-in page's calls
	signedIn               // an operator: signed in, or anyone without credentials
)

// apiFunc answers one console API call with a value to encode as JSON.
type apiFunc func(r *http.Request, a *actor) (any, error)

// apiError is an error of the console API itself (not of an SQS action).
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errNotFound(msg string) error { return &apiError{http.StatusNotFound, "NotFound", msg} }
func errBadRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "BadRequest", fmt.Sprintf(format, args...)}
}

var (
	errSignInRequired = &apiError{http.StatusUnauthorized, "SignInRequired", "Sign in to use the console."}
	errCSRF           = &apiError{http.StatusForbidden, "InvalidCSRFToken", "The request lacks a valid " + csrfHeader + " header; reload the console."}
	errCrossOrigin    = &apiError{http.StatusForbidden, "CrossOriginRequest", "The console API answers only pages of its own origin."}
)

// endpoint wraps an apiFunc: it finds the caller, refuses what the caller
// may not do, checks the CSRF token of POSTs, and writes the JSON answer
// or error.
func (c *Console) endpoint(who access, fn apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		defer func() {
			if v := recover(); v != nil {
				c.cfg.Logger.Error("panic in console API", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeError(w, api.ErrInternalFailure("Internal failure."))
			}
		}()
		a := c.actorOf(r)
		if who == signedIn && a.account == "" {
			writeError(w, errSignInRequired)
			return
		}
		if r.Method == http.MethodPost {
			if !sameOrigin(r) {
				writeError(w, errCrossOrigin)
				return
			}
			if !c.sessions.checkCSRF(a.sessionID(), r.Header.Get(csrfHeader)) {
				writeError(w, errCSRF)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		}
		v, err := fn(r, a)
		if err != nil {
			writeError(w, err)
			return
		}
		if cr, ok := v.(cookieResult); ok {
			c.sessions.setCookie(w, r, cr.value)
			v = cr.body
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// actorOf finds who the request acts as: the session cookie's account,
// the default account without credentials, or nobody.
func (c *Console) actorOf(r *http.Request) *actor {
	if !c.authRequired() {
		return &actor{account: c.cfg.DefaultAccount}
	}
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return &actor{}
	}
	s, ok := c.sessions.parse(ck.Value)
	if !ok {
		return &actor{}
	}
	// A key removed from the credentials, or moved to another account,
	// no longer signs in.
	if cred, ok := c.cfg.Credentials.Lookup(s.KeyID); !ok || cred.Account != s.Account {
		return &actor{}
	}
	return &actor{account: s.Account, keyID: s.KeyID, session: &s}
}

// sameOrigin refuses requests that a browser marks as coming from another
// origin. Browsers send Origin on every POST of fetch; a request without
// it (curl) is not a browser's, and the CSRF token still applies.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// decodeBody decodes a JSON request body into v, refusing unknown fields
// so that a typo in a field name is an error rather than ignored.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &apiError{http.StatusRequestEntityTooLarge, "RequestTooLarge", fmt.Sprintf("The request body is larger than %d bytes.", maxRequestBytes)}
		}
		if errors.Is(err, io.EOF) {
			return errBadRequest("The request has no JSON body.")
		}
		return errBadRequest("The request body is not valid JSON for this call: %v", err)
	}
	return nil
}

type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	var out errorJSON
	status := http.StatusInternalServerError
	var ae *apiError
	if errors.As(err, &ae) {
		status, out.Error.Code, out.Error.Message = ae.status, ae.code, ae.message
	} else {
		e := api.AsError(err)
		status, out.Error.Code, out.Error.Message = e.Status, e.Code, e.Message
		if e.Code == api.ErrQueueDoesNotExist().Code {
			status = http.StatusNotFound // the console's resources are queues
		}
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"InternalFailure","message":"could not encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(body)
}
