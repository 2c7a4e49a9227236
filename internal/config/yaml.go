package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The short tags of the YAML core schema that values are checked against.
const (
	tagNull  = "!!null"
	tagBool  = "!!bool"
	tagInt   = "!!int"
	tagFloat = "!!float"
)

// parser reads one config file's node tree; its methods report problems as
// *Error at the line of the node concerned.
type parser struct {
	file string
}

// errAt is an *Error at node n.
func (p *parser) errAt(n *yaml.Node, format string, args ...any) *Error {
	return &Error{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// deref follows an alias to the node it names, so that anchors (&name) and
// aliases (*name) can be used anywhere a value can.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kindName names a node's kind for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == tagNull {
			return "nothing (null)"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unexpected node"
}

// fields calls fn for each key of mapping n in file order, with the key and
// the (alias-resolved) value. what names the mapping in errors. Keys must
// be plain strings among known, and unique; merge keys (<<) are refused,
// since what they contribute would have no line of its own.
func (p *parser) fields(n *yaml.Node, what string, known []string, fn func(key string, k, v *yaml.Node) error) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "%s must be a mapping, not %s", what, kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == tagNull {
			return p.errAt(k, "%s: keys must be names, not %s", what, kindName(k))
		}
		if k.ShortTag() == "!!merge" {
			return p.errAt(k, "%s: merge keys (<<) are not supported; repeat the keys or use an alias as a whole value", what)
		}
		if first, dup := seen[k.Value]; dup {
			return p.errAt(k, "%s: key %q appears twice (first on line %d)", what, k.Value, first)
		}
		seen[k.Value] = k.Line
		if known != nil && !slices.Contains(known, k.Value) {
			return p.errAt(k, "%s: unknown key %q (known keys: %s)", what, k.Value, strings.Join(known, ", "))
		}
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// list calls fn for each item of sequence n.
func (p *parser) list(n *yaml.Node, what string, fn func(i int, item *yaml.Node) error) error {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == tagNull {
		return nil // "queues:" with nothing under it: an empty list
	}
	if n.Kind != yaml.SequenceNode {
		return p.errAt(n, "%s must be a list, not %s", what, kindName(n))
	}
	for i, item := range n.Content {
		if err := fn(i, deref(item)); err != nil {
			return err
		}
	}
	return nil
}

// str returns the text of a scalar that is not null. Any scalar's text is
// taken as written, so that "account: 000000000000" needs no quotes.
func (p *parser) str(n *yaml.Node, what string) (string, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == tagNull {
		return "", p.errAt(n, "%s must be a string, not %s", what, kindName(n))
	}
	return n.Value, nil
}

// boolean returns a YAML boolean (true or false).
func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tagBool {
		return false, p.errAt(n, "%s must be true or false, not %s", what, kindName(n))
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, p.errAt(n, "%s must be true or false: %v", what, err)
	}
	return b, nil
}

// integer returns a YAML integer.
func (p *parser) integer(n *yaml.Node, what string) (int64, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tagInt {
		return 0, p.errAt(n, "%s must be an integer, not %s", what, kindName(n))
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		return 0, p.errAt(n, "%s must be an integer that fits in 64 bits, not %q", what, n.Value)
	}
	return i, nil
}

// sqsValue converts a scalar to the string SQS carries attribute values
// and tag values in: booleans as "true"/"false", integers in decimal, any
// other scalar as written.
func (p *parser) sqsValue(n *yaml.Node, what string) (string, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == tagNull {
		return "", p.errAt(n, "%s must be a value (a string, number or boolean), not %s", what, kindName(n))
	}
	switch n.ShortTag() {
	case tagBool:
		b, err := p.boolean(n, what)
		return strconv.FormatBool(b), err
	case tagInt:
		// Decimal, whatever the spelling (0x1e, 0o36): SQS reads decimal.
		if i, err := p.integer(n, what); err == nil {
			return strconv.FormatInt(i, 10), nil
		}
	}
	return n.Value, nil
}

// jsonDocument returns the JSON text of an attribute that holds a JSON
// document (Policy, RedrivePolicy, RedriveAllowPolicy): a scalar is taken
// as the JSON text itself; a mapping or list is converted, with every
// scalar becoming a JSON string (as the values of IAM policies are) and
// null becoming null. The result is deterministic (keys sorted), so that
// the same file always gives the same text.
func (p *parser) jsonDocument(n *yaml.Node, what string) (string, error) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		return p.str(n, what)
	}
	v, err := p.jsonValue(n, what, 0)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", p.errAt(n, "%s: %v", what, err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// maxJSONDepth bounds the nesting of a converted document; aliases could
// otherwise make a small file expand into a huge one.
const maxJSONDepth = 32

func (p *parser) jsonValue(n *yaml.Node, what string, depth int) (any, error) {
	n = deref(n)
	if depth > maxJSONDepth {
		return nil, p.errAt(n, "%s is nested more than %d levels deep", what, maxJSONDepth)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == tagNull {
			return nil, nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := p.jsonValue(item, what, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		err := p.fields(n, what, nil, func(key string, _, v *yaml.Node) error {
			val, err := p.jsonValue(v, what, depth+1)
			out[key] = val
			return err
		})
		return out, err
	}
	return nil, p.errAt(n, "%s: unexpected YAML node", what)
}
