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
