package protocol

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/golden/*.txt")

// testRequestID is the request id of every golden response.
const testRequestID = "5f2c1a3e-7b7d-4c1e-9d2a-0c6b8f3e1a42"

// A golden file is a sequence of cases:
//
//	# comments
//	=== name
//	directive [args]
//	input lines
//	---
//	expected output lines
//
// Directives:
//
//	decode         input: an HTTP request (request line, headers, blank
//	               line, body); output: the detected protocol, the action,
//	               and the typed request (as JSON) or the error.
//	write ACTION   input: the JSON of the action's typed result (empty for
//	               actions without one); output: the response in both protocols.
//	error          input: the JSON of an *api.Error; output: the error
//	               response in both protocols.
//
// Run "go test ./internal/protocol -run Golden -update" to rewrite the
// expected outputs after a deliberate change, and review the diff.
type goldenCase struct {
	preamble  []string // comment and blank lines before the case
	name      string
	directive string
	input     []string
	expected  []string
	line      int // line number of the "===" line, for messages
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cases, trailer := readGolden(t, file)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					got := runGoldenCase(t, c)
					if *update {
						c.expected = got
						return
					}
					if want := strings.Join(c.expected, "\n"); strings.Join(got, "\n") != want {
						t.Errorf("%s:%d: %s\n--- got ---\n%s\n--- want ---\n%s", file, c.line, c.name, strings.Join(got, "\n"), want)
					}
				})
			}
			if *update {
				writeGolden(t, file, cases, trailer)
			}
		})
	}
}

func readGolden(t testing.TB, file string) ([]*goldenCase, []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []*goldenCase
	var pending []string // lines not yet attributed to a case
	var cur *goldenCase
	inInput := false
	// flush moves the trailing blank and comment lines of the current case's
	// expected output to the preamble of the next case.
	flush := func() {
		if cur == nil {
			return
		}
		i := len(cur.expected)
		for i > 0 && (cur.expected[i-1] == "" || strings.HasPrefix(cur.expected[i-1], "#")) {
			i--
		}
		pending = append(pending, cur.expected[i:]...)
		cur.expected = cur.expected[:i]
	}
	for n, line := range lines {
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			cur = &goldenCase{preamble: pending, name: strings.TrimPrefix(line, "=== "), line: n + 1}
			pending = nil
			cases = append(cases, cur)
			inInput = true
		case cur == nil:
			pending = append(pending, line)
		case inInput && cur.directive == "":
			cur.directive = line
		case inInput && line == "---":
			inInput = false
		case inInput:
			cur.input = append(cur.input, line)
		default:
			cur.expected = append(cur.expected, line)
		}
	}
	flush()
	return cases, pending
}

func writeGolden(t *testing.T, file string, cases []*goldenCase, trailer []string) {
	t.Helper()
	var b strings.Builder
	for _, c := range cases {
		for _, l := range c.preamble {
			b.WriteString(l + "\n")
		}
		b.WriteString("=== " + c.name + "\n" + c.directive + "\n")
		for _, l := range c.input {
			b.WriteString(l + "\n")
		}
		b.WriteString("---\n")
		for _, l := range c.expected {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range trailer {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runGoldenCase(t *testing.T, c *goldenCase) []string {
	t.Helper()
	fields := strings.Fields(c.directive)
	if len(fields) == 0 {
		t.Fatalf("line %d: missing directive", c.line)
	}
	input := strings.Join(c.input, "\n")
	var out string
	switch {
	case fields[0] == "decode" && len(fields) == 1:
		out = goldenDecode(t, input)
	case fields[0] == "write" && len(fields) == 2:
		out = goldenWrite(t, api.Action(fields[1]), input)
	case fields[0] == "error" && len(fields) == 1:
		out = goldenError(t, input)
	default:
		t.Fatalf("line %d: unknown directive %q", c.line, c.directive)
	}
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// parseGoldenRequest reads "METHOD TARGET", header lines, a blank line and
// the body.
func parseGoldenRequest(t testing.TB, input string) (*http.Request, []byte) {
	t.Helper()
	head, body, _ := strings.Cut(input, "\n\n")
	lines := strings.Split(strings.TrimRight(head, "\n"), "\n")
	method, target, ok := strings.Cut(lines[0], " ")
	if !ok {
		t.Fatalf("bad request line %q", lines[0])
	}
	r := httptest.NewRequest(method, target, nil)
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("bad header line %q", l)
		}
		r.Header.Add(k, strings.TrimSpace(v))
	}
	return r, []byte(body)
}

func goldenDecode(t *testing.T, input string) string {
	r, body := parseGoldenRequest(t, input)
	p := Detect(r)
	action, req, apiErr := Decode(p, r, body)
	var b strings.Builder
	fmt.Fprintf(&b, "protocol: %s\naction: %s\n", p, action)
	if apiErr != nil {
		fmt.Fprintf(&b, "error: %d %s %s %s: %s\n", apiErr.Status, apiErr.Fault, apiErr.Code, apiErr.QueryCode, apiErr.Message)
		return b.String()
	}
	if req.Action() != action {
		t.Errorf("request of type %T for action %s", req, action)
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(req); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "request: %T %s", req, js.Bytes())
	return b.String()
}

func goldenWrite(t *testing.T, action api.Action, input string) string {
	typ, ok := resultTypes[action]
	if !ok {
		t.Fatalf("unknown action %s", action)
	}
	resp := reflect.New(typ)
	if strings.TrimSpace(input) != "" {
		dec := json.NewDecoder(strings.NewReader(input))
		dec.DisallowUnknownFields()
		if err := dec.Decode(resp.Interface()); err != nil {
			t.Fatalf("result of %s: %v", action, err)
		}
	}
	var b strings.Builder
	for _, p := range []Protocol{JSON, Query} {
		w := httptest.NewRecorder()
		WriteResponse(w, p, action, resp.Interface(), testRequestID)
		fmt.Fprintf(&b, "%s:\n%s\n", p, dumpResponse(w))
	}
	return b.String()
}

func goldenError(t *testing.T, input string) string {
	var e api.Error
	dec := json.NewDecoder(strings.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error: %v", err)
	}
	var b strings.Builder
	for _, p := range []Protocol{JSON, Query} {
		w := httptest.NewRecorder()
		WriteError(w, p, &e, testRequestID)
		fmt.Fprintf(&b, "%s:\n%s\n", p, dumpResponse(w))
	}
	return b.String()
}

// dumpResponse renders a recorded response: status, headers in order, body.
func dumpResponse(w *httptest.ResponseRecorder) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %s\n", w.Code, http.StatusText(w.Code))
	keys := make([]string, 0, len(w.Header()))
	for k := range w.Header() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range w.Header()[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(w.Body.Bytes())
	return b.String()
}
