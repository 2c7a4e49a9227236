package console

import "net/http"

// sessionJSON tells the page who it acts as and how to make calls.
type sessionJSON struct {
	// AuthRequired: the server has credentials, so operators sign in.
	AuthRequired bool `json:"authRequired"`
	// SignedIn: the page may use the console (always true without
	// credentials).
	SignedIn    bool   `json:"signedIn"`
	Account     string `json:"account,omitempty"`
	AccessKeyID string `json:"accessKeyId,omitempty"`
	// ExpiresAt is when the sign-in ends (Unix ms), 0 without one.
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	// CSRFToken goes in the X-CSRF-Token header of every POST.
	CSRFToken string `json:"csrfToken"`
	Region    string `json:"region"`
}

func (c *Console) sessionOf(a *actor) sessionJSON {
	out := sessionJSON{
		AuthRequired: c.authRequired(),
		SignedIn:     a.account != "",
		Account:      a.account,
		AccessKeyID:  a.keyID,
		CSRFToken:    c.sessions.csrfToken(a.sessionID()),
		Region:       c.cfg.Region,
	}
	if a.session != nil {
		out.ExpiresAt = a.session.Expires * 1000
	}
	return out
}

func (c *Console) getSession(r *http.Request, a *actor) (any, error) {
	return c.sessionOf(a), nil
}

type loginJSON struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
}

var (
	errNoCredentials   = &apiError{http.StatusBadRequest, "NoCredentialsConfigured", "The server has no credentials: the console needs no sign-in."}
	errBadCredentials  = &apiError{http.StatusUnauthorized, "InvalidCredentials", "The access key id or the secret access key is wrong."}
	errTooManyAttempts = &apiError{http.StatusTooManyRequests, "TooManyAttempts", "Too many failed sign-ins from this address; wait a minute and try again."}
)

// login signs an operator in with an access key of the server's
// credentials, and answers with the new session and its cookie.
func (c *Console) login(r *http.Request, _ *actor) (any, error) {
	if !c.authRequired() {
		return nil, errNoCredentials
	}
	client := clientAddr(r)
	if !c.limiter.allow(client) {
		c.cfg.Logger.Warn("console sign-in refused: too many failures", "client", client)
		return nil, errTooManyAttempts
	}
	var in loginJSON
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	cred, ok := checkSecret(c.cfg.Credentials, in.AccessKeyID, in.SecretAccessKey)
	if !ok {
		c.limiter.failed(client)
		c.cfg.Logger.Warn("console sign-in failed", "access_key_id", in.AccessKeyID, "client", client)
		return nil, errBadCredentials
	}
	s, value := c.sessions.issue(cred.Account, cred.AccessKeyID)
	c.cfg.Logger.Info("console sign-in", "access_key_id", cred.AccessKeyID, "account", cred.Account, "client", client)
	return cookieResult{value: value, body: c.sessionOf(&actor{account: s.Account, keyID: s.KeyID, session: &s})}, nil
}

// logout ends the caller's session. Without credentials there is none,
// and it does nothing.
func (c *Console) logout(r *http.Request, a *actor) (any, error) {
	if a.session == nil {
		return c.sessionOf(a), nil
	}
	c.sessions.revoke(*a.session)
	c.cfg.Logger.Info("console sign-out", "access_key_id", a.keyID, "account", a.account, "client", clientAddr(r))
	return cookieResult{value: "", body: c.sessionOf(&actor{})}, nil
}

// cookieResult is an answer that also sets (or, with value "", clears)
// the session cookie.
type cookieResult struct {
	value string
	body  sessionJSON
}
