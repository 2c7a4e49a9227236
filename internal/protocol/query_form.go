package protocol

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fifoq/fifoq/internal/api"
)

// form holds the parameters of an AWS Query request: flat names such as
// "SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue".
// Keys are kept sorted so that the members of a list or map, which share a
// prefix, are found by binary search rather than by building a tree whose
// size an attacker would choose.
type form struct {
	values map[string]string
	keys   []string
}

// parseForm reads the parameters of a Query request from its body (when it
// is a form) and from its URL query string. When both carry a parameter, the
// body wins; when a parameter is repeated, its first value counts.
func parseForm(r *http.Request, body []byte) (*form, *api.Error) {
	f := &form{values: make(map[string]string)}
	if len(body) > 0 {
		switch mt := mediaType(r.Header.Get("Content-Type")); mt {
		case "", formContentType:
			// The charset parameter is ignored: percent-encoded bytes are
			// read as UTF-8 whatever the client claims. Every AWS SDK
			// sends UTF-8.
			if err := f.add(string(body)); err != nil {
				return nil, api.ErrMalformedQueryString("The request body is not a valid form: %v.", err)
			}
		default:
			return nil, api.ErrMalformedQueryString("Unsupported Content-Type %q: AWS Query requests are application/x-www-form-urlencoded.", mt)
		}
	}
	if r.URL != nil && r.URL.RawQuery != "" {
		if err := f.add(r.URL.RawQuery); err != nil {
			return nil, api.ErrMalformedQueryString("The query string is not valid: %v.", err)
		}
	}
	f.keys = make([]string, 0, len(f.values))
	for k := range f.values {
		f.keys = append(f.keys, k)
	}
	slices.Sort(f.keys)
	return f, nil
}

// add parses an URL-encoded list of parameters into f, keeping values already there.
func (f *form) add(encoded string) error {
	vals, err := url.ParseQuery(encoded)
	if err != nil {
		return err
	}
	for k, v := range vals {
		if _, ok := f.values[k]; !ok && len(v) > 0 {
			f.values[k] = v[0]
		}
	}
	return nil
}

// params is the view of a form below a prefix: the top level of a request
// (prefix "") or one element of a list or map ("SendMessageBatchRequestEntry.3.").
type params struct {
	f      *form
	prefix string
}

// name returns the full parameter name of a member.
func (p params) name(member string) string { return p.prefix + member }

// lookup returns a member's value and whether the parameter is present.
func (p params) lookup(member string) (string, bool) {
	v, ok := p.f.values[p.prefix+member]
	return v, ok
}

// str returns a string member, "" when absent.
func (p params) str(member string) string {
	v, _ := p.lookup(member)
	return v
}

// sub returns the view below a structure member ("Value" -> "...Value.").
func (p params) sub(member string) params {
	return params{f: p.f, prefix: p.prefix + member + "."}
}

// element is one indexed element of a flattened list or map: the parameter
// named NAME.N, and the members below it, NAME.N.*.
type element struct {
	index int
	key   string // NAME.N, the full name of the element
	p     params // the view below NAME.N.
}

// queryDecoder decodes the members of a Query request and keeps the first
// error, so that decoding code reads as a list of members.
type queryDecoder struct {
	err *api.Error
}

func (d *queryDecoder) fail(err *api.Error) {
	if d.err == nil {
		d.err = err
	}
}

// elements returns the elements NAME.1, NAME.2, ... of a flattened list or
// map member, sorted by index. Indexes start at 1 and may come in any order
// and with gaps (a client that drops an element need not renumber the rest);
// an index that is not a positive decimal integer is an error, except that
// a map entry may be written without its index, as NAME.KEY / NAME.VALUE
// (bare names the entry's fields): the API reference's own Query examples
// write Attribute.Name=...&Attribute.Value=..., and Debian's Perl client
// sends SetQueueAttributes so. That entry comes first, with index 0.
func (d *queryDecoder) elements(p params, member string, bare ...string) []element {
	full := p.name(member)
	lo := full + "."
	hi := full + "/" // '/' follows '.': every key with prefix lo sorts before hi
	keys := p.f.keys
	start, _ := slices.BinarySearch(keys, lo)
	seen := make(map[int]bool)
	var out []element
	for _, k := range keys[start:] {
		if k >= hi {
			break
		}
		seg, _, _ := strings.Cut(k[len(lo):], ".")
		if slices.Contains(bare, seg) {
			if !seen[0] {
				seen[0] = true
				out = append(out, element{index: 0, key: full, p: params{f: p.f, prefix: lo}})
			}
			continue
		}
		idx, ok := parseIndex(seg)
		if !ok {
			d.fail(api.ErrInvalidQueryParameter("The parameter %s has an invalid index %q: list and map indexes are integers from 1.", k, seg))
			return nil
		}
		if seen[idx] {
			continue
		}
		seen[idx] = true
		key := lo + seg
		out = append(out, element{index: idx, key: key, p: params{f: p.f, prefix: key + "."}})
	}
	slices.SortFunc(out, func(a, b element) int { return a.index - b.index })
	return out
}

// parseIndex parses a list or map index: a decimal integer from 1, written
// without sign or leading zeros (so that "1" and "01" cannot name the same
// element twice), small enough to be an int everywhere.
func parseIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// emptyMarker reports whether a list or map member is present as the bare
// parameter NAME, and fails if that parameter carries a value; or as one
// of its aliases with an empty value. AWS SDKs send "NAME=" for a list or
// map that is empty but set, by one name or another: aws-sdk-go v1 by the
// name of the elements (TagKey=, AWSAccountId=), botocore over Query by
// the request member's own (TagKeys=, AWSAccountIds=).
func (d *queryDecoder) emptyMarker(p params, member string, aliases []string) bool {
	v, ok := p.lookup(member)
	if ok && v != "" {
		d.fail(api.ErrInvalidQueryParameter("The parameter %s cannot have a value: its elements are %s.N parameters.", p.name(member), p.name(member)))
	}
	return ok || p.emptyAlias(aliases)
}

// emptyAlias reports whether one of names, the other names by which an SDK
// writes a list or map that is set but empty (see emptyMarker), is there
// with an empty value. With a value it is no SDK's and is ignored, as any
// parameter the decoder does not know is: no SDK names elements so.
func (p params) emptyAlias(names []string) bool {
	for _, n := range names {
		if v, ok := p.lookup(n); ok && v == "" {
			return true
		}
	}
	return false
}

// integer returns an Integer member, nil when absent.
func (d *queryDecoder) integer(p params, member string) *int {
	v, ok := p.lookup(member)
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		d.fail(api.ErrInvalidParameterValue("Value %s for parameter %s is invalid. Reason: must be an integer from -2147483648 to 2147483647.", v, p.name(member)))
		return nil
	}
	i := int(n)
	return &i
}

// blob returns a base64-encoded Binary member, nil when absent.
func (d *queryDecoder) blob(p params, member string) []byte {
	v, ok := p.lookup(member)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		d.fail(api.ErrInvalidParameterValue("Value for parameter %s is invalid. Reason: must be base64-encoded.", p.name(member)))
		return nil
	}
	return b
}

// stringList returns a flattened list of strings, NAME.1, NAME.2, ... nil when
// absent; empty when NAME or one of its aliases says so (emptyMarker). A
// bare NAME with a value counts as the first element: early SQS examples
// wrote AttributeName=All, and SQS accepts it.
func (d *queryDecoder) stringList(p params, member string, aliases ...string) []string {
	var out []string
	if v, ok := p.lookup(member); ok {
		out = []string{}
		if v != "" {
			out = append(out, v)
		}
	} else if p.emptyAlias(aliases) {
		out = []string{}
	}
	for _, e := range d.elements(p, member) {
		v, ok := p.f.values[e.key]
		if !ok {
			d.fail(api.ErrMissingParameter(e.key))
			return nil
		}
		out = append(out, v)
	}
	return out
}

// blobs returns a flattened list of base64-encoded blobs, nil when absent.
func (d *queryDecoder) blobs(p params, member string, aliases ...string) [][]byte {
	var out [][]byte
	if d.emptyMarker(p, member, aliases) {
		out = [][]byte{}
	}
	for _, e := range d.elements(p, member) {
		if _, ok := p.f.values[e.key]; !ok {
			d.fail(api.ErrMissingParameter(e.key))
			return nil
		}
		out = append(out, d.blob(params{f: p.f, prefix: e.key}, ""))
	}
	return out
}

// stringMap returns a flattened map NAME.N.KEY / NAME.N.VALUE, nil when
// absent. An element without its key is an error; an element without its
// value maps the key to "". When a key repeats, the element with the higher
// index wins, as the later member wins in a JSON object.
func (d *queryDecoder) stringMap(p params, member, key, value string, aliases ...string) map[string]string {
	var out map[string]string
	if d.emptyMarker(p, member, aliases) {
		out = map[string]string{}
	}
	for _, e := range d.elements(p, member, key, value) {
		k, ok := e.p.lookup(key)
		if !ok {
			d.fail(api.ErrMissingParameter(e.p.name(key)))
			return nil
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[k] = e.p.str(value)
	}
	return out
}

// attributeValues returns a flattened map of message attributes,
// NAME.N.Name and NAME.N.Value.{StringValue,BinaryValue,StringListValue.M,
// BinaryListValue.M,DataType}, nil when absent.
func (d *queryDecoder) attributeValues(p params, member string, aliases ...string) map[string]api.MessageAttributeValue {
	var out map[string]api.MessageAttributeValue
	if d.emptyMarker(p, member, aliases) {
		out = map[string]api.MessageAttributeValue{}
	}
	for _, e := range d.elements(p, member, "Name", "Value") {
		name, ok := e.p.lookup("Name")
		if !ok {
			d.fail(api.ErrMissingParameter(e.p.name("Name")))
			return nil
		}
		if out == nil {
			out = make(map[string]api.MessageAttributeValue)
		}
		out[name] = d.attributeValue(e.p.sub("Value"))
	}
	return out
}

// attributeValue decodes one MessageAttributeValue below p.
func (d *queryDecoder) attributeValue(p params) api.MessageAttributeValue {
	var v api.MessageAttributeValue
	if s, ok := p.lookup("StringValue"); ok {
		v.StringValue = &s
	}
	v.BinaryValue = d.blob(p, "BinaryValue")
	v.StringListValues = d.stringList(p, "StringListValue", "StringListValues")
	v.BinaryListValues = d.blobs(p, "BinaryListValue", "BinaryListValues")
	v.DataType = p.str("DataType")
	return v
}

// structs calls fn for each element of a flattened list of structures,
// NAME.N.*, in index order, and reports whether the list is present at all
// (possibly as the empty marker NAME=, or alias=).
func (d *queryDecoder) structs(p params, member, alias string, fn func(params)) (present bool) {
	present = d.emptyMarker(p, member, []string{alias})
	for _, e := range d.elements(p, member) {
		present = true
		fn(e.p)
	}
	return present
}
