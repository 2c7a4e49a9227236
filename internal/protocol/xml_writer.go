package protocol

import (
	"bytes"
	"encoding/xml"
	"maps"
	"slices"
	"strconv"
)

// xmlWriter builds an XML document element by element. It writes no
// whitespace between elements, as SQS does not.
type xmlWriter struct {
	buf bytes.Buffer
}

// open writes a start tag.
func (x *xmlWriter) open(name string) {
	x.buf.WriteByte('<')
	x.buf.WriteString(name)
	x.buf.WriteByte('>')
}

// close writes an end tag.
func (x *xmlWriter) close(name string) {
	x.buf.WriteString("</")
	x.buf.WriteString(name)
	x.buf.WriteByte('>')
}

// text writes character data, escaped with encoding/xml's EscapeText: the
// five markup characters become references, and so do tab, line feed and
// carriage return, so that a parser returns them unchanged (a literal
// carriage return would be normalized away by every XML parser). Runes that
// XML cannot carry, and invalid UTF-8, become U+FFFD, keeping the document
// well-formed; SQS rejects such runes in message bodies and attributes
// before they are stored.
func (x *xmlWriter) text(s string) {
	// Writes to a bytes.Buffer cannot fail.
	_ = xml.EscapeText(&x.buf, []byte(s))
}

// elem writes <name>value</name>.
func (x *xmlWriter) elem(name, value string) {
	x.open(name)
	x.text(value)
	x.close(name)
}

// optElem writes <name>value</name> unless value is empty: the Query
// protocol leaves absent members out.
func (x *xmlWriter) optElem(name, value string) {
	if value != "" {
		x.elem(name, value)
	}
}

// intElem writes an integer element.
func (x *xmlWriter) intElem(name string, n int64) {
	x.open(name)
	x.buf.WriteString(strconv.FormatInt(n, 10))
	x.close(name)
}

// boolElem writes a boolean element.
func (x *xmlWriter) boolElem(name string, b bool) {
	x.open(name)
	x.buf.WriteString(strconv.FormatBool(b))
	x.close(name)
}

// stringMap writes a flattened map: one <entry><key>K</key><value>V</value></entry>
// element per key, in key order so that responses are reproducible.
func (x *xmlWriter) stringMap(entry, key, value string, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		x.open(entry)
		x.elem(key, k)
		x.elem(value, m[k])
		x.close(entry)
	}
}
