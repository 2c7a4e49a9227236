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

	"github.com/fifoq/fifoq/internal/api"
)

// decodeJSON decodes an AWS JSON 1.0 request: the action from X-Amz-Target,
// the members from the body. The x-amzn-query-mode header that SDKs send to
// ask for Query-compatible errors needs no handling here: fifoq always sends
// x-amzn-query-error.
func decodeJSON(r *http.Request, body []byte) (api.Action, api.Request, *api.Error) {
	target := r.Header.Get(headerTarget)
	if target == "" {
		return "", nil, api.ErrMissingParameter(headerTarget)
	}
	name, ok := strings.CutPrefix(target, targetPrefix)
	if !ok || name == "" {
		return "", nil, api.ErrInvalidAction(target)
	}
	action := api.Action(name)
	req, ok := api.NewRequest(action)
	if !ok {
		return "", nil, api.ErrInvalidAction(name)
	}
	// An action without input members may come with no body at all.
	if len(bytes.TrimSpace(body)) == 0 {
		return action, req, nil
	}
	// Unknown members are ignored, as SQS ignores them. encoding/json matches
	// member names case-insensitively, which SQS does not; the tolerance
	// cannot make a valid request fail.
	if err := json.Unmarshal(body, req); err != nil {
		return action, nil, jsonDecodeError(err)
	}
	if err := checkIntegerRange(reflect.ValueOf(req), ""); err != nil {
		return action, nil, err
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
		if typeErr.Field == "" {
			return api.ErrSerialization("The request body must be a JSON object, not %s.", typeErr.Value)
		}
		return api.ErrSerialization("Member %s must be %s, not %s.", typeErr.Field, describeType(typeErr.Type), typeErr.Value)
	case errors.As(err, &b64):
		return api.ErrSerialization("A blob member is not valid base64: illegal data at byte %d.", int64(b64))
	}
	return api.ErrSerialization("The request body cannot be decoded: %v.", err)
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

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
