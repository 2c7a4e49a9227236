package engine

import (
	"testing"
	"unsafe"
)

// TestMessageLayout guards the size of the records a backlog holds by the
// million: a field added to message must find room in its size class, or
// the change must say what each queued message then costs.
func TestMessageLayout(t *testing.T) {
	if got := unsafe.Sizeof(message{}); got > 112 {
		t.Errorf("message is %d bytes, more than the 112 it was laid out for", got)
	}
	if got := unsafe.Sizeof(recvState{}); got > 32 {
		t.Errorf("recvState is %d bytes, more than the 32-byte size class it was laid out for", got)
	}
	if got := unsafe.Sizeof(dedupRecord{}); got > 48 {
		t.Errorf("dedupRecord is %d bytes, more than the 48 it was laid out for (it is held by value)", got)
	}
}

// TestMsgIDRoundTrip keeps MessageIds as they were given: canonical UUIDs
// in 16 bytes, anything else as a string.
func TestMsgIDRoundTrip(t *testing.T) {
	for _, s := range []string{
		"0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "00000000-0000-0000-0000-000000000000",
		"0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D", "id-17", "", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4", "0a1b2c3d04e5f-4a6b-8c7d-9e0f1a2b3c4d",
		"0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4g",
	} {
		id := makeMsgID(s)
		if got := id.String(); got != s || id.len() != len(s) {
			t.Errorf("makeMsgID(%q) = %q (len %d)", s, got, id.len())
		}
		if b := makeMsgIDBytes([]byte(s)); b != id && (b.other == nil || id.other == nil || *b.other != *id.other) {
			t.Errorf("makeMsgIDBytes(%q) differs from makeMsgID", s)
		}
		if _, ok := parseUUID(s); ok != (id.other == nil) {
			t.Errorf("%q: compact %v", s, id.other == nil)
		}
	}
	if id := makeMsgID("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"); id.other != nil {
		t.Error("a canonical UUID was not kept in 16 bytes")
	}
	if _, ok := parseMD5("d41d8cd98f00b204e9800998ecf8427e"); !ok {
		t.Error("parseMD5 refused a digest")
	}
	for _, s := range []string{"", "D41D8CD98F00B204E9800998ECF8427E", "d41d8cd98f00b204e9800998ecf8427", "d41d8cd98f00b204e9800998ecf8427x"} {
		if _, ok := parseMD5(s); ok {
			t.Errorf("parseMD5(%q) accepted", s)
		}
	}
}
