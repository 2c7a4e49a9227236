package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/memguard"
)

// File is a loaded config file.
type File struct {
	// Path is the file's path as given to Load.
	Path string
	// Keys are the access keys of credentials.keys, secrets expanded.
	Keys []AccessKey
	// Queues are the queues to declare, in file order.
	Queues []Queue

	settings map[string]value // by Setting.Key
}

// value is a setting's value as the file gives it, in the text form its
// flag parses, and the line it is on.
type value struct {
	text string
	line int
}

// Setting returns the text the file gives for a setting (a Setting.Key),
// in the form the setting's flag parses, and whether the file gives it.
func (f *File) Setting(key string) (string, bool) {
	v, ok := f.settings[key]
	return v.text, ok
}

// Load reads and checks a config file. Every error is an *Error naming the
// file and, where there is one, the line.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read the config file", Err: err}
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse is Load of the file's contents data; lookupEnv resolves the
// ${VAR} references of access keys.
func Parse(path string, data []byte, lookupEnv func(string) (string, bool)) (*File, error) {
	f := &File{Path: path, settings: map[string]value{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return f, nil // an empty file configures nothing
		}
		return nil, syntaxError(path, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Error{File: path, Line: next.Line, Msg: "a second YAML document begins here; a config file holds one"}
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(path, err)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind == yaml.ScalarNode && doc.ShortTag() == tagNull {
		return f, nil // only comments
	}
	l := &loader{parser: parser{file: path}, f: f, dir: filepath.Dir(path), lookupEnv: lookupEnv}
	if err := l.section(doc, ""); err != nil {
		return nil, err
	}
	// Check what depends on more than one entry (duplicates, dead-letter
	// links) with the file's own account and region, or the defaults; Apply
	// checks again with the settings in effect.
	account, _ := f.Setting("account")
	if account == "" {
		account = placeholderAccount
	}
	if _, err := f.plan(account, placeholderRegion); err != nil {
		return nil, err
	}
	return f, nil
}

// The account and region a file is checked with when it names none: the
// checks need an account to tell queues apart; the region does not change
// their outcome.
const (
	placeholderAccount = "000000000000"
	placeholderRegion  = "us-east-1"
)

// loader fills a File from its node tree.
type loader struct {
	parser
	f         *File
	dir       string
	lookupEnv func(string) (string, bool)
}

// entries are the keys of the file that are not settings.
var entries = []string{"credentials.keys", "queues"}

// childKeys lists the keys that may appear in the section at prefix ("" for
// the top level, "log." for log:), in the order Settings lists them.
func childKeys(prefix string) []string {
	var keys []string
	add := func(full string) {
		if rest, ok := strings.CutPrefix(full, prefix); ok {
			name, _, _ := strings.Cut(rest, ".")
			if !slices.Contains(keys, name) {
				keys = append(keys, name)
			}
		}
	}
	for _, s := range Settings {
		add(s.Key)
	}
	for _, e := range entries {
		add(e)
	}
	return keys
}

// section reads the mapping of the section at prefix.
func (l *loader) section(n *yaml.Node, prefix string) error {
	what := "the config file"
	if prefix != "" {
		what = strings.TrimSuffix(prefix, ".") + ":"
	}
	return l.fields(n, what, childKeys(prefix), func(key string, _, v *yaml.Node) error {
		full := prefix + key
		for _, s := range Settings {
			if s.Key == full {
				return l.setting(s, v)
			}
		}
		switch full {
		case "queues":
			return l.queues(v)
		case "credentials.keys":
			return l.keys(v)
		}
		return l.section(v, full+".")
	})
}

// setting reads one setting's value, checked for its kind.
func (l *loader) setting(s Setting, v *yaml.Node) error {
	var text string
	switch s.Kind {
	case Bool:
		b, err := l.boolean(v, s.Key)
		if err != nil {
			return err
		}
		text = strconv.FormatBool(b)
	case Int:
		i, err := l.integer(v, s.Key)
		if err != nil {
			return err
		}
		text = strconv.FormatInt(i, 10)
	default:
		str, err := l.str(v, s.Key)
		if err != nil {
			return err
		}
		text = str
		switch {
		case s.Kind == Duration:
			if err := checkDuration(text); err != nil {
				return l.errAt(v, "%s: %q: %v", s.Key, text, err)
			}
		case s.Kind == Size:
			if _, err := memguard.ParseSize(text); err != nil {
				return l.errAt(v, "%s: %v", s.Key, err)
			}
		case s.Kind == Count:
			if err := checkValue(Count, text); err != nil {
				return l.errAt(v, "%s: %q: %v", s.Key, text, err)
			}
		case s.Kind == Account && !api.IsAccountID(text):
			return l.errAt(v, "%s: %q is not an account id (12 digits)", s.Key, text)
		case s.Kind == Path && text != "" && !filepath.IsAbs(text):
			// Relative to the file, so that the file means the same
			// whatever directory the server is started from.
			text = filepath.Join(l.dir, text)
		}
	}
	l.f.settings[s.Key] = value{text: text, line: deref(v).Line}
	return nil
}
