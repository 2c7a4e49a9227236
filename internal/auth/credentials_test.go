package auth

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const fileSecret = "s3cr3t/With+Chars#NotAComment"

func writeCredentials(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadCredentialsFile(t *testing.T) {
	path := writeCredentials(t, "# fifoq credentials\n\n"+
		"AKIAONE "+fileSecret+" 111111111111\r\n"+
		"   # an indented comment\n"+
		"\tAKIATWO\t\tsecret-two   222222222222  \n"+
		"AKIAADMIN secret-three 111111111111 admin\n")
	got, err := LoadCredentialsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Credential{
		{AccessKeyID: "AKIAONE", SecretAccessKey: fileSecret, Account: "111111111111"},
		{AccessKeyID: "AKIATWO", SecretAccessKey: "secret-two", Account: "222222222222"},
		{AccessKeyID: "AKIAADMIN", SecretAccessKey: "secret-three", Account: "111111111111", Admin: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := NewStore(got); err != nil {
		t.Fatal(err)
	}

	empty, err := LoadCredentialsFile(writeCredentials(t, "# nothing yet\n"))
	if err != nil || len(empty) != 0 {
		t.Fatalf("comments only: %v, %v", empty, err)
	}
}

func TestLoadCredentialsFileErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"two fields", "# c\nAKIAONE " + fileSecret + "\n", ":2: want 3 or 4 fields (ACCESS_KEY_ID SECRET_ACCESS_KEY ACCOUNT_ID [admin]), found 2"},
		{"four fields, the last not admin", "AKIAONE " + fileSecret + " 111111111111 extra\n", ":1: the fourth field may only be the word admin"},
		{"five fields", "AKIAONE " + fileSecret + " 111111111111 admin extra\n", ":1: want 3 or 4 fields"},
		{"short account", "AKIAONE " + fileSecret + " 11111111111\n", `:1: access key AKIAONE: account "11111111111" is not 12 digits`},
		{"letters in account", "AKIAONE " + fileSecret + " 11111111111a\n", ":1: access key AKIAONE: account"},
		{"slash in key", "AKIA/ONE " + fileSecret + " 111111111111\n", `:1: access key id "AKIA/ONE": character '/' is not allowed`},
		{"duplicate", "AKIAONE " + fileSecret + " 111111111111\n\nAKIAONE other 222222222222\n", ":3: access key AKIAONE is already defined on line 1"},
	}
	for _, tc := range tests {
		path := writeCredentials(t, tc.content)
		_, err := LoadCredentialsFile(path)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), path+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q, want %q after the path", tc.name, err, tc.want)
		}
		if strings.Contains(err.Error(), fileSecret) || strings.Contains(err.Error(), "other") {
			t.Errorf("%s: the error shows a secret: %q", tc.name, err)
		}
	}

	if _, err := LoadCredentialsFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}

func TestNewStore(t *testing.T) {
	good := Credential{AccessKeyID: "AKIAONE", SecretAccessKey: "secret", Account: "111111111111"}
	s, err := NewStore([]Credential{good, {AccessKeyID: "AKIATWO", SecretAccessKey: "x", Account: "222222222222"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Empty() || s.Len() != 2 {
		t.Fatalf("Empty %v Len %d", s.Empty(), s.Len())
	}
	if c, ok := s.Lookup("AKIAONE"); !ok || c != good {
		t.Fatalf("Lookup: %v %v", c, ok)
	}
	if _, ok := s.Lookup("akiaone"); ok {
		t.Fatal("access keys are case-sensitive")
	}

	var nilStore *Store
	if !nilStore.Empty() || nilStore.Len() != 0 {
		t.Fatal("a nil store is empty")
	}
	if _, ok := nilStore.Lookup("AKIAONE"); ok {
		t.Fatal("a nil store has no keys")
	}
	if s, err := NewStore(nil); err != nil || !s.Empty() {
		t.Fatalf("no credentials: %v %v", s, err)
	}

	bad := []struct {
		name  string
		creds []Credential
		want  string
	}{
		{"empty key", []Credential{{SecretAccessKey: "s", Account: "111111111111"}}, "empty access key id"},
		{"empty secret", []Credential{{AccessKeyID: "K", Account: "111111111111"}}, "empty secret access key"},
		{"space in secret", []Credential{{AccessKeyID: "K", SecretAccessKey: "a b", Account: "111111111111"}}, "space or control character"},
		{"no account", []Credential{{AccessKeyID: "K", SecretAccessKey: "s"}}, "not 12 digits"},
		{"comma in key", []Credential{{AccessKeyID: "K,", SecretAccessKey: "s", Account: "111111111111"}}, "not allowed"},
		{"long key", []Credential{{AccessKeyID: strings.Repeat("K", 129), SecretAccessKey: "s", Account: "111111111111"}}, "at most 128"},
		{"duplicate", []Credential{good, good}, "credential 2: access key AKIAONE is defined twice"},
	}
	for _, tc := range bad {
		_, err := NewStore(tc.creds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestCredentialsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	got, err := CredentialsFromEnv(env(map[string]string{EnvAccessKeyID: "AKIAENV", EnvSecretAccessKey: "envsecret"}), "000000000000")
	if err != nil {
		t.Fatal(err)
	}
	// The key of the environment is the operator's: an admin key.
	if want := []Credential{{AccessKeyID: "AKIAENV", SecretAccessKey: "envsecret", Account: "000000000000", Admin: true}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := CredentialsFromEnv(env(nil), "000000000000"); err != nil || got != nil {
		t.Fatalf("unset: %v, %v", got, err)
	}
	for _, m := range []map[string]string{{EnvAccessKeyID: "AKIAENV"}, {EnvSecretAccessKey: "envsecret"}} {
		if _, err := CredentialsFromEnv(env(m), "000000000000"); err == nil || strings.Contains(err.Error(), "envsecret") {
			t.Errorf("%v: %v", m, err)
		}
	}
	if _, err := CredentialsFromEnv(env(map[string]string{EnvAccessKeyID: "AKIAENV", EnvSecretAccessKey: "envsecret"}), "default"); err == nil || strings.Contains(err.Error(), "envsecret") {
		t.Errorf("bad default account: %v", err)
	}
}

// TestCredentialRedacted checks that printing or logging a credential does
// not show its secret.
func TestCredentialRedacted(t *testing.T) {
	c := Credential{AccessKeyID: "AKIAONE", SecretAccessKey: fileSecret, Account: "111111111111"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("loaded", "credential", c)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("loaded", "credential", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprint([]Credential{c}), logged.String()} {
		if strings.Contains(s, fileSecret) {
			t.Errorf("secret shown: %s", s)
		}
		if !strings.Contains(s, "AKIAONE") {
			t.Errorf("access key not shown: %s", s)
		}
	}
}
