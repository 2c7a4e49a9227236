package elasticmq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// kind is the type of a HOCON value.
type kind int

const (
	kindObject kind = iota
	kindArray
	kindString // quoted, or unquoted text that is not a number or a literal
	kindNumber
	kindBool
	kindNull
	kindSubst // ${path} or ${?path}: read but never resolved
)

// value is one parsed HOCON value.
type value struct {
	kind kind
	line int
	// text is a scalar's text: a quoted string's contents, or unquoted
	// text as written (trimmed), e.g. "10 seconds".
	text string
	obj  *object
	arr  []*value
}

// object is a HOCON object, its keys in the order first seen.
type object struct {
	keys   []string
	fields map[string]*field
}

// field is one key of an object and the line it was (last) set on.
type field struct {
	line int
	val  *value
}

func newObject() *object { return &object{fields: map[string]*field{}} }

// get returns the field of key, or nil.
func (o *object) get(key string) *field { return o.fields[key] }

// set sets key to v as HOCON does for a key given twice: two objects are
// merged, key by key; otherwise the later value wins.
func (o *object) set(key string, line int, v *value) {
	old, ok := o.fields[key]
	if !ok {
		o.keys = append(o.keys, key)
		o.fields[key] = &field{line: line, val: v}
		return
	}
	if old.val.kind == kindObject && v.kind == kindObject {
		for _, k := range v.obj.keys {
			f := v.obj.fields[k]
			old.val.obj.set(k, f.line, f.val)
		}
		return
	}
	old.line, old.val = line, v
}

// maxDepth bounds the nesting of objects and arrays, so that a hostile
// input cannot exhaust the stack.
const maxDepth = 100

// Error is a problem with an ElasticMQ config file, at a line of it.
type Error struct {
	// File is the file's name as given.
	File string
	// Line is the 1-based line of the problem, or 0 for the whole file.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error returns "FILE:LINE: MSG".
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// hocon parses the subset of HOCON described in the package comment.
type hocon struct {
	file  string
	src   string
	pos   int
	line  int
	depth int
}

// parseHOCON parses a whole file into its root object.
func parseHOCON(file string, src []byte) (*object, error) {
	if err := checkUTF8(file, src); err != nil {
		return nil, err
	}
	p := &hocon{file: file, src: string(src), line: 1}
	p.skipSpace(true)
	var root *object
	var err error
	if p.peek() == '{' {
		p.pos++
		root, err = p.members(true)
	} else {
		root, err = p.members(false)
	}
	if err != nil {
		return nil, err
	}
	p.skipSpace(true)
	if p.pos < len(p.src) {
		return nil, p.errf("unexpected %q after the root object", p.src[p.pos])
	}
	return root, nil
}

// checkUTF8 refuses a file that is not UTF-8, at the line of its first
// byte that is not: Typesafe Config reads a file as UTF-8, and such a
// byte would reach the output (a name, a warning) as text that no YAML
// reader takes.
func checkUTF8(file string, src []byte) error {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n == 1 {
			line := 1 + bytes.Count(src[:i], []byte{'\n'})
			return &Error{File: file, Line: line, Msg: fmt.Sprintf("byte 0x%02x is not UTF-8: the file must be UTF-8, as ElasticMQ reads it", src[i])}
		}
		i += n
	}
	return nil
}

func (p *hocon) errf(format string, args ...any) error {
	return &Error{File: p.file, Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *hocon) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *hocon) startsComment() bool {
	return p.peek() == '#' || strings.HasPrefix(p.src[p.pos:], "//")
}

// skipSpace skips blanks and comments, and newlines too when newlines is
// set (where a newline does not end anything).
func (p *hocon) skipSpace(newlines bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			if !newlines {
				return
			}
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			p.pos++
		case strings.HasPrefix(p.src[p.pos:], "\ufeff"): // a byte order mark, which HOCON reads as a blank
			p.pos += len("\ufeff")
		case strings.HasPrefix(p.src[p.pos:], "\u00a0"): // a non-breaking space, likewise
			p.pos += len("\u00a0")
		case p.startsComment():
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// members parses the fields of an object up to its closing brace
// (braced), or to the end of the file (the root without braces).
func (p *hocon) members(braced bool) (*object, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errf("objects and arrays nested deeper than %d", maxDepth)
	}
	obj := newObject()
	for {
		// Fields are separated by newlines or commas.
		for {
			p.skipSpace(true)
			if p.peek() != ',' {
				break
			}
			p.pos++
		}
		switch {
		case p.pos >= len(p.src):
			if braced {
				return nil, p.errf("end of file inside an object: a '}' is missing")
			}
			return obj, nil
		case p.peek() == '}':
			if !braced {
				return nil, p.errf("'}' without a matching '{'")
			}
			p.pos++
			return obj, nil
		}
		if err := p.member(obj); err != nil {
			return nil, err
		}
		// After a field: a separator, or the object's end.
		p.skipSpace(false)
		switch c := p.peek(); {
		case c == 0, c == '\n', c == ',', c == '}':
		default:
			return nil, p.errf("unexpected %q after a value: put one field per line, or separate fields with commas", c)
		}
	}
}

// member parses one field, "key = value", "key : value" or "key {...}",
// or an include, and sets it in obj.
func (p *hocon) member(obj *object) error {
	line := p.line
	if p.isInclude() {
		return p.include()
	}
	path, err := p.key()
	if err != nil {
		return err
	}
	p.skipSpace(false)
	switch c := p.peek(); {
	case c == '=' || c == ':':
		p.pos++
	case c == '+' && strings.HasPrefix(p.src[p.pos:], "+="):
		return p.errf("%s += ...: appending to a value is not supported by this converter", strings.Join(path, "."))
	case c == '{':
	default:
		return p.errf("expected '=', ':' or '{' after the key %s", strings.Join(path, "."))
	}
	p.skipSpace(true)
	v, err := p.value()
	if err != nil {
		return err
	}
	// a.b.c = v is a { b { c = v } }.
	for i := len(path) - 1; i > 0; i-- {
		o := newObject()
		o.set(path[i], line, v)
		v = &value{kind: kindObject, line: line, obj: o}
	}
	obj.set(path[0], line, v)
	return nil
}

// isInclude tells whether the field that starts here is an include.
func (p *hocon) isInclude() bool {
	rest := p.src[p.pos:]
	if !strings.HasPrefix(rest, "include") || len(rest) == len("include") {
		return false
	}
	c := rest[len("include")]
	return c == ' ' || c == '\t'
}

// include reads an include. ElasticMQ's files begin with
// include classpath("application.conf"), which pulls in ElasticMQ's own
// defaults (no queues): that one is passed over. Any other include would
// bring queues this converter cannot see, so it is refused.
func (p *hocon) include() error {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '\n' && !p.startsComment() {
		p.pos++
	}
	stmt := strings.TrimSpace(p.src[start:p.pos])
	target := strings.Join(strings.Fields(strings.TrimPrefix(stmt, "include")), "")
	switch target {
	case `classpath("application.conf")`, `required(classpath("application.conf"))`:
		return nil
	}
	return p.errf("%s: included files are not read by this converter; put the queues they declare into this file (only ElasticMQ's own include classpath(\"application.conf\") is passed over)", stmt)
}

// key parses a key: a path of quoted or unquoted segments joined by dots.
func (p *hocon) key() ([]string, error) {
	var path []string
	for {
		var seg string
		if p.peek() == '"' {
			s, err := p.quoted()
			if err != nil {
				return nil, err
			}
			seg = s
		} else {
			start := p.pos
			for p.pos < len(p.src) && !isKeyEnd(p.src[p.pos]) && !p.startsComment() {
				p.pos++
			}
			seg = p.src[start:p.pos]
			if seg == "" {
				if p.pos >= len(p.src) {
					return nil, p.errf("end of file where a key was expected")
				}
				return nil, p.errf("unexpected %q where a key was expected", p.src[p.pos])
			}
		}
		path = append(path, seg)
		if p.peek() != '.' {
			return path, nil
		}
		p.pos++
	}
}

// isKeyEnd tells whether c ends an unquoted key segment.
func isKeyEnd(c byte) bool {
	return c == '.' || isSpaceOrNewline(c) || isForbidden(c)
}

func isSpaceOrNewline(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'
}

// isForbidden lists the characters HOCON does not allow in unquoted text.
func isForbidden(c byte) bool {
	return strings.IndexByte("$\"{}[]:=,+#`^?!@*&\\", c) >= 0
}

// value parses a value.
func (p *hocon) value() (*value, error) {
	line := p.line
	switch c := p.peek(); {
	case c == 0:
		return nil, p.errf("end of file where a value was expected")
	case c == '{':
		p.pos++
		obj, err := p.members(true)
		if err != nil {
			return nil, err
		}
		return &value{kind: kindObject, line: line, obj: obj}, nil
	case c == '[':
		p.pos++
		return p.array(line)
	case c == '"':
		s, err := p.quoted()
		if err != nil {
			return nil, err
		}
		return p.scalarEnd(&value{kind: kindString, line: line, text: s})
	case c == '$' && strings.HasPrefix(p.src[p.pos:], "${"):
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 || strings.Contains(p.src[p.pos:p.pos+end], "\n") {
			return nil, p.errf("a substitution ${...} without its closing '}'")
		}
		text := p.src[p.pos : p.pos+end+1]
		p.pos += end + 1
		return p.scalarEnd(&value{kind: kindSubst, line: line, text: text})
	}
	// Unquoted text, up to the end of the line or a separator: "10
	// seconds" is one value, as HOCON concatenates it.
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '\n' || c == ',' || c == '}' || c == ']' || p.startsComment() {
			break
		}
		if isForbidden(c) {
			return nil, p.errf("%q in an unquoted value: quote the value (\"...\")", c)
		}
		p.pos++
	}
	text := strings.TrimSpace(p.src[start:p.pos])
	if text == "" {
		return nil, p.errf("a value is missing")
	}
	v := &value{kind: kindString, line: line, text: text}
	switch {
	case text == "true" || text == "false":
		v.kind = kindBool
	case text == "null":
		v.kind = kindNull
	case isNumber(text):
		v.kind = kindNumber
	}
	return v, nil
}

// scalarEnd refuses a quoted string or substitution followed by more
// text on its line ("a" b): HOCON would concatenate them, this subset
// does not.
func (p *hocon) scalarEnd(v *value) (*value, error) {
	p.skipSpace(false)
	switch c := p.peek(); {
	case c == 0, c == '\n', c == ',', c == '}', c == ']', p.startsComment():
		return v, nil
	default:
		return nil, p.errf("unexpected %q after %s: concatenated values are not supported by this converter; quote the whole value", c, v.text)
	}
}

// array parses the elements of an array after its '['.
func (p *hocon) array(line int) (*value, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errf("objects and arrays nested deeper than %d", maxDepth)
	}
	v := &value{kind: kindArray, line: line}
	for {
		for {
			p.skipSpace(true)
			if p.peek() != ',' {
				break
			}
			p.pos++
		}
		switch p.peek() {
		case 0:
			return nil, p.errf("end of file inside an array: a ']' is missing")
		case ']':
			p.pos++
			return v, nil
		}
		elem, err := p.value()
		if err != nil {
			return nil, err
		}
		v.arr = append(v.arr, elem)
		p.skipSpace(false)
		if c := p.peek(); c != 0 && c != '\n' && c != ',' && c != ']' {
			return nil, p.errf("unexpected %q in an array", c)
		}
	}
}

// quoted parses a quoted string, with JSON's escapes.
func (p *hocon) quoted() (string, error) {
	if strings.HasPrefix(p.src[p.pos:], `"""`) {
		return "", p.errf(`triple-quoted strings are not supported by this converter`)
	}
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '\n':
			return "", p.errf("a quoted string runs to the end of the line")
		case '"':
			p.pos++
			var s string
			if err := json.Unmarshal([]byte(p.src[start:p.pos]), &s); err != nil {
				return "", p.errf("quoted string %s: %v", p.src[start:p.pos], err)
			}
			return s, nil
		}
		p.pos++
	}
	p.pos = len(p.src)
	return "", p.errf("a quoted string is not closed")
}

// number matches a number as HOCON (JSON) writes one.
var number = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// isNumber tells whether s is a number as HOCON (JSON) writes one.
func isNumber(s string) bool { return number.MatchString(s) }
