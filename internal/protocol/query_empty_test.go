package protocol

import (
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// emptyCase is one list or map member of a request, written empty.
type emptyCase struct {
	where   string     // the member's path, for messages
	parents url.Values // what makes the elements that hold it exist
	names   []string   // the names an SDK may write it empty by
	get     func(req reflect.Value) reflect.Value
}

// emptyCases walks the members of s, below prefix, and adds a case for
// every list and map among them, and among the members of their
// elements: a list of structures' first element, a map of structures'
// entry "n".
func emptyCases(t *testing.T, m *model, s *shape, prefix, where string, parents url.Values, get func(reflect.Value) reflect.Value, out *[]emptyCase) {
	for member, ref := range s.Members {
		ms := m.shape(t, ref.Shape)
		field := func(v reflect.Value) reflect.Value {
			f, _ := goField(get(v), member)
			return f
		}
		name := prefix + m.queryName(ref, member)
		switch ms.Type {
		case "list":
			// botocore writes an empty list by the member's Query name
			// (TagKeys=), aws-sdk-go v1 by its elements' (TagKey=).
			names := []string{prefix + member, name}
			if ms.Member.LocationName != "" {
				names = append(names, prefix+ms.Member.LocationName)
			}
			*out = append(*out, emptyCase{where + member, parents, uniq(names), field})
			if el := m.shape(t, ms.Member.Shape); el.Type == "structure" {
				elem := cmpOr(ms.Member.LocationName, member)
				emptyCases(t, m, el, prefix+elem+".1.", where+member+"[0].", parents,
					func(v reflect.Value) reflect.Value { return field(v).Index(0) }, out)
			}
		case "map":
			*out = append(*out, emptyCase{where + member, parents, uniq([]string{prefix + member, name}), field})
			if val := m.shape(t, ms.Value.Shape); val.Type == "structure" {
				withKey := url.Values{}
				for k, v := range parents {
					withKey[k] = v
				}
				withKey.Set(name+".1."+cmpOr(ms.Key.LocationName, "key"), "n")
				emptyCases(t, m, val, name+".1."+cmpOr(ms.Value.LocationName, "value")+".", where+member+"[n].", withKey,
					func(v reflect.Value) reflect.Value { return field(v).MapIndex(reflect.ValueOf("n")) }, out)
			}
		}
	}
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// TestQueryEmptyLists decodes, for every list and map of every request of
// the Query model (and its supplement), the form an SDK writes when the
// member is set but empty: the bare name with an empty value, by the
// member's own name (botocore over Query: UntagQueue TagKeys=[] is
// TagKeys=), by its Query name, and by its elements' name (aws-sdk-go v1:
// TagKey=). Each must decode to an empty list or map, not to an absent
// one, so that the request is answered as its JSON twin is (for
// UntagQueue, InvalidParameterValue rather than MissingParameter).
func TestQueryEmptyLists(t *testing.T) {
	m := queryModel(t)
	for _, action := range api.Actions {
		op := m.Operations[string(action)]
		if op.Input == nil {
			continue
		}
		var cases []emptyCase
		emptyCases(t, m, m.shape(t, op.Input.Shape), "", "", url.Values{},
			func(v reflect.Value) reflect.Value { return v.Elem() }, &cases)
		for _, c := range cases {
			for _, name := range c.names {
				form := url.Values{"Action": {string(action)}, "Version": {"2012-11-05"}, name: {""}}
				for k, v := range c.parents {
					form[k] = v
				}
				r := httptest.NewRequest("POST", "/", nil)
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
				_, req, err := Decode(Query, r, []byte(form.Encode()))
				if err != nil {
					t.Errorf("%s %s as %s=: Decode: %v", action, c.where, name, err)
					continue
				}
				if f := c.get(reflect.ValueOf(req)); !f.IsValid() || f.IsNil() || f.Len() != 0 {
					t.Errorf("%s %s as %s=: decoded %v, want set and empty\nform: %s", action, c.where, name, f, form.Encode())
				}
			}
		}
	}
}
