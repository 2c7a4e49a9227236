package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// These tests check the hand-written codecs against the API models in
// testdata/models: copies of shared/reference's AWS JSON and AWS Query
// models, and query-supplement.json, what fifoq's Query protocol accepts
// beyond the Query model (the message move task actions, from aws-sdk-go
// v1.44.300's Query model, and ReceiveMessage's MessageSystemAttributeNames).
//
// For every action, a request with every member set is written the way the
// model says an SDK writes it (by code below that knows the model's rules,
// not fifoq's tables), decoded by Decode, and compared with the original;
// a result with every member set is written by WriteResponse, read back the
// way the model says an SDK reads it, and compared with the original.

// model is the part of a Smithy-derived JSON API model these tests use.
type model struct {
	Metadata struct {
		Protocol     string `json:"protocol"`
		XMLNamespace string `json:"xmlNamespace"`
	} `json:"metadata"`
	Operations map[string]operation `json:"operations"`
	Shapes     map[string]*shape    `json:"shapes"`
}

type operation struct {
	Input  *shapeRef `json:"input"`
	Output *shapeRef `json:"output"`
}

type shapeRef struct {
	Shape         string `json:"shape"`
	LocationName  string `json:"locationName"`
	Flattened     bool   `json:"flattened"`
	ResultWrapper string `json:"resultWrapper"`
}

type shape struct {
	Type         string              `json:"type"`
	Members      map[string]shapeRef `json:"members"`
	Member       *shapeRef           `json:"member"`
	Key          *shapeRef           `json:"key"`
	Value        *shapeRef           `json:"value"`
	Flattened    bool                `json:"flattened"`
	LocationName string              `json:"locationName"`
	Exception    bool                `json:"exception"`
}

func loadModel(t testing.TB, files ...string) *model {
	t.Helper()
	m := &model{Operations: map[string]operation{}, Shapes: map[string]*shape{}}
	for _, f := range files {
		data, err := os.ReadFile("testdata/models/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var part model
		if err := json.Unmarshal(data, &part); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if part.Metadata.Protocol != "" {
			m.Metadata = part.Metadata
		}
		for k, v := range part.Operations {
			m.Operations[k] = v
		}
		for k, v := range part.Shapes {
			m.Shapes[k] = v
		}
	}
	return m
}

func queryModel(t testing.TB) *model {
	return loadModel(t, "sqs-2012-11-05.query-protocol.service.json", "query-supplement.json")
}

func jsonModel(t testing.TB) *model {
	return loadModel(t, "sqs-2012-11-05.service.json")
}

func (m *model) shape(t testing.TB, name string) *shape {
	t.Helper()
	s, ok := m.Shapes[name]
	if !ok {
		t.Fatalf("model has no shape %s", name)
	}
	return s
}

// queryName is the name of a member in the Query protocol: the member's
// locationName, else its shape's, else the member's name.
func (m *model) queryName(ref shapeRef, member string) string {
	if ref.LocationName != "" {
		return ref.LocationName
	}
	if s := m.Shapes[ref.Shape]; s != nil && s.LocationName != "" {
		return s.LocationName
	}
	return member
}

// goField returns the field of a Go struct that stands for a model member:
// Go field names are the JSON model's member names, which differ from the
// Query model's only in case (tags, queueUrls).
func goField(v reflect.Value, member string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).IsExported() && strings.EqualFold(t.Field(i).Name, member) {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// checkFieldsCovered fails if a Go struct has a field the model shape lacks.
func checkFieldsCovered(t testing.TB, where string, typ reflect.Type, s *shape) {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		// A json:"-" field is no member: the decoders derive it (whether
		// a FIFO id was sent empty or not at all).
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		found := false
		for member := range s.Members {
			found = found || strings.EqualFold(member, f.Name)
		}
		if !found {
			t.Errorf("%s: Go field %s.%s is not a member of the model", where, typ.Name(), f.Name)
		}
	}
}

// fill sets every field, element and pointer reachable from v to a distinct
// non-zero value. Strings carry the characters that need escaping in both
// wire formats.
func fill(v reflect.Value, seq *int) {
	*seq++
	n := *seq
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seq)
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d <&>\"'\r\n\t×", n))
	case reflect.Int:
		v.SetInt(int64(n))
	case reflect.Int64:
		v.SetInt(1<<40 + int64(n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{byte(n), 0, 0xff})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), seq)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			val := reflect.New(v.Type().Elem()).Elem()
			fill(val, seq)
			m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d-%d", n, i)).Convert(v.Type().Key()), val)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seq)
			}
		}
	}
}

// querySerializer writes a request the way the Query model prescribes.
type querySerializer struct {
	t    testing.TB
	m    *model
	vals url.Values
}

func (q *querySerializer) structure(s *shape, v reflect.Value, prefix string) {
	checkFieldsCovered(q.t, prefix, v.Type(), s)
	for member, ref := range s.Members {
		f, ok := goField(v, member)
		if !ok {
			q.t.Errorf("%s: model member %s has no Go field in %s", prefix, member, v.Type())
			continue
		}
		q.value(ref, f, prefix+q.m.queryName(ref, member))
	}
}

func (q *querySerializer) value(ref shapeRef, v reflect.Value, name string) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	s := q.m.shape(q.t, ref.Shape)
	if (s.Type == "list" || s.Type == "map") && !v.IsNil() && v.Len() == 0 {
		// Like the AWS SDKs, write a list or map that is set but empty as
		// the bare name with an empty value.
		if s.Type == "list" && s.Member.LocationName != "" {
			name = name[:strings.LastIndex(name, ".")+1] + s.Member.LocationName
		}
		q.vals.Set(name, "")
		return
	}
	switch s.Type {
	case "string":
		q.vals.Set(name, v.String())
	case "integer", "long":
		q.vals.Set(name, strconv.FormatInt(v.Int(), 10))
	case "boolean":
		q.vals.Set(name, strconv.FormatBool(v.Bool()))
	case "blob":
		q.vals.Set(name, base64.StdEncoding.EncodeToString(v.Bytes()))
	case "structure":
		q.structure(s, v, name+".")
	case "list":
		if !ref.Flattened && !s.Flattened {
			q.t.Fatalf("%s: non-flattened lists are not in the SQS model", name)
		}
		// A flattened list's elements replace the member's name with the
		// list member's locationName, if it has one.
		base := name
		if s.Member.LocationName != "" {
			base = name[:strings.LastIndex(name, ".")+1] + s.Member.LocationName
		}
		for i := range v.Len() {
			q.value(*s.Member, v.Index(i), fmt.Sprintf("%s.%d", base, i+1))
		}
	case "map":
		if !ref.Flattened && !s.Flattened {
			q.t.Fatalf("%s: non-flattened maps are not in the SQS model", name)
		}
		keyName, valueName := cmpOr(s.Key.LocationName, "key"), cmpOr(s.Value.LocationName, "value")
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for i, k := range keys {
			entry := fmt.Sprintf("%s.%d.", name, i+1)
			q.vals.Set(entry+keyName, k.String())
			q.value(*s.Value, v.MapIndex(k), entry+valueName)
		}
	default:
		q.t.Fatalf("%s: unknown shape type %s", name, s.Type)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestQueryModelRequests(t *testing.T) {
	m := queryModel(t)
	for _, action := range api.Actions {
		t.Run(string(action), func(t *testing.T) {
			op, ok := m.Operations[string(action)]
			if !ok || op.Input == nil {
				t.Fatalf("the Query model has no input for %s", action)
			}
			want, _ := api.NewRequest(action)
			seq := 0
			fill(reflect.ValueOf(want).Elem(), &seq)
			q := &querySerializer{t: t, m: m, vals: url.Values{"Action": {string(action)}, "Version": {"2012-11-05"}}}
			q.structure(m.shape(t, op.Input.Shape), reflect.ValueOf(want).Elem(), "")
			// Over Query, SQS ignores MessageSystemAttributeName.N when
			// AttributeName.N is there too (see query_decode.go);
			// TestQueryReceiveSystemAttributeNames covers it alone.
			if rr, ok := want.(*api.ReceiveMessageRequest); ok && len(rr.AttributeNames) > 0 {
				rr.MessageSystemAttributeNames = nil
			}
			r := httptest.NewRequest("POST", "/", nil)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			gotAction, got, err := Decode(Query, r, []byte(q.vals.Encode()))
			if err != nil {
				t.Fatalf("Decode: %v\nform: %s", err, q.vals.Encode())
			}
			if gotAction != action || !reflect.DeepEqual(got, want) {
				t.Errorf("Decode = %s %s\nwant %s %s", gotAction, dumpJSON(got), action, dumpJSON(want))
			}
		})
	}
}

// xmlNode is an element of a parsed XML document.
type xmlNode struct {
	name     xml.Name
	attrs    []xml.Attr
	children []*xmlNode
	text     strings.Builder
}

func (n *xmlNode) all(name string) []*xmlNode {
	var out []*xmlNode
	for _, c := range n.children {
		if c.name.Local == name {
			out = append(out, c)
		}
	}
	return out
}

func parseXML(t *testing.T, data []byte) *xmlNode {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("malformed XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: tok.Name, attrs: tok.Attr}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.children = append(top.children, n)
			} else if root == nil {
				root = n
			} else {
				t.Fatalf("two root elements in\n%s", data)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(tok)
			}
		}
	}
	if root == nil {
		t.Fatalf("empty XML document")
	}
	return root
}

// xmlReader reads a result the way the Query model prescribes.
type xmlReader struct {
	t *testing.T
	m *model
}

func (x *xmlReader) structure(s *shape, n *xmlNode, v reflect.Value, where string) {
	checkFieldsCovered(x.t, where, v.Type(), s)
	for member, ref := range s.Members {
		f, ok := goField(v, member)
		if !ok {
			x.t.Errorf("%s: model member %s has no Go field in %s", where, member, v.Type())
			continue
		}
		ms := x.m.shape(x.t, ref.Shape)
		name := x.m.queryName(ref, member)
		switch ms.Type {
		case "list":
			if !ref.Flattened && !ms.Flattened {
				x.t.Fatalf("%s.%s: non-flattened lists are not in the SQS model", where, member)
			}
			elems := n.all(cmpOr(ms.Member.LocationName, name))
			if len(elems) == 0 {
				continue
			}
			list := reflect.MakeSlice(f.Type(), len(elems), len(elems))
			for i, e := range elems {
				x.value(*ms.Member, e, list.Index(i), where+"."+member)
			}
			f.Set(list)
		case "map":
			entries := n.all(name)
			if len(entries) == 0 {
				continue
			}
			mp := reflect.MakeMap(f.Type())
			for _, e := range entries {
				keys, vals := e.all(cmpOr(ms.Key.LocationName, "key")), e.all(cmpOr(ms.Value.LocationName, "value"))
				if len(keys) != 1 || len(vals) != 1 {
					x.t.Fatalf("%s.%s: map entry with %d keys and %d values", where, member, len(keys), len(vals))
				}
				val := reflect.New(f.Type().Elem()).Elem()
				x.value(*ms.Value, vals[0], val, where+"."+member)
				mp.SetMapIndex(reflect.ValueOf(keys[0].text.String()).Convert(f.Type().Key()), val)
			}
			f.Set(mp)
		default:
			elems := n.all(name)
			if len(elems) > 1 {
				x.t.Errorf("%s: %d <%s> elements", where, len(elems), name)
			}
			if len(elems) == 1 {
				x.value(ref, elems[0], f, where+"."+member)
			}
		}
	}
}

func (x *xmlReader) value(ref shapeRef, n *xmlNode, v reflect.Value, where string) {
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	s := x.m.shape(x.t, ref.Shape)
	text := n.text.String()
	switch s.Type {
	case "string":
		v.SetString(text)
	case "integer", "long":
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			x.t.Errorf("%s: %v", where, err)
		}
		v.SetInt(i)
	case "boolean":
		b, err := strconv.ParseBool(text)
		if err != nil {
			x.t.Errorf("%s: %v", where, err)
		}
		v.SetBool(b)
	case "blob":
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			x.t.Errorf("%s: %v", where, err)
		}
		v.SetBytes(b)
	case "structure":
		x.structure(s, n, v, where)
	default:
		x.t.Fatalf("%s: unexpected shape type %s", where, s.Type)
	}
}

func TestQueryModelResponses(t *testing.T) {
	m := queryModel(t)
	for _, action := range api.Actions {
		t.Run(string(action), func(t *testing.T) {
			op, ok := m.Operations[string(action)]
			if !ok {
				t.Fatalf("the Query model has no operation %s", action)
			}
			typ := resultTypes[action]
			want := reflect.New(typ)
			seq := 0
			fill(want.Elem(), &seq)
			w := httptest.NewRecorder()
			WriteResponse(w, Query, action, want.Interface(), testRequestID)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			root := parseXML(t, w.Body.Bytes())
			if root.name.Local != string(action)+"Response" || root.name.Space != m.Metadata.XMLNamespace {
				t.Errorf("root element %v, want %sResponse in %s", root.name, action, m.Metadata.XMLNamespace)
			}
			ids := root.all("ResponseMetadata")
			if len(ids) != 1 || len(ids[0].all("RequestId")) != 1 || ids[0].all("RequestId")[0].text.String() != testRequestID {
				t.Errorf("no ResponseMetadata/RequestId %s", testRequestID)
			}
			if op.Output == nil {
				if typ != reflect.TypeFor[api.Empty]() {
					t.Errorf("the model has no output for %s, fifoq has %v", action, typ)
				}
				if len(root.children) != 1 {
					t.Errorf("response of %s has elements besides ResponseMetadata:\n%s", action, w.Body)
				}
				return
			}
			results := root.all(op.Output.ResultWrapper)
			if len(results) != 1 || len(root.children) != 2 {
				t.Fatalf("want one <%s> and <ResponseMetadata>:\n%s", op.Output.ResultWrapper, w.Body)
			}
			got := reflect.New(typ)
			(&xmlReader{t: t, m: m}).structure(m.shape(t, op.Output.Shape), results[0], got.Elem(), string(action))
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("read back %s\nwant %s\nfrom %s", dumpJSON(got.Interface()), dumpJSON(want.Interface()), w.Body)
			}
		})
	}
}

// checkJSONNames checks that the JSON of a Go value uses exactly the member
// names of the JSON model's shape, recursively.
func checkJSONNames(t *testing.T, m *model, ref shapeRef, v any, where string) {
	t.Helper()
	s := m.shape(t, ref.Shape)
	switch s.Type {
	case "structure":
		obj, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: %T for a structure", where, v)
			return
		}
		for k := range obj {
			if _, ok := s.Members[k]; !ok {
				t.Errorf("%s: JSON member %q is not in the model", where, k)
			}
		}
		for member, mref := range s.Members {
			val, ok := obj[member]
			if !ok {
				t.Errorf("%s: model member %q missing from JSON %v", where, member, obj)
				continue
			}
			checkJSONNames(t, m, mref, val, where+"."+member)
		}
	case "list":
		for i, e := range v.([]any) {
			checkJSONNames(t, m, *s.Member, e, fmt.Sprintf("%s[%d]", where, i))
		}
	case "map":
		for k, e := range v.(map[string]any) {
			checkJSONNames(t, m, *s.Value, e, where+"."+k)
		}
	}
}

func TestJSONModel(t *testing.T) {
	m := jsonModel(t)
	for _, action := range api.Actions {
		t.Run(string(action), func(t *testing.T) {
			op, ok := m.Operations[string(action)]
			if !ok || op.Input == nil {
				t.Fatalf("the JSON model has no input for %s", action)
			}
			// Request: member names, and decoding.
			want, _ := api.NewRequest(action)
			seq := 0
			fill(reflect.ValueOf(want).Elem(), &seq)
			body, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			var generic any
			if err := json.Unmarshal(body, &generic); err != nil {
				t.Fatal(err)
			}
			checkJSONNames(t, m, *op.Input, generic, string(action)+"Request")
			r := httptest.NewRequest("POST", "/", nil)
			r.Header.Set("X-Amz-Target", "AmazonSQS."+string(action))
			r.Header.Set("Content-Type", "application/x-amz-json-1.0")
			_, got, apiErr := Decode(JSON, r, body)
			if apiErr != nil {
				t.Fatalf("Decode: %v", apiErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode = %s\nwant %s", dumpJSON(got), dumpJSON(want))
			}

			// Result: member names, and encoding.
			typ := resultTypes[action]
			if op.Output == nil {
				if typ != reflect.TypeFor[api.Empty]() {
					t.Errorf("the model has no output for %s, fifoq has %v", action, typ)
				}
				return
			}
			res := reflect.New(typ)
			fill(res.Elem(), &seq)
			w := httptest.NewRecorder()
			WriteResponse(w, JSON, action, res.Interface(), testRequestID)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			generic = nil
			if err := json.Unmarshal(w.Body.Bytes(), &generic); err != nil {
				t.Fatal(err)
			}
			checkJSONNames(t, m, *op.Output, generic, string(action)+"Result")
			back := reflect.New(typ)
			if err := json.Unmarshal(w.Body.Bytes(), back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Interface(), res.Interface()) {
				t.Errorf("read back %s\nwant %s", dumpJSON(back.Interface()), dumpJSON(res.Interface()))
			}
		})
	}
}

// TestModelActions checks that fifoq, the JSON model and the Query model
// (with its supplement) know the same actions.
func TestModelActions(t *testing.T) {
	for name, m := range map[string]*model{"json": jsonModel(t), "query": queryModel(t)} {
		var ops []string
		for op := range m.Operations {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		var ours []string
		for _, a := range api.Actions {
			ours = append(ours, string(a))
		}
		if !slices.Equal(ops, ours) {
			t.Errorf("%s model operations %v\nfifoq actions %v", name, ops, ours)
		}
	}
	for _, a := range api.Actions {
		if _, ok := resultTypes[a]; !ok {
			t.Errorf("no result type for %s", a)
		}
	}
	if len(resultTypes) != len(api.Actions) {
		t.Errorf("%d result types for %d actions", len(resultTypes), len(api.Actions))
	}
}

func dumpJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// TestQueryReceiveSystemAttributeNames: MessageSystemAttributeName.N is
// decoded when it comes alone, and dropped beside AttributeName.N, which
// SQS answers instead over Query (localstack test_sqs.snapshot.json:
// test_message_system_attribute_names_with_attribute_names[sqs_query]).
func TestQueryReceiveSystemAttributeNames(t *testing.T) {
	decode := func(form url.Values) *api.ReceiveMessageRequest {
		t.Helper()
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		_, got, err := Decode(Query, r, []byte(form.Encode()))
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		return got.(*api.ReceiveMessageRequest)
	}
	alone := decode(url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {"/1/q"}, "MessageSystemAttributeName.1": {"SenderId"}})
	if !reflect.DeepEqual(alone.MessageSystemAttributeNames, []string{"SenderId"}) {
		t.Errorf("alone: MessageSystemAttributeNames = %v", alone.MessageSystemAttributeNames)
	}
	both := decode(url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {"/1/q"}, "MessageSystemAttributeName.1": {"All"}, "AttributeName.1": {"SenderId"}})
	if both.MessageSystemAttributeNames != nil || !reflect.DeepEqual(both.AttributeNames, []string{"SenderId"}) {
		t.Errorf("both: %+v", both)
	}
}
