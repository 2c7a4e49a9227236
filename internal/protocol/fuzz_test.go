package protocol

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fifoq/fifoq/internal/api"
)

// goldenRequests returns the requests of the decode cases of a golden file,
// as fuzzing seeds.
func goldenRequests(f *testing.F, file string) []*goldenRequest {
	cases, _ := readGolden(f, file)
	var out []*goldenRequest
	for _, c := range cases {
		if c.directive != "decode" {
			continue
		}
		r, body := parseGoldenRequest(f, strings.Join(c.input, "\n"))
		out = append(out, &goldenRequest{r: r, body: body})
	}
	if len(out) == 0 {
		f.Fatalf("no seeds in %s", file)
	}
	return out
}

type goldenRequest struct {
	r    *http.Request
	body []byte
}

// checkDecoded checks what every call of Decode must satisfy: an error is a
// client error, a request is of the action returned.
func checkDecoded(t *testing.T, action api.Action, req api.Request, err *api.Error) {
	t.Helper()
	if err != nil {
		if req != nil {
			t.Errorf("Decode returned both a request and the error %v", err)
		}
		if err.Status < 400 || err.Status > 499 || err.Code == "" || err.QueryCode == "" || err.Fault != api.FaultSender {
			t.Errorf("Decode returned a non-client error %+v", err)
		}
		return
	}
	if req == nil || action == "" || req.Action() != action {
		t.Fatalf("Decode returned action %q and request %T without an error", action, req)
	}
}

// FuzzDecodeQuery feeds arbitrary Query requests to Decode. Beyond not
// panicking and answering only client errors, a request that decodes must
// decode to the same request once written again the way the Query model
// says SDKs write it.
func FuzzDecodeQuery(f *testing.F) {
	for _, g := range goldenRequests(f, "testdata/golden/decode_query.txt") {
		f.Add(g.r.Method, g.r.URL.Path, g.r.URL.RawQuery, g.r.Header.Get("Content-Type"), g.body)
	}
	m := queryModel(f)
	f.Fuzz(func(t *testing.T, method, path, rawQuery, contentType string, body []byte) {
		r := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery}, Header: http.Header{}}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		action, req, err := Decode(Query, r, body)
		checkDecoded(t, action, req, err)
		if err != nil {
			return
		}
		q := &querySerializer{t: t, m: m, vals: url.Values{"Action": {string(action)}}}
		q.structure(m.shape(t, m.Operations[string(action)].Input.Shape), reflect.ValueOf(req).Elem(), "")
		again := &http.Request{Method: "POST", URL: &url.URL{Path: path}, Header: http.Header{}}
		again.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		_, req2, err2 := Decode(Query, again, []byte(q.vals.Encode()))
		if err2 != nil {
			t.Fatalf("decoded %s, written again as %s: %v", dumpJSON(req), q.vals.Encode(), err2)
		}
		if a, b := dumpJSON(req), dumpJSON(req2); a != b {
			t.Fatalf("decoded %s\nwritten again as %s\ndecoded again %s", a, q.vals.Encode(), b)
		}
	})
}

// FuzzDecodeJSON feeds arbitrary AWS JSON requests to Decode. Beyond not
// panicking and answering only client errors, a request that decodes must
// decode to the same request once marshaled again.
func FuzzDecodeJSON(f *testing.F) {
	for _, g := range goldenRequests(f, "testdata/golden/decode_json.txt") {
		f.Add(g.r.Header.Get("X-Amz-Target"), g.body)
	}
	f.Fuzz(func(t *testing.T, target string, body []byte) {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("X-Amz-Target", target)
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		action, req, err := Decode(JSON, r, body)
		checkDecoded(t, action, req, err)
		if err != nil {
			return
		}
		again, mErr := json.Marshal(req)
		if mErr != nil {
			t.Fatalf("marshal %#v: %v", req, mErr)
		}
		_, req2, err2 := Decode(JSON, r, again)
		if err2 != nil {
			t.Fatalf("decoded %s, marshaled again: %v", again, err2)
		}
		if a, b := dumpJSON(req), dumpJSON(req2); a != b {
			t.Fatalf("decoded %s\ndecoded again %s", a, b)
		}
	})
}

// xmlExpected is what an XML parser reads back of a string fifoq writes:
// the string, with invalid UTF-8 bytes and runes XML cannot carry replaced
// by U+FFFD.
func xmlExpected(s string) string {
	var b strings.Builder
	for _, r := range s {
		if !xmlChar(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// xmlChar reports whether XML 1.0 can carry r (the production Char).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// jsonExpected is what a JSON parser reads back of a string fifoq writes:
// the string, with invalid UTF-8 bytes replaced by U+FFFD.
func jsonExpected(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// FuzzResponseText writes arbitrary text as a message body, a message
// attribute and a queue attribute in both protocols, and checks that a
// parser reads back the text, carriage returns and all.
func FuzzResponseText(f *testing.F) {
	for _, s := range []string{"", "plain", "a\r\nb\rc\n", "<&>\"'", "\t×😀", "\x00\x1f\ufffe", "\xff\xfe", "]]>", "&#xD;"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, body, attr string) {
		want := api.ReceiveMessageResult{Messages: []api.Message{{
			MessageId: "id", Body: body,
			Attributes:        map[string]string{"MessageGroupId": attr},
			MessageAttributes: map[string]api.MessageAttributeValue{"a": {DataType: "String", StringValue: &attr}},
		}}}

		w := httptest.NewRecorder()
		WriteResponse(w, Query, api.ActionReceiveMessage, &want, "req")
		var doc struct {
			Messages []struct {
				Body       string `xml:"Body"`
				Attributes []struct {
					Value string `xml:"Value"`
				} `xml:"Attribute"`
				MessageAttributes []struct {
					Value struct {
						StringValue string `xml:"StringValue"`
					} `xml:"Value"`
				} `xml:"MessageAttribute"`
			} `xml:"ReceiveMessageResult>Message"`
		}
		if err := xml.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatalf("malformed XML: %v\n%q", err, w.Body)
		}
		if len(doc.Messages) != 1 || len(doc.Messages[0].Attributes) != 1 || len(doc.Messages[0].MessageAttributes) != 1 {
			t.Fatalf("unexpected document %q", w.Body)
		}
		got := doc.Messages[0]
		wantBody := xmlExpected(body)
		if body == "" {
			wantBody = "" // an empty Body is left out
		}
		if got.Body != wantBody || got.Attributes[0].Value != xmlExpected(attr) || got.MessageAttributes[0].Value.StringValue != xmlExpected(attr) {
			t.Fatalf("read back %q, %q, %q from %q", got.Body, got.Attributes[0].Value, got.MessageAttributes[0].Value.StringValue, w.Body)
		}

		w = httptest.NewRecorder()
		WriteResponse(w, JSON, api.ActionReceiveMessage, &want, "req")
		var back api.ReceiveMessageResult
		dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("malformed JSON: %v\n%q", err, w.Body)
		}
		m := back.Messages[0]
		if m.Body != jsonExpected(body) || m.Attributes["MessageGroupId"] != jsonExpected(attr) || *m.MessageAttributes["a"].StringValue != jsonExpected(attr) {
			t.Fatalf("read back %q, %q from %q", m.Body, m.Attributes["MessageGroupId"], w.Body)
		}
	})
}
