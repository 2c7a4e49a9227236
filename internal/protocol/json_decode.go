package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// decodeJSON decodes an AWS JSON 1.0 request: the action from X-Amz-Target,
// the members from the body. The x-amzn-query-mode header that SDKs send to
// ask for Query-compatible errors needs no handling here: fifoq always sends
// x-amzn-query-error.
func decodeJSON(r *http.Request, body []byte) (api.Action, api.Request, *api.Error) {
	return decodeJSONWith(r, body, true)
}

// decodeJSONWith is decodeJSON with decodeFast's plain-body decoder on or
// off; off, every body goes through encoding/json, whose answers the fast
// decoder must give.
func decodeJSONWith(r *http.Request, body []byte, fast bool) (api.Action, api.Request, *api.Error) {
	// A request that names no operation of SQS is answered as AWS JSON
	// services answer it: UnknownOperationException.
	target := r.Header.Get(headerTarget)
	if target == "" {
		return "", nil, api.ErrUnknownOperation("The request has no X-Amz-Target header.")
	}
	name, ok := strings.CutPrefix(target, targetPrefix)
	if !ok || name == "" {
		return "", nil, api.ErrUnknownOperation("Unknown operation %s.", target)
	}
	action := api.Action(name)
	req, ok := api.NewRequest(action)
	if !ok {
		return "", nil, api.ErrUnknownOperation("Unknown operation %s.", target)
	}
	// An action without input members may come with no body at all.
	if len(bytes.TrimSpace(body)) == 0 {
		return action, req, nil
	}
	// Unknown members are ignored, as SQS ignores them. encoding/json matches
	// member names case-insensitively, which SQS does not; the tolerance
	// cannot make a valid request fail.
	// encoding/json replaces invalid UTF-8 and unpaired surrogate escapes
	// with U+FFFD without a word; storing a body other than the one sent
	// would break its MD5, so such a body is refused instead.
	if err := checkJSONText(body); err != nil {
		return action, nil, err
	}
	if fast && decodeFast(req, body) {
		// Decoded as encoding/json would, every integer in range.
	} else if err := json.Unmarshal(body, req); err != nil {
		return action, nil, jsonDecodeError(err)
	} else if !intsInRange(reflect.ValueOf(req)) {
		// Only now build the member's path for the error: building it for
		// every member of every request cost a tenth of a busy server's CPU.
		if err := checkIntegerRange(reflect.ValueOf(req), ""); err != nil {
			return action, nil, err
		}
	}
	// SQS refuses a FIFO id sent empty; encoding/json cannot say whether
	// it was sent.
	if err := api.NoteSentFIFOIDs(req, body); err != nil {
		return action, nil, jsonDecodeError(err)
	}
	return action, req, nil
}

// jsonDecodeError turns an encoding/json error into the SerializationException
// SQS answers for a body that does not match the model.
func jsonDecodeError(err error) *api.Error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	switch {
	case errors.As(err, &syntax):
		return api.ErrSerialization("The request body is not valid JSON: %s (at byte %d).", syntax.Error(), syntax.Offset)
	case errors.As(err, &typeErr):
		if typeErr.Value == "string" && isInteger(typeErr.Type) {
			// SQS's own words for a string where an Integer belongs, as a
			// client saw them from sqs.eu-central-1.amazonaws.com for a
			// VisibilityTimeout sent as "30" (async-aws/aws issue #1667).
			return api.ErrSerialization("STRING_VALUE can not be converted to an Integer")
		}
		if typeErr.Field == "" {
			return api.ErrSerialization("The request body must be a JSON object, not %s.", typeErr.Value)
		}
		return api.ErrSerialization("Member %s must be %s, not %s.", typeErr.Field, describeType(typeErr.Type), typeErr.Value)
	case errors.As(err, &b64):
		return api.ErrSerialization("A blob member is not valid base64: illegal data at byte %d.", int64(b64))
	}
	return api.ErrSerialization("The request body cannot be decoded: %v.", err)
}

// isInteger reports whether t (or what it points to) is the Go type of
// the model's Integer: int.
func isInteger(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Int || t.Kind() == reflect.Int32)
}

// describeType names a Go type of the api package by the model type it stands for.
func describeType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
		return fmt.Sprintf("an integer between %d and %d", math.MinInt32, math.MaxInt32)
	case reflect.Int64:
		return "an integer"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64-encoded string"
		}
		return "a list"
	case reflect.Map:
		return "a map"
	case reflect.Struct:
		return "a structure"
	}
	return "a " + t.Kind().String()
}

// checkIntegerRange finds the first int member of a decoded request outside
// the model's Integer range (32 bits): encoding/json accepts anything that
// fits a Go int, SQS rejects what does not fit its Integer.
func checkIntegerRange(v reflect.Value, path string) *api.Error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkIntegerRange(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if err := checkIntegerRange(v.Field(i), joinPath(path, name)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if err := checkIntegerRange(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if err := checkIntegerRange(iter.Value(), fmt.Sprintf("%s[%q]", path, iter.Key().String())); err != nil {
				return err
			}
		}
	case reflect.Int:
		if n := v.Int(); n < math.MinInt32 || n > math.MaxInt32 {
			return api.ErrSerialization("Member %s must be %s, not %d.", path, describeType(v.Type()), n)
		}
	}
	return nil
}

// intsInRange reports whether every int member of v is within the model's
// Integer range: checkIntegerRange's walk without the member paths, and
// without descending into values whose type holds no int.
func intsInRange(v reflect.Value) bool {
	if !holdsInt(v.Type()) {
		return true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || intsInRange(v.Elem())
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() && !intsInRange(v.Field(i)) {
				return false
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if !intsInRange(v.Index(i)) {
				return false
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if !intsInRange(iter.Value()) {
				return false
			}
		}
	case reflect.Int:
		n := v.Int()
		return n >= math.MinInt32 && n <= math.MaxInt32
	}
	return true
}

// holdsIntCache remembers, per type, whether a value of it can hold an int
// that checkIntegerRange checks.
var holdsIntCache sync.Map // reflect.Type -> bool

// holdsInt reports whether a value of type t can hold an int member (an
// interface may hold anything).
func holdsInt(t reflect.Type) bool {
	if b, ok := holdsIntCache.Load(t); ok {
		return b.(bool)
	}
	b := holdsIntType(t, map[reflect.Type]bool{})
	holdsIntCache.Store(t, b)
	return b
}

func holdsIntType(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Int, reflect.Interface:
		return true
	case reflect.Pointer:
		return holdsIntType(t.Elem(), seen)
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && holdsIntType(t.Elem(), seen)
	case reflect.Map:
		return holdsIntType(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsIntType(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkJSONText refuses a body that is not valid UTF-8 or whose strings hold
// a \u escape of a lone UTF-16 surrogate: neither stands for a Unicode
// character, and encoding/json would quietly turn both into U+FFFD.
func checkJSONText(body []byte) *api.Error {
	if !utf8.Valid(body) {
		return api.ErrSerialization("The request body is not valid UTF-8.")
	}
	if !bytes.Contains(body, []byte(`\u`)) {
		// No \u escape at all (most bodies): no surrogate to look for.
		return nil
	}
	inString := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(body) {
				return nil // truncated: json.Unmarshal reports the syntax error
			}
			if body[i+1] != 'u' {
				i++ // skip the escaped character, which may be a quote
				continue
			}
			r, ok := hex4(body, i+2)
			if !ok {
				return nil // malformed escape: a syntax error for json.Unmarshal
			}
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return api.ErrSerialization("The request body holds an unpaired UTF-16 surrogate escape \\u%04x at byte %d.", r, i-5)
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := -1, false
				if i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
					var v rune
					v, ok = hex4(body, i+3)
					low = int(v)
				}
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return api.ErrSerialization("The request body holds an unpaired UTF-16 surrogate escape \\u%04x at byte %d.", r, i-5)
				}
				i += 6
			}
		}
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape starting at body[at].
func hex4(body []byte, at int) (rune, bool) {
	if at+4 > len(body) {
		return 0, false
	}
	var r rune
	for _, c := range body[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
