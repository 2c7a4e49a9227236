package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// fill sets every field v reaches to a value other than its zero, so that
// a round trip that drops one shows.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{1, 2, 3})
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	}
}

// answersEmpty are the actions whose results carry no fields (api.Empty).
var answersEmpty = map[api.Action]bool{
	api.ActionAddPermission: true, api.ActionChangeMessageVisibility: true, api.ActionDeleteMessage: true, api.ActionDeleteQueue: true,
	api.ActionPurgeQueue: true, api.ActionRemovePermission: true, api.ActionSetQueueAttributes: true, api.ActionTagQueue: true,
	api.ActionUntagQueue: true,
}

// TestRoutedRequestsAndResultsRoundTrip carries every action's request
// and result through the JSON that POST /cluster/do sends between members
// (doAt, serveClusterDo): each must come back as it went, in the type the
// server answers with, or a request a node routes for itself would act,
// or answer, differently from one it carries out itself.
func TestRoutedRequestsAndResultsRoundTrip(t *testing.T) {
	for _, action := range routedActions {
		req, b := filledRequest(t, action)
		back, _ := api.NewRequest(action)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("%s: decode the request: %v", action, err)
		}
		if err := api.NoteSentFIFOIDs(back, b); err != nil {
			t.Fatal(err)
		}
		api.NoteSentFIFOIDs(req, b) // the filler leaves the flags of ids sent unset
		if !reflect.DeepEqual(req, back) {
			t.Errorf("%s's request came back as\n%+v\nwent as\n%+v", action, back, req)
		}

		result := api.NewResult(action)
		_, empty := result.(api.Empty)
		if empty != answersEmpty[action] {
			t.Fatalf("NewResult(%s) is %T: the server answers it with %s", action, result, map[bool]string{true: "no fields", false: "a result of its own"}[answersEmpty[action]])
		}
		if empty {
			continue
		}
		if reflect.TypeOf(result).Kind() != reflect.Pointer {
			t.Fatalf("%s's result is a %T: the server answers with pointers", action, result)
		}
		fill(reflect.ValueOf(result).Elem(), 0)
		b, err := json.Marshal(result)
		if err != nil {
			t.Fatalf("%s: encode the result: %v", action, err)
		}
		got := api.NewResult(action)
		if err := json.Unmarshal(b, got); err != nil {
			t.Fatalf("%s: decode the result: %v", action, err)
		}
		if !reflect.DeepEqual(result, got) {
			t.Errorf("%s's result came back as\n%+v\nwent as\n%+v", action, got, result)
		}
	}
}
