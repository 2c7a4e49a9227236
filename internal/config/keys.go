package config

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fifoq/fifoq/internal/auth"
)

// AccessKey is one access key of credentials.keys.
type AccessKey struct {
	AccessKeyID     string
	SecretAccessKey string
	// Account is the account the key signs for; "" for the default account.
	Account string
	// Admin: the key may change the cluster's membership.
	Admin bool
	// Line is the line of the key's entry.
	Line int
}

// String describes the key without its secret, so that a key printed by
// mistake does not leak it.
func (k AccessKey) String() string {
	return fmt.Sprintf("{AccessKeyID:%s SecretAccessKey:<redacted> Account:%s}", k.AccessKeyID, k.Account)
}

// GoString is String for %#v.
func (k AccessKey) GoString() string { return "config.AccessKey" + k.String() }

// Credentials returns the file's access keys as credentials, those without
// an account for defaultAccount.
func (f *File) Credentials(defaultAccount string) []auth.Credential {
	creds := make([]auth.Credential, 0, len(f.Keys))
	for _, k := range f.Keys {
		account := k.Account
		if account == "" {
			account = defaultAccount
		}
		creds = append(creds, auth.Credential{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, Account: account, Admin: k.Admin})
	}
	return creds
}

// accessKeyKeys are the keys of an entry of credentials.keys.
var accessKeyKeys = []string{"access_key_id", "secret_access_key", "account", "admin"}

// envRef is a value that names an environment variable: ${NAME}.
var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// keys reads credentials.keys.
func (l *loader) keys(n *yaml.Node) error {
	firstLine := map[string]int{}
	return l.list(n, "credentials.keys", func(i int, item *yaml.Node) error {
		what := fmt.Sprintf("credentials.keys[%d]", i)
		k := AccessKey{Line: item.Line}
		var idNode, secretNode *yaml.Node
		err := l.fields(item, what, accessKeyKeys, func(key string, _, v *yaml.Node) error {
			if key == "admin" {
				b, err := l.boolean(v, what+".admin")
				k.Admin = b
				return err
			}
			s, err := l.str(v, what+"."+key)
			if err != nil {
				return err
			}
			switch key {
			case "access_key_id":
				idNode = v
				k.AccessKeyID, err = l.expand(v, what+".access_key_id", s)
			case "secret_access_key":
				secretNode = v
				k.SecretAccessKey, err = l.expand(v, what+".secret_access_key", s)
			case "account":
				k.Account = s
			}
			return err
		})
		if err != nil {
			return err
		}
		if idNode == nil {
			return l.errAt(item, "%s: access_key_id is missing", what)
		}
		if secretNode == nil {
			return l.errAt(item, "%s: secret_access_key is missing", what)
		}
		account := k.Account
		if account == "" {
			account = placeholderAccount
		}
		// auth's own checks, whose messages never quote the secret.
		if _, err := auth.NewStore([]auth.Credential{{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, Account: account}}); err != nil {
			msg := strings.TrimPrefix(err.Error(), "credential 1: ")
			return l.errAt(item, "%s: %s", what, msg)
		}
		if first, dup := firstLine[k.AccessKeyID]; dup {
			return l.errAt(idNode, "%s: access key %s is already defined on line %d", what, k.AccessKeyID, first)
		}
		firstLine[k.AccessKeyID] = item.Line
		l.f.Keys = append(l.f.Keys, k)
		return nil
	})
}

// expand resolves a value of the form ${NAME} to the environment variable
// NAME, which must be set and not empty, so that secrets need not be
// written in the file. Any other value is taken as written; a ${ inside a
// longer value is refused rather than half-expanded.
func (l *loader) expand(n *yaml.Node, what, s string) (string, error) {
	m := envRef.FindStringSubmatch(s)
	if m == nil {
		if strings.Contains(s, "${") {
			return "", l.errAt(n, "%s: an environment reference must be the whole value, as in ${NAME}", what)
		}
		return s, nil
	}
	v, ok := l.lookupEnv(m[1])
	if !ok || v == "" {
		return "", l.errAt(n, "%s: environment variable %s is not set", what, m[1])
	}
	return v, nil
}
