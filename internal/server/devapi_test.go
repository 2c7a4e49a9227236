package server

import "testing"

// TestXMLToJSON checks the JSON form of a Query answer: text elements as
// strings (null when empty), repeated elements as lists, one element as an
// object, namespaces left out, entities decoded.
func TestXMLToJSON(t *testing.T) {
	for _, c := range []struct{ xml, want string }{
		{`<A xmlns="x"><B>1</B><C/></A>`, `{"A":{"B":"1","C":null}}`},
		{`<R><M><Body>a &amp; b</Body></M><M><Body> </Body></M></R>`, `{"R":{"M":[{"Body":"a \u0026 b"},{"Body":" "}]}}`},
		{`<?xml version="1.0"?>` + "\n" + `<R>` + "\n  " + `<M><Body>x</Body></M>` + "\n" + `</R>`, `{"R":{"M":{"Body":"x"}}}`},
		{`<E><Error><Code>c</Code><Detail/></Error></E>`, `{"E":{"Error":{"Code":"c","Detail":null}}}`},
	} {
		got, err := xmlToJSON([]byte(c.xml))
		if err != nil || string(got) != c.want {
			t.Errorf("xmlToJSON(%s) = %s, %v; want %s", c.xml, got, err, c.want)
		}
	}
	if _, err := xmlToJSON([]byte("not xml")); err == nil {
		t.Error("xmlToJSON of text without an element succeeded")
	}
}

// TestNotQueueURL: the developer endpoint answers InvalidAddress for a URL
// whose path names no queue in any form fifoq reads, and resolves the rest
// (every queue URL form, a bare name) as the API does.
func TestNotQueueURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://localhost:4566/nonsense":                       true,
		"http://localhost:4566":                                true,
		"http://localhost:4566/a/b/c":                          true,
		"http://localhost:4566/queue/x/y":                      true,
		"/nonsense":                                            true,
		"http://localhost:4566/000000000000/q":                 false,
		"http://sqs.us-east-1.localhost:4566/000000000000/q":   false,
		"http://localhost:4566/queue/us-east-1/000000000000/q": false,
		"http://localhost:9324/queue/q":                        false,
		"/000000000000/q":                                      false,
		"q":                                                    false,
		"":                                                     false,
	} {
		if got := notQueueURL(raw); got != want {
			t.Errorf("notQueueURL(%q) = %v, want %v", raw, got, want)
		}
	}
}
