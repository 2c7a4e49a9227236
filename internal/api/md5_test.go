package api

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

func str(s string) *string { return &s }

func strAttr(dataType, value string) MessageAttributeValue {
	return MessageAttributeValue{DataType: dataType, StringValue: str(value)}
}

func binAttr(dataType string, value []byte) MessageAttributeValue {
	return MessageAttributeValue{DataType: dataType, BinaryValue: value}
}

func TestMD5OfBody(t *testing.T) {
	tests := []struct{ body, want string }{
		{"", "d41d8cd98f00b204e9800998ecf8427e"},
		{"test", "098f6bcd4621d373cade4e832627b4f6"},
		{"msg", "6e2baaf3b97dbeef01c0043275f9a0e7"},
		{"message-body-1", "19c9e282d65f9733bc6b35d50062c7ee"},
		{"Test Message", "d1d4180b7e411c4be86b00fb2ee103eb"},
	}
	for _, tt := range tests {
		if got := MD5OfBody(tt.body); got != tt.want {
			t.Errorf("MD5OfBody(%q) = %s, want %s", tt.body, got, tt.want)
		}
	}
}

// TestMD5OfMessageAttributesEncoding builds SQS's encoding of one attribute
// of each transport type by hand and compares digests.
func TestMD5OfMessageAttributesEncoding(t *testing.T) {
	lp := func(b []byte) []byte {
		out := make([]byte, 4, 4+len(b))
		binary.BigEndian.PutUint32(out, uint32(len(b)))
		return append(out, b...)
	}
	hexMD5 := func(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

	var buf bytes.Buffer
	buf.Write(lp([]byte("a")))
	buf.Write(lp([]byte("Number.int")))
	buf.WriteByte(1)
	buf.Write(lp([]byte("42")))
	if got, want := MD5OfMessageAttributes(map[string]MessageAttributeValue{"a": strAttr("Number.int", "42")}), hexMD5(buf.Bytes()); got != want {
		t.Errorf("one Number.int attribute: got %s, want %s", got, want)
	}

	// Two attributes, given out of order, one Binary: sorted by name, transport 2.
	buf.Reset()
	buf.Write(lp([]byte("b")))
	buf.Write(lp([]byte("Binary.gif")))
	buf.WriteByte(2)
	buf.Write(lp([]byte{0, 0xff, 7}))
	buf.Write(lp([]byte("c")))
	buf.Write(lp([]byte("String")))
	buf.WriteByte(1)
	buf.Write(lp([]byte("é")))
	attrs := map[string]MessageAttributeValue{
		"c": strAttr("String", "é"),
		"b": binAttr("Binary.gif", []byte{0, 0xff, 7}),
	}
	if got, want := MD5OfMessageAttributes(attrs), hexMD5(buf.Bytes()); got != want {
		t.Errorf("Binary and String attributes: got %s, want %s", got, want)
	}
}

// TestMD5OfMessageAttributesVectors checks digests that Amazon SQS itself
// returned (recorded in public test suites of SQS-compatible servers) and
// the samples of SQS's documentation.
func TestMD5OfMessageAttributesVectors(t *testing.T) {
	tests := []struct {
		name  string
		attrs map[string]MessageAttributeValue
		want  string
	}{
		{"none", nil, ""},
		{"empty map", map[string]MessageAttributeValue{}, ""},
		{"one string", map[string]MessageAttributeValue{"Foo": strAttr("String", "Bar")}, "ae7155c6026991b6d54b11589678bf9c"},
		{"one string 2", map[string]MessageAttributeValue{"Hello": strAttr("String", "There")}, "a311262e065454b75da111d535b8dacd"},
		{"one string 3", map[string]MessageAttributeValue{"Hello": strAttr("String", "World")}, "7db7fb1ba7f41366a8ea5eb18220b26d"},
		{"three strings", map[string]MessageAttributeValue{
			"Hello":   strAttr("String", "There"),
			"General": strAttr("String", "Kenobi"),
			"Help.Me": strAttr("String", "Me"),
		}, "4c360f3fdafd970e05fae2f149d997f5"},
		{"two strings", map[string]MessageAttributeValue{
			"Hello":   strAttr("String", "There"),
			"General": strAttr("String", "Kenobi"),
		}, "fca026605781cb4126a1e9044df24232"},
		{"dotted name", map[string]MessageAttributeValue{
			"Hello":   strAttr("String", "There"),
			"Help.Me": strAttr("String", "Me"),
		}, "83fee93c1bcd8b9a5a923ffacdc636c7"},
		{"documentation sample", map[string]MessageAttributeValue{
			"test_attribute_name_2": strAttr("String", "test_attribute_value_2"),
			"test_attribute_name_1": strAttr("String", "test_attribute_value_1"),
		}, "d53f3b558fe951154770f25cb63dbba9"},
		{"documentation binary sample", map[string]MessageAttributeValue{
			"test_attribute_name": binAttr("Binary", []byte("test_attribute_value")),
		}, "23f6bd27ea87aab7dfeadcc9aebee495"},
		{"binary", map[string]MessageAttributeValue{
			"attr1": binAttr("Binary", []byte("traceparent\x1e00-774062d6c37081a5a0b9b5b88e30627c-2d2482211f6489da-01")),
		}, "8cbe4db156db8a94db8b801b7addb984"},
		{"custom number", map[string]MessageAttributeValue{"UserId": strAttr("Number.bigint", "1234567890123456789012")}, "797ab158d73dcb5242dedc4412c8e855"},
		{"numbers", map[string]MessageAttributeValue{"data1": strAttr("Number", "1"), "data2": strAttr("Number", "2")}, "b53b5acf24e7fd9567705bd8027b1c76"},
		{"number", map[string]MessageAttributeValue{"data1": strAttr("Number", "1")}, "cc7f712733e0ad2cc9f1fefbd28bab9c"},
		{"strings from scalars", map[string]MessageAttributeValue{"attrib1": strAttr("String", "2345"), "attrib2": strAttr("String", "true")}, "c92eae09ef2c14cd949cc265ebc9cb50"},
		{"system trace header", map[string]MessageAttributeValue{"AWSTraceHeader": strAttr("String", "some-trace-id")}, "fdce4f2818803f2f73becc09a54792c0"},
		{"system trace header 2", map[string]MessageAttributeValue{"AWSTraceHeader": strAttr("String", "some-value")}, "a3263a0cbc09023ccd431feb61438309"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MD5OfMessageAttributes(tt.attrs); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMD5OfMessageAttributesUsesTypedValue checks that only the value of
// the attribute's type is digested, as SQS stores only that one.
func TestMD5OfMessageAttributesUsesTypedValue(t *testing.T) {
	plain := map[string]MessageAttributeValue{"a": strAttr("String", "x")}
	extra := map[string]MessageAttributeValue{"a": {DataType: "String", StringValue: str("x"), BinaryValue: []byte("ignored")}}
	if MD5OfMessageAttributes(plain) != MD5OfMessageAttributes(extra) {
		t.Error("a stray BinaryValue changed the digest of a String attribute")
	}
	empty := map[string]MessageAttributeValue{"a": strAttr("String", "")}
	absent := map[string]MessageAttributeValue{"a": {DataType: "String"}}
	if MD5OfMessageAttributes(empty) != MD5OfMessageAttributes(absent) {
		t.Error("an absent StringValue is not digested as an empty one")
	}
	bin := map[string]MessageAttributeValue{"a": binAttr("Binary", []byte("x"))}
	if MD5OfMessageAttributes(plain) == MD5OfMessageAttributes(bin) {
		t.Error("String and Binary attributes with the same bytes have the same digest; the transport byte is missing")
	}
}

func TestContentDeduplicationID(t *testing.T) {
	tests := []struct{ body, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		if got := ContentDeduplicationID(tt.body); got != tt.want {
			t.Errorf("ContentDeduplicationID(%q) = %s, want %s", tt.body, got, tt.want)
		}
	}
}

func TestMessageSize(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		attrs map[string]MessageAttributeValue
		want  int
	}{
		{"body only", "hello", nil, 5},
		{"multi-byte body counts bytes", "é€", nil, 5},
		{"string attribute", "hi", map[string]MessageAttributeValue{"name": strAttr("String", "value")}, 2 + 4 + 6 + 5},
		{"binary attribute", "", map[string]MessageAttributeValue{"b": binAttr("Binary.x", []byte{1, 2, 3})}, 1 + 8 + 3},
		{"custom number", "message3", map[string]MessageAttributeValue{"Yolo": strAttr("Number.customtype", "12345678901234567890")}, 8 + 4 + 17 + 20},
		{"nil string value", "x", map[string]MessageAttributeValue{"n": {DataType: "String"}}, 1 + 1 + 6},
	}
	for _, tt := range tests {
		if got := MessageSize(tt.body, tt.attrs); got != tt.want {
			t.Errorf("%s: MessageSize = %d, want %d", tt.name, got, tt.want)
		}
	}
	// SQS's recorded BatchRequestTooLong total for four entries.
	total := MessageSize(strings.Repeat("a", 131072), nil) + MessageSize(strings.Repeat("b", 131000), nil) +
		MessageSize("message3", map[string]MessageAttributeValue{"Yolo": strAttr("Number.customtype", "12345678901234567890")}) +
		MessageSize("message4", map[string]MessageAttributeValue{"Yolo": strAttr("String", strings.Repeat("c", 50))})
	if total != 262189 {
		t.Errorf("batch total = %d, want SQS's 262189", total)
	}
}

// TestMD5OfBodySizes checks MD5OfBody on each side of its stack buffer's
// size against the digest of the body's bytes.
func TestMD5OfBodySizes(t *testing.T) {
	for _, n := range []int{0, 1, 255, 2047, 2048, 2049, 4096, 5000, 262144} {
		body := strings.Repeat("abcdefghij", n/10+1)[:n]
		sum := md5.Sum([]byte(body))
		if got, want := MD5OfBody(body), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("MD5OfBody of %d bytes = %s, want %s", n, got, want)
		}
	}
}

// BenchmarkMD5OfBody times the digest of a 256-byte body, computed for
// every message sent.
func BenchmarkMD5OfBody(b *testing.B) {
	body := strings.Repeat("x", 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		MD5OfBody(body)
	}
}
