package auth

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// Environment variables that define one access key for the default account.
const (
	EnvAccessKeyID     = "FIFOQ_ACCESS_KEY_ID"
	EnvSecretAccessKey = "FIFOQ_SECRET_ACCESS_KEY"
)

// Credential is one access key: its id, its secret and the account it
// signs for. An admin key may also change what runs the server: a
// cluster's membership.
type Credential struct {
	AccessKeyID, SecretAccessKey, Account string
	Admin                                 bool
}

// String describes the credential without its secret, so that a credential
// printed by mistake, with %v or in a log, does not leak it.
func (c Credential) String() string {
	return fmt.Sprintf("{AccessKeyID:%s SecretAccessKey:<redacted> Account:%s Admin:%v}", c.AccessKeyID, c.Account, c.Admin)
}

// GoString is String for %#v.
func (c Credential) GoString() string { return "auth.Credential" + c.String() }

// LogValue keeps the secret out of structured logs.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("access_key_id", c.AccessKeyID), slog.String("account", c.Account), slog.Bool("admin", c.Admin))
}

// Store holds the configured credentials, by access key id. A nil or empty
// Store means that no credentials are configured: the Verifier then accepts
// every request.
type Store struct {
	byKey map[string]Credential
}

// NewStore checks the credentials and returns a Store of them: every access
// key and secret must be well formed, every account 12 digits, and no access
// key may appear twice.
func NewStore(creds []Credential) (*Store, error) {
	s := &Store{byKey: make(map[string]Credential, len(creds))}
	for i, c := range creds {
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("credential %d: %w", i+1, err)
		}
		if _, dup := s.byKey[c.AccessKeyID]; dup {
			return nil, fmt.Errorf("credential %d: access key %s is defined twice", i+1, c.AccessKeyID)
		}
		s.byKey[c.AccessKeyID] = c
	}
	return s, nil
}

// Empty reports whether no credentials are configured.
func (s *Store) Empty() bool { return s == nil || len(s.byKey) == 0 }

// Len is the number of access keys.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byKey)
}

// Lookup returns the credential of an access key id.
func (s *Store) Lookup(accessKeyID string) (Credential, bool) {
	if s == nil {
		return Credential{}, false
	}
	c, ok := s.byKey[accessKeyID]
	return c, ok
}

// validate checks one credential. Its errors name the access key and the
// account, never the secret.
func (c Credential) validate() error {
	if err := credValidAccessKeyID(c.AccessKeyID); err != nil {
		return err
	}
	if c.SecretAccessKey == "" {
		return fmt.Errorf("access key %s: empty secret access key", c.AccessKeyID)
	}
	for _, r := range c.SecretAccessKey {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("access key %s: the secret access key contains a space or control character", c.AccessKeyID)
		}
	}
	if !api.IsAccountID(c.Account) {
		return fmt.Errorf("access key %s: account %q is not 12 digits", c.AccessKeyID, c.Account)
	}
	return nil
}

// credValidAccessKeyID accepts what can travel in a SigV4 credential scope:
// printable ASCII without space and without the characters that delimit the
// Authorization header's parts ('/', ',', '=', ';').
func credValidAccessKeyID(id string) error {
	if id == "" {
		return errors.New("empty access key id")
	}
	if len(id) > 128 {
		return fmt.Errorf("access key id of %d characters (at most 128)", len(id))
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if b <= ' ' || b >= 0x7f || strings.IndexByte("/,=;", b) >= 0 {
			return fmt.Errorf("access key id %q: character %q is not allowed", id, b)
		}
	}
	return nil
}

// LoadCredentialsFile reads a credentials file. Each line is either blank,
// a comment (its first non-blank character is '#'), or one access key:
//
//	ACCESS_KEY_ID SECRET_ACCESS_KEY ACCOUNT_ID [admin]
//
// separated by spaces or tabs; the word admin makes it an admin key. Errors name the file and line; they never
// quote a line, which would show a secret.
func LoadCredentialsFile(path string) ([]Credential, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	defer f.Close()

	var creds []Credential
	firstLine := make(map[string]int)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 && len(fields) != 4 {
			return nil, fmt.Errorf("%s:%d: want 3 or 4 fields (ACCESS_KEY_ID SECRET_ACCESS_KEY ACCOUNT_ID [admin]), found %d", path, n, len(fields))
		}
		if len(fields) == 4 && fields[3] != "admin" {
			return nil, fmt.Errorf("%s:%d: the fourth field may only be the word admin", path, n)
		}
		c := Credential{AccessKeyID: fields[0], SecretAccessKey: fields[1], Account: fields[2], Admin: len(fields) == 4}
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if prev, dup := firstLine[c.AccessKeyID]; dup {
			return nil, fmt.Errorf("%s:%d: access key %s is already defined on line %d", path, n, c.AccessKeyID, prev)
		}
		firstLine[c.AccessKeyID] = n
		creds = append(creds, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read credentials file %s: %w", path, err)
	}
	return creds, nil
}

// CredentialsFromEnv reads the access key that FIFOQ_ACCESS_KEY_ID and
// FIFOQ_SECRET_ACCESS_KEY define, for defaultAccount: an admin key, the
// operator's own. Neither set gives no
// credentials; one without the other is an error.
func CredentialsFromEnv(getenv func(string) string, defaultAccount string) ([]Credential, error) {
	id, secret := getenv(EnvAccessKeyID), getenv(EnvSecretAccessKey)
	switch {
	case id == "" && secret == "":
		return nil, nil
	case id == "":
		return nil, fmt.Errorf("%s is set but %s is not", EnvSecretAccessKey, EnvAccessKeyID)
	case secret == "":
		return nil, fmt.Errorf("%s is set but %s is not", EnvAccessKeyID, EnvSecretAccessKey)
	}
	c := Credential{AccessKeyID: id, SecretAccessKey: secret, Account: defaultAccount, Admin: true}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", EnvAccessKeyID, EnvSecretAccessKey, err)
	}
	return []Credential{c}, nil
}
